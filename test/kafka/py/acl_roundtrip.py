"""Kafka's ACL APIs on mq's grants (docs/kafka.md "ACLs"):
kafka-python's KafkaAdminClient (Debian's python3-kafka, CreateAcls,
DescribeAcls and DeleteAcls v1) round trips with mq.grants and mq.grant;
raw requests check every version (v0, v1, and v2/v3 flexible); shapes mq
cannot hold are refused with INVALID_REQUEST and leave mq.acl as it was;
a principal that may not grant gets CLUSTER_AUTHORIZATION_FAILED.

usage: acl_roundtrip.py PORT ANON_PORT ADMIN USER  (passwords in MQ_PW_ADMIN,
MQ_PW_USER): PORT is an mq-kafka --sasl=plain, ANON_PORT one whose
unauthenticated clients act as ADMIN (--anonymous=role:ADMIN), for
kafka-python, whose SASL speaks only SaslHandshake v0
Prints TAP lines; exits 1 if any check failed."""
import os
import subprocess
import sys

from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, ResourcePattern, ResourcePatternFilter, ResourceType)

from kwire import Client

PORT, ANON_PORT, ADMIN, USER = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
PW = {ADMIN: os.environ['MQ_PW_ADMIN'], USER: os.environ['MQ_PW_USER']}
n = failed = 0
# Kafka's codes
TOPIC, GROUP, CLUSTER, TXN, DELEGATION_TOKEN = 2, 3, 4, 5, 6
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, IDEMPOTENT_WRITE = 2, 3, 4, 5, 6, 7, 8, 12
DENY, ALLOW = 2, 3
INVALID_REQUEST, CLUSTER_AUTHZ = 42, 31


def ok(cond, what, detail=''):
    global n, failed
    n += 1
    print(('ok' if cond else 'not ok') + ' %d - %s' % (n, what))
    if not cond:
        failed += 1
        print('#   %s' % (detail,))


def sql(q):
    p = subprocess.run(['psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c', q],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def grants():
    return sql("SELECT coalesce(string_agg(g, '; ' ORDER BY g), '') FROM (SELECT format('%s %s %s %s %s %s',"
               " resource_type, pattern_type, resource_name, grantee, operation, permission) AS g"
               " FROM mq.grants WHERE resource_type <> 'cluster') s")


def acl_rows():
    return sql("SELECT count(*) FROM mq.acl")


# --- kafka-python's admin client ---------------------------------------------
adm = KafkaAdminClient(bootstrap_servers='127.0.0.1:%d' % ANON_PORT, request_timeout_ms=20000)
base = acl_rows()
res = adm.create_acls([
    ACL('User:' + USER, '*', ACLOperation.READ, ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.TOPIC, 'rt.', ACLResourcePatternType.PREFIXED)),
    ACL('User:*', '*', ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.TOPIC, 'rt-public', ACLResourcePatternType.LITERAL)),
    ACL('User:' + USER, '*', ACLOperation.READ, ACLPermissionType.DENY,
        ResourcePattern(ResourceType.GROUP, 'rt-g', ACLResourcePatternType.LITERAL)),
])
ok(len(res['succeeded']) == 3 and not res['failed'], 'kafka-python create_acls: three ACLs created', res)
ok(grants() == '; '.join(sorted([
    'group literal rt-g %s read deny' % USER,
    'topic literal rt-public PUBLIC describe allow',
    'topic prefixed rt. %s read allow' % USER])), 'and mq.grants shows them', grants())
sql("SELECT mq.grant('write', 'topic', 'rt-sql', '%s')" % USER)
acls, err = adm.describe_acls(ACLFilter(principal=None, host='*', operation=ACLOperation.ANY,
                                        permission_type=ACLPermissionType.ANY,
                                        resource_pattern=ResourcePatternFilter(
                                            ResourceType.TOPIC, 'rt-sql', ACLResourcePatternType.LITERAL)))
shown = [(a.principal, a.host, a.operation, a.permission_type, a.resource_pattern.resource_name)
         for a in acls]
ok(shown == [('User:' + USER, '*', ACLOperation.WRITE, ACLPermissionType.ALLOW, 'rt-sql')],
   "mq.grant in SQL shows in kafka-python's describe_acls", (shown, err))
acls, err = adm.describe_acls(ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                                        permission_type=ACLPermissionType.ANY,
                                        resource_pattern=ResourcePatternFilter(
                                            ResourceType.TOPIC, 'rt.eu', ACLResourcePatternType.MATCH)))
