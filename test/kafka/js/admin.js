// kafkajs's admin APIs that delete and alter (test/kafka/kafkajs_admin.sh
// runs it):   node admin.js BROKER TOPIC
// DeleteGroups: a group with a live consumer (NON_EMPTY_GROUP), an
// unknown group (GROUP_ID_NOT_FOUND), a group that committed and left
// (deleted, its offsets gone), and one that left without committing.  DeleteRecords: up to an offset, the
// low watermark after it and where a new consumer starts, beyond the high
// watermark (OFFSET_OUT_OF_RANGE), and -1 (the high watermark).
// ResetOffsets (earliest, latest) and SetOffsets of a group with no
// members, and where its next consumer resumes.  Partition
// reassignments listed and altered on a single daemon.
// AlterConfigs: validate_only, the whole config replaced, a bad value
// (INVALID_CONFIG), an unknown topic and a broker resource; then
// DescribeConfigs' defaults.  Prints one JSON line of what it saw.
'use strict';
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs');

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
// (unless commit is false)
async function consume(groupId, n, commit = true) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({ autoCommit: commit, eachMessage: async () => { if (++seen >= n) done(); } });
  const timer = setTimeout(done, 30000);
  await finished;
  clearTimeout(timer);
  if (commit) await consumer.commitOffsets([]);
  return consumer;
}

// until the group is Empty: kafkajs's disconnect swallows a failed
// LeaveGroup (its runner's stop), and its member then stays until its
// session times out, as it would in Kafka (seen once on a loaded machine)
async function untilEmpty(admin, groupId) {
  for (const t0 = Date.now(); Date.now() - t0 < 20000;) {
    const { groups } = await admin.describeGroups([groupId]);
    if (groups[0] && groups[0].state === 'Empty') return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function groupsTest(admin) {
  const live = await consume(`${topic}-live`, 4);
  const gone = await consume(`${topic}-gone`, 4);
  await gone.disconnect();
  // a group whose consumer left without committing: Empty, and deleted as by Kafka
  const never = await consume(`${topic}-never`, 4, false);
  await never.disconnect();
  await untilEmpty(admin, `${topic}-gone`);
  await untilEmpty(admin, `${topic}-never`);
  const codes = await deleteGroups(admin, [`${topic}-live`, `${topic}-nope`, `${topic}-gone`, `${topic}-never`]);
  const offsets = await admin.fetchOffsets({ groupId: `${topic}-gone`, topics: [topic] });
  const listed = (await admin.listGroups()).groups.map((g) => g.groupId);
  await live.disconnect();
  return {
    live: codes[`${topic}-live`], unknown: codes[`${topic}-nope`], gone: codes[`${topic}-gone`],
    never: codes[`${topic}-never`],
    goneOffsets: offsets[0].partitions.map((p) => p.offset).join(','),
    goneListed: listed.includes(`${topic}-gone`),
  };
}

// the error type of admin.deleteTopicRecords, or 'none'
async function deleteRecords(admin, partition, offset) {
  try {
    await admin.deleteTopicRecords({ topic, partitions: [{ partition, offset }] });
    return 'none';
  } catch (e) {
    const err = e.partitions ? e : e.cause; // the retrier wraps it
    if (!err || !err.partitions) throw e;
    return err.partitions.map((p) => p.error.type).join(',');
  }
}

async function recordsTest(admin) {
  const deleted = await deleteRecords(admin, 0, '4');
  const low = (await admin.fetchTopicOffsets(topic))[0].low;
  const consumer = kafka.consumer({ groupId: `${topic}-after`, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let first;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({ eachMessage: async ({ message }) => { if (first === undefined) first = message.offset; done(); } });
  const timer = setTimeout(done, 30000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  const beyond = await deleteRecords(admin, 0, '11');
  const lowAfterBeyond = (await admin.fetchTopicOffsets(topic))[0].low;
  const all = await deleteRecords(admin, 0, '-1');
  const offsets = (await admin.fetchTopicOffsets(topic))[0];
  return { deleted, low, first, beyond, lowAfterBeyond, all, lowAll: offsets.low, high: offsets.high };
}

// 'ok' once p resolves, its error's type if it rejects, 'timeout' if it
// does neither within 20 s
async function settle(p) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 20000); });
  try {
    return await Promise.race([p.then(() => 'ok'), timeout]);
  } catch (e) {
    return e.type || e.name;
  } finally {
    clearTimeout(timer);
  }
}

// the offset of the first record a new member of groupId reads (its
// committed offset, fromBeginning left false)
async function resumesAt(groupId) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic });
  let first;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => { if (first === undefined) first = message.offset; done(); } });
  const timer = setTimeout(done, 30000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  return first;
}

