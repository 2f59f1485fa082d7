"""DescribeTopicPartitions v0 (topic_partitions.sh): each call named on
the command line as JSON [topics, limit, cursor] is answered as
{"topics": [[error, name, id, internal, [[error, partition, leader,
epoch, replicas, isr, elr, last_elr, offline], ...], ops], ...],
"next": [topic, partition] or null}; the list of answers is printed as
one JSON object.  Also Metadata v12's topic ids, to compare.

Usage: topic_partitions.py PORT CALLS_JSON"""
import json
import struct
import sys

from kwire import Client, Reader, arr, s, uvarint


def ints(r):
    n = r.count()
    return None if n < 0 else [r.take('>i') for _ in range(n)]


def describe(c, topics, limit, cursor):
    body = arr([s(t, True) + b'\0' for t in topics], True) + struct.pack('>i', limit)
    body += b'\xff' if cursor is None else b'\x01' + s(cursor[0], True) + struct.pack('>i', cursor[1]) + b'\0'
    r = Reader(c.call(75, 0, body + b'\0', True), True)
    r.take('>i')
    out = []
    for _ in range(r.count()):
        err, name = r.take('>h'), r.str()
        tid = r.d[r.p:r.p + 16].hex()
        r.p += 16
        internal = r.take('>b')
        parts = []
        for _ in range(r.count()):
            p = list(r.take('>hiii'))
            p += [ints(r), ints(r), ints(r), ints(r), ints(r)]
            r.tags()
            parts.append(p)
        ops = r.take('>i')
        r.tags()
        out.append([err, name, tid, internal, parts, ops])
    nxt = None
    if r.take('>b') >= 0:
        nxt = [r.str(), r.take('>i')]
        r.tags()
    return {'topics': out, 'next': nxt}


def metadata_ids(c):
    """topic name -> id from Metadata v12 (every topic)"""
    body = b'\0' + b'\0\0\0'  # null topic array, no auto-create, no authorized ops
    r = Reader(c.call(3, 12, uvarint(0) + b'\0\0\0\0', True), True)
    r.take('>i')
    for _ in range(r.count()):
        r.take('>i')
        r.str()
        r.take('>i')
        r.str()
        r.tags()
    r.str()
    r.take('>i')
    ids = {}
    for _ in range(r.count()):
        r.take('>h')
        name = r.str()
        ids[name] = r.d[r.p:r.p + 16].hex()
        r.p += 16
        r.take('>b')
        for _ in range(r.count()):
            r.take('>hiii')
            ints(r), ints(r), ints(r)
            r.tags()
        r.take('>i')
        r.tags()
    return ids


c = Client(int(sys.argv[1]), client_id='topic-partitions')
print(json.dumps({'calls': [describe(c, *call) for call in json.loads(sys.argv[2])],
                  'ids': metadata_ids(c)}))
