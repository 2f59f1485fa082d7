// kafkajs over TLS against mq-kafka (test/kafka/tls.sh runs it):
//   node tls.js BROKER TOPIC GROUP CADIR [CLIENT]
// trusts CADIR/ca.crt and, with CLIENT, presents CADIR/CLIENT.crt and
// .key (mutual TLS); produces 5 records, consumes them in GROUP from the
// start, commits, and prints one JSON line: produced (or produceError,
// the Kafka error's type), consumed (records seen), committed (the
// group's offset of partition 0 after the commit).
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, groupId, cadir, client] = process.argv.slice(2);
const ssl = { ca: [fs.readFileSync(`${cadir}/ca.crt`)] };
if (client) {
  ssl.cert = fs.readFileSync(`${cadir}/${client}.crt`);
  ssl.key = fs.readFileSync(`${cadir}/${client}.key`);
}
const kafka = new Kafka({
  clientId: 'kafkajs-tls', brokers: [broker], logLevel: logLevel.NOTHING, ssl,
  retry: { retries: 1 },
});
const N = 5;

async function main() {
  const out = { produced: false, consumed: 0 };
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < N; i++) messages.push({ key: `k${i}`, value: `js${i}` });
  try {
    await producer.send({ topic, messages, acks: -1 });
    out.produced = true;
  } catch (e) {
    out.produceError = (e.cause && e.cause.type) || e.type || e.name;
  }
  await producer.disconnect();
  if (!out.produced) {
    console.log(JSON.stringify(out));
    return;
  }
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message, partition }) => {
      if (String(message.value).startsWith('js')) seen.add(String(message.value));
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
      if (seen.size === N) done();
    },
  });
  const timer = setTimeout(done, 60000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  out.consumed = seen.size;
  const admin = kafka.admin();
  await admin.connect();
  const offs = await admin.fetchOffsets({ groupId, topics: [topic] });
  out.committed = Number(offs[0].partitions.find((p) => p.partition === 0).offset);
  await admin.disconnect();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