// resetOffsets and setOffsets of a group with no members: kafkajs commits
// through a consumer's seek, the logical offsets -2 (earliest) and -1
// (latest) for a reset; each settles, and the group's committed offset is
// the position named
async function resetTest(admin) {
  const groupId = `${topic}-reset`;
  const committed = async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset;
  await (await consume(groupId, 10)).disconnect();
  const out = { before: await committed() };
  out.earliest = await settle(admin.resetOffsets({ groupId, topic, earliest: true }));
  out.afterEarliest = await committed();
  out.latest = await settle(admin.resetOffsets({ groupId, topic }));
  out.afterLatest = await committed();
  out.set = await settle(admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '7' }] }));
  out.afterSet = await committed();
  out.resumed = await resumesAt(groupId);
  return out;
}

// alterPartitionReassignments of one partition to replicas: 'none' or
// its error's type (kafkajs refuses null replicas, a cancel, itself)
async function reassign(admin, name, partition, replicas) {
  try {
    await admin.alterPartitionReassignments({ topics: [{ topic: name, partitionAssignment: [{ partition, replicas }] }] });
    return 'none';
  } catch (e) {
    const err = e.errors ? e.errors[0] : e; // a partition's error comes in an aggregate
    if (!err || !err.type) throw e;
    return err.type;
  }
}

// listPartitionReassignments and alterPartitionReassignments on a single
// daemon (broker 1, the only one): nothing moves
async function reassignTest(admin) {
  return {
    listed: JSON.stringify((await admin.listPartitionReassignments({})).topics),
    listedOne: JSON.stringify((await admin.listPartitionReassignments({ topics: [{ topic, partitions: [0] }] })).topics),
    same: await reassign(admin, topic, 0, [1]),
    other: await reassign(admin, topic, 0, [1, 2]),
    unknown: await reassign(admin, `${topic}-nope`, 0, [1]),
    partition: await reassign(admin, topic, 5, [1]),
  };
}

// the error type of admin.alterConfigs of one resource, or 'none'
async function alter(admin, type, name, entries, validateOnly) {
  try {
    await admin.alterConfigs({ validateOnly, resources: [{ type, name, configEntries: entries }] });
    return 'none';
  } catch (e) {
    const err = e.type ? e : e.cause; // the retrier wraps it
    if (!err || !err.type) throw e;
    return err.type;
  }
}

// a topic's configs from DescribeConfigs, as "key=value,..." in key
// order: those set (defaults false) or the defaults (true, with source)
async function config(admin, name, defaults = false) {
  const res = await admin.describeConfigs({ includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name }] });
  return res.resources[0].configEntries.filter((c) => c.isDefault === defaults)
    .map((c) => `${c.configName}=${c.configValue}${defaults ? `(${c.configSource})` : ''}`).sort().join(',');
}

async function configsTest(admin) {
  const name = `${topic}-cfg`;
  await admin.createTopics({ topics: [{ topic: name, configEntries: [{ name: 'retention.ms', value: '86400000' }] }] });
  const T = ConfigResourceTypes.TOPIC;
  const validated = await alter(admin, T, name, [{ name: 'retention.ms', value: '3600000' }], true);
  const afterValidate = await config(admin, name);
  const replaced = await alter(admin, T, name, [{ name: 'max.message.bytes', value: '1000' }]);
  const afterReplace = await config(admin, name);
  const invalid = await alter(admin, T, name, [{ name: 'retention.ms', value: 'soon' }]);
  const afterInvalid = await config(admin, name);
  const unknown = await alter(admin, T, `${topic}-nope`, [{ name: 'retention.ms', value: '1' }]);
  const broker = await alter(admin, ConfigResourceTypes.BROKER, '1', [{ name: 'log.retention.ms', value: '1' }]);
  const defaults = await config(admin, name, true);
  const describeBroker = async (id) => (await admin.describeConfigs({ includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.BROKER, name: id }] })).resources[0].configEntries
    .map((c) => `${c.configName}=${c.configValue}(${c.configSource}${c.readOnly ? ',ro' : ''})`).sort().join(' ');
  return { validated, afterValidate, replaced, afterReplace, invalid, afterInvalid, unknown, broker, defaults,
    brokerConfigs: await describeBroker('1') };
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
  out.reset = await resetTest(admin);
  out.records = await recordsTest(admin);
  out.configs = await configsTest(admin);
  out.reassign = await reassignTest(admin);
  await admin.disconnect();
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
