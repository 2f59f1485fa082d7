#!/usr/bin/env bash
# What a DBA runs on the log tables, with sessions open and the maintenance
# worker running (issue 21, item 5; docs/operations.md, "Maintenance and
# locks"): REINDEX SCHEMA CONCURRENTLY mq_log, VACUUM FULL, CLUSTER and
# REINDEX between the statements of a producing and a fetching session
# that stay connected throughout.  REINDEX CONCURRENTLY gives every
# segment's index a new OID; sessions that had cached the old ones failed
# with "could not open relation with OID ..." on every later statement,
# and so did the worker for the topic until it was restarted.  Here every
# statement of both sessions must succeed, and the worker must go on
# applying retention after the DDL (it drops the segment the producer
# closes last), and pg_amcheck must find the tables and indexes sound.
#
# Starts a cluster of its own (the worker runs in its database
# `postgres`); the one in PGHOST/PGPORT (scripts/test.sh) is not used.
set -euo pipefail
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

work=$(mktemp -d)
chmod 755 "$work"
mq_on_exit "rm -rf '$work'"
cluster_start ddl "mq.maintenance_interval = 100" >/dev/null
q -c "CREATE EXTENSION mq" >/dev/null

# A session: psql reading statements from a FIFO; `say NAME SQL` runs SQL
# in it, waits for it and fails the test if it printed an error.
declare -A FD=()
n=0
open_session() {
	mkfifo "$work/$1"
	PGAPPNAME="$1" psql -X -qAt -v ON_ERROR_STOP=0 < "$work/$1" > "$work/$1.out" 2>&1 &
	MQ_CHILD_PIDS+=("$!")
	exec {fd}> "$work/$1"
	FD[$1]=$fd
}
say() {
	n=$((n + 1))
	printf '%s\n\\echo @@done %s\n' "$2" "$n" >&"${FD[$1]}"
	for _ in $(seq 1 300); do
		grep -q "^@@done $n\$" "$work/$1.out" && break
		sleep 0.1
	done
	grep -q "^@@done $n\$" "$work/$1.out" || fail "session $1 did not finish: $2"
	! grep -q 'ERROR' "$work/$1.out" || fail "session $1: $(grep ERROR "$work/$1.out")"
}
log_start() { q -c "SELECT log_start_offset FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rx'"; }
wait_log_start() {
	for _ in $(seq 1 300); do
		[[ "$(log_start)" == "$1" ]] && return 0
		sleep 0.1
	done
	fail "the maintenance worker did not drop the segment below offset $1 (log start $(log_start)): $(grep -E 'WARNING|ERROR' "$MQ_SERVER_LOG" | tail -n 3)"
}
# a whole pass of the worker that began after now (its cache then holds
# the current segments)
wait_worker_pass() {
	local t worker="backend_type = 'mq maintenance' AND datname = current_database()"
	t=$(q -c "SELECT clock_timestamp()")
	for _ in $(seq 1 300); do
		t2=$(q -c "SELECT state_change FROM pg_stat_activity WHERE $worker AND state_change > '$t'")
		[[ -n "$t2" ]] && break
		sleep 0.1
	done
	[[ -n "$t2" ]] || fail "no maintenance worker pass"
	for _ in $(seq 1 300); do
		[[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE $worker AND state = 'idle' AND state_change > '$t2'")" == 1 ]] && return 0
		sleep 0.1
	done
	fail "no whole maintenance worker pass"
}
# records an hour old: retention.ms (a minute) drops a segment once closed
send() { say prod "SELECT count(*) FROM mq.send_batch('rx', NULL, (SELECT array_agg('v'::bytea) FROM generate_series(1, $1)), partition => 0, \"timestamp\" => now() - interval '1 hour');"; }
fetch() { say cons "SELECT count(*) FROM mq.fetch('rx', 0, 10, 100);"; }

q -c "SELECT mq.create_topic('rx', 1, '{\"segment.records\": 10, \"retention.ms\": 60000}')" >/dev/null
open_session prod
open_session cons
send 10
wait_log_start 10 # the worker dropped [0,10)
send 5
fetch
wait_worker_pass

seg=$(q -c "SELECT s.relid::regclass FROM mq.segment s JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rx' AND s.base_offset = 10")
idx=$(q -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$seg'::regclass")
q -c "REINDEX SCHEMA CONCURRENTLY mq_log"
[[ "$(q -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$seg'::regclass")" == "$idx" ]] ||
	fail "REINDEX CONCURRENTLY did not keep the index name"
send 1
fetch
q -c "SELECT format('VACUUM FULL %s', c.oid::regclass) FROM pg_class c WHERE c.relnamespace = 'mq_log'::regnamespace AND c.relkind = 'r'" -c '\gexec' >/dev/null
send 1
fetch
q -c "CLUSTER $seg USING $(q -c "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = '$seg'::regclass")"
send 1
fetch
q -c "REINDEX SCHEMA mq_log"
send 1
fetch
q -c "REINDEX SCHEMA CONCURRENTLY mq_log"
fetch
send 1 # offset 19 closes [10,20): the worker drops it
wait_log_start 20
! grep -q 'could not open relation' "$MQ_SERVER_LOG" || fail "$(grep 'could not open relation' "$MQ_SERVER_LOG" | head -n 3)"
# each fetch from offset 10 saw the records produced before it
got=$(grep -v '^@@done' "$work/cons.out" | tr '\n' ' ')
[[ "$got" == "5 6 7 8 9 9 " ]] || fail "fetches from offset 10 returned: $got"
# PostgreSQL's own checker finds every heap and its indexes (the segments
# and mq's catalog) consistent after the DDL
q -c "CREATE EXTENSION amcheck" >/dev/null
amcheck=$(pg_amcheck --heapallindexed --parent-check 2>&1) || fail "pg_amcheck: $amcheck"
echo "ok: REINDEX CONCURRENTLY, VACUUM FULL, CLUSTER and REINDEX left the open sessions and the maintenance worker working, and pg_amcheck the tables sound"
