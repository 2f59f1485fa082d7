// kafkajs against mq-kafka on the three-node cluster (test/t/140 runs it):
//   node cluster.js BOOT TOPIC GROUP
// BOOT is one daemon: kafkajs learns the others from Metadata.  The admin
// API creates TOPIC (6 partitions, 3 replicas, waiting for the leaders)
// and TOPIC-grow (1 partition, 2 replicas), an idempotent producer sends
// 600 keyed records, a consumer group reads them all and commits, the
// admin API fetches the group's offsets and grows TOPIC-grow to 3
// partitions.  Prints one JSON line of what it saw.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, groupId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-cluster', brokers: [broker], logLevel: logLevel.WARN });
const N = 600;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  const grow = `${topic}-grow`;
  const created = await admin.createTopics({ waitForLeaders: true, topics: [
    { topic, numPartitions: 6, replicationFactor: 3,
      configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
    { topic: grow, numPartitions: 1, replicationFactor: 2 }] });

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < N; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  const acks = await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Map();
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: true,
    eachMessage: async ({ message }) => {
      const k = `${message.key}=${message.value}`;
      seen.set(k, (seen.get(k) || 0) + 1);
      if (seen.size === N) done();
    },
  });
  const timer = setTimeout(done, 60000);
  await finished;
  clearTimeout(timer);
  await consumer.commitOffsets([]);
  await consumer.disconnect();
  let once = 0;
  for (let i = 0; i < N; i++) if (seen.get(`k${i}=v${i}`) === 1) once++;

  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  const committed = {};
  for (const p of offsets[0].partitions) committed[p.partition] = Number(p.offset);
  await admin.createPartitions({ topicPartitions: [{ topic: grow, count: 3 }] });
  let grown = 0;
  for (let i = 0; i < 100 && grown < 3; i++) {
    const md = await admin.fetchTopicMetadata({ topics: [grow] });
    grown = md.topics[0].partitions.filter((p) => p.leader >= 0).length;
    if (grown < 3) await sleep(200);
  }
  await admin.disconnect();

  console.log(JSON.stringify({
    created, partitions: new Set(acks.map((a) => a.partition)).size,
    readOnce: once, committed, grown,
  }));
}

main().catch((e) => { console.error(e); process.exit(1); });
