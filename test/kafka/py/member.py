"""A kafka-python group member that prints what it is given and reads.

Run by test/kafka/groups.sh with Debian's /usr/bin/python3:

    member.py BROKER TOPIC GROUP

Unlike kcat, which exits once every broker connection is down, it rides
out a broker restart, as applications do.  Prints, flushed, one line per
event: "assigned 0,1" / "revoked 0" for rebalances (partitions sorted),
and "record P VALUE" for each record read.  Runs until killed.
"""
import sys

from kafka import ConsumerRebalanceListener, KafkaConsumer

broker, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]


def say(line):
    print(line, flush=True)


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        say("revoked " + ",".join(str(p.partition) for p in sorted(revoked)))

    def on_partitions_assigned(self, assigned):
        say("assigned " + ",".join(str(p.partition) for p in sorted(assigned)))


consumer = KafkaConsumer(bootstrap_servers=broker, group_id=group,
                         session_timeout_ms=10000, heartbeat_interval_ms=500,
                         auto_offset_reset="latest")
consumer.subscribe([topic], listener=Listener())
while True:
    for records in consumer.poll(timeout_ms=500).values():
        for r in records:
            say("record %d %s" % (r.partition, r.value.decode()))
