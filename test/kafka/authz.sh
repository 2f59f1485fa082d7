#!/usr/bin/env bash
# Principals as roles (docs/kafka.md "Principals and roles"): the
# authorization matrix of test/pgtap/privileges.sql through SQL as each
# role and through the Kafka protocol as each principal, side by side
# (test/kafka/py/authz_matrix.py), with mq-kafka logged in as a role that
# is NOINHERIT, a member of the principals' roles and granted everything
# itself: no Kafka client gains a right of the daemon's role.  Then
# unauthenticated clients (--anonymous) and --principal-rules.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"
PY=/usr/bin/python3

PW_ALICE="alice-$RANDOM-$RANDOM-secret"
PW_BOB="bob-$RANDOM-$RANDOM-secret"
PW_CAROL="carol-$RANDOM-$RANDOM-secret"
PW_DAVE="dave-$RANDOM-$RANDOM-secret"
PW_DAEMON="daemon-$RANDOM-$RANDOM-secret"
# roles are the cluster's, shared by every test database: made once
# (members of mq_sasl_test log in with a password: scripts/lib.sh)
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_test') THEN CREATE ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_az_alice') THEN CREATE ROLE mq_az_alice LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_az_bob') THEN CREATE ROLE mq_az_bob LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_az_carol') THEN CREATE ROLE mq_az_carol LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_az_dave') THEN CREATE ROLE mq_az_dave LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_az_daemon') THEN CREATE ROLE mq_az_daemon LOGIN NOINHERIT; END IF;
END \$\$" >/dev/null
# docs/operations.md: the daemon's role is NOINHERIT and a member of each
# principal's role, so it may SET ROLE to them and gains nothing from them
PGOPTIONS="-c client_min_messages=warning" sql "GRANT mq_az_alice, mq_az_bob, mq_az_dave TO mq_az_daemon" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<EOF
ALTER ROLE mq_az_alice PASSWORD '$PW_ALICE';
ALTER ROLE mq_az_bob PASSWORD '$PW_BOB';
ALTER ROLE mq_az_carol PASSWORD '$PW_CAROL';
ALTER ROLE mq_az_dave PASSWORD '$PW_DAVE';
ALTER ROLE mq_az_daemon PASSWORD '$PW_DAEMON';
EOF
# the daemon logs in with a password too (pg_hba.conf asks members of
# members of mq_sasl_test for one): from a passfile, never a command line
printf '*:*:*:mq_az_daemon:%s\n' "$PW_DAEMON" >"$T/pgpass"
chmod 600 "$T/pgpass"
DAEMON_DB="dbname=$PGDATABASE user=mq_az_daemon passfile=$T/pgpass"
for t in orders orders.eu payments; do sql "SELECT mq.create_topic('$t', 1)" >/dev/null; done
# the daemon's own role may do anything with topics and groups
sql "SELECT mq.grant('all', 'topic', '*', 'mq_az_daemon'), mq.grant('all', 'group', '*', 'mq_az_daemon')" >/dev/null

kafka_start --sasl=plain --sasl-plain-on-plaintext -d "$DAEMON_DB" || { fail "mq-kafka starts"; finish; }
check_eq "$(sql "SELECT rolinherit FROM pg_roles WHERE rolname = 'mq_az_daemon'")" "f" "the daemon's role is NOINHERIT"

run env MQ_PW_ALICE="$PW_ALICE" MQ_PW_BOB="$PW_BOB" PYTHONPATH=test/kafka/py \
	timeout 200 "$PY" test/kafka/py/authz_matrix.py "$KAFKA_PORT" mq_az_alice mq_az_bob
printf '%s\n' "$OUT" "$ERR" | sed 's/^/# /'
expect_rc 0 "authz_matrix.py: every case agrees through SQL and Kafka, and with the expected outcome"
# mq issues no delegation tokens: to a SASL-authenticated client, Kafka's
# answer without delegation.token.secret.key (versions.pl: without SASL)
check_eq "$(MQ_PW_ALICE="$PW_ALICE" PYTHONPATH=test/kafka/py "$PY" -c "
import os, struct; from kwire import Client
c = Client($KAFKA_PORT, 'mq_az_alice', os.environ['MQ_PW_ALICE'])
print(struct.unpack_from('>h', c.call(38, 1, struct.pack('>iq', 0, -1)))[0],
      struct.unpack_from('>h', c.call(41, 1, struct.pack('>i', -1)))[0],
      struct.unpack_from('>ihb', c.call(74, 0, b'\\0', True))[1:])")" "61 61 (31, 1)" \
	"CreateDelegationToken and DescribeDelegationToken after SASL authentication: DELEGATION_TOKEN_AUTH_DISABLED; ListClientMetricsResources without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED, none listed"
