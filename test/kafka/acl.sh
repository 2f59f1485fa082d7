#!/usr/bin/env bash
# Kafka's ACL APIs on mq's grants (docs/kafka.md "ACLs"): kafka-python's
# admin client and raw requests of every version round trip with
# mq.grants and mq.grant; unsupported shapes are refused and leave
# nothing behind; only a role that may grant in SQL may through Kafka
# (test/kafka/py/acl_roundtrip.py).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PY=/usr/bin/python3 # Debian's python3-kafka, whatever python is first on the PATH

PW_ADMIN="admin-$RANDOM-$RANDOM-secret"
PW_USER="user-$RANDOM-$RANDOM-secret"
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_test') THEN CREATE ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_acl_admin') THEN CREATE ROLE mq_acl_admin LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_acl_user') THEN CREATE ROLE mq_acl_user LOGIN IN ROLE mq_sasl_test; END IF;
END \$\$" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<EOF
ALTER ROLE mq_acl_admin PASSWORD '$PW_ADMIN';
ALTER ROLE mq_acl_user PASSWORD '$PW_USER';
EOF
# mq's administrators: ALTER and DESCRIBE on the cluster (docs/operations.md)
sql "SELECT mq.grant('alter, describe', 'cluster', 'kafka-cluster', 'mq_acl_admin')" >/dev/null

# kafka-python's SASL speaks only SaslHandshake v0 (bare token frames),
# which mq-kafka does not: it talks to a second daemon whose
# unauthenticated clients act as the admin's role
kafka_start --anonymous=role:mq_acl_admin || { fail "mq-kafka --anonymous=role:mq_acl_admin starts"; finish; }
ANON_PORT="$KAFKA_PORT" ANON_PID="$KAFKA_PID"
anon_kill() { { kill -9 "$ANON_PID" && wait "$ANON_PID"; } 2>/dev/null || true; }
on_exit anon_kill
KAFKA_PORT=""
kafka_start --sasl=plain --sasl-plain-on-plaintext || { fail "mq-kafka starts"; finish; }
run env MQ_PW_ADMIN="$PW_ADMIN" MQ_PW_USER="$PW_USER" PYTHONPATH=test/kafka/py \
	timeout 200 "$PY" test/kafka/py/acl_roundtrip.py "$KAFKA_PORT" "$ANON_PORT" mq_acl_admin mq_acl_user
printf '%s\n' "$OUT" "$ERR" | sed 's/^/# /'
expect_rc 0 "acl_roundtrip.py: every check passed"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