ok([(a.resource_pattern.resource_name, a.resource_pattern.pattern_type) for a in acls] ==
   [('rt.', ACLResourcePatternType.PREFIXED)], 'a MATCH filter finds the prefixed grant covering rt.eu',
   acls)
res = adm.delete_acls([ACLFilter(principal='User:' + USER, host='*', operation=ACLOperation.ANY,
                                 permission_type=ACLPermissionType.ANY,
                                 resource_pattern=ResourcePatternFilter(
                                     ResourceType.ANY, None, ACLResourcePatternType.ANY))])
gone = sorted(a.resource_pattern.resource_name for a, e in res[0][1])
ok(gone == ['rt-g', 'rt-sql', 'rt.'], "delete_acls of the user's ACLs answers the three deleted", res)
ok(grants() == 'topic literal rt-public PUBLIC describe allow', 'and they are gone from mq.grants', grants())
adm.close()

# --- every version, raw --------------------------------------------------------
c = Client(PORT, ADMIN, PW[ADMIN])
for ver in range(4):
    name = 'v%d-topic' % ver
    pat = PREFIXED if ver >= 1 else LITERAL
    r = c.create_acls([(TOPIC, name, pat, 'User:' + USER, '*', READ, ALLOW),
                       (GROUP, 'v%d-g' % ver, LITERAL, 'User:' + USER, '*', ALL, DENY)], ver)
    ok(r == [(0, None), (0, None)], 'CreateAcls v%d: two created' % ver, r)
    e, m, rows = c.describe_acls((ANY, None, ANY if ver else LITERAL, 'User:' + USER, None, ANY, ANY), ver)
    ok(e == 0 and sorted(rows) == sorted([(TOPIC, name, pat, 'User:' + USER, '*', READ, ALLOW),
                                          (GROUP, 'v%d-g' % ver, LITERAL, 'User:' + USER, '*', ALL, DENY)]),
       'DescribeAcls v%d lists them' % ver, (e, m, rows))
    r = c.delete_acls([(ANY, None, ANY if ver else LITERAL, 'User:' + USER, '*', ANY, ANY)], ver)
    ok(r[0][0] == 0 and len(r[0][2]) == 2, 'DeleteAcls v%d deletes what it matches' % ver, r)
    c.delete_acls([(ANY, None, ANY, 'User:' + USER, '*', ANY, ANY)], max(ver, 1))
ok(grants() == 'topic literal rt-public PUBLIC describe allow', 'nothing left behind by the versions', grants())

# a deleted ALL takes the grantee's other operations on that resource with it
c.create_acls([(TOPIC, 'rt-all', LITERAL, 'User:' + USER, '*', ALL, ALLOW),
               (TOPIC, 'rt-all', LITERAL, 'User:' + USER, '*', READ, ALLOW)])
r = c.delete_acls([(TOPIC, 'rt-all', LITERAL, None, None, ALL, ALLOW)])
ok(sorted(x[5] for x in r[0][2]) == [ALL, READ], 'deleting ALL lists every grant mq.revoke took back', r)

# --- refused shapes leave nothing behind ----------------------------------------
before = acl_rows()
bad = [
    ((DELEGATION_TOKEN, 'tok-1', LITERAL, 'User:' + USER, '*', WRITE, ALLOW), 'DELEGATION_TOKEN resource'),
    ((CLUSTER, 'kafka-cluster', LITERAL, 'User:' + USER, '*', IDEMPOTENT_WRITE, ALLOW), 'IDEMPOTENT_WRITE'),
    ((TOPIC, 'rt-h', LITERAL, 'User:' + USER, '10.0.0.1', READ, ALLOW), 'a host other than *'),
    ((TOPIC, 'rt-p', LITERAL, 'Group:' + USER, '*', READ, ALLOW), 'a principal type other than User'),
    ((TOPIC, 'rt-m', MATCH, 'User:' + USER, '*', READ, ALLOW), 'a MATCH pattern in a binding'),
    ((TOPIC, 'rt-a', LITERAL, 'User:' + USER, '*', ANY, ALLOW), 'operation ANY in a binding'),
    ((CLUSTER, 'other', LITERAL, 'User:' + USER, '*', ALTER, ALLOW), 'a cluster not named kafka-cluster'),
]
for ver in (1, 2):
    r = c.create_acls([b for b, _ in bad], ver)
    for (b, what), (e, m) in zip(bad, r):
        ok(e == INVALID_REQUEST and m, 'v%d %s: INVALID_REQUEST with a message' % (ver, what), (e, m))
