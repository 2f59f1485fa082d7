#!/usr/bin/env bash
# kafkajs transactions (npm, pinned by test/kafka/js/package-lock.json)
# against mq-kafka (test/kafka/js/txn.js): a consume-transform-produce
# group whose transactional producer sends each batch and its offsets
# (sendOffsets: AddOffsetsToTxn, TxnOffsetCommit) and commits; the output
# holds every input record once, the group's offsets are mq's committed
# offsets, and an aborted transaction's record never reaches the log.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafkajs
sql "SELECT mq.create_topic('jtx-in', 2)" >/dev/null
sql "SELECT mq.create_topic('jtx-out', 2)" >/dev/null
for p in 0 1; do
	sql "SELECT mq.send_batch('jtx-in', array_fill(NULL::bytea, ARRAY[25]),
	        (SELECT array_agg(convert_to('p$p-' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 24) i), NULL, $p)" >/dev/null
done
kafka_start || { fail "mq-kafka starts"; finish; }

run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 150 node test/kafka/js/txn.js "$BROKER" jtx-in jtx-out jtx-g jtx-id 50
expect_rc 0 "kafkajs's transactional consume-transform-produce runs"
check_eq "$(json_get "$OUT" '{committed}') $(json_get "$OUT" '{aborted}')" "50 true" \
	"it commits the 50 input records in transactions, then aborts one"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT f.value) FROM generate_series(0, 1) p,
                        mq.fetch('jtx-out', p, 0, 1000) f")" "50 50" \
	"the output holds every input record once"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('jtx-out', p, 0, 1000) f
                  WHERE convert_from(f.value, 'UTF8') !~ '^P[01]-[0-9]+$'")" "0" \
	"and nothing else: the aborted transaction's record is not in the log"
check_eq "$(sql "SELECT sum(mq.committed_offset('jtx-g', 'jtx-in', p)) FROM generate_series(0, 1) p")" "50" \
	"the offsets sent to the transactions are the group's committed offsets"
check_eq "$(sql "SELECT count(*) FROM mq.kafka_txn_record")" "0" "nothing is left staged"

finish
