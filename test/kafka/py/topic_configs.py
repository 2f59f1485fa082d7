"""Kafka's topic configs through confluent-kafka's AdminClient at its
defaults (test/kafka/topic_configs.sh): a topic created with configs mq
keeps without acting on them, Kafka's "no limit" for a time and
min.insync.replicas above the replicas; DescribeConfigs reports them;
tiered storage is INVALID_CONFIG; a producer at its defaults (acks=all)
gets NOT_ENOUGH_REPLICAS, one with acks=1 writes.  Prints one line per
check."""
import sys

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

broker = sys.argv[1]
a = AdminClient({'bootstrap.servers': broker})
configs = {'compression.type': 'zstd', 'retention.ms': '9223372036854775807', 'min.insync.replicas': '2',
           'segment.jitter.ms': '1000', 'message.format.version': '3.0-IV1', 'preallocate': 'true',
           'flush.messages': '1'}
a.create_topics([NewTopic('tc', 1, 1, config=configs)])['tc'].result(15)
print('created')
r = ConfigResource('topic', 'tc')
got = a.describe_configs([r])[r].result(15)
for k in sorted(configs):
    e = got[k]
    print('%s=%s default=%s' % (k, e.value, e.is_default))
print('segment.index.bytes=%s default=%s' % (got['segment.index.bytes'].value, got['segment.index.bytes'].is_default))
syn = lambda e: ','.join('%s=%s' % (x.name, x.value) for x in e.synonyms.values())  # noqa: E731
print('synonyms: retention.ms %s; segment.index.bytes %s' % (syn(got['retention.ms']), syn(got['segment.index.bytes'])))
try:
    a.create_topics([NewTopic('tc-tiered', 1, 1, config={'remote.storage.enable': 'true'})])['tc-tiered'].result(15)
    print('tiered: created')
except KafkaException as e:
    print('tiered: %s' % e.args[0].name())


def send(conf):
    p = Producer(dict(conf, **{'bootstrap.servers': broker, 'message.send.max.retries': 0}))
    out = []
    p.produce('tc', b'v', on_delivery=lambda err, m: out.append(err.name() if err else 'ok'))
    p.flush(15)
    return out[0] if out else 'no report'


print('defaults (acks=all): %s' % send({}))
print('acks=1: %s' % send({'acks': '1'}))
