// @platformatic/kafka (npm, pinned by package-lock.json) against mq-kafka
// at its defaults, run by test/kafka/platformatic.sh: a pure-JavaScript
// client at the newest versions Kafka 3.9 serves (Produce v11, Fetch v17,
// Metadata v12, ListOffsets v9, JoinGroup v9, OffsetCommit and
// OffsetFetch v9 (the admin's of two groups at once), FindCoordinator v6).  Usage: node client.mjs BROKER
// PREFIX.  Prints one JSON object: each step's result, or "ERR ..." with
// the client's error.
import { Producer, Consumer, Admin, stringSerializers, stringDeserializers } from '@platformatic/kafka'

const [broker, prefix] = process.argv.slice(2)
const brokers = [broker]
const topic = prefix
const tin = prefix + '_in'
const tout = prefix + '_out'
const scratch = prefix + '_scratch'
const out = {}
const describe = e => 'ERR ' + (e.message || e) +
  (e.errors ? ' ' + e.errors.map(x => x.message).join('; ') : '')
const step = async (name, f) => {
  try { out[name] = (await f()) ?? 'ok' } catch (e) { out[name] = describe(e) }
}
const list = map => [...map.entries()].map(([k, v]) => [k, v.map(String)])
// read n messages from a consume() stream, as "partition/offset:key=value"
const take = async (stream, n, show = m => `${m.partition}/${m.offset}:${m.key}=${m.value}`) => {
  const got = []
  for await (const m of stream) {
    got.push(show(m))
    if (got.length === n) break
  }
  await stream.close()
  return got.sort()
}
setTimeout(() => { out.timeout = true; console.log(JSON.stringify(out)); process.exit(1) }, 100000)

const admin = new Admin({ clientId: 'pf-admin', bootstrapBrokers: brokers })
await step('create', async () => {
  const r = await admin.createTopics({ topics: [topic, tin, tout, scratch], partitions: 2, replicas: 1 })
  return r.map(t => `${t.name}:${t.partitions}`).sort()
})

const producer = new Producer({ clientId: 'pf-producer', bootstrapBrokers: brokers, serializers: stringSerializers })
await step('send', async () => {
  const r = await producer.send({
    messages: Array.from({ length: 10 }, (_, i) => ({ topic, key: 'k' + i, value: 'v' + i, headers: { h: 'x' + i } }))
  })
  return r.offsets.length
})
await step('seed', async () => {
  await producer.send({ messages: Array.from({ length: 6 }, (_, i) => ({ topic: tin, key: 'k' + i, value: 'v' + i })) })
})
await producer.close()

const idem = new Producer({ clientId: 'pf-idem', bootstrapBrokers: brokers, serializers: stringSerializers, idempotent: true })
await step('idempotent', async () => {
  await idem.send({ messages: [{ topic, key: 'i', value: 'idem', partition: 0 }] })
  return String(idem.producerId)
})
await idem.close()

// a group at the defaults: autocommit, from the earliest offset
const consumer = new Consumer({ groupId: prefix + '-group', clientId: 'pf-consumer', bootstrapBrokers: brokers, deserializers: stringDeserializers })
await step('consumed', async () => take(await consumer.consume({ topics: [topic], mode: 'earliest' }), 11,
  m => `${m.key}=${m.value}:${(m.headers && m.headers.get('h')) || ''}`))
await step('committed', async () => list(await consumer.listCommittedOffsets({ topics: [{ topic, partitions: [0, 1] }] })))
await step('listOffsets', async () => list(await consumer.listOffsets({ topics: [topic] })))
await consumer.close()

// consume, transform, produce: each input record's output and offset in
// one transaction; the one with value v3 aborted
const tp = new Producer({ clientId: 'pf-txn', bootstrapBrokers: brokers, serializers: stringSerializers, idempotent: true, transactionalId: prefix + '-txn' })
const tc = new Consumer({ groupId: prefix + '-txn-group', clientId: 'pf-txn-consumer', bootstrapBrokers: brokers, deserializers: stringDeserializers, autocommit: false })
await step('transactions', async () => {
  const stream = await tc.consume({ topics: [tin], mode: 'earliest', autocommit: false })
  let n = 0
  for await (const m of stream) {
    const t = await tp.beginTransaction()
    await t.send({ messages: [{ topic: tout, key: m.key, value: m.value.toUpperCase() }] })
    await t.addConsumer(tc)
    await t.addOffset(m)
    if (m.value === 'v3') await t.abort(); else await t.commit()
    if (++n === 6) break
  }
  await stream.close()
})
await tc.close()
await tp.close()
// a new instance of the same transactional id (a restart) takes it over:
// its first InitProducerId sends producer id 0, epoch 0
const tp2 = new Producer({ clientId: 'pf-txn-2', bootstrapBrokers: brokers, serializers: stringSerializers, idempotent: true, transactionalId: prefix + '-txn' })
await step('reopened', async () => {
  const t = await tp2.beginTransaction()
  await t.send({ messages: [{ topic: tout, key: 'r', value: 'REOPENED' }] })
  await t.commit()
})
await tp2.close()
const reader = new Consumer({ groupId: prefix + '-reader', clientId: 'pf-reader', bootstrapBrokers: brokers, deserializers: stringDeserializers })
await step('transformed', async () => take(await reader.consume({ topics: [tout], mode: 'earliest' }), 6, m => m.value))
await reader.close()

// OffsetFetch v9 of two groups in one request (KIP-709): each group's
// offsets, as "group:topic=partition/offset,...;topic=..." in the order answered
const offsetsOf = g => g.groupId + ':' + g.topics.map(t => t.name + '=' +
  [...t.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex).map(p => `${p.partitionIndex}/${p.committedOffset}`).join(',')).sort().join(';')
await step('groupOffsets', async () =>
  (await admin.listConsumerGroupOffsets({ groups: [prefix + '-group', prefix + '-txn-group'] })).map(offsetsOf).join(' '))
await step('groups', async () => [...(await admin.listGroups()).keys()].filter(g => g.startsWith(prefix)).sort())
await step('groupStates', async () => [...(await admin.describeGroups({ groups: [prefix + '-group'] })).values()].map(g => `${g.id}:${g.state}:${g.protocol}`))
await step('deleted', async () => { await admin.deleteTopics({ topics: [scratch] }) })
await admin.close()
console.log(JSON.stringify(out))
process.exit(0)