r = c.create_acls([(TOPIC, 'rt-x', LITERAL, 'User:mq_no_such_role', '*', READ, ALLOW)])
ok(r[0][0] == INVALID_REQUEST and 'does not exist' in (r[0][1] or ''), 'an unknown role: INVALID_REQUEST', r)
e, m, rows = c.describe_acls((DELEGATION_TOKEN, None, ANY, None, None, ANY, ANY))
ok(e == 0 and rows == [], 'a filter for a resource type mq has no grants on matches nothing', (e, m, rows))

# transactional ids are a resource (mq.grant(..., 'transactional_id', ...))
r = c.create_acls([(TXN, 'tx-', PREFIXED, 'User:' + USER, '*', WRITE, ALLOW)])
ok(r[0][0] == 0, 'CreateAcls of WRITE on a TRANSACTIONAL_ID prefix', r)
ok('transactional_id prefixed tx- ' + USER + ' write allow' in grants(), 'it is an mq grant on transactional_id', grants())
e, m, rows = c.describe_acls((TXN, None, ANY, None, None, ANY, ANY))
ok(e == 0 and len(rows) == 1, 'DescribeAcls of TRANSACTIONAL_ID lists it', (e, m, rows))
r = c.delete_acls([(TXN, 'tx-', PREFIXED, None, None, ANY, ANY)])
ok(r[0][0] == 0 and len(r[0][2]) == 1, 'DeleteAcls takes it back', r)
ok(acl_rows() == before, 'refused creations left mq.acl as it was', (acl_rows(), before))
c.close()

# --- only who may grant in SQL may through Kafka --------------------------------
u = Client(PORT, USER, PW[USER])
r = u.create_acls([(TOPIC, 'rt-self', LITERAL, 'User:' + USER, '*', ALL, ALLOW)])
ok(r[0][0] == CLUSTER_AUTHZ and 'permission denied' in (r[0][1] or ''),
   'a principal that may not grant gets CLUSTER_AUTHORIZATION_FAILED', r)
r = u.delete_acls([(ANY, None, ANY, None, None, ANY, ANY)])
ok(r[0][0] == CLUSTER_AUTHZ and r[0][2] == [], 'and may not delete what it sees', r)
r = u.delete_acls([(ANY, None, ANY, 'User:' + ADMIN, None, ANY, ANY), (TOPIC, 'rt-none', LITERAL, None, None, ANY, ANY)])
ok([x[0] for x in r] == [CLUSTER_AUTHZ, CLUSTER_AUTHZ] and all(x[2] == [] for x in r),
   'nor what it does not see: CLUSTER_AUTHORIZATION_FAILED for every filter, as Kafka checks ALTER before matching', r)
# a topic's owner, without ALTER on the cluster, grants and revokes on it
sql("SELECT mq.grant('create', 'cluster', 'kafka-cluster', '%s');"
    "SET ROLE %s; SELECT mq.create_topic('rt-own'); RESET ROLE" % (USER, USER))
r = u.create_acls([(TOPIC, 'rt-own', LITERAL, 'User:' + ADMIN, '*', READ, ALLOW)])
ok(r[0][0] == 0, "the topic's owner creates an ACL on it", r)
r = u.delete_acls([(TOPIC, 'rt-own', LITERAL, None, None, ANY, ANY), (TOPIC, 'rt-own', LITERAL, None, None, WRITE, ANY)])
ok([(x[0], len(x[2])) for x in r] == [(0, 1), (CLUSTER_AUTHZ, 0)],
   "and deletes it; a filter of its that matches nothing is CLUSTER_AUTHORIZATION_FAILED", r)
sql("SELECT mq.revoke('create', 'cluster', 'kafka-cluster', '%s'); SELECT mq.drop_topic('rt-own')" % USER)
e, m, rows = u.describe_acls((ANY, None, ANY, None, None, ANY, ANY))
ok(e == CLUSTER_AUTHZ and rows == [],
   'DescribeAcls without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED and nothing listed, as in Kafka',
   (e, rows))
ok(acl_rows() == before, 'nothing changed', (acl_rows(), before))
u.close()

print('1..%d' % n)
sys.exit(1 if failed else 0)
