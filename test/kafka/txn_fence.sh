#!/usr/bin/env bash
# TxnOffsetCommit v3+ fences a stale member (KIP-447), as Kafka's
# coordinator does: a transactional producer whose consumer's member id
# or generation the group no longer has cannot commit the group's offsets
# in its transaction (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
# FENCED_INSTANCE_ID; clients then abort), while the member's own commit,
# the "simple" commit without a member (generation -1) and v0-v2 (no
# member) are taken (test/kafka/txn_fence.pl on the wire).
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

check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
finish
