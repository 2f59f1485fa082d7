"""Latency of mq-kafka's lookups of one partition (test/bench/kafka_lookups.sh):
PORT TOPIC COUNT -> one line per request kind, "kind median_us p90_us",
each kind sent COUNT times in turn on one connection:

  apiversions  ApiVersions v0: no database work (the floor)
  metadata     Metadata v1 of TOPIC
  fetch4       Fetch v4 of TOPIC partition 0 from offset 0 (batches from
               the database)
  fetch13      Fetch v13 of the same, the topic named by its id (KIP-516)
"""
import hashlib
import struct
import sys
import time

sys.path.insert(0, sys.path[0] + '/../kafka/py')
from kwire import Client, Reader, s, uvarint  # noqa: E402

port, topic, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = Client(port, client_id='kafka_lookups.py')
tid = hashlib.md5(topic.encode()).digest()


def check_fetch4(r):
    r = Reader(r)
    r.take('>i')
    r.take('>i')
    r.str()
    r.take('>i')
    assert r.take('>ih')[1] == 0, 'fetch v4 error'


def check_fetch13(r):
    r = Reader(r, True)
    r.take('>ihi')
    assert r.uvarint() == 2 and r.take('16s') == tid, 'fetch v13 topic'
    r.uvarint()
    assert r.take('>ih')[1] == 0, 'fetch v13 error'


KINDS = {
    'apiversions': (18, 0, b'', False, None),
    'metadata': (3, 1, struct.pack('>i', 1) + s(topic), False, None),
    'fetch4': (1, 4, struct.pack('>iiiib', -1, 0, 1, 1 << 20, 0) + struct.pack('>i', 1) + s(topic)
               + struct.pack('>iiqi', 1, 0, 0, 1 << 20), False, check_fetch4),
    'fetch13': (1, 13, struct.pack('>iiiibii', -1, 0, 1, 1 << 20, 0, 0, -1) + uvarint(2) + tid + uvarint(2)
                + struct.pack('>iiqiqi', 0, -1, 0, -1, -1, 1 << 20) + b'\0' + b'\0' + uvarint(1)
                + uvarint(1) + b'\0', True, check_fetch13),
}
for kind, (api, ver, body, flex, check) in KINDS.items():
    times = []
    for _ in range(count):
        t = time.perf_counter()
        r = c.call(api, ver, body, flex)
        times.append(time.perf_counter() - t)
        if check:
            check(r)
    times.sort()
    print('%s %d %d' % (kind, times[len(times) // 2] * 1e6, times[len(times) * 9 // 10] * 1e6))
