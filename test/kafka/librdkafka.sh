#!/usr/bin/env bash
# librdkafka (rdk_client.c) against mq-kafka: an idempotent producer whose
# broker is killed mid-run delivers each record exactly once; three group
# members over six partitions, one leaving, commit every record exactly
# once; each compression codec round-trips; the admin APIs that delete
# and alter (DeleteRecords, DeleteGroups, AlterConfigs).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

cc -O2 -Wall -o "$T/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread ||
	{ fail "rdk_client builds"; finish; }
kafka_start || { fail "mq-kafka starts"; finish; }

# Idempotent producer, broker killed while records are in flight.  To be
# sure some batch is committed in the database but never acknowledged, a
# SQL session holds partition 0's produce lock (an uncommitted mq.send):
# the daemon's appends to partition 0 wait on it; the daemon is killed, the
# session commits, the waiting appends commit with nobody to answer, and
# the producer retries them against the restarted daemon.  Only
# idempotence keeps them from being stored twice.
sql "SELECT mq.create_topic('idem', 2)" >/dev/null
mkfifo "$T/hold"
psql -X -q -v ON_ERROR_STOP=1 <"$T/hold" >/dev/null &
holder=$!
exec 5>"$T/hold"
echo "BEGIN; SELECT mq.send('idem', 'hold'::text, 'hold'::text, partition => 0);" >&5
waiting() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory'")" -ge "$1" ]]; }
holding() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%''hold''%'")" == 1 ]]; }
wait_for 30 holding || fail "a SQL session holds partition 0"
"$T/rdk_client" produce "$BROKER" idem 20000 none idempotent >"$T/p.out" 2>"$T/p.err" 5>&- &
prod=$!
wait_for 60 grep -q half "$T/p.out" || fail "producer reached half"
wait_for 60 waiting 1 || fail "an append waits on partition 0"
kafka_kill
echo "COMMIT;" >&5
exec 5>&-
wait "$holder" || true
wait_eq 30 0 sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory'" ||
	fail "the waiting appends finished"
kafka_start || fail "mq-kafka restarts"
RC=0
wait "$prod" || RC=$?
OUT="$(cat "$T/p.out")" ERR="$(tail -5 "$T/p.err")"
expect_rc 0 "idempotent producer: every record acknowledged across a broker kill"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT value)
                   FROM generate_series(0, 1) p, mq.fetch('idem', p, 0, 100000)")" \
	"20001 20001" "each record stored exactly once (and the SQL session's one)"

# a group of three over six partitions; the third member leaves
sql "SELECT mq.create_topic('grp6', 6)" >/dev/null
run "$T/rdk_client" produce "$BROKER" grp6 3000 none
expect_rc 0 "3000 records produced"
run timeout 150 "$T/rdk_client" group "$BROKER" grp6 3000 g6
expect_rc 0 "three members: every record committed exactly once"
check_match "$OUT" "member 2 committed 500 records" "the third member left after its share"
check_eq "$(sql "SELECT sum(mq.committed_offset('g6', 'grp6', p)) FROM generate_series(0, 5) p")" \
	"3000" "the group's committed offsets cover the topic"

# each codec, produced by librdkafka and read back through SQL
for codec in gzip snappy lz4 zstd; do
	sql "SELECT mq.create_topic('codec_$codec', 1)" >/dev/null
	run "$T/rdk_client" produce "$BROKER" "codec_$codec" 2000 "$codec"
	expect_rc 0 "librdkafka produces with $codec"
	check_eq "$(sql "SELECT count(*) FILTER (WHERE convert_from(value, 'UTF8') = format('rec-%s-%s', msg_offset, repeat('0', 100)))
	                   FROM mq.fetch('codec_$codec', 0, 0, 10000)")" "2000" "$codec records stored intact"
done

# admin: DeleteRecords, DeleteGroups (one deletable, one with a live SQL
# member, one unknown), AlterConfigs
sql "SELECT mq.create_topic('rdkadm', 1, '{\"segment.bytes\": \"1MB\"}')" >/dev/null
sql "SELECT mq.send_batch('rdkadm', NULL, ARRAY['a', 'b', 'c', 'd', 'e']::bytea[])" >/dev/null
sql "SELECT mq.commit_offset('rdkdel', 'rdkadm', 0, 2), mq.commit_offset('rdklive', 'rdkadm', 0, 2)" >/dev/null
sql "SELECT mq.join_group('rdklive', ARRAY['rdkadm'], session_timeout_ms => 600000)" >/dev/null
run timeout 120 "$T/rdk_client" admin "$BROKER" rdkadm rdkdel rdklive rdknope
expect_rc 0 "librdkafka admin client"
check_match "$OUT" $'delete-records 0 NO_ERROR 3\ndelete-records 0 OFFSET_OUT_OF_RANGE' \
	"DeleteRecords: the new low watermark, then OFFSET_OUT_OF_RANGE beyond the end"
