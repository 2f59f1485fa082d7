#!/usr/bin/env bash
# mqctl reassign, broker remove and broker set-rack against a coordinator
# without brokers (the test registers them by writing mq_coord.broker; no
# mq-broker runs, so nothing moves: test/t/125 moves replicas for real).
# Usage errors, plans that cannot be read, a plan applied all or nothing,
# --dry-run, --verify's exit status, and the coordinator's refusals.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name)
VALUES (1, 'host=a', 'a'), (2, 'host=b', 'b'), (3, 'host=c', 'c');
-- live while the topic is placed: this session holds their liveness locks
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), b) FROM generate_series(1, 3) b;
SELECT mq_coord.create_topic('moving', 2, '{"replication.factor": 2}');
SQL
plan="$(tmpdir)/plan.json"

# usage
run mqctl reassign
expect_rc 2 "a mode is required"
check_match "$ERR" 'give one of --generate, --execute and --verify' "it says which"
run mqctl reassign --execute --verify --file="$plan"
expect_rc 2 "one mode only"
run mqctl reassign --generate --topics=moving
expect_rc 2 "--generate needs --brokers"
run mqctl reassign --verify --file="$plan" --throttle=10
expect_rc 2 "--throttle goes with --execute"
run mqctl reassign --execute --file="$plan" --throttle=0
expect_rc 2 "a throttle of 0 is a usage error"
run mqctl reassign --execute --file="$plan" --wait
expect_rc 2 "--wait goes with --verify"

# plans that cannot be read
run mqctl reassign --execute --file="$(tmpdir)/missing.json"
expect_rc 2 "a missing plan file"
check_match "$ERR" '^mqctl: error: cannot read the plan .*/missing.json: unable to open [^(]*$' \
	"the common error form, and no line number for a file that cannot be opened"
run mqctl reassign --verify --file="$(tmpdir)/missing.json"
expect_rc 2 "a missing plan file (--verify)"
check_no_match "$ERR" 'line -1' "no line -1"
printf '{"version": 1}' >"$plan"
run mqctl reassign --execute --file="$plan"
expect_rc 2 "a plan without partitions"
check_match "$ERR" 'has no "partitions" array' "it says what is missing"
printf '{"partitions": [{"topic": "moving", "partition": 0, "replicas": ["x"]}]}' >"$plan"
run mqctl reassign --execute --file="$plan"
expect_rc 2 "replicas must be broker ids"

# --generate proposes, changes nothing
run mqctl reassign --generate --topics=moving --brokers=2,3
expect_rc 0 "reassign --generate"
check_match "$OUT" $'Current partition replica assignment\n\\{"version":1,"partitions":\\[\\{"topic":"moving","partition":0,"replicas":\\[1,2\\]\\}' "the current plan"
check_match "$OUT" $'Proposed partition reassignment configuration\n\\{"version":1,"partitions":\\[\\{"topic":"moving","partition":0,"replicas":\\[2,3\\]\\},\\{"topic":"moving","partition":1,"replicas":\\[3,2\\]\\}\\]\\}' "the proposal"
run mqctl reassign --generate --topics=moving --brokers=2,9
expect_rc 1 "an unknown broker in --brokers"
check_match "$ERR" 'SQLSTATE MQ042' "MQ042"

# a plan is applied all or nothing; --dry-run changes nothing
printf '{"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [3, 2]}, {"topic": "moving", "partition": 1, "replicas": [9, 1]}]}' >"$plan"
run mqctl reassign --execute --file="$plan"
expect_rc 1 "a plan naming an unknown broker"
check_match "$ERR" 'SQLSTATE MQ042' "is refused with MQ042"
check_eq "$(sql "SELECT count(*) FROM mq_coord.reassignments")" 0 "and none of it applied"
printf '{"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [3, 2]}]}' >"$plan"
run mqctl reassign --execute --file="$plan" --dry-run
expect_rc 0 "--dry-run"
check_eq "$OUT" $'moving[0]: replicas 1,2 -> 3,2 (while moving: 3,2,1)\nDry run: 1 partition(s) checked, nothing changed.' "the dry run shows the move"
check_eq "$(sql "SELECT count(*) FROM mq_coord.reassignments")" 0 "and changes nothing"
run mqctl reassign --execute --file="$plan" --throttle=5000
expect_rc 0 "--execute"
check_eq "$(sql "SELECT target_replicas::text || ' ' || throttle_bytes FROM mq_coord.partition WHERE topic = 'moving' AND partition = 0")" \
	'{3,2} 5000' "the target and the throttle are recorded"

# --verify: exit 1 while moving (no broker runs here), with the progress line
run mqctl reassign --verify --file="$plan"
expect_rc 1 "--verify while moving"
check_match "$OUT" 'moving\[0\]: in progress: replicas 3,2,1, ISR 1,2, leader -, catching up 3' "progress"
run mqctl reassign --verify --file="$plan" --wait --interval-ms=10 --timeout-ms=100
expect_rc 1 "--verify --wait gives up after --timeout-ms"
check_match "$OUT" '1 of 1 partition\(s\) still moving' "and says so"
printf '{"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 3]}]}' >"$plan"
run mqctl reassign --execute --file="$plan"
expect_rc 1 "another target while moving"
check_match "$ERR" 'SQLSTATE MQ045' "is refused with MQ045"
check_match "$ERR" 'cancel it by moving it back to \{1,2\}' "the hint names the replicas it had"
printf '{"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 2]}]}' >"$plan"
run mqctl reassign --execute --file="$plan"
expect_rc 0 "the replicas it had cancel the move"
check_eq "$(sql "SELECT target_replicas::text || ' ' || replicas::text FROM mq_coord.partition WHERE topic = 'moving' AND partition = 0")" \
	'{1,2} {1,2,3}' "it moves back; broker 3 leaves once 1 and 2 are in sync"

# brokers
run mqctl broker remove 9
expect_rc 1 "removing an unknown broker"
check_match "$ERR" 'SQLSTATE MQ042' "MQ042"
run mqctl broker remove 3
expect_rc 1 "removing a broker named by a move"
check_match "$ERR" 'SQLSTATE MQ043' "MQ043"
sql "INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name) VALUES (4, 'host=d', 'd')" >/dev/null
run mqctl broker set-rack 4 r2
expect_rc 0 "broker set-rack"
check_eq "$OUT" "Broker 4 is in rack r2." "set-rack says so"
check_eq "$(sql "SELECT rack FROM mq_coord.broker WHERE broker_id = 4")" r2 "the rack is recorded"
run mqctl broker remove 4
expect_rc 0 "removing a broker that holds nothing"
check_eq "$OUT" "Removed broker 4." "remove says so"
run mqctl broker remove x
expect_rc 2 "a broker id is a number"

finish
