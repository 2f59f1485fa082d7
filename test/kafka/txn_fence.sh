#!/usr/bin/env bash
# TxnOffsetCommit v3+ fences a stale member (KIP-447), as Kafka's
# coordinator does: a transactional producer whose consumer's member id
# or generation the group no longer has cannot commit the group's offsets
# in its transaction (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
# FENCED_INSTANCE_ID; clients then abort), while the member's own commit,
# the "simple" commit without a member (generation -1) and v0-v2 (no
# member) are taken (test/kafka/txn_fence.pl on the wire); and a
# confluent-kafka consumer stopped past its session while another took
# its partition over cannot commit its transaction's offsets when it
# resumes (test/kafka/py/txn_zombie.py).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('tf', 1)" >/dev/null
sql "SELECT mq.send_batch('tf', NULL, (SELECT array_agg(convert_to('r' || i, 'UTF8')) FROM generate_series(0, 19) i))" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/txn_fence.pl "$KAFKA_PORT" tf-g tf tf-txn
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "txn_fence.pl runs"
step() { sed -n "s/^$1 //p" <<<"$OUT"; }
check_eq "$(step unknown-member)" "25" "a member id the group does not have: UNKNOWN_MEMBER_ID"
check_eq "$(step wrong-generation)" "22" "the member's id with another generation: ILLEGAL_GENERATION"
check_eq "$(step member)" "0" "the member's id and generation: staged"
check_eq "$(step no-member)" "0" "generation -1 without a member (a commit outside the group): staged"
check_eq "$(step v2)" "0" "v2 (no member in the request): staged"
check_eq "$(step fenced-instance)" "82" "a static instance id with another member id: FENCED_INSTANCE_ID"
check_eq "$(step static)" "0" "the static member's own commit: staged"
check_eq "$(step zombie)" "25" "a member that left the group (a zombie): UNKNOWN_MEMBER_ID"
check_eq "$(step end-txn)" "0" "the transaction commits"
check_eq "$(sql "SELECT group_id || ':' || next_offset FROM mq.consumer_offset
                  WHERE group_id LIKE 'tf-g%' ORDER BY group_id")" "tf-g:7
tf-g-static:6" "only the accepted commits' offsets were committed"

# the zombie with confluent-kafka at its defaults (test/kafka/py/txn_zombie.py):
# Z reads r0-r9 in a transaction and is stopped; its session (6 s) expires,
# H (txn.py's pipeline) takes the partition and commits offset 20 in its
# transactions; Z resumes, and its TxnOffsetCommit with its old member id
# is refused, the transaction aborted: no duplicates, the offset stays 20
sql "SELECT mq.create_topic('tz-in', 1)" >/dev/null
sql "SELECT mq.create_topic('tz-out', 1)" >/dev/null
sql "SELECT mq.send_batch('tz-in', NULL, (SELECT array_agg(convert_to('r' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 19) i))" >/dev/null
T="$(tmpdir)"
PY=/usr/bin/python3
"$PY" test/kafka/py/txn_zombie.py "$BROKER" tz-in tz-out tz-g tz-zombie 10 "$T/tz-go" >"$T/tz-z.out" 2>"$T/tz-z.err" &
zpid=$!	# python itself (under timeout(1), SIGSTOP would stop timeout alone)
wait_for 60 grep -q '^consumed 10' "$T/tz-z.out" || fail "the zombie-to-be reads 10 records" "$(cat "$T/tz-z.out" "$T/tz-z.err")"
kill -STOP "$zpid"
rc=0
timeout 120 "$PY" test/kafka/py/txn.py "$BROKER" pipeline tz-in tz-out tz-g 20 tz-heir >"$T/tz-h.out" 2>"$T/tz-h.err" || rc=$?
check_eq "$rc" "0" "the heir takes the partition over once the zombie's session expired"
[[ "$rc" == 0 ]] || tail -n 20 "$T/tz-h.out" "$T/tz-h.err" "$T/mq-kafka.log" | sed 's/^/#   /'
check_eq "$(json_get "$(tail -n 1 "$T/tz-h.out")" '{committed}')" "20" "and commits r0-r19 in its transactions"
check_eq "$(sql "SELECT next_offset FROM mq.consumer_offset WHERE group_id = 'tz-g'")" "20" "the group's offset is 20"
touch "$T/tz-go"
kill -CONT "$zpid"
wait_for 60 bash -c "! kill -0 $zpid 2>/dev/null" || kill -9 "$zpid" 2>/dev/null
wait "$zpid" || true
Z="$(tail -n 1 "$T/tz-z.out")"
printf '# the zombie: %s\n' "$Z"
check_match "$Z" '"send_offsets": "(UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION)"' \
	"the zombie's offsets are refused (its member id and generation are stale)"
check_match "$Z" '"abortable": true' "an abortable error: the zombie aborts"
check_eq "$(sql "SELECT next_offset FROM mq.consumer_offset WHERE group_id = 'tz-g'")" "20" \
	"the group's offset stays 20"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT value) FROM mq.fetch('tz-out', 0, 0, 100)")" "20 20" \
	"the output holds each record once: the zombie's were aborted"

check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
finish
