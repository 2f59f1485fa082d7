"""Client quotas enforced (quotas.sh): a Produce request of 110 kB from a
client id whose producer_byte_rate is 10000 B/s answers a throttle time
of about a second (Kafka's formula over its 11 one-second windows, the
first ten counted whole), and the connection's next request is answered
only once that time is over; a Fetch answer of as many bytes to a client
id whose consumer_byte_rate is 10000 does the same; a client id without
a quota is never throttled.  Produce v3 and v7, Fetch v4 and v11 (the
throttle time at the end, and at the start, of the answer).  A client id
whose request_percentage is 0.0001 (the database may work 1 us a second
for it) is muted after each request for a second, the most Kafka gives a
request quota; a byte rate's throttle has no such bound (330 kB at 10000
B/s: 23 s, not waited for); one at 5 percent whose
Fetch waits 1.5 s for records that do not come is not throttled (the
wait is not work, as in Kafka's purgatory).  Kafka's order of entities:
with a quota of the user (ANONYMOUS) set, a client id's own quota no
longer applies; removed, it does again.  AlterClientQuotas v0 and
DescribeClientQuotas v1 (the versions @platformatic/kafka does not send)
set and read back a quota of a user and client id.

Usage: quotas.py PORT TOPIC EMPTY_TOPIC.  Prints one JSON object."""
import json
import struct
import sys
import time

from kwire import Client, Closed, Reader, arr, batch, s

port, topic, empty = int(sys.argv[1]), sys.argv[2], sys.argv[3]
VALUE = b'x' * 110000


def produce(c, ver, value):
    """the answer's error code and throttle time (after the partitions)"""
    b = batch(value)
    body = (s(None) if ver >= 3 else b'') + struct.pack('>hii', 1, 5000, 1) + s(topic) + \
        struct.pack('>iii', 1, 0, len(b)) + b
    r = Reader(c.call(0, ver, body))
    r.take('>i')
    r.str()
    r.take('>ii')
    code = r.take('>h')
    r.take('>qq')
    if ver >= 5:
        r.take('>q')
    return code, r.take('>i')


def fetch(c, ver, name=topic, wait_ms=0):
    """the throttle time at the start of the answer"""
    body = struct.pack('>iii', -1, wait_ms, 1) + struct.pack('>ib', 100000, 0)
    if ver >= 7:
        body += struct.pack('>ii', 0, -1)
    body += struct.pack('>i', 1) + s(name) + struct.pack('>i', 1)
    body += struct.pack('>i', 0) + (struct.pack('>i', -1) if ver >= 9 else b'') + struct.pack('>q', 0)
    # the partition's first batch (110 kB) whole, as KIP-74 answers a limit below it
    body += (struct.pack('>q', -1) if ver >= 5 else b'') + struct.pack('>i', 100000)
    if ver >= 7:
        body += struct.pack('>i', 0)
    if ver >= 11:
        body += s('')
    r = Reader(c.call(1, ver, body))
    return r.take('>i')


def muted_for(call):
    """how long the next request waited (ms) and what it answered"""
    t0 = time.monotonic()
    out = call()
    return int((time.monotonic() - t0) * 1000), out


def alter_v0(c, user, client, key, value):
    """AlterClientQuotas v0 of one entry: its error code"""
    entity = arr([s('user') + s(user), s('client-id') + s(client)])
    ops = arr([s(key) + struct.pack('>db', value, 0)])
    r = Reader(c.call(49, 0, arr([entity + ops]) + b'\0'))
    r.take('>ii')
    return r.take('>h')


def describe_v1(c, components):
    """DescribeClientQuotas v1 of (type, match type, match) components:
    error, then entity=key:value each"""
    body = arr([s(t, True) + struct.pack('>b', m) + s(x, True) + b'\0' for t, m, x in components], True) + b'\0\0'
    r = Reader(c.call(48, 1, body, True), True)
    r.take('>i')
    got = [r.take('>h'), r.str()]
    for _ in range(r.count()):
        parts = []
        for _ in range(r.count()):
            parts.append('%s:%s' % (r.str(), r.str()))
            r.tags()
        for _ in range(r.count()):
            got.append(','.join(sorted(parts)) + '=%s:%g' % (r.str(), r.take('>d')))
            r.tags()
        r.tags()
    return got


