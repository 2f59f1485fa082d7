#!/usr/bin/env bash
# AlterReplicaLogDirs (v0-v2) as Kafka's brokers answer it, on
# mq.move_partition (py/log_dirs_alter.py): a log directory is a
# tablespace, as DescribeLogDirs names it, so a partition moved to one has
# its segments there, DescribeLogDirs lists it there with its size, SQL
# reads every record still, and the segments made later are made there;
# moved back, the tablespace can be dropped.  A directory no tablespace
# has is LOG_DIR_NOT_FOUND, an unknown topic or partition
# UNKNOWN_TOPIC_OR_PARTITION; the answer groups partitions by topic.
# Without ALTER on the cluster nothing moves (CLUSTER_AUTHORIZATION_FAILED).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PY=/usr/bin/python3

TS="$(mktemp -d /tmp/mq-logdir.XXXXXX)"
chmod 755 "$TS"
chown postgres "$TS" 2>/dev/null || true
SPC="mq_logdir_$$"
sql "CREATE TABLESPACE $SPC LOCATION '$TS'" >/dev/null
cleanup_ts() { sql "DROP TABLESPACE IF EXISTS $SPC" >/dev/null 2>&1 || true; rm -rf "$TS"; }
on_exit cleanup_ts
DEFAULT="$(sql "SELECT spcname FROM pg_tablespace WHERE oid = (SELECT dattablespace FROM pg_database WHERE datname = current_database())")"
sql "SELECT mq.create_topic('ld', 2, '{\"segment.records\": 1000}')" >/dev/null
sql "SELECT mq.send_batch('ld', NULL::bytea[], array_agg(convert_to(i::text, 'UTF8')), partition => 0) FROM generate_series(1, 2500) i" >/dev/null

# segments of ld's partition P and their tablespaces: "base:space ..."
spaces() {
	sql "SELECT string_agg(s.base_offset || ':' || coalesce(t.spcname, '$DEFAULT'), ' ' ORDER BY s.base_offset)
	       FROM mq.segment s JOIN mq.topic tp USING (topic_id) JOIN pg_class c ON c.oid = s.relid
	       LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE tp.topic_name = 'ld' AND s.partition = $1"
}
alter() {
	run timeout 60 env PYTHONPATH=test/kafka/py "$PY" test/kafka/py/log_dirs_alter.py "$KAFKA_PORT" "$1"
	[[ $RC == 0 ]] || printf '# %s\n' "$OUT" "$ERR"
}
jq_() { "$PY" -c "import json, sys; j = json.loads(sys.argv[1]); print($1)" "$OUT"; }

kafka_start || { fail "mq-kafka starts"; finish; }
alter '[[1, {"'"$SPC"'": {"ld": [0]}}]]'
check_eq "$(jq_ 'j["calls"]')" "[{'ld': {'0': 0}}]" "AlterReplicaLogDirs v1 moves ld-0 to the tablespace its directory names"
check_eq "$(spaces 0)" "0:$SPC 1000:$SPC 2000:$SPC 3000:$SPC" "every segment of ld-0 is in $SPC (the one ahead of the log end too)"
check_eq "$(spaces 1 | tr ' ' '\n' | grep -vc ":$DEFAULT")" "0" "ld-1 stays where it was"
check_eq "$(jq_ "sorted((p, d) for d, t, p, n in j['dirs'] if t == 'ld' and n > 0)")" \
	"[(0, '$SPC'), (1, '$DEFAULT')]" "DescribeLogDirs lists ld-0 in $SPC, ld-1 in $DEFAULT, with their sizes"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('ld', 0, 0, 10000)")" "2500" "SQL reads every record of ld-0"
sql "SELECT mq.send_batch('ld', NULL::bytea[], array_agg(convert_to(i::text, 'UTF8')), partition => 0) FROM generate_series(1, 2000) i" >/dev/null
check_eq "$(spaces 0 | tr ' ' '\n' | grep -vc ":$SPC")" "0" "the segments made after the move are made in $SPC"

alter '[[2, {"nowhere": {"ld": [1]}, "'"$SPC"'": {"ld": [7], "no_such_topic": [0]}}], [0, {"'"$DEFAULT"'": {"ld": [0, 1]}}]]'
check_eq "$(jq_ 'j["calls"]')" "[{'ld': {'1': 57, '7': 3}, 'no_such_topic': {'0': 3}}, {'ld': {'0': 0, '1': 0}}]" \
	"v2: an unknown directory LOG_DIR_NOT_FOUND, unknown partitions and topics UNKNOWN_TOPIC_OR_PARTITION, grouped by topic; v0 moves ld-0 back"
check_eq "$(spaces 0 | tr ' ' '\n' | grep -vc ":$DEFAULT")" "0" "ld-0 is back in $DEFAULT"
check_eq "$(sql "DROP TABLESPACE $SPC" >/dev/null 2>&1 && echo dropped)" "dropped" "nothing of mq is left in the tablespace"
sql "CREATE TABLESPACE $SPC LOCATION '$TS'" >/dev/null
kafka_kill

sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_test') THEN CREATE ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_ld_user') THEN CREATE ROLE mq_ld_user IN ROLE mq_sasl_test; END IF;
END \$\$; SELECT mq.grant('alter, describe', 'topic', 'ld', 'mq_ld_user')" >/dev/null
KAFKA_PORT=""
kafka_start --anonymous=role:mq_ld_user || { fail "mq-kafka --anonymous=role:mq_ld_user starts"; finish; }
alter '[[1, {"'"$SPC"'": {"ld": [0]}}]]'
check_eq "$(jq_ 'j["calls"]') $(spaces 0 | tr ' ' '\n' | grep -vc ":$DEFAULT")" "[{'ld': {'0': 31}}] 0" \
	"without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED, and nothing moved"
finish
