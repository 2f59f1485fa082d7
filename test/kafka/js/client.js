// kafkajs against mq-kafka (test/kafka/kafkajs.sh runs it):
//   node client.js BROKER TOPIC GROUP
// creates TOPIC (2 partitions) with the admin API, produces 100 records
// with an idempotent producer, consumes them with a group that commits,
// lists and describes the group, creates and deletes a scratch topic,
// and prints one JSON line of what it saw.
'use strict';
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs');

const [broker, topic, groupId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-test', brokers: [broker], logLevel: logLevel.WARN });
const N = 100;

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  const listed = await admin.listTopics();
  await admin.disconnect();

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < N; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  await producer.send({ topic, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: true,
    eachMessage: async ({ message }) => {
      seen.add(`${message.key}=${message.value}`);
      if (seen.size === N) done();
    },
  });
  const timer = setTimeout(done, 60000);
  await finished;
  clearTimeout(timer);
  await consumer.commitOffsets([]);
  await consumer.disconnect();

  let ok = 0;
  for (let i = 0; i < N; i++) if (seen.has(`k${i}=v${i}`)) ok++;

  const admin2 = kafka.admin();
  await admin2.connect();
  const groups = (await admin2.listGroups()).groups.map((g) => g.groupId);
  const described = (await admin2.describeGroups([groupId])).groups[0];
  const offsets = await admin2.fetchOffsets({ groupId, topics: [topic] });
  const committed = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
  await admin2.createTopics({ topics: [{ topic: `${topic}-scratch` }] });
  await admin2.deleteTopics({ topics: [`${topic}-scratch`] });
  const after = await admin2.listTopics();
  const grow = `${topic}-grow`;
  await admin2.createTopics({ topics: [{ topic: grow, numPartitions: 1,
    configEntries: [{ name: 'retention.ms', value: '86400000' }] }] });
  await admin2.createPartitions({ topicPartitions: [{ topic: grow, count: 3 }] });
  const described2 = await admin2.describeConfigs({ includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: grow }] });
  const retention = described2.resources[0].configEntries
    .filter((c) => c.configName === 'retention.ms').map((c) => c.configValue)[0];
  await admin2.disconnect();

  console.log(JSON.stringify({
    created, listed: listed.includes(topic), produced: N, consumed: ok,
    groupListed: groups.includes(groupId), groupState: described.state, groupProtocol: described.protocol, committed,
    scratchDeleted: !after.includes(`${topic}-scratch`), retention,
  }));
}

main().catch((e) => { console.error(e); process.exit(1); });