out = {}
admin = Client(port)
out['alter_v0'] = alter_v0(admin, 'raw-user', 'raw-v0', 'producer_byte_rate', 123456)
out['describe_v1'] = describe_v1(admin, [('client-id', 0, 'raw-v0')])
# filters Kafka refuses: an unknown type (UNSUPPORTED_VERSION), a default
# match with a name, ip with user (INVALID_REQUEST)
out['describe_refused'] = [describe_v1(admin, f)[0] for f in (
    [('group', 2, None)], [('user', 1, 'x')], [('ip', 2, None), ('user', 2, None)])]


def alter_entries(c, entries):
    """AlterClientQuotas v0 of (entity parts, ops) entries: each entry's
    code and its entity as answered, type=name"""
    body = arr([arr([s(t) + s(n) for t, n in ent]) + arr([s(o[0]) + struct.pack('>db', o[1], len(o) > 2) for o in ops])
                for ent, ops in entries]) + b'\0'
    r = Reader(c.call(49, 0, body))
    r.take('>i')
    got = []
    for _ in range(r.take('>i')):
        code = r.take('>h')
        r.str()
        got.append([code] + ['%s=%s' % (r.str(), r.str()) for _ in range(r.take('>i'))])
    return got


# the same entity in two entries: the second is refused; a refused ip
# entity is answered as it was sent (clients match answers by entity)
both = [('user', 'raw-user'), ('client-id', 'raw-v0')]
out['alter_twice'] = alter_entries(admin, [(both, [('consumer_byte_rate', 5000)])] * 2)
out['alter_ip'] = alter_entries(admin, [([('ip', '10.0.0.1')], [('connection_creation_rate', 5)])])
admin.close()
for ver in (3, 7):
    slow = Client(port, client_id='q-slow-p%d' % ver)
    out['produce_v%d' % ver] = produce(slow, ver, VALUE)
    out['produce_v%d_next' % ver] = muted_for(lambda: produce(slow, ver, b'small'))
    slow.close()
free = Client(port, client_id='q-free')
out['free'] = [produce(free, 7, VALUE)[1] for _ in range(3)]
free.close()
for ver in (4, 11):
    reader = Client(port, client_id='q-slow-c%d' % ver)
    out['fetch_v%d' % ver] = fetch(reader, ver)
    out['fetch_v%d_next' % ver] = muted_for(lambda: fetch(reader, ver))
    reader.close()
big = Client(port, client_id='q-slow-big')
out['produce_big'] = produce(big, 7, VALUE * 3)
big.close()
tiny = Client(port, client_id='q-req-tiny')
produce(tiny, 7, b'small')
out['req_tiny_next'] = muted_for(lambda: produce(tiny, 7, b'small'))
tiny.close()
# Kafka's order: a quota of the user (ANONYMOUS here) comes before one of
# the client id alone, so q-prec's 10000 B/s no longer applies
admin2 = Client(port)
alter_entries(admin2, [([('user', 'ANONYMOUS')], [('producer_byte_rate', 1000000)])])
prec = Client(port, client_id='q-prec')
out['prec_user'] = produce(prec, 7, VALUE)[1]
prec.close()
alter_entries(admin2, [([('user', 'ANONYMOUS')], [('producer_byte_rate', 1000000, True)])])
prec = Client(port, client_id='q-prec')
out['prec_client'] = produce(prec, 7, VALUE)[1]
prec.close()
admin2.close()
poll = Client(port, client_id='q-req-poll')
out['req_poll'] = muted_for(lambda: fetch(poll, 11, empty, 1500))
out['req_poll_next'] = muted_for(lambda: fetch(poll, 11, empty, 0))
poll.close()
print(json.dumps(out))