kafka_kill

# --- unauthenticated clients ------------------------------------------------
meta() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client, Closed
try: print(','.join(Client($KAFKA_PORT, *sys.argv[1:]).metadata()))
except Closed: print('closed')" "$@"
}
topics_of() { sql "SET ROLE $1; SELECT string_agg(topic, ',' ORDER BY topic) FROM mq.topics"; }

kafka_start || { fail "mq-kafka starts"; finish; }
check_eq "$(meta)" "orders,orders.eu,payments" \
	"without --anonymous an unauthenticated client acts as the daemon's role (the default, as before)"
kafka_kill
kafka_start --anonymous=role:mq_az_alice || { fail "mq-kafka --anonymous=role: starts"; finish; }
check_eq "$(meta)" "$(topics_of mq_az_alice)" \
	"--anonymous=role:mq_az_alice: an unauthenticated client sees what mq_az_alice sees in SQL"
check_eq "$(meta)" "orders,orders.eu" "(alice's topics: payments is denied to her)"
kafka_kill
kafka_start --anonymous=refuse || { fail "mq-kafka --anonymous=refuse starts"; finish; }
check_eq "$(meta)" "closed" "--anonymous=refuse: an unauthenticated client is turned away"
check_match "$(cat "$T/mq-kafka.log")" "api key 3 from a refused principal, closing" "and the log says why"
kafka_kill
run "$MQ_KAFKA" --anonymous=nobody
check_match "$ERR" "--anonymous must be daemon, refuse or role:ROLE" "a bad --anonymous is refused at start"

# --- --principal-rules --------------------------------------------------------
run "$MQ_KAFKA" "--principal-rules=RULE:(/x/"
check_match "$ERR" "principal-rules: bad regular expression" "a bad rule is refused at start"
# carol authenticates as herself; the first rule makes her alice's role
kafka_start --sasl=plain --sasl-plain-on-plaintext -d "$DAEMON_DB" \
	'--principal-rules=RULE:mq_az_(car)ol/mq_az_alice/,RULE:^MQ_AZ_(.*)$/mq_az_$1/L' ||
	{ fail "mq-kafka --principal-rules starts"; finish; }
check_eq "$(meta mq_az_carol "$PW_CAROL")" "$(topics_of mq_az_alice)" \
	"a RULE maps carol to role mq_az_alice: she sees alice's topics"
check_eq "$(meta mq_az_bob "$PW_BOB")" "closed" "a name no rule maps (and no DEFAULT) is refused"
check_match "$(cat "$T/mq-kafka.log")" 'principal "mq_az_bob" maps to no role: refused' "and the log says so"
kafka_kill
kafka_start --sasl=plain --sasl-plain-on-plaintext -d "$DAEMON_DB" '--principal-rules=RULE:mq_az_c.*/none/,DEFAULT' ||
	{ fail "mq-kafka starts"; finish; }
check_eq "$(meta mq_az_carol "$PW_CAROL")" "closed" \
	"a rule that yields \"none\" (SET ROLE's word for the daemon's own role) is refused"
check_eq "$(meta mq_az_bob "$PW_BOB")" "$(topics_of mq_az_bob)" "DEFAULT: bob is role mq_az_bob"
kafka_kill

kafka_start --sasl=plain --sasl-plain-on-plaintext -d "$DAEMON_DB" || { fail "mq-kafka starts"; finish; }

# DescribeLogDirs takes DESCRIBE on the cluster (h_log_dirs.c), as in
# Kafka: alice without it gets no directory, with it her topics' sizes
log_dirs() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
err, rows = Client($KAFKA_PORT, *sys.argv[1:]).log_dirs()
print(err, ' '.join('%s:%s:%d:%d' % r for r in rows if r[1] == 'orders'))" "$@"
}
check_eq "$(log_dirs mq_az_alice "$PW_ALICE")" "31 " \
	"DescribeLogDirs without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED and no directory"
sql "SELECT mq.grant('describe', 'cluster', 'kafka-cluster', 'mq_az_alice')" >/dev/null
check_eq "$(log_dirs mq_az_alice "$PW_ALICE")" \
	"0 $(sql "SELECT 'pg_default:orders:0:' || sum(bytes) FROM mq.segments WHERE topic = 'orders' AND partition = 0")" \
	"with it: the tablespace as the log directory, the partition's size that mq.segments sums"
sql "SELECT mq.revoke('describe', 'cluster', 'kafka-cluster', 'mq_az_alice')" >/dev/null

