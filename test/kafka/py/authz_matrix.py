"""The authorization matrix of test/pgtap/privileges.sql, side by side:
each case runs through SQL as the role (SET ROLE, as mq-kafka's SET LOCAL
ROLE) and through the Kafka protocol as the principal (SASL/PLAIN), and
both outcomes must agree with each other and with the expected one.
Grants (literal and prefixed, group and topic rights, PUBLIC, deny over
allow) are made in steps between the cases by the test's superuser.

usage: authz_matrix.py PORT ALICE BOB   (passwords in MQ_PW_ALICE, MQ_PW_BOB)
Prints TAP lines; exits 1 if any case failed."""
import os
import subprocess
import sys

from kwire import Client

PORT, ALICE, BOB = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PW = {ALICE: os.environ['MQ_PW_ALICE'], BOB: os.environ['MQ_PW_BOB']}
AUTHZ = {29: 'denied:topic', 30: 'denied:group', 31: 'denied:cluster'}
n = failed = 0


def ok(cond, what, detail=''):
    global n, failed
    n += 1
    print(('ok' if cond else 'not ok') + ' %d - %s' % (n, what))
    if not cond:
        failed += 1
        print('#   ' + detail)


def psql(script):
    p = subprocess.run(['psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1'], input=script,
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def admin(stmt):
    rc, out, err = psql(stmt)
    assert rc == 0, err
    return out


def sql_as(role, stmt):
    """the outcome of stmt run as role: allowed, denied:RESOURCE, or the SQLSTATE"""
    rc, out, err = psql('\\set VERBOSITY default\nSET ROLE "%s";\n%s;\n' % (role, stmt))
    if rc == 0:
        return 'allowed', out
    if 'ERROR:  permission denied' in err:
        for res in ('group', 'cluster'):
            if ' on %s "' % res in err:
                return 'denied:' + res, err
        return 'denied:topic', err
    return 'error', err


def kafka(role, op, *args):
    c = Client(PORT, role, PW[role])
    try:
        v = getattr(c, op)(*args)
    finally:
        c.close()
    if op == 'metadata':
        return v
    return 'allowed' if v == 0 else AUTHZ.get(v, 'code %d' % v)


SQL = {
    'produce': "SELECT mq.send('{0}', 'k'::bytea, 'v'::bytea, partition => 0)",
    'fetch': "SELECT count(*) FROM mq.fetch('{0}', 0, 0)",
    'commit': "SELECT mq.commit_offset('{0}', '{1}', 0, 0)",
    'offset_fetch': "SELECT mq.committed_offset('{0}', '{1}', 0)",
}


def case(role, op, args, expected):
    """one case both ways; args as the Kafka call takes them"""
    who = role.split('_')[-1]
    if op == 'metadata':
        s = admin('SET ROLE "%s"; SELECT coalesce(string_agg(topic, \',\' ORDER BY topic), \'\') FROM mq.topics' % role)
        s = s.split(',') if s else []
        k = kafka(role, 'metadata')
        ok(s == k == expected, '%s: Metadata lists %s, as mq.topics does' % (who, expected),
           'sql %s kafka %s' % (s, k))
        return
    sargs = (args[0], args[1]) if op in ('commit', 'offset_fetch') else args
    s, detail = sql_as(role, SQL[op].format(*sargs))
    k = kafka(role, op, *args)
    ok(s == k == expected, '%s %s %s: %s through SQL and Kafka' % (who, op, ','.join(args), expected),
       'sql %s, kafka %s (%s)' % (s, k, detail.splitlines()[0] if detail else ''))


# 0. nothing granted: everything refused, nothing visible
case(ALICE, 'produce', ('orders',), 'denied:topic')
case(ALICE, 'fetch', ('orders',), 'denied:topic')
case(ALICE, 'fetch', ('no-such-topic',), 'denied:topic')
case(ALICE, 'metadata', (), [])

# 1. literal WRITE on orders: produce there only; DESCRIBE comes with it
admin("SELECT mq.grant('write', 'topic', 'orders', '%s')" % ALICE)
case(ALICE, 'produce', ('orders',), 'allowed')
case(ALICE, 'produce', ('orders.eu',), 'denied:topic')
case(ALICE, 'fetch', ('orders',), 'denied:topic')
case(ALICE, 'metadata', (), ['orders'])

# 2. prefixed READ on orders.* for bob; the group's rights separately
admin("SELECT mq.grant('read', 'topic', 'orders.*', '%s')" % BOB)
case(BOB, 'fetch', ('orders.eu',), 'allowed')
case(BOB, 'fetch', ('orders',), 'denied:topic')
case(BOB, 'produce', ('orders.eu',), 'denied:topic')
case(BOB, 'commit', ('bob-group', 'orders.eu'), 'denied:group')
case(BOB, 'metadata', (), ['orders.eu'])
admin("SELECT mq.grant('read', 'group', 'bob-group', '%s')" % BOB)
case(BOB, 'commit', ('bob-group', 'orders.eu'), 'allowed')
case(BOB, 'offset_fetch', ('bob-group', 'orders.eu'), 'allowed')
case(BOB, 'commit', ('alice-group', 'orders.eu'), 'denied:group')
case(BOB, 'offset_fetch', ('alice-group', 'orders.eu'), 'denied:group')
case(ALICE, 'commit', ('bob-group', 'orders'), 'denied:group')

# 3. PUBLIC READ on every topic, and a DENY for alice: deny wins
admin("SELECT mq.grant('read', 'topic', '*', 'PUBLIC')")
admin("SELECT mq.grant('read', 'topic', 'payments', '%s', permission => 'deny')" % ALICE)
case(ALICE, 'fetch', ('orders',), 'allowed')
case(ALICE, 'fetch', ('payments',), 'denied:topic')
case(BOB, 'fetch', ('payments',), 'allowed')
case(ALICE, 'metadata', (), ['orders', 'orders.eu', 'payments'])
# a deny of DESCRIBE hides the topic from Metadata as from mq.topics
admin("SELECT mq.grant('describe', 'topic', 'pay*', '%s', permission => 'deny')" % ALICE)
case(ALICE, 'metadata', (), ['orders', 'orders.eu'])
case(BOB, 'metadata', (), ['orders', 'orders.eu', 'payments'])
# and a deny on the group beats bob's allow
admin("SELECT mq.grant('all', 'group', 'bob-*', '%s', permission => 'deny')" % BOB)
case(BOB, 'commit', ('bob-group', 'orders.eu'), 'denied:group')

print('1..%d' % n)
sys.exit(1 if failed else 0)
