#!/usr/bin/env bash
# Kafka transactions while the database is read-only for a few seconds,
# as during a standby's promotion or under default_transaction_read_only
# (docs/operations.md, "Standbys"): the transaction APIs answer the
# refusal (25006) with COORDINATOR_NOT_AVAILABLE, which clients retry,
# not KAFKA_STORAGE_ERROR, which no transaction API answers and on which
# librdkafka aborts, and then fails the abort too while the database
# stays read-only: the producer died.  Every transaction commits once,
# none is aborted, and the log holds each committed value once.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PY=/usr/bin/python3 # Debian's python3-confluent-kafka
T="$(tmpdir)"

sql "SELECT mq.create_topic('ro_t', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }
# the test's own sessions stay writable
rw_sql() { PGOPTIONS="-c default_transaction_read_only=off" sql "$1"; }
# new sessions of this database take the setting: end the daemon's, it
# connects again (a failover's new connections to a standby, in small)
read_only() {
	rw_sql "ALTER DATABASE \"$PGDATABASE\" SET default_transaction_read_only = $1" >/dev/null
	rw_sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
	           AND application_name <> 'psql'" >/dev/null
}
on_exit "PGOPTIONS='-c default_transaction_read_only=off' psql -X -q -c 'ALTER DATABASE \"$PGDATABASE\" RESET default_transaction_read_only' >/dev/null 2>&1"

timeout 180 "$PY" test/kafka/py/txn_readonly.py "$BROKER" ro_t ro-txn 15 "$T/flag" >"$T/out" 2>"$T/err" &
client=$!
wait_for 60 test -e "$T/flag" || fail "the first five transactions commit"
read_only on
check_eq "$(PGOPTIONS= sql "SHOW default_transaction_read_only")" "on" "new sessions are read-only"
touch "$T/flag.go"
sleep 4 # the read-only window: the client's next transactions meet it
check_eq "$(sql "SELECT count(*) FROM mq.fetch('ro_t', 0, 0, 100)")" "15" "nothing more committed while read-only"
read_only off
wait "$client"
check_eq "$?" 0 "the client ends"
J="$(tail -n 1 "$T/out")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{committed}') $(json_get "$J" '{aborted}') $(json_get "$J" '{fatal}')" "15 0 " \
	"all 15 transactions commit, none aborted, no fatal error"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('ro_t', 0, 0, 100)")" \
	"$(json_get "$J" '{values}' | tr -d '[] "')" "the log holds each committed value once, in order"
if ((FAILED > 0)); then
	sed 's/^/# /' "$T/err" | tail -n 20
	tail -n 20 "$(tmpdir)/mq-kafka.log" | sed 's/^/# /'
fi
finish