# An idempotent producer (InitProducerId without a transactional id) needs
# WRITE on some topic, as in Kafka (KIP-679), not EXECUTE on
# mq.init_producer: dave, who may write topic idem, produces with
# confluent-kafka's enable.idempotence; once he may only read it, his
# producer fails with CLUSTER_AUTHORIZATION_FAILED, as against Kafka
sql "SELECT mq.create_topic('idem', 1)" >/dev/null
sql "SELECT mq.grant('write', 'topic', 'idem', 'mq_az_dave')" >/dev/null
idem_produce() {
	MQ_PW="$PW_DAVE" timeout 60 "$PY" -c "
import os, sys
from confluent_kafka import KafkaException, Producer
out = []
p = Producer({'bootstrap.servers': sys.argv[1], 'enable.idempotence': True, 'security.protocol': 'SASL_PLAINTEXT',
              'sasl.mechanism': 'PLAIN', 'sasl.username': 'mq_az_dave', 'sasl.password': os.environ['MQ_PW'],
              'error_cb': lambda e: None})
try:
    p.produce('idem', b'v', on_delivery=lambda e, m: out.append(e.name() if e else 'ok'))
    p.flush(15)
except KafkaException as e:   # a fatal error: the producer got no producer id
    out.append(e.args[0].name())
print(out[0] if out else 'no report')" "$BROKER" 2>/dev/null | tail -n 1
}
check_eq "$(idem_produce)" "ok" "an idempotent producer of a role that may write the topic, without EXECUTE on mq.init_producer"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT producer_id) FROM mq.producer_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'idem'")" \
	"1 1" "its batch carries the producer id it was given"
sql "SELECT mq.revoke('write', 'topic', 'idem', 'mq_az_dave'), mq.grant('read', 'topic', 'idem', 'mq_az_dave')" >/dev/null
check_eq "$(idem_produce)" "CLUSTER_AUTHORIZATION_FAILED" "once it may write no topic: CLUSTER_AUTHORIZATION_FAILED"

# DescribeProducers takes READ on the topic (h_producers.c), as in Kafka:
# after the matrix alice reads orders (granted to PUBLIC) and is denied
# payments; both have an idempotent producer's batch
for t in orders payments; do
	sql "SELECT count(*) FROM mq.init_producer() p,
	     LATERAL mq.send_batch('$t', NULL, ARRAY['x', 'y']::bytea[], partition => 0,
	                           producer_id => p.producer_id, producer_epoch => p.producer_epoch, base_sequence => 0)" >/dev/null
done
producers() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
c = Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1])
print(' '.join('%s:%d:%d:%s' % ((t,) + r[:2] + (r[2],)) for t in ('orders', 'payments')
               for r in c.describe_producers(t, [0, 3])).replace(' ', ''))" "$PW_ALICE"
}
want="$(sql "SELECT '(' || producer_id || ',' || producer_epoch || ',' || last_sequence || ')'
               FROM mq.producers WHERE topic = 'orders' AND partition = 0")"
check_match "$want" "^\([0-9]+,0,1\)$" "mq.producers has the batch: epoch 0, last sequence 1"
check_eq "$(producers)" "orders:0:0:[$want]orders:3:3:[]payments:0:29:[]payments:3:29:[]" \
	"DescribeProducers: orders' producer as mq.producers has it (id, epoch, last sequence 1), a partition orders lacks UNKNOWN_TOPIC_OR_PARTITION, payments (READ denied) TOPIC_AUTHORIZATION_FAILED"

# ListOffsets: a topic the client may not describe is TOPIC_AUTHORIZATION_FAILED,
# whether it exists or not, as in Kafka; one it may: UNKNOWN_TOPIC_OR_PARTITION
list_offsets() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
c = Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1])
print(' '.join('%s:%d' % (t, c.list_offsets(t, p)) for t, p in (('orders', 0), ('orders', 7), ('payments', 0), ('nosuch', 0),
                                                             ('nosuch2', 0))))" "$PW_ALICE"
}
sql "SELECT mq.grant('all', 'topic', 'nosuch', 'mq_az_alice', permission => 'deny')" >/dev/null
nosuch2="$(sql "SET ROLE mq_az_alice; SELECT CASE WHEN mq._describable('topic', 'nosuch2') THEN 3 ELSE 29 END")"
check_eq "$(list_offsets)" "orders:0 orders:3 payments:29 nosuch:29 nosuch2:$nosuch2" \
	"ListOffsets: orders answered, a partition it lacks UNKNOWN_TOPIC_OR_PARTITION, payments (hidden from alice) and a missing topic she may not describe TOPIC_AUTHORIZATION_FAILED, one she may UNKNOWN_TOPIC_OR_PARTITION"

