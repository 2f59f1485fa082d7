#!/usr/bin/env bash
# Kafka transactions (KIP-98) with confluent-kafka-python (Debian's
# python3-confluent-kafka, on librdkafka) against one mq-kafka
# (test/kafka/py/txn.py): a consume-transform-produce pipeline with
# read_committed whose output holds every input exactly once, across an
# mq-kafka kill -9 in the middle, with the group's offsets committed in
# the transactions; an aborted transaction is never visible; a zombie
# with the old epoch is fenced; a transaction left open past its
# transaction.timeout.ms is aborted and its producer fenced; while a
# transaction is open, its records take no offset and another producer
# of the partition is not held up; a record Kafka refuses (too large, no
# key on a compacted topic) fails its delivery, not the commit.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3
txn() { timeout 120 "$PY" test/kafka/py/txn.py "$BROKER" "$@"; }
sql "SELECT mq.create_topic('tx-in', 2)" >/dev/null
sql "SELECT mq.create_topic('tx-out', 2)" >/dev/null
sql "SELECT mq.send_batch('tx-in', array_fill(NULL::bytea, ARRAY[20]),
        (SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 19) i), NULL, 0)" >/dev/null
sql "SELECT mq.send_batch('tx-in', array_fill(NULL::bytea, ARRAY[20]),
        (SELECT array_agg(convert_to('w' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 19) i), NULL, 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

# 40 records in transactions of 5, with a crash of mq-kafka in the middle
out_at_least() { (($(sql "SELECT coalesce(sum(p.high_watermark), 0) FROM mq.partitions p WHERE p.topic = 'tx-out'") >= $1)); }
txn pipeline tx-in tx-out tx-g 40 tx-pipe 0.05 >"$(tmpdir)/pipe.out" 2>"$(tmpdir)/pipe.err" &
pipe=$!
wait_for 60 out_at_least 10 || fail "the pipeline commits its first transactions"
kafka_kill
check_eq "$(out_at_least 40 && echo done || echo middle)" "middle" "mq-kafka was killed in the middle of the pipeline"
kafka_start || { fail "mq-kafka starts again"; finish; }
rc=0
wait "$pipe" || rc=$?
check_eq "$rc" "0" "the pipeline runs on through a kill -9 of mq-kafka"
[[ "$rc" == 0 ]] || sed 's/^/#   /' "$(tmpdir)/pipe.err"
OUT="$(cat "$(tmpdir)/pipe.out")"
printf '# %s\n' "$(tail -n 1 <<<"$OUT")"
check_eq "$(json_get "$(tail -n 1 <<<"$OUT")" '{committed}')" "40" "it reports 40 committed"
check_eq "$(json_get "$(tail -n 1 <<<"$OUT")" '{first_offset}')" "" \
	"with offset -1 (None) for the first record of a batch: offsets are assigned at commit"
check_eq "$(sql "SELECT sum(next_offset) FROM mq.consumer_offset WHERE group_id = 'tx-g'")" "40" \
	"the group's offsets were committed with the records (40 consumed)"
run txn read tx-out 100
expect_rc 0 "a read_committed consumer reads the output"
check_eq "$(sql "SELECT jsonb_array_length('$(tail -n 1 <<<"$OUT")'::jsonb)")" "40" \
	"the read_committed consumer sees 40 records"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT f.value) FROM generate_series(0, 1) p,
                        mq.fetch('tx-out', p, 0, 1000) f")" "40 40" \
	"the log holds every input record exactly once"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('tx-out', p, 0, 1000) f
                  WHERE convert_from(f.value, 'UTF8') !~ '^[VW][0-9]+$'")" "0" "and nothing else"

# abort: never visible
before="$(sql "SELECT sum(p.log_end_offset) FROM mq.partitions p WHERE p.topic = 'tx-out'")"
run txn abort tx-out tx-abort aborted-value
expect_rc 0 "a transaction is aborted"
check_eq "$(sql "SELECT sum(p.log_end_offset) FROM mq.partitions p WHERE p.topic = 'tx-out'")" "$before" \
	"an aborted transaction's record never reaches the log"

# zombie fencing
run txn zombie tx-out tx-zombie
expect_rc 0 "two instances of one transactional id run"
check_eq "$(tail -n 1 <<<"$OUT")" '{"new": "ok", "old": "_FENCED"}' \
	"the new instance commits; the old one (older epoch) is fenced"
