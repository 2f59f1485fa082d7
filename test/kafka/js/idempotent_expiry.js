// A kafkajs idempotent producer whose producer id expires in mq
// (test/kafka/idempotent.sh runs it):
//   node idempotent_expiry.js BROKER TOPIC EXPIRE_COMMAND
// sends a0 and a1, runs EXPIRE_COMMAND (a shell command that expires the
// producer's id in mq), then sends b0 and b1 with the same producer, which
// goes on with its next sequences as against Kafka.  Prints JSON
// {"b0": "ok" | error type, "b1": ...}.
const { Kafka, logLevel } = require('kafkajs');
const { execSync } = require('child_process');

const [broker, topic, expire] = process.argv.slice(2);

async function main() {
  const kafka = new Kafka({ brokers: [broker], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({ topic, messages: [{ value: 'a0' }, { value: 'a1' }] });
  execSync(expire);
  const out = {};
  for (const value of ['b0', 'b1']) {
    try {
      await producer.send({ topic, messages: [{ value }] });
      out[value] = 'ok';
    } catch (e) {
      out[value] = e.type || e.name || String(e);
    }
  }
  console.log(JSON.stringify(out));
  await producer.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
