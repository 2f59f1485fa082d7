#!/usr/bin/env bash
# PostgreSQL's transient refusals reach Kafka clients as retriable errors
# (broker/mq-kafka/kerr.c): with a DBA's lock_timeout, a produce that
# waits longer for the partition's produce lock (held by a long producing
# transaction in SQL) is cancelled (55P03) and answered KAFKA_STORAGE_ERROR, so kcat, at its
# defaults, sends again and the record arrives once the lock is gone;
# UNKNOWN_SERVER_ERROR, as before, failed the message for good (and so
# would REQUEST_TIMED_OUT).  The same
# mapping covers statement_timeout (57014), serialization failures under
# default_transaction_isolation = serializable (40001) and deadlocks
# (40P01); Metadata, blocked the same way behind DDL, answers the
# topic LEADER_NOT_AVAILABLE, and OffsetCommit COORDINATOR_NOT_AVAILABLE.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('tr', 1)" >/dev/null
sql "ALTER DATABASE \"$PGDATABASE\" SET lock_timeout = '100ms'" >/dev/null
on_exit "psql -X -q -c 'ALTER DATABASE \"$PGDATABASE\" RESET lock_timeout' >/dev/null 2>&1"
kafka_start || { fail "mq-kafka starts"; finish; }
echo first | kcat_ -P -t tr
check_eq "$?:$(sql "SELECT count(*) FROM mq.fetch('tr', 0, 0)")" "0:1" "a record produced while nothing holds the table"

# produce_while HOLD_SQL VALUE: kcat produces VALUE while another session
# runs HOLD_SQL in a transaction that it keeps open for 1.5 s
produce_while() {
	hold_briefly "$1" || fail "the other session holds its lock"
	run kcat_ -P -t tr <<<"$2"
	wait "$HOLDER"
}
values() { sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('tr', 0, 0)"; }

# an SQL producer holds the partition's produce lock (a long producing
# transaction: docs/design.md, "Long producing transactions")
produce_while "SELECT mq.send('tr', NULL, 'sql', NULL, 0)" second
check_eq "$RC" "0" "kcat's produce during the lock succeeds: its retries outlast the lock"
check_eq "$(values)" "first,sql,second" "the record arrived once, after the SQL producer's"
check_match "$(grep -c 'canceling statement due to lock timeout' "${MQ_SERVER_LOG:-/dev/null}")" '^[1-9]' \
	"(the lock timeout did cancel a produce: the retry was needed)"

# DDL holds the partition's log table (LOCK TABLE, as VACUUM FULL or
# ALTER TABLE would): Metadata's statement meets lock_timeout as well, and
# answers the topic LEADER_NOT_AVAILABLE, which clients ask again; any
# other topic error there fails librdkafka's queued messages for good
rel="$(sql "SELECT ps.relid FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'tr'")"
produce_while "LOCK TABLE $rel IN ACCESS EXCLUSIVE MODE" third
check_eq "$RC" "0" "kcat's produce while DDL holds the table succeeds once it is free"
check_eq "$(values)" "first,sql,second,third" "its record arrived once"

# OffsetCommit v2 of offset OFFSET for group tg, partition 0 of tr, with
# the raw protocol (test/kafka/py/kwire.py): the partition's error code
# (kcat does not show it)
commit_code() {
	PYTHONPATH=test/kafka/py /usr/bin/python3 -c "
import sys; from kwire import Client
print(Client($KAFKA_PORT).commit('tg', 'tr', int(sys.argv[1])))" "$1"
}
check_eq "$(commit_code 1)" "0" "an offset commit while nothing holds the offsets"
# the committed offsets' table held (LOCK TABLE): the commit's lock_timeout
# is COORDINATOR_NOT_AVAILABLE (15), which every client retries; the
# KAFKA_STORAGE_ERROR a produce gets is no OffsetCommit error, and the Java
# client fails a commit on it for good
hold_briefly "LOCK TABLE mq.consumer_offset IN ACCESS EXCLUSIVE MODE" || fail "the other session holds its lock"
check_eq "$(commit_code 2)" "15" "an offset commit while DDL holds the offsets is COORDINATOR_NOT_AVAILABLE"
wait "$HOLDER"
check_eq "$(commit_code 2):$(sql "SELECT mq.committed_offset('tg', 'tr', 0)")" "0:2" "and its retry commits"

if ((FAILED > 0)); then
	printf '%s\n' "$ERR" | tail -n 5 | sed 's/^/# /'
fi

finish
