// kafkajs's partition reassignments (test/t/160_kafka_reassign.pl runs it):
//   node reassign.js BROKER list
//   node reassign.js BROKER alter TOPIC PARTITION REPLICAS
//   node reassign.js BROKER configs ID
// list prints the moving partitions as JSON ({topic/partition: {replicas,
// adding, removing}}); alter prints 'none'; configs (DescribeConfigs of
// broker ID, which needs DESCRIBE on the cluster too) its broker.id.  A
// refusal prints its error's type (a partition's, for alter) instead.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [broker, what, topic, partition, replicas] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-reassign-test', brokers: [broker], logLevel: logLevel.NOTHING });

async function list(admin) {
  const moving = {};
  for (const t of (await admin.listPartitionReassignments({})).topics) {
    for (const p of t.partitions) {
      moving[`${t.name}/${p.partition}`] = { replicas: p.replicas, adding: p.addingReplicas, removing: p.removingReplicas };
    }
  }
  return JSON.stringify(moving);
}

async function alter(admin) {
  await admin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: [{
    partition: Number(partition), replicas: replicas.split(',').map(Number) }] }] });
  return 'none';
}

async function configs(admin) {
  const res = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 4, name: topic }] });
  const r = res.resources[0];
  if (r.errorCode !== 0) return `error ${r.errorCode}`;
  return (r.configEntries.find((c) => c.configName === 'broker.id') || {}).configValue;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    console.log(await ({ list, alter, configs }[what])(admin));
  } catch (e) {
    const err = e.errors ? e.errors[0] : e; // a partition's error comes in an aggregate
    if (!err.type) throw e;
    console.log(err.type);
  }
  await admin.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });
