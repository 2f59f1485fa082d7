"""ElectLeaders (v1) with kwire (test/t/161_kafka_elect_leaders.pl):
an election type (0 preferred, 1 unclean), a timeout and the partitions
as topic:partition, none for every partition.  Prints one JSON object:
{"error": the request's error code, "results": [[topic, partition,
error code, error message], ...]}.

Usage: elect.py PORT TYPE TIMEOUT_MS [TOPIC:PARTITION ...]"""
import json
import struct
import sys

from kwire import Client, Reader, arr, s

port, etype, timeout = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
asked = {}
for tp in sys.argv[4:]:
    t, p = tp.rsplit(':', 1)
    asked.setdefault(t, []).append(int(p))
if asked:
    parts = arr([s(t) + struct.pack('>i', len(ps)) + b''.join(struct.pack('>i', p) for p in ps)
                 for t, ps in asked.items()])
else:
    parts = struct.pack('>i', -1)
r = Reader(Client(port, client_id='elect').call(43, 1, struct.pack('>b', etype) + parts + struct.pack('>i', timeout)))
r.take('>i')
out = {'error': r.take('>h'), 'results': []}
for _ in range(r.count()):
    topic = r.str()
    for _ in range(r.count()):
        part, code = r.take('>ih')
        out['results'].append([topic, part, code, r.str()])
print(json.dumps(out))
