// kafkajs's admin APIs that delete and alter (test/kafka/kafkajs_admin.sh
// runs it):   node admin.js BROKER TOPIC
// DeleteGroups: a group with a live consumer (NON_EMPTY_GROUP), an
// unknown group (GROUP_ID_NOT_FOUND), and a group that committed and
// left (deleted, its offsets gone).  Prints one JSON line of what it saw.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-admin-test', brokers: [broker], logLevel: logLevel.NOTHING });

// the error codes of admin.deleteGroups, by group (0: deleted)
async function deleteGroups(admin, groups) {
  try {
    const res = await admin.deleteGroups(groups);
    return Object.fromEntries(res.map((r) => [r.groupId, r.errorCode]));
  } catch (e) {
    if (!e.groups) throw e;
    return Object.fromEntries(groups.map((g) => [g, (e.groups.find((x) => x.groupId === g) || { errorCode: 0 }).errorCode]));
  }
}

// a consumer of TOPIC in group that has read n records and committed
async function consume(groupId, n) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({ autoCommit: true, eachMessage: async () => { if (++seen >= n) done(); } });
  const timer = setTimeout(done, 30000);
  await finished;
  clearTimeout(timer);
  await consumer.commitOffsets([]);
  return consumer;
}

async function groupsTest(admin) {
  const live = await consume(`${topic}-live`, 4);
  const gone = await consume(`${topic}-gone`, 4);
  await gone.disconnect();
  const codes = await deleteGroups(admin, [`${topic}-live`, `${topic}-nope`, `${topic}-gone`]);
  const offsets = await admin.fetchOffsets({ groupId: `${topic}-gone`, topics: [topic] });
  const listed = (await admin.listGroups()).groups.map((g) => g.groupId);
  await live.disconnect();
  return {
    live: codes[`${topic}-live`], unknown: codes[`${topic}-nope`], gone: codes[`${topic}-gone`],
    goneOffsets: offsets[0].partitions.map((p) => p.offset).join(','),
    goneListed: listed.includes(`${topic}-gone`),
  };
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [...Array(10).keys()].map((i) => ({ value: `v${i}` })) });
  await producer.disconnect();
  const out = { groups: await groupsTest(admin) };
  await admin.disconnect();
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
