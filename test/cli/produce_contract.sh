#!/usr/bin/env bash
# The produce contract (src/sql/31_produce_acks.sql) through its SQL and
# mqctl clients: `CALL mq.produce` from psql and `mqctl produce --acks`.
# For each: acks=0, 1 and all with a full ISR (all waits until the
# follower has the record); acks=all with the ISR already below
# min.insync.replicas refused with MQ021 and nothing written (the log end
# unchanged); acks=all whose ISR shrinks while it waits: MQ022, the record
# written.  The partition is led on this node in epoch 1; the follower
# (replica 2) is played by psql, as the broker would drive it.
# mq-kafka's Produce: test/kafka/produce_acks.sh; the functions alone:
# test/pgtap/produce_contract.sql.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

log_end() { sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$1'"; }
hwm() { sql "SELECT high_watermark FROM mq.replica_status WHERE topic = '$1'"; }

# the follower, replica 2, fetches up to the log end (the leader's high
# watermark then moves to it), reporting the offsets version it applied
follow() {
	local end
	end="$(log_end "$1")"
	sql "SELECT (mq.replica_fetch('$1', 0, 1, 2, $end, 1000, 0, mq._offsets_version(topic_id, 0))).log_end_offset
	       FROM mq.topic WHERE topic_name = '$1'" >/dev/null
}

# wait until the client named $1 waits in mq.produce_await (an Extension wait)
await_waiting() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
		             AND wait_event_type = 'Extension'")" != 0 ]] && return 0
		sleep 0.05
	done
	return 1
}

# produce one record through client $1 (sql or mqctl) to topic $2 with
# acks $3 and value $4; the client's application_name is contract_$1
produce() {
	case "$1" in
	sql)
		PGAPPNAME=contract_sql psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
			-c "CALL mq.produce('$2', NULL, ARRAY['$4']::bytea[], 0, '$3', timeout_ms => 20000)"
		;;
	mqctl)
		printf '%s\n' "$4" | "$MQCTL" -d "application_name=contract_mqctl" produce "$2" -p 0 --acks "$3" \
			$([[ "$3" == all ]] && echo --request-timeout-ms 20000)
		;;
	esac
}

# produce in the background: its output and status land in $out.{out,rc}
produce_bg() {
	out="$(tmpdir)/$1.$RANDOM"
	(
		rc=0
		produce "$@" >"$out.out" 2>&1 || rc=$?
		echo "$rc" >"$out.rc"
	) &
	bg=$!
	on_exit "kill $bg 2>/dev/null"
}

for client in sql mqctl; do
	t="contract_$client"
	sql "SELECT mq.create_topic('$t', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null
	sql "SELECT mq.replica_become_leader('$t', 0, 1, 1, '{1,2,3}', '{1}')" >/dev/null

	# --- the ISR {1} is below min.insync.replicas 2 before the write -----------
	run produce "$client" "$t" all before
	check_eq "$([[ $RC != 0 ]] && echo failed)" failed "$client: acks=all with a short ISR fails"
	check_match "$ERR$OUT" 'MQ021' "$client: with not enough replicas (MQ021)"
	check_eq "$(log_end "$t")" 0 "$client: and nothing was written (the log end is unchanged)"
	run produce "$client" "$t" -1 before
	check_match "$ERR$OUT" 'MQ021' "$client: acks=-1 too"
	check_eq "$(log_end "$t")" 0 "$client: and nothing was written"

	# --- the follower joins: a full ISR {1, 2} ---------------------------------
	follow "$t"
	follow "$t"
	sql "SELECT mq.replica_set_isr('$t', 0, 1, '{1,2}')" >/dev/null
	run produce "$client" "$t" 0 zero
	expect_rc 0 "$client: acks=0 with a full ISR"
	run produce "$client" "$t" 1 one
	expect_rc 0 "$client: acks=1 with a full ISR"
	check_eq "$(log_end "$t")" 2 "$client: both written"
	follow "$t"

	produce_bg "$client" "$t" all full
	await_waiting "contract_$client" || fail "$client: acks=all waits for the follower"
	check_eq "$(log_end "$t")" 3 "$client: acks=all: the record is written before the wait"
	check_eq "$(kill -0 $bg 2>/dev/null && echo waiting)" waiting "$client: and the client waits"
	follow "$t"
	wait "$bg" || true
	check_eq "$(cat "$out.rc")" 0 "$client: acks=all is acknowledged once the follower has it"
	check_eq "$(hwm "$t")" 3 "$client: the high watermark passed the record"

	# --- the ISR shrinks while acks=all waits ----------------------------------
	produce_bg "$client" "$t" all after
	await_waiting "contract_$client" || fail "$client: acks=all waits again"
	sql "SELECT mq.replica_set_isr('$t', 0, 1, '{1}')" >/dev/null
	wait "$bg" || true
	check_eq "$([[ "$(cat "$out.rc")" != 0 ]] && echo failed)" failed "$client: the ISR shrank after the write: it fails"
	check_match "$(cat "$out.out")" 'MQ022' "$client: with not enough replicas after append (MQ022)"
	check_eq "$(log_end "$t")" 4 "$client: and the record is written"
	check_eq "$(sql "SELECT convert_from(value, 'UTF8') FROM mq.fetch('$t', 0, 3, 1)")" after \
		"$client: it is the record sent"
done


# acks 0 and 1 need no partition (the records go by key): the call's wait,
# owed nothing, is no error after its commit (it said "topic and
# partition must not be null" once the records were written, and a
# client's retry would write them twice)
sql "SELECT mq.create_topic('pc_nopart', 2)" >/dev/null
for acks in 0 1; do
	run psql -X -q -v ON_ERROR_STOP=1 -c "CALL mq.produce('pc_nopart', ARRAY['k$acks']::bytea[], ARRAY['v$acks']::bytea[], NULL, '$acks')"
	expect_rc 0 "CALL mq.produce with acks $acks and no partition"
done
check_eq "$(sql "SELECT (SELECT count(*) FROM mq.fetch('pc_nopart', 0, 0)) + (SELECT count(*) FROM mq.fetch('pc_nopart', 1, 0))")" \
	"2" "both records written once"

# text keys and values, as mq.send_batch's text form takes them: UTF-8,
# in order, a NULL element a null value; inside a transaction block MQ052
sql "SELECT mq.create_topic('pc_text', 1)" >/dev/null
run psql -X -q -v ON_ERROR_STOP=1 -At -c "CALL mq.produce('pc_text', ARRAY['k1', NULL], ARRAY['hé', NULL], 0, 'all')"
expect_rc 0 "CALL mq.produce with text[] keys and values"
check_eq "$OUT" "0|" "its base offset (no follower to wait for on this node)"
check_eq "$(sql "SELECT string_agg(coalesce(encode(key, 'hex'), '-') || ':' || coalesce(encode(value, 'hex'), '-'), ','
	ORDER BY msg_offset) FROM mq.fetch('pc_text', 0, 0)")" "6b31:68c3a9,-:-" "stored as UTF-8, in order, nulls kept"
run psql -X -q -c "BEGIN" -c "CALL mq.produce('pc_text', NULL, ARRAY['x'], 0)"
check_match "$ERR" "mq.produce cannot run inside a transaction block" "in a transaction block: refused (MQ052)"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('pc_text', 0, 0)")" "2" "and nothing written"

finish