check_eq "$(sql "SELECT string_agg(convert_from(f.value, 'UTF8'), ',' ORDER BY f.value)
                   FROM generate_series(0, 1) p, mq.fetch('tx-out', p, 0, 1000) f
                  WHERE f.value IN ('zombie', 'zombie-2', 'new')")" "new" \
	"only the new instance's record is in the log"

# the timeout: open for 4 s with transaction.timeout.ms 2000
run txn open tx-out tx-timeout late 4
expect_rc 0 "a transaction stays open past its timeout"
check_match "$(tail -n 1 <<<"$OUT")" '"commit": "(_FENCED|INVALID_PRODUCER_EPOCH|_STATE|INVALID_TXN_STATE|PRODUCER_FENCED)"' \
	"its commit then fails: it was aborted and the producer fenced"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('tx-out', p, 0, 1000) f
                  WHERE f.value = 'late'")" "0" "its record never reaches the log"
printf '# the commit: %s\n' "$(tail -n 1 <<<"$OUT")"
staged() { sql "SELECT coalesce(string_agg(transactional_id || ':' || convert_from(vals[1], 'UTF8'), ','), 'none')
                  FROM mq.kafka_txn_record"; }
check_match "$(staged)" "tx-timeout:late" "until the sweep, its record stays staged"
# mq's maintenance (every mq.maintenance_interval in the databases it
# maintains; the test's is not) aborts it and bumps its epoch
sql "SELECT mq.run_maintenance()" >/dev/null
check_eq "$(staged)" "none" "nothing is left staged: the timeout aborted it"
check_eq "$(sql "SELECT state || ' ' || producer_epoch FROM mq.kafka_transactions WHERE transactional_id = 'tx-timeout'")" \
	"empty 1" "and bumped the epoch, which fences the producer"

# what Kafka refuses when the batch comes is refused then, not at the
# commit: a record over max.message.bytes, a record without a key on a
# compacted topic (mq used to stage them, report them delivered, and fail
# the commit)
sql "SELECT mq.create_topic('tx-small', 1, '{\"max.message.bytes\": 1000}')" >/dev/null
sql "SELECT mq.create_topic('tx-compact', 1, '{\"cleanup.policy\": \"compact\"}')" >/dev/null
run txn refused tx-small tx-refused k 2000
check_eq "$(tail -n 1 <<<"$OUT")" \
	'{"delivery": ["MSG_SIZE_TOO_LARGE", "MSG_SIZE_TOO_LARGE"], "abortable": true, "commit": "MSG_SIZE_TOO_LARGE", "next": "ok"}' \
	"a record over max.message.bytes fails its batch's delivery; the transaction must abort; the next one commits"
run txn refused tx-compact tx-refused - 10
check_eq "$(tail -n 1 <<<"$OUT")" \
	'{"delivery": ["INVALID_RECORD", "INVALID_RECORD"], "abortable": true, "commit": "INVALID_RECORD", "next": "ok"}' \
	"a record without a key on a compacted topic: INVALID_RECORD at its delivery"
# a partition short of in-sync replicas (min.insync.replicas above its
# one replica) refuses a transactional batch when it comes, as Kafka's
# acks=all: mq used to stage it and commit it below the minimum
sql "SELECT mq.create_topic('tx-short', 1, '{\"min.insync.replicas\": 2}'), mq.create_topic('tx-short-next', 1)" >/dev/null
run txn refused tx-short tx-refused k 10 tx-short-next
check_eq "$(tail -n 1 <<<"$OUT")" \
	'{"delivery": ["_MSG_TIMED_OUT", "_MSG_TIMED_OUT"], "abortable": true, "commit": "_TIMED_OUT", "next": "ok"}' \
	"a partition with fewer in-sync replicas than min.insync.replicas refuses the transaction's batches (NOT_ENOUGH_REPLICAS, which librdkafka retries until message.timeout.ms); it must abort"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('tx-short', 0, 0, 100)") $(sql "SELECT count(*) FROM mq.fetch('tx-short-next', 0, 0, 100)")" "0 1" \
	"nothing reached its log; the next transaction's record reached the other topic"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.fetch('tx-small', 0, 0, 100)")
$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.fetch('tx-compact', 0, 0, 100)")" "next
next" "only the next transactions' records reached the logs"

check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
finish
