// @platformatic/kafka's DescribeTopicPartitions v0 (its raw API, which
// its Admin does not call yet) against mq-kafka, run by
// test/kafka/topic_partitions.sh: every topic a page of LIMIT partitions
// at a time, following the next cursor until there is none.
// Usage: node topic_partitions.mjs BROKER LIMIT.  Prints one JSON object:
// the pages, each "topic:partition,..." with the cursor it ended on.
import { Connection, describeTopicPartitionsV0 } from '@platformatic/kafka'

const [broker, limit] = process.argv.slice(2)
const [host, port] = broker.split(':')
setTimeout(() => { console.log(JSON.stringify({ timeout: true })); process.exit(1) }, 60000)

const conn = new Connection('pf-topic-partitions')
await conn.connect(host, Number(port))
const pages = []
let cursor = null
do {
  const r = await describeTopicPartitionsV0.api.async(conn, [], Number(limit), cursor)
  cursor = r.nextCursor ?? null
  pages.push(r.topics.flatMap(t => t.partitions.map(p => `${t.name}:${p.partitionIndex}`)).join(',') +
    (cursor ? ` -> ${cursor.topicName}:${cursor.partitionIndex}` : ''))
} while (cursor && pages.length < 20)
await conn.close()
console.log(JSON.stringify({ pages }))
process.exit(0)