# ListGroups: the groups alice may describe; with DESCRIBE on the cluster
# every group, as Kafka lists them (its "backward compatibility" rule)
sql "SELECT mq.commit_offset(g, 'orders', 0, 1) FROM unnest(ARRAY['lg_open', 'lg_hidden']) g" >/dev/null
sql "SELECT mq.grant('describe', 'group', 'lg_open', 'mq_az_alice'),
            mq.grant('all', 'group', 'lg_hidden', 'mq_az_alice', permission => 'deny')" >/dev/null
groups_of_alice() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
print(','.join(g for g in Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1]).list_groups() if g.startswith('lg_')))" "$PW_ALICE"
}
check_eq "$(groups_of_alice)" "lg_open" "ListGroups: the groups alice may describe"
sql "SELECT mq.grant('describe', 'cluster', 'kafka-cluster', 'mq_az_alice')" >/dev/null
check_eq "$(groups_of_alice)" "lg_hidden,lg_open" "with DESCRIBE on the cluster: every group, the one denied to her too"
sql "SELECT mq.revoke('describe', 'cluster', 'kafka-cluster', 'mq_az_alice')" >/dev/null
# OffsetFetch of a group she may not describe: from v2 on the group's
# error at the top level, no partitions (Kafka's getErrorResponse); v1 per partition
check_eq "$(PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
c = Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1])
print(c.offset_fetch_v3('lg_hidden', 'orders'), c.offset_fetch_v3('lg_open', 'orders'), c.offset_fetch('lg_hidden', 'orders'))" "$PW_ALICE")" \
	"(30, 0) (0, 1) 30" "OffsetFetch v3: GROUP_AUTHORIZATION_FAILED at the top level for a group she may not describe; v1 in the partition"
# DescribeConfigs of a topic needs Kafka's DESCRIBE_CONFIGS, which ALTER_CONFIGS
# implies: mq's alter on the topic; reading it is not enough
describe_configs() {
	PYTHONPATH=test/kafka/py "$PY" -c "
import struct, sys; from kwire import Client, s
c = Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1])
out = []
for t in ('orders', 'nosuch'):
    r = c.call(32, 0, struct.pack('>i', 1) + struct.pack('>b', 2) + s(t) + struct.pack('>i', -1))
    out.append('%s:%d' % (t, struct.unpack_from('>h', r, 8)[0]))
print(' '.join(out))" "$PW_ALICE"
}
check_eq "$(describe_configs)" "orders:29 nosuch:29" \
	"DescribeConfigs of a topic she reads, and of one she may not describe: TOPIC_AUTHORIZATION_FAILED"
sql "SELECT mq.grant('alter', 'topic', 'orders', 'mq_az_alice')" >/dev/null
check_eq "$(describe_configs)" "orders:0 nosuch:29" "with alter on the topic (Kafka's ALTER_CONFIGS): its configs"
sql "SELECT mq.revoke('alter', 'topic', 'orders', 'mq_az_alice')" >/dev/null
# OffsetDelete of a group she may not delete offsets of: the whole request's error, as in Kafka
check_eq "$(PYTHONPATH=test/kafka/py "$PY" -c "
import struct, sys; from kwire import Client, s
c = Client($KAFKA_PORT, 'mq_az_alice', sys.argv[1])
r = c.call(47, 0, s('lg_hidden') + struct.pack('>i', 1) + s('orders') + struct.pack('>ii', 1, 0))
print(struct.unpack_from('>hii', r))" "$PW_ALICE")" "(30, 0, 0)" \
	"OffsetDelete without DELETE on the group: GROUP_AUTHORIZATION_FAILED at the top level, no topics"
check_eq "$(sql "SELECT mq.committed_offset('lg_hidden', 'orders', 0)")" "1" "and the offset is still there"

# a principal whose role the daemon is not a member of: SET ROLE fails, nothing runs
before="$(sql "SELECT count(*) FROM mq.fetch('orders', 0, 0, 1000)")"
run env PYTHONPATH=test/kafka/py "$PY" -c "
import sys; from kwire import Client
print(Client($KAFKA_PORT, 'mq_az_carol', sys.argv[1]).produce('orders'))" "$PW_CAROL"
check_eq "$OUT" "29" \
	"carol (the daemon is no member of her role): SET ROLE's refusal (42501) answers TOPIC_AUTHORIZATION_FAILED, not the daemon's rights"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('orders', 0, 0, 1000)")" "$before" "and nothing of hers was stored"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
