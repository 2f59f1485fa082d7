"""kafka-python told an old broker version, so that it speaks the old
message formats (issue 23), run by test/kafka/oldformat.sh with Debian's
/usr/bin/python3 (python3-kafka 2.0.2):

    oldformat.py BROKER TOPIC

api_version (0, 9) produces with Produce v1 and fetches with Fetch v1:
message format v0, no timestamps; (0, 10) uses Produce v2 and Fetch v2:
format v1, with each record's CreateTime.  Each round sends three
records plainly and three gzip-compressed (a wrapper message holding a
compressed message set), with CreateTime 1000000000000 + i ms, then a
consumer of that version reads the partition from the start.  Prints
one JSON object: per round, the offsets the producer got, the (value,
timestamp, offset) of its own records the consumer read, and whether the
earlier round's records came with a timestamp.
"""
import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

broker, topic = sys.argv[1], sys.argv[2]
out = {}
for name, version in (("v09", (0, 9)), ("v010", (0, 10))):
    sent = []
    for codec in (None, "gzip"):
        p = KafkaProducer(bootstrap_servers=broker, api_version=version,
                          compression_type=codec, linger_ms=50)
        futures = [p.send(topic, value=("%s-%s-%d" % (name, codec or "none", i)).encode(),
                          key=b"k", partition=0, timestamp_ms=1000000000000 + i)
                   for i in range(3)]
        p.flush()
        sent += [f.get(timeout=30).offset for f in futures]
        p.close()
    c = KafkaConsumer(bootstrap_servers=broker, api_version=version,
                      consumer_timeout_ms=3000, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [[m.value.decode(), m.timestamp, m.offset] for m in c]
    c.close()
    # its own records, and whether the earlier round's (format v0, stamped
    # by mq) came with a timestamp
    out[name] = {"sent": sent, "read": [g for g in got if g[0].startswith(name + "-")],
                 "others_timed": [g[1] is not None and g[1] > 0 for g in got
                                  if not g[0].startswith(name + "-")]}
print(json.dumps(out, sort_keys=True))
