"""__consumer_offsets through kafka-python (issue 23, item 3).

Run by test/kafka/consumer_offsets.sh and test/kafka/burrow.sh with
Debian's /usr/bin/python3 (python3-kafka 2.0.2):

    coffsets.py commit BROKER TOPIC GROUP PARTITION:OFFSET...
        a member of GROUP (subscribed to TOPIC) commits those offsets
        through OffsetCommit, then leaves
    coffsets.py read BROKER
        reads __consumer_offsets from its beginning to its end as a Kafka
        tool does, decodes each record in Kafka's formats (offset commit
        key v0/v1, value v0/v1/v3; group metadata key v2, value v0-v3),
        says whether the topic is internal in the client's metadata, and
        tries to produce to it; a consumer group member's subscription and
        assignment are decoded with kafka-python's ConsumerProtocol classes

Prints one JSON object (the last line of output).  The decoders follow
Kafka's published schemas (OffsetCommitKey/Value, GroupMetadataKey/Value);
a record they cannot decode is reported, never skipped.
"""
import json
import struct
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.coordinator.protocol import (ConsumerProtocolMemberAssignment,
                                       ConsumerProtocolMemberMetadata)
from kafka.structs import OffsetAndMetadata

TOPIC = "__consumer_offsets"


class Reader:
    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, fmt):
        v = struct.unpack_from(">" + fmt, self.b, self.i)[0]
        self.i += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("h")
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode()
        self.i += n
        return s

    def bytes_(self):
        n = self.take("i")
        if n < 0:
            return None
        s = self.b[self.i:self.i + n]
        self.i += n
        return s

    def done(self):
        return self.i == len(self.b)


def decode_offset_value(r):
    v = r.take("h")
    out = {"value_version": v, "offset": r.take("q")}
    if v >= 3:
        out["leader_epoch"] = r.take("i")
    out["metadata"] = r.string()
    out["commit_timestamp"] = r.take("q")
    if v == 1:
        out["expire_timestamp"] = r.take("q")
    if v not in (0, 1, 3):
        raise ValueError("offset value version %d" % v)
    return out


def consumer_protocol(m, sub, assign):
    """A consumer group member's subscription and assignment, decoded by
    kafka-python's own ConsumerProtocol classes (what a client reads)."""
    try:
        if sub:
            m["subscription"] = list(ConsumerProtocolMemberMetadata.decode(sub).subscription)
        if assign:
            a = ConsumerProtocolMemberAssignment.decode(assign)
            m["assignment"] = {t: sorted(ps) for t, ps in a.assignment}
    except Exception as e:  # reported with the member
        m["protocol_error"] = repr(e)


def decode_group_value(r):
    v = r.take("h")
    out = {"value_version": v, "protocol_type": r.string(), "generation": r.take("i"),
           "protocol": r.string(), "leader": r.string()}
    if v >= 2:
        out["state_timestamp"] = r.take("q")
    members = []
    for _ in range(r.take("i")):
        m = {"member_id": r.string()}
        if v >= 3:
            m["instance_id"] = r.string()
        m["client_id"] = r.string()
        m["client_host"] = r.string()
        if v >= 1:
            m["rebalance_timeout"] = r.take("i")
        m["session_timeout"] = r.take("i")
        sub, assign = r.bytes_() or b"", r.bytes_() or b""
        m["subscription_len"] = len(sub)
        m["assignment_len"] = len(assign)
        if out["protocol_type"] == "consumer":
            consumer_protocol(m, sub, assign)
        members.append(m)
    out["members"] = members
    return out


def decode(key, value):
    r = Reader(key)
    kv = r.take("h")
    if kv in (0, 1):
        out = {"kind": "offset", "key_version": kv, "group": r.string(), "topic": r.string(),
               "partition": r.take("i")}
        if value is not None:
            vr = Reader(value)
            out.update(decode_offset_value(vr))
            out["value_complete"] = vr.done()
    elif kv == 2:
        out = {"kind": "group", "key_version": kv, "group": r.string()}
        if value is not None:
            vr = Reader(value)
            out.update(decode_group_value(vr))
            out["value_complete"] = vr.done()
    else:
        raise ValueError("key version %d" % kv)
    out["key_complete"] = r.done()
    out["tombstone"] = value is None
    return out


def java_hash_partition(group, n):
    """Kafka's partitionFor: Utils.abs(group.hashCode()) % n"""
    h = 0
    units = group.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % n


def read(broker):
    out = {"records": [], "undecoded": 0}
    # a producer asks for it by name, as a tool given the topic does:
    # that creates it
    p = KafkaProducer(bootstrap_servers=broker, retries=0)
    out["partitions_by_name"] = len(p.partitions_for(TOPIC))
    c = KafkaConsumer(bootstrap_servers=broker, enable_auto_commit=False)
    parts = sorted(c.partitions_for_topic(TOPIC) or [])
    out["partitions"] = len(parts)
    out["listed_by_topics"] = TOPIC in c.topics()
    out["internal"] = TOPIC in c._client.cluster.internal_topics
    tps = [TopicPartition(TOPIC, p) for p in parts]
    c.assign(tps)
    c.seek_to_beginning()
    ends = c.end_offsets(tps)
    deadline = time.time() + 30
    while time.time() < deadline and any(c.position(tp) < ends[tp] for tp in tps):
        for tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                try:
                    rec = decode(m.key, m.value)
                    rec["at"] = [m.partition, m.offset]
                    rec["kafka_partition"] = (
                        m.partition == java_hash_partition(rec["group"], len(parts)))
                    out["records"].append(rec)
                except Exception as e:  # reported, never skipped
                    out["undecoded"] += 1
                    out["error"] = repr(e)
    out["complete"] = all(c.position(tp) >= ends[tp] for tp in tps)
    c.close()
    try:
        p.send(TOPIC, key=b"k", value=b"v").get(timeout=20)
        out["produce"] = "accepted"
    except Exception as e:
        out["produce"] = type(e).__name__
    p.close()
    return out


def commit(broker, topic, group, specs):
    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    deadline = time.time() + 60
    while not c.assignment() and time.time() < deadline:
        c.poll(timeout_ms=200)
    offsets = {}
    for s in specs:
        p, o = s.split(":")
        offsets[TopicPartition(topic, int(p))] = OffsetAndMetadata(int(o), "by kafka-python")
    assigned = sorted(tp.partition for tp in c.assignment())
    c.commit(offsets)
    c.close()
    return {"assigned": assigned, "committed": specs}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "read":
        res = read(sys.argv[2])
    else:
        res = commit(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    print(json.dumps(res, sort_keys=True))
