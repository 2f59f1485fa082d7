#!/usr/bin/env bash
# Raw protocol: handshakes, bad frames, bad batches (CRC, truncation,
# decompression bomb, header keys, transactions, unknown codec, no batch,
# magic 1, ZSTD before Produce v7, a batch
# over max.message.bytes as sent, whose records each fit), admin
# requests (DeleteRecords, DeleteGroups, IncrementalAlterConfigs; the config
# APIs' illegal topic names),
# DescribeTopicPartitions with a response_partition_limit of 0 or less,
# Produce's log_append_time on a LogAppendTime topic, Fetch between a
# replicated partition's high watermark and its log end (no error), and
# unknown APIs, each answered with Kafka's error code or a closed
# connection (once the answers to the requests pipelined before it are
# written), and the old versions default clients send (Metadata v0,
# OffsetCommit v0/v1, OffsetFetch v0, ListOffsets v0), and ListOffsets'
# duplicate partitions and positions newer than its version, FindCoordinator's
# key types (unknown ones INVALID_REQUEST), OffsetFetch v8+ of no groups
# and of several (each answered), InitProducerId's producer id without
# its epoch, a new group's leader and protocol vote, and its initial
# delay extended while members join (test/kafka/protocol.pl); afterwards
# nothing bad was stored.  OffsetFetch
# v7+ with require_stable answers UNSTABLE_OFFSET_COMMIT while an open
# transaction holds the group's offset, the committed one without it
# (test/kafka/stable_offsets.pl).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('pt', 1)" >/dev/null
sql "SELECT mq.create_topic('plat', 1, '{\"message.timestamp.type\": \"LogAppendTime\"}')" >/dev/null
sql "SELECT mq.create_topic('pdel', 1)" >/dev/null
sql "SELECT mq.create_topic('ppipe', 1)" >/dev/null
sql "SELECT mq.create_topic('pbig', 1, '{\"max.message.bytes\": 300}')" >/dev/null
sql "SELECT mq.send_batch('pdel', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
# two groups' offsets for OffsetFetch v8+ of several groups
sql "SELECT mq.create_topic('pof', 1)" >/dev/null
sql "SELECT mq.send_batch('pof', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
sql "SELECT mq.commit_offset('ofa', 'pof', 0, 1), mq.commit_offset('ofb', 'pof', 0, 2)" >/dev/null
# a replicated partition whose follower (replica 2) has fetched nothing:
# three records, high watermark 0
sql "SELECT mq.create_topic('phw', 1)" >/dev/null
sql "SELECT mq.replica_become_leader('phw', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2])" >/dev/null
sql "SELECT mq.send_batch('phw', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
kafka_start --max-batch-bytes 1048576 --group-min-session-timeout-ms 1000 || { fail "mq-kafka starts"; finish; }

run perl test/kafka/protocol.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "protocol.pl: every check passed"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('pt', 0, 0, 100)")" \
	"v,w,h,g" "only the valid batches were stored"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('ppipe', 0, 0, 100)")" \
	"piped,piped" "each Produce pipelined before a bad request was written once"
check_eq "$(sql "SELECT string_agg(left(convert_from(value, 'UTF8'), 1), ',' ORDER BY msg_offset) FROM mq.fetch('pbig', 0, 0, 100)")" \
	"a,a,b,c,d" "of the batches over max.message.bytes as sent, nothing was stored"
check_eq "$(sql "SELECT headers FROM mq.fetch('pt', 0, 2, 1)")" '[["hk", "hv"], ["hk", null]]' \
	"the headers were stored in order, the null value as null"
check_eq "$(sql "SELECT log_start_offset FROM mq.partitions WHERE topic = 'pdel'")" "2" \
	"DeleteRecords moved the log start; the refused partitions changed nothing"
check_eq "$(sql "SELECT config FROM mq.topics WHERE topic = 'pdel'")" \
	'{"retention.ms": 3600000, "cleanup.policy": "compact,delete"}' \
	"IncrementalAlterConfigs changed the config; the refused and validate_only ones did not"
check_eq "$(printf '%s\n' "$OUT" | sed -n 's/^log_append_time //p')" \
	"$(sql "SELECT floor(extract(epoch FROM \"timestamp\") * 1000)::bigint FROM mq.fetch('plat', 0, 0, 1)")" \
	"Produce's log_append_time is the time the LogAppendTime topic's records carry"
check_eq "$(sql "SELECT mq.committed_offset('oldg', 'pt', 0)")" "3" \
	"OffsetCommit v0 and v1 committed into mq"

# require_stable (KIP-447): group stg committed 1 on pst/0; a transaction stages 2
sql "SELECT mq.create_topic('pst', 1)" >/dev/null
sql "SELECT mq.send_batch('pst', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
sql "SELECT mq.commit_offset('stg', 'pst', 0, 1)" >/dev/null
read -r pid epoch < <(sql "SELECT producer_id || ' ' || producer_epoch FROM mq.kafka_txn_init('pst-txn', 60000)")
sql "SELECT mq.kafka_txn_add_offsets('pst-txn', $pid, $epoch, 'stg'),
            mq.kafka_txn_offset('pst-txn', $pid, $epoch, 'stg', 'pst', 0, 2)" >/dev/null
run perl test/kafka/stable_offsets.pl "$KAFKA_PORT" stg pst 0
check_eq "$(tr '\n' ',' <<<"$OUT")" "6 0 1 0,7 0 1 0,7 1 -1 88,8 0 1 0,8 1 -1 88," \
	"OffsetFetch: with require_stable (v7, v8) an open transaction's offset is UNSTABLE_OFFSET_COMMIT; without it (and v6) the committed one"
sql "SELECT mq.kafka_txn_end('pst-txn', $pid, $epoch, true)" >/dev/null
run perl test/kafka/stable_offsets.pl "$KAFKA_PORT" stg pst 0
check_eq "$(tr '\n' ',' <<<"$OUT")" "6 0 2 0,7 0 2 0,7 1 2 0,8 0 2 0,8 1 2 0," \
	"once the transaction commits, every version reads its offset"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

# a new group's initial delay, extended while members keep joining, with
# a delay long enough to place the joins in it (protocol.pl)
kafka_kill
kafka_start --group-initial-delay-ms 1500 || { fail "mq-kafka starts"; finish; }
run perl test/kafka/protocol.pl "$KAFKA_PORT" initial-delay 1500
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "initial delay: members joining while a new group waits make one generation"

finish
