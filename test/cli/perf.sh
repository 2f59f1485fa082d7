#!/usr/bin/env bash
# mqctl perf produce / perf consume: the records really arrive (or are
# read), and the progress and summary lines have Kafka's shape.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create perf --partitions 3 >/dev/null
summary_re='^([0-9]+) records (sent|received), [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg (poll )?latency, [0-9.]+ ms max (poll )?latency, [0-9.]+ ms 50th, [0-9.]+ ms 95th, [0-9.]+ ms 99th, [0-9.]+ ms 99.9th\.$'
progress_re='[0-9]+ records (sent|received), [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency\.'
count() { sql "SELECT sum(log_end_offset) FROM mq.partitions WHERE topic = 'perf'"; }

run mqctl perf produce perf --records 5000 --record-size 50 --batch 1000
expect_rc 0 "perf produce"
check_match "$(echo "$OUT" | head -n 1)" '^Sending 5000 records of 50 bytes to perf: batches of 1000, 1 client, acks=1, idempotent\.$' \
	"perf produce: what it does, first"
check_match "$(echo "$OUT" | tail -n 1)" "$summary_re" "perf produce: Kafka's summary line"
check_match "$(echo "$OUT" | tail -n 1)" '^5000 records sent' "perf produce: all records sent"
check_eq "$(count)" 5000 "perf produce: 5000 records in the topic"
check_eq "$(sql "SELECT count(*) FROM mq.partitions p, mq.fetch('perf', p.partition, 0, 100000) f
                  WHERE p.topic = 'perf' AND convert_from(f.value, 'UTF8') ~ '^[A-Z]{50}\$' AND f.key IS NULL")" \
	5000 "perf produce: values of 50 bytes, no keys"

check_eq "$(sql "SELECT string_agg(cardinality(batch_first)::text, ',' ORDER BY cardinality(batch_first))
                        || ' ' || bool_and(batch_first[1] = 0) FROM mq.producer_state")" \
	"1,2,2 true" "perf produce: idempotent, 5 batches over the 3 partitions in turn, sequences from 0"

producers=$(sql "SELECT count(*) FROM mq.producer")
run mqctl perf produce perf --records 1001 --batch 100 --clients 3 --acks 0
expect_rc 0 "perf produce, 3 clients, acks 0"
check_match "$(echo "$OUT" | tail -n 1)" '^1001 records sent' "3 clients share 1001 records"
check_eq "$(count)" 6001 "perf produce: 1001 more records"
check_eq "$(sql "SELECT count(*) FROM mq.producer")" $((producers + 3)) "a producer id per client"

run mqctl perf produce perf --records 300 --batch 100 --acks all --no-idempotence
expect_rc 0 "perf produce --acks all --no-idempotence"
check_match "$(echo "$OUT" | head -n 1)" 'batches of 100, 1 client, acks=all\.$' "says acks=all, no idempotence"
check_eq "$(sql "SELECT count(*) FROM mq.producer")" $((producers + 3)) "--no-idempotence: no producer id"
check_eq "$(count)" 6301 "perf produce: 300 more records"

# --throughput paces the run, and progress lines come every interval
start=$(date +%s%N)
run mqctl perf produce perf --records 1500 --batch 100 --throughput 2000 --reporting-interval-ms 300
elapsed=$((($(date +%s%N) - start) / 1000000))
expect_rc 0 "perf produce --throughput"
check_match "$elapsed" '^([6-9][0-9][0-9]|[1-4][0-9][0-9][0-9])$' "1500 records at 2000/s take about 0.7 s (${elapsed} ms)"
check_match "$OUT" "$progress_re" "progress lines while it runs"
check_eq "$(count)" 7801 "perf produce: 1500 more records"

run mqctl perf produce nosuch --records 10
expect_rc 1 "perf produce to a missing topic"
check_match "$ERR" 'SQLSTATE MQ001' "missing topic: MQ001"

# --- consume ------------------------------------------------------------------------
run mqctl perf consume perf --records 7801 --batch-size 700
expect_rc 0 "perf consume"
check_match "$(echo "$OUT" | tail -n 1)" "$summary_re" "perf consume: Kafka's summary line"
check_match "$(echo "$OUT" | tail -n 1)" '^7801 records received' "perf consume: read every record"

run mqctl perf consume perf --records 7000 --group pg
expect_rc 0 "perf consume as a group"
check_match "$(echo "$OUT" | tail -n 1)" '^7000 records received' "perf consume --group: read 7000"
check_eq "$(sql "SELECT sum(mq.committed_offset('pg', 'perf', p))::bigint FROM generate_series(0, 2) p")" 7000 \
	"perf consume --group committed what it read"

run mqctl perf consume perf --records 1000 --group pg --timeout-ms 500
expect_rc 0 "perf consume runs out of records"
check_match "$(echo "$OUT" | tail -n 1)" '^801 records received' "reads what is left"
check_match "$ERR" 'stopping after 801 of 1000 records: none came for 500 ms' "and says why it stopped"

finish
