#!/usr/bin/env bash
# Fewer database connections than --pool (a role's CONNECTION LIMIT, or a
# max_connections nearly taken): the server refuses some of the pool's
# connections and mq-kafka serves with those it has (pool_conn.c), where
# it took the database for down and closed every client connection for as
# long as the limit held.  A timed-out attempt still means a silent
# database (test/kafka/silent_db.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

ROLE=mq_kafka_connlimit
# the role is the cluster's, shared by every test database: made once
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN CREATE ROLE $ROLE LOGIN; END IF;
END \$\$" >/dev/null
sql "ALTER ROLE $ROLE CONNECTION LIMIT 1" >/dev/null
sql "GRANT SELECT ON mq.replica_status TO $ROLE" >/dev/null
sql "SELECT mq.create_topic('cl', 1)" >/dev/null
sql "SELECT mq.grant('all', 'topic', 'cl', '$ROLE'), mq.grant('all', 'group', 'clg', '$ROLE')" >/dev/null

kafka_start -d "dbname=$PGDATABASE user=$ROLE" --pool 4 || { fail "mq-kafka starts"; finish; }
check_eq "$(sql "SELECT count(*) FROM pg_stat_activity WHERE usename = '$ROLE'")" "1" \
	"the role's limit leaves mq-kafka one of its four connections"
for v in one two three; do
	run kcat_ -P -t cl <<<"$v"
	expect_rc 0 "kcat produces '$v' through the one connection"
done
run timeout 60 kcat -b "$BROKER" -G clg -X auto.offset.reset=earliest -c 3 -f '%s\n' cl
check_eq "$RC:$(tr '\n' ' ' <<<"$OUT")" "0:one two three " "a consumer group reads them"
((RC == 0)) || printf '%s\n' "$ERR" | sed 's/^/# /'
check_match "$(cat "$(tmpdir)/mq-kafka.log")" \
	"cannot connect to the database \\(going on with fewer connections\\): .*too many connections for role" \
	"the daemon says why it has fewer connections"

finish
