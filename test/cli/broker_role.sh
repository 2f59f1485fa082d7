#!/usr/bin/env bash
# The broker's role (docs/replication.md, "The broker's role"): the SQL
# block of the docs is run as it stands; the role it makes is no superuser
# and may call every function mq-broker calls (the names are read from
# broker/mq-broker/calls_*.c, so a new call without a
# grant fails here), and nothing an administrator calls.  mq_coord's
# functions are not executable by PUBLIC.  (Every multi-node test then runs
# its brokers as such a role: test/t/MqCluster.pm.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

role=mq_broker
on_exit "psql -X -q -c 'DROP OWNED BY $role' -c 'DROP ROLE IF EXISTS $role' >/dev/null 2>&1"
psql -X -q -c "DROP OWNED BY $role" -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true

# the block between the markers of docs/replication.md, as documented
block="$(awk '/^<!-- broker-role:begin -->$/ { inside = 1; next }
	/^<!-- broker-role:end -->$/ { inside = 0 }
	inside && !/^```/ { print }' docs/replication.md)"
check_match "$block" 'mq\.grant_broker' "docs/replication.md has the broker role example"
run psql -X -q -v ON_ERROR_STOP=1 -c "$block"
expect_rc 0 "the documented role setup runs"

check_eq "$(sql "SELECT rolsuper OR rolcreaterole OR rolcreatedb FROM pg_roles WHERE rolname = '$role'")" \
	f "the broker role is no superuser and creates nothing"

# every mq.* / mq_coord.* function the broker's sources call
mapfile -t called < <(grep -ohE '\bmq(_coord)?\.[a-z_]+\(' broker/mq-broker/calls_*.c \
	| tr -d '(' | sort -u)
check_match "${#called[@]}" '^[1-9][0-9]+$' "found the broker's calls (${#called[@]})"
for f in "${called[@]}"; do
	check_eq "$(sql "SELECT coalesce(bool_and(pg_catalog.has_function_privilege('$role', p.oid, 'EXECUTE')), false)
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname || '.' || p.proname = '$f'")" t "$role may execute $f"
done
check_eq "$(sql "SELECT mq.has_topic_privilege('$role', 'any.topic', 'create')
	AND mq.has_topic_privilege('$role', 'any.topic', 'describe')
	AND NOT mq.has_topic_privilege('$role', 'any.topic', 'write')
	AND NOT mq.has_topic_privilege('$role', 'any.topic', 'delete')")" t \
	"$role may create and describe every topic (mq.grant), not write to one nor delete it"
for rel in mq.topics; do
	check_eq "$(sql "SELECT pg_catalog.has_table_privilege('$role', '$rel', 'SELECT')")" t "$role may read $rel"
done
check_eq "$(sql "SELECT pg_catalog.has_column_privilege('$role', 'mq_coord.partition', 'isr', 'SELECT')
	AND NOT pg_catalog.has_column_privilege('$role', 'mq_coord.broker', 'node_conninfo', 'SELECT')")" t \
	"$role reads the coordinator's ISR column, not the brokers' connection strings"

# what administrators call stays theirs
for f in 'mq_coord.create_topic(text, integer, jsonb)' 'mq_coord.delete_topic(text)' 'mq_coord.add_partitions(text, integer)' \
	'mq_coord.reassign(text, integer, integer[], bigint)' 'mq_coord.remove_broker(integer)' \
	'mq.grant_broker(regrole)' 'mq_coord.grant_broker(regrole)'; do
	check_eq "$(sql "SELECT pg_catalog.has_function_privilege('$role', '$f', 'EXECUTE')")" f \
		"$role may not execute $f"
done

# as the role: the broker's calls work, an administrator's are refused
run psql -X -At -v ON_ERROR_STOP=1 -c "SET ROLE $role" -c "SELECT mq.replica_resign_all()" \
	-c "SELECT count(*) FROM mq_coord.assignments(1)"
expect_rc 0 "as $role: mq.replica_resign_all() and mq_coord.assignments() run"
run psql -X -At -v ON_ERROR_STOP=1 -c "SET ROLE $role" -c "SELECT mq_coord.create_topic('x', 1)"
check_match "$ERR" 'permission denied for function create_topic' "as $role: mq_coord.create_topic is refused"

# PUBLIC may execute no mq_coord function
check_eq "$(sql "SELECT count(*) FROM pg_catalog.pg_proc p
	JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
	WHERE n.nspname = 'mq_coord'
	  AND EXISTS (SELECT 1 FROM pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
	               WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')")" 0 \
	"no mq_coord function is executable by PUBLIC"

finish
