// kafkajs transactions against mq-kafka (test/kafka/kafkajs_txn.sh runs it):
//   node txn.js BROKER IN OUT GROUP TXN_ID N
// consume-transform-produce with kafkajs's defaults where it has them: a
// consumer group (kafkajs reads committed records by default) and a
// transactional producer (idempotent, one request in flight, as kafkajs
// requires for transactions); each batch of IN is written upper-cased to
// OUT and its offsets sent to the transaction, then committed; N records
// in all.  Then one transaction is aborted.  Prints one JSON line:
// {"committed": records committed, "transactions": how many,
//  "aborted": true once the abort returned}.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [broker, src, dst, groupId, transactionalId, n] = process.argv.slice(2);
const N = Number(n);
const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: [broker], logLevel: logLevel.WARN });

async function main() {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: src, fromBeginning: true });
  let committed = 0;
  let transactions = 0;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return;
      const txn = await producer.transaction();
      try {
        await txn.send({
          topic: dst,
          messages: batch.messages.map((m) => ({ key: m.key, value: String(m.value).toUpperCase() })),
        });
        const next = (BigInt(batch.lastOffset()) + 1n).toString();
        await txn.sendOffsets({
          consumerGroupId: groupId,
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
        });
        await txn.commit();
      } catch (e) {
        await txn.abort();
        throw e;
      }
      for (const m of batch.messages) resolveOffset(m.offset);
      await heartbeat();
      committed += batch.messages.length;
      transactions++;
      if (committed >= N) done();
    },
  });
  const timer = setTimeout(done, 90000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();

  const txn = await producer.transaction();
  await txn.send({ topic: dst, messages: [{ value: 'aborted-by-kafkajs' }] });
  await txn.abort();
  await producer.disconnect();
  process.stdout.write(JSON.stringify({ committed, transactions, aborted: true }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
