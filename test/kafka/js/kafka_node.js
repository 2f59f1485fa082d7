// kafka-node (npm) at its defaults against mq-kafka (test/kafka/kafka_node.sh
// runs it):
//   node kafka_node.js BROKER TOPIC
// creates TOPIC (2 partitions) with KafkaClient.createTopics, sends 50
// keyed records with a Producer and 3 with a HighLevelProducer, reads the
// log end with Offset, consumes everything with a ConsumerGroup that
// commits, lists and describes the group with Admin, then reads partition
// 0 with the old simple Consumer, whose auto-commit stores its position.
// Prints one JSON object of what it saw.
const kafka = require('kafka-node');
const { promisify } = require('util');

const [host, topic] = process.argv.slice(2);
const out = {};

function consumeGroup() {
  return new Promise((resolve, reject) => {
    const group = new kafka.ConsumerGroup({ kafkaHost: host, groupId: 'kn-group', fromOffset: 'earliest' }, [topic]);
    let n = 0;
    group.on('error', reject);
    group.on('message', () => {
      if (++n === 53) {
        group.commit(true, (err) => (err ? reject(err) : group.close(true, () => resolve(n))));
      }
    });
  });
}

function consumeSimple(client) {
  return new Promise((resolve, reject) => {
    const consumer = new kafka.Consumer(client, [{ topic, partition: 0, offset: 0 }],
      { groupId: 'kn-simple', fromOffset: true, autoCommitIntervalMs: 200 });
    let n = 0;
    consumer.on('error', reject);
    consumer.on('message', () => { n++; });
    // each fetch's 'done' moves the offsets the auto-commit sends
    consumer.on('done', () => {
      if (n > 0) consumer.commit(true, (err) => (err ? reject(err) : consumer.close(() => resolve(n))));
    });
  });
}

async function main() {
  const client = new kafka.KafkaClient({ kafkaHost: host });
  const producer = new kafka.Producer(client);
  await new Promise((resolve, reject) => { producer.on('ready', resolve); producer.on('error', reject); });
  out.created = await promisify(client.createTopics.bind(client))([{ topic, partitions: 2, replicationFactor: 1 }]);
  const keyed = [];
  for (let i = 0; i < 50; i++) keyed.push(new kafka.KeyedMessage(`k${i}`, `v${i}`));
  await promisify(producer.send.bind(producer))([{ topic, messages: keyed, partition: 0 }]);
  // on a client that is ready already, 'ready' came in the constructor
  const high = new kafka.HighLevelProducer(client);
  await promisify(high.send.bind(high))([{ topic, messages: ['h0', 'h1', 'h2'] }]);
  const offset = new kafka.Offset(client);
  out.latest = await promisify(offset.fetchLatestOffsets.bind(offset))([topic]);
  out.consumed = await consumeGroup();
  const admin = new kafka.Admin(client);
  out.groups = await promisify(admin.listGroups.bind(admin))();
  const described = await promisify(admin.describeGroups.bind(admin))(['kn-group']);
  out.groupState = described['kn-group'].state;
  out.groupCommitted = await promisify(offset.fetchCommitsV1.bind(offset))('kn-group', [{ topic, partition: 0 }]);
  out.simpleConsumed = await consumeSimple(new kafka.KafkaClient({ kafkaHost: host }));
  out.simpleCommitted = await promisify(offset.fetchCommitsV1.bind(offset))('kn-simple', [{ topic, partition: 0 }]);
  console.log(JSON.stringify(out));
  client.close(() => process.exit(0));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
