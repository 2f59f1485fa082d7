#!/usr/bin/env bash
# mqctl produce after a lost connection.  Idempotent (the default): it
# connects again and sends the batch again, and the server recognises the
# retry: a connection lost between batches loses nothing, and a connection
# lost after the commit but before the reply (the hard case) writes nothing
# twice and reports the original offsets.  Without idempotence a lost
# connection ends produce with exit 3, as a retry could duplicate.
#
# The lost reply: with synchronous_standby_names naming a standby that does
# not exist, a commit is written locally and then waits for the standby;
# terminating the backend then loses the reply of a committed batch.  That
# needs a superuser (ALTER SYSTEM) and changes the server's configuration
# for a moment, restored at exit.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create rt >/dev/null
records() { sql "SELECT coalesce(string_agg(msg_offset || '=' || encode(value, 'escape'), ' ' ORDER BY msg_offset), '')
                   FROM mq.fetch('rt', 0, 0)"; }

# wait_for SQL WANT: until the query returns WANT (10 s at most)
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ "$(sql "$1")" == "$2" ]] && return 0
		sleep 0.1
	done
	echo "# timed out waiting for: $1 = $2"
}
session() { # APPNAME COLUMN: a column of the session of mqctl
	sql "SELECT $2 FROM pg_stat_activity WHERE application_name = '$1'"
}
terminate() {
	sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$1'" >/dev/null
}

# start_producer APPNAME ARGS...: mqctl produce rt reading from a fifo on fd 7
start_producer() {
	local app="$1"
	shift
	rm -f "$(tmpdir)/in"
	mkfifo "$(tmpdir)/in"
	"$MQCTL" -d "application_name=$app" produce rt -v "$@" <"$(tmpdir)/in" >"$(tmpdir)/out" 2>"$(tmpdir)/err" &
	producer=$!
	on_exit "kill -KILL $producer 2>/dev/null"
	exec 7>"$(tmpdir)/in"
	wait_for "SELECT state FROM pg_stat_activity WHERE application_name = '$app'" idle
}
stop_producer() {
	exec 7>&-
	RC=0
	wait "$producer" || RC=$?
	OUT="$(cat "$(tmpdir)/out")"
	ERR="$(cat "$(tmpdir)/err")"
}

# --- a connection lost between batches ----------------------------------------------
start_producer mqctl_between
echo one >&7
wait_for "SELECT log_end_offset FROM mq.partitions WHERE topic = 'rt'" 1
pid_before="$(session mqctl_between pid)"
terminate mqctl_between
wait_for "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid_before" 0
echo two >&7
stop_producer
expect_rc 0 "idempotent: a connection lost between batches"
check_match "$ERR" 'warning: .*terminating connection|connection lost.*; sending the batch again in 100 ms' \
	"says it sends the batch again"
check_eq "$OUT" $'partition=0 offset=0\npartition=0 offset=1' "both records sent, once"
check_eq "$(records)" "0=one 1=two" "nothing lost, nothing twice"
check_eq "$(sql "SELECT count(DISTINCT producer_id) FROM mq.producer_state")" 1 \
	"the same producer id after connecting again"

# --- without idempotence: exit 3 ---------------------------------------------------------
start_producer mqctl_plain --no-idempotence
echo three >&7
wait_for "SELECT log_end_offset FROM mq.partitions WHERE topic = 'rt'" 3
terminate mqctl_plain
sleep 0.2
echo four >&7
stop_producer
expect_rc 3 "--no-idempotence: a lost connection ends produce"
check_match "$ERR" '1 records were sent before this error; the 1 of the failed batch were not' \
	"says what was sent"
check_eq "$(records)" "0=one 1=two 2=three" "no retry"

# --- the reply of a committed batch lost ------------------------------------------------
if [[ "$(sql "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" != t ]]; then
	pass "# SKIP the lost reply needs a superuser (ALTER SYSTEM)"
	finish
fi
restore_sync() {
	sql "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
}
on_exit restore_sync

start_producer mqctl_reply
# its session idle is not enough: between connecting and its first batch
# it registers as an idempotent producer (mq.init_producer, a commit); a
# loaded machine once showed it idle before that, so the standby setting
# held that commit instead of the batch's, and mqctl, not yet producing,
# gave up (exit 3)
wait_for "SELECT count(*) FROM mq.producer" 2
sql "ALTER SYSTEM SET synchronous_standby_names = 'mq_no_such_standby'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
wait_for "SHOW synchronous_standby_names" mq_no_such_standby
printf 'five\nsix\n' >&7
wait_for "SELECT wait_event FROM pg_stat_activity WHERE application_name = 'mqctl_reply'" SyncRep
# committed in the WAL, visible once the wait ends: the termination ends it
lost_at="$(sql "SELECT clock_timestamp()")"
terminate mqctl_reply
restore_sync
stop_producer
expect_rc 0 "idempotent: the reply of a committed batch lost"
check_match "$ERR" 'canceling the wait for synchronous replication and terminating connection' \
	"the server ended the session after the commit"
check_match "$ERR" 'sending the batch again' "the batch was sent again"
check_eq "$OUT" $'partition=0 offset=3\npartition=0 offset=4' "the retry reports the original offsets"
check_eq "$(records)" "0=one 1=two 2=three 3=five 4=six" "and wrote nothing twice"
check_eq "$(sql "SELECT bool_and(created_at < '$lost_at') FROM mq.fetch('rt', 0, 3)")" t \
	"the records are those of the first attempt, from before the reply was lost"

# a transient refusal (mq_error_is_transient): with lock_timeout, a batch
# that waits longer for the partition's produce lock, held by a long SQL
# producing transaction, is cancelled (55P03); an idempotent producer
# sends it again on the same connection until the lock is free
mqctl topic create rt2 >/dev/null
hold_produce_lock() { # VALUE: an SQL transaction produces VALUE and stays open 1.5 s
	hold_briefly "SELECT mq.send('rt2', NULL, '$1', NULL, 0)" || fail "the SQL transaction holds the lock"
}
hold_produce_lock sql
run env PGOPTIONS="-c lock_timeout=100ms" "$MQCTL" produce rt2 <<<"after"
wait "$HOLDER"
expect_rc 0 "idempotent: a batch refused by lock_timeout"
check_match "$ERR" 'lock timeout; sending the batch again' "is sent again"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('rt2', 0, 0)")" \
	"sql,after" "and written once, after the SQL transaction's record"
hold_produce_lock sql2
run env PGOPTIONS="-c lock_timeout=100ms" "$MQCTL" produce rt2 --no-idempotence <<<"lost"
wait "$HOLDER"
expect_rc 1 "without idempotence the refusal ends produce"
check_match "$ERR" 'lock timeout' "with the server's error"

finish
