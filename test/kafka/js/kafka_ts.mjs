// kafka-ts (npm) against mq-kafka at its defaults, run by
// test/kafka/kafka_ts.sh: a producer sends ten records with headers, a
// group reads them from the beginning and commits, then its low-level
// API (every request at the newest version both sides serve) asks for
// the group's offsets, DescribeTopicPartitions, ElectLeaders and
// DescribeDelegationToken.  Usage: node kafka_ts.mjs BROKER TOPIC.
// Prints one JSON object: each step's result, or "ERR ..." with the
// client's error.
import kts from 'kafka-ts'

const { createKafkaClient, API, setLogger } = kts
const [broker, topic] = process.argv.slice(2)
const [host, port] = broker.split(':')
setLogger({ debug () {}, info () {}, warn () {}, error () {} })
const kafka = createKafkaClient({ clientId: 'mq-kafka-ts', bootstrapServers: [{ host, port: Number(port) }] })
const out = {}
const step = async (name, f) => {
  try { out[name] = (await f()) ?? 'ok' } catch (e) { out[name] = 'ERR ' + (e.apiName ?? e.name ?? '') + ' ' + String(e.message ?? e) }
}
const wait = async (done, ms = 30000) => {
  const t0 = Date.now()
  while (!done() && Date.now() - t0 < ms) await new Promise(resolve => setTimeout(resolve, 100))
  return done()
}
setTimeout(() => { out.timeout = true; console.log(JSON.stringify(out)); process.exit(1) }, 90000)

const producer = kafka.createProducer({})
await step('send', () => producer.send(Array.from({ length: 10 }, (_, i) =>
  ({ topic, key: `k${i}`, value: `v${i}`, headers: { h: `x${i}` } }))))
await producer.close()

const got = []
await step('consume', async () => {
  const consumer = await kafka.startConsumer({
    groupId: `${topic}-group`,
    topics: [topic],
    fromBeginning: true,
    onBatch: messages => { for (const m of messages) got.push(`${m.key}=${m.value}:${m.headers.h}`) }
  })
  await wait(() => got.length >= 10)
  await consumer.close()
  return got.sort()
})

const cluster = kafka.createCluster()
await cluster.connect()
await step('offsets', async () => {
  const r = await cluster.sendRequest(API.OFFSET_FETCH, {
    groups: [{ groupId: `${topic}-group`, memberId: null, memberEpoch: -1, topics: null }], requireStable: true
  })
  return r.groups[0].topics.flatMap(t => t.partitions.map(p => `${t.name}-${p.partitionIndex}:${p.committedOffset}`)).sort()
})
await step('describeTopicPartitions', async () => {
  const r = await cluster.sendRequest(API.DESCRIBE_TOPIC_PARTITIONS,
    { topics: [{ name: topic }], responsePartitionLimit: 2000, cursor: null })
  return r.topics.map(t => `${t.name}:${t.partitions.length}:${t.partitions.map(p => p.leaderId).join(',')}`)
})
await step('electLeaders', () => cluster.sendRequest(API.ELECT_LEADERS,
  { electionType: 0, topicPartitions: [{ topic, partitions: [0] }], timeoutMs: 5000 }))
await step('describeDelegationToken', () => cluster.sendRequest(API.DESCRIBE_DELEGATION_TOKEN, { owners: null }))
await cluster.disconnect()
console.log(JSON.stringify(out))
process.exit(0)