check_eq "$(sql "SELECT log_start_offset FROM mq.partitions WHERE topic = 'rdkadm'")" "3" "SQL sees the new log start"
check_match "$OUT" 'delete-group rdkdel NO_ERROR' "DeleteGroups deletes a group without members"
check_match "$OUT" 'delete-group rdklive NON_EMPTY_GROUP' "a group with a live SQL member: NON_EMPTY_GROUP"
check_match "$OUT" 'delete-group rdknope GROUP_ID_NOT_FOUND' "an unknown group: GROUP_ID_NOT_FOUND"
check_eq "$(sql "SELECT string_agg(group_id, ',' ORDER BY group_id) FROM mq.consumer_offset
                   WHERE topic_id = (SELECT topic_id FROM mq.topics WHERE topic = 'rdkadm')")" "rdklive" \
	"only the deleted group's offsets are gone"
check_match "$OUT" $'alter-configs retention.ms=3600000 NO_ERROR\nalter-configs retention.ms=soon INVALID_CONFIG' \
	"AlterConfigs: a valid value applies, an invalid one is INVALID_CONFIG"
check_eq "$(sql "SELECT config FROM mq.topics WHERE topic = 'rdkadm'")" '{"retention.ms": 3600000}' \
	"and replaces the whole config (segment.bytes returned to its default)"

# OffsetDelete (DeleteConsumerGroupOffsets): a group's offset of one
# partition goes; a group whose live SQL member reads the topic keeps it
# (GROUP_SUBSCRIBED_TO_TOPIC, the partition's error); an unknown group is
# GROUP_ID_NOT_FOUND (the group's)
sql "SELECT mq.commit_offset('rdkoff', 'rdkadm', 0, 4), mq.commit_offset('rdkoff2', 'rdkadm', 0, 4)" >/dev/null
run timeout 120 "$T/rdk_client" delete-offsets "$BROKER" rdkadm rdkoff rdklive rdknope
expect_rc 0 "librdkafka DeleteConsumerGroupOffsets"
check_match "$OUT" 'delete-offsets rdkoff NO_ERROR NO_ERROR' "a group's offset of a partition is deleted"
check_eq "$(sql "SELECT string_agg(group_id, ',' ORDER BY group_id) FROM mq.consumer_offset
                   WHERE topic_id = (SELECT topic_id FROM mq.topics WHERE topic = 'rdkadm')")" "rdklive,rdkoff2" \
	"SQL sees only that offset gone"
check_match "$OUT" 'delete-offsets rdklive NO_ERROR GROUP_SUBSCRIBED_TO_TOPIC' \
	"a group whose live member reads the topic: GROUP_SUBSCRIBED_TO_TOPIC"
check_match "$OUT" 'delete-offsets rdknope GROUP_ID_NOT_FOUND' "an unknown group: GROUP_ID_NOT_FOUND"

# a Kafka member (kcat -G) subscribed to rdkadm: its group's offsets of
# rdkadm stay (GROUP_SUBSCRIBED_TO_TOPIC, decided by mq-kafka from the
# member's subscription), those of a topic it does not read go
sql "SELECT mq.create_topic('rdkother', 1)" >/dev/null
sql "SELECT mq.commit_offset('rdkg', 'rdkadm', 0, 4), mq.commit_offset('rdkg', 'rdkother', 0, 0)" >/dev/null
kcat -b "$BROKER" -G rdkg rdkadm -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 >"$T/kcat.out" 2>"$T/kcat.err" &
KCAT=$!
on_exit "kill $KCAT"
wait_for 30 grep -q 'assigned: rdkadm' "$T/kcat.err" || fail "kcat joins group rdkg"
run timeout 120 "$T/rdk_client" delete-offsets "$BROKER" rdkadm rdkg
check_match "$OUT" 'delete-offsets rdkg NO_ERROR GROUP_SUBSCRIBED_TO_TOPIC' \
	"a Kafka member subscribed to the topic: GROUP_SUBSCRIBED_TO_TOPIC"
run timeout 120 "$T/rdk_client" delete-offsets "$BROKER" rdkother rdkg
check_match "$OUT" 'delete-offsets rdkg NO_ERROR NO_ERROR' "a topic the member does not read: deleted"
check_eq "$(sql "SELECT string_agg(t.topic, ',') FROM mq.committed_offsets('rdkg') t")" "rdkadm" \
	"SQL: the group keeps rdkadm's offset, rdkother's is gone"
kill "$KCAT" 2>/dev/null || true

finish
