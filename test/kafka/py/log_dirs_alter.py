"""AlterReplicaLogDirs (log_dirs_alter.sh): each call named on the command
line as JSON [version, {dir: {topic: [partitions]}}] is answered as
{topic: {partition: error code}}; then DescribeLogDirs v3 of every
partition as [[dir, topic, partition, bytes], ...].  Prints one JSON
object {"calls": [...], "dirs": [...]}.

Usage: log_dirs_alter.py PORT CALLS_JSON"""
import json
import struct
import sys

from kwire import Client, Reader, arr, s


def alter(c, ver, dirs):
    flex = ver >= 2
    tags = b'\0' if flex else b''
    ints = lambda ps: arr([struct.pack('>i', p) for p in ps], flex)
    body = arr([s(d, flex) + arr([s(t, flex) + ints(ps) + tags for t, ps in topics.items()], flex) + tags
                for d, topics in dirs.items()], flex) + tags
    r = Reader(c.call(34, ver, body, flex), flex)
    r.take('>i')
    out = {}
    for _ in range(r.count()):
        t = r.str()
        for _ in range(r.count()):
            p, code = r.take('>ih')
            r.tags()
            out.setdefault(t, {})[str(p)] = code
        r.tags()
    return out


c = Client(int(sys.argv[1]), client_id='log-dirs-alter')
calls = [alter(c, v, d) for v, d in json.loads(sys.argv[2])]
print(json.dumps({'calls': calls, 'dirs': c.log_dirs()[1]}))
