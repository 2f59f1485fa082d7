"""A commit beyond the log end through kafka-python at its defaults.

Run by test/kafka/commit_beyond_end.sh with Debian's /usr/bin/python3
(python3-kafka 2.0.2):

    beyond_end.py commit BROKER TOPIC GROUP OFFSET
        commits OFFSET for partition 0 of TOPIC in GROUP (a consumer with
        the partition assigned, auto-commit off) and reads it back
    beyond_end.py consume BROKER TOPIC GROUP COUNT
        a member of GROUP (subscribed, every setting at its default, so
        auto_offset_reset 'latest' and auto-commit on) reads until it has
        COUNT records or 60 s passed, then closes (committing)

Prints one JSON object (the last line of output).
"""
import json
import sys
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

mode, broker, topic, group = sys.argv[1:5]
tp = TopicPartition(topic, 0)
out = {}
if mode == "commit":
    c = KafkaConsumer(bootstrap_servers=broker, group_id=group, enable_auto_commit=False)
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(int(sys.argv[5]), "far")})
    out["committed"] = c.committed(tp)
    c.close()
else:
    want = int(sys.argv[5])
    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group)
    got = []
    deadline = time.time() + 60
    while len(got) < want and time.time() < deadline:
        for recs in c.poll(timeout_ms=500).values():
            got += [[r.offset, r.value.decode()] for r in recs]
        if not got:
            out["assigned"] = [p.partition for p in c.assignment()]
            out["position"] = c.position(tp) if tp in c.assignment() else None
            print(json.dumps(out), flush=True)
    out["records"] = got
    c.close()
print(json.dumps(out))
