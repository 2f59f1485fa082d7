// kafkajs with SASL against mq-kafka --sasl (test/kafka/sasl.sh runs it
// with PLAIN, test/kafka/scram.sh with SCRAM):
//   MQ_SASL_PASSWORD=... [MQ_SASL_MECHANISM=scram-sha-256] [MQ_SSL_CA=FILE] node sasl.js BROKER TOPIC GROUP USER
// (with MQ_SSL_CA: over TLS, trusting that CA file: SASL_SSL)
// produces 5 records as USER, then consumes TOPIC in GROUP from the start
// and prints one JSON line: produced (or produceError, the Kafka error's
// type), consumed (records seen, 0 if producing failed).
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, groupId, username] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: 'kafkajs-sasl', brokers: [broker], logLevel: logLevel.NOTHING,
  sasl: { mechanism: process.env.MQ_SASL_MECHANISM || 'plain', username, password: process.env.MQ_SASL_PASSWORD },
  ssl: process.env.MQ_SSL_CA ? { ca: [fs.readFileSync(process.env.MQ_SSL_CA)] } : undefined,
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
    eachMessage: async ({ message }) => {
      if (String(message.value).startsWith('js')) seen.add(String(message.value));
      if (seen.size === N) done();
    },
  });
  const timer = setTimeout(done, 60000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  out.consumed = seen.size;
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
