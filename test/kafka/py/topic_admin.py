"""CreateTopics, CreatePartitions, DeleteTopics, AlterConfigs,
IncrementalAlterConfigs and Metadata requests with
the shapes Kafka 3.9 refuses before creating anything, sent as
kafka-python's request objects (Debian's python3-kafka; DeleteTopics v6
by hand, kwire.py).  Run by test/kafka/topic_admin.sh.  Usage:
topic_admin.py BROKER.  Prints one JSON object: for each case its name and
the [topic, error code, message] rows the broker answered (DeleteTopics
v0-v3 answer no message: null)."""
import json
import struct
import sys

from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.metadata import MetadataRequest

import kwire

broker = sys.argv[1]
admin = KafkaAdminClient(bootstrap_servers=broker)
out = {}


def send(req):
    f = admin._send_request_to_node(admin._client.least_loaded_node(), req)
    admin._wait_for_futures([f])
    return f.value


def create(case, *topics, partitions=1, rf=1):
    """each topic (name, partitions, replication factor, assignments)"""
    req = CreateTopicsRequest[3](create_topic_requests=[(t[0], t[1], t[2], t[3] if len(t) > 3 else [], [])
                                                        for t in topics],
                                 timeout=5000, validate_only=False)
    out[case] = sorted(list(e) for e in send(req).topic_errors)


def grow(case, *topics):
    """each topic (name, count, assignments or None)"""
    req = CreatePartitionsRequest[1](topic_partitions=[(t[0], (t[1], t[2] if len(t) > 2 else None)) for t in topics],
                                     timeout=5000, validate_only=False)
    out[case] = sorted(list(e) for e in send(req).topic_errors)


def delete(case, *names):
    out[case] = sorted([t, code, None] for t, code in send(DeleteTopicsRequest[3](topics=list(names),
                                                                                  timeout=5000)).topic_error_codes)


def delete_v6(case, *topics):
    """DeleteTopics v6 (flexible): each topic (name or None, 16-byte id)"""
    body = kwire.uvarint(len(topics) + 1) + b''.join(kwire.s(n, True) + i + b'\0' for n, i in topics)
    c = kwire.Client(int(broker.rsplit(':', 1)[1]))
    r = kwire.Reader(c.call(20, 6, body + struct.pack('>i', 5000) + b'\0', flex=True), flex=True)
    c.close()
    r.take('>i')
    rows = []
    for _ in range(r.count()):
        name = r.str()
        r.p += 16
        code = r.take('>h')
        rows.append([name, code, r.str()])
        r.tags()
    out[case] = sorted(rows, key=lambda x: (x[0] or '', x[1]))


def alter(case, *resources):
    """AlterConfigs v1 of topic resources (name, [(key, value)])"""
    req = AlterConfigsRequest[1](resources=[(2, n, c) for n, c in resources], validate_only=False)
    out[case] = [[e[3], e[0], e[1]] for e in send(req).resources]


def alter_incremental(case, *resources):
    """IncrementalAlterConfigs v0 (by hand) of topic resources (name, [(key, op, value)])"""
    body = struct.pack('>i', len(resources)) + b''.join(
        b'\x02' + kwire.s(n) + struct.pack('>i', len(c)) + b''.join(kwire.s(k) + struct.pack('>b', o) + kwire.s(v)
                                                                  for k, o, v in c)
        for n, c in resources) + b'\0'
    cl = kwire.Client(int(broker.rsplit(':', 1)[1]))
    r = kwire.Reader(cl.call(44, 0, body))
    cl.close()
    r.take('>i')
    rows = []
    for _ in range(r.count()):
        code = r.take('>h')
        message = r.str()
        r.take('>b')
        rows.append([r.str(), code, message])
    out[case] = rows


def metadata(case, *names):
    out[case] = sorted([t[1], t[0]] for t in send(MetadataRequest[1](topics=list(names))).topics)


create('create_partitions', ('pz', 0, 1), ('pm', -2, 1))
create('create_replication', ('rz', 1, 0), ('rm', 1, -2), ('r3', 1, 3))
create('create_twice', ('dup', 1, 1), ('uniq', 1, 1), ('dup', 2, 1))
create('create_collision', ('co.ll', 1, 1))
create('create_assignment', ('asg', -1, -1, [(1, [1]), (0, [1])]), ('asg_both', 2, -1, [(0, [1])]),
       ('asg_unknown', -1, -1, [(0, [2])]), ('asg_gap', -1, -1, [(0, [1]), (2, [1])]),
       ('asg_dup', -1, -1, [(0, [1, 1])]))
grow('grow_assignment', ('asg', 3, [[1]]), ('keep', 2, [[2]]))
grow('grow_assignment_count', ('asg', 5, [[1]]))
grow('grow_twice', ('grown', 2), ('grown', 3))
delete('delete_twice', 'keep', 'keep')
delete_v6('delete_v6', (None, bytes.fromhex(sys.argv[2])), (None, bytes.fromhex(sys.argv[2])),
          (None, bytes(16)), ('keep', bytes(range(1, 17))))
alter('alter_twice', ('keep', [('retention.ms', '1000'), ('retention.ms', '2000')]),
      ('grown', [('retention.ms', '3000')]), ('grown', [('retention.ms', '4000')]))
alter_incremental('incremental_refused', ('keep', [('retention.ms', 0, '1000'), ('retention.ms', 1, None)]),
                  ('grown', [('retention.ms', 0, None)]), ('co_ll', [('retention.ms', 0, '5000')]))
metadata('metadata', 'bad name', 'nosuch', 'keep')
admin.close()
print(json.dumps(out, sort_keys=True))
