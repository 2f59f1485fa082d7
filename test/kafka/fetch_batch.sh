#!/usr/bin/env bash
# Fetch v4+ answered from the record batches the database encodes
# (mq.kafka_fetch, src/kafka_fetch.c) against mq-kafka's own encoder
# (--fetch-encoder=daemon), byte for byte, over a matrix of records (null
# keys and values, empty values, toasted values, headers as lists with
# repeated keys, null and binary values, as objects and as jsonb with no
# list form; CreateTime timestamps before 2000 and now; LogAppendTime in
# several milliseconds and a partition that switches between the two;
# compaction's gaps; a moved log start; an idempotent producer's records;
# three leader epochs, whose batches carry each its records' epoch)
# and of requests (versions 4, 7 and 11; offsets at the start, inside,
# in a gap, at the end and out of range; unknown topics and partitions;
# response and partition byte limits from 1 byte to none).  Then the
# default daemon is seen to call mq.kafka_fetch: without it, its Fetch
# fails while the other's still answers.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('fbm', 3, '{\"segment.records\": 40}')" >/dev/null
# per partition: 150 records of every shape
sql "SELECT count(*) FROM generate_series(0, 2) p, LATERAL mq.send_batch('fbm',
       ARRAY(SELECT CASE WHEN i % 7 <> 0 THEN convert_to('k' || i || 'é', 'UTF8') END
               FROM generate_series(1, 150) i),
       ARRAY(SELECT CASE WHEN i % 11 = 0 THEN NULL WHEN i % 13 = 0 THEN ''::bytea
                         WHEN i = 50 THEN convert_to(repeat('z', 300000), 'UTF8')
                         WHEN i = 60 THEN convert_to((SELECT string_agg(md5(j::text), '')
                                                        FROM generate_series(1, 6000) j), 'UTF8')
                         ELSE convert_to(repeat(chr(97 + i % 26), (i * 37) % 900), 'UTF8') END
               FROM generate_series(1, 150) i),
       ARRAY(SELECT CASE i % 6
                      WHEN 0 THEN '[[\"h\", \"1\"], [\"h\", null], [\"bin\", {\"base64\": \"AAH/\"}], [\"clé\", \"vé\"]]'::jsonb
                      WHEN 1 THEN '{\"a\": \"b\", \"n\": 1, \"o\": {\"x\": [1, null]}}'::jsonb
                      WHEN 2 THEN '\"no list form\"'::jsonb
                      WHEN 3 THEN '[]'::jsonb END
               FROM generate_series(1, 150) i),
       partition => p,
       timestamps => ARRAY(SELECT CASE WHEN i % 4 = 0 THEN '1999-12-31 23:59:59.9995+00'::timestamptz
                                       WHEN i % 4 = 1 THEN now() + i * interval '1 ms' END
                             FROM generate_series(1, 150) i))" >/dev/null
# an idempotent producer's batch on partition 1
sql "SELECT count(*) FROM mq.init_producer() ip, LATERAL mq.send_batch('fbm', NULL::text[],
       ARRAY['i1', 'i2', 'i3'], partition => 1, producer_id => ip.producer_id,
       producer_epoch => ip.producer_epoch, base_sequence => 0)" >/dev/null
# LogAppendTime over several milliseconds
sql "SELECT mq.create_topic('fbl', 1, '{\"message.timestamp.type\": \"LogAppendTime\"}')" >/dev/null
for i in 1 2 3 4 5; do
	sql "SELECT count(*) FROM mq.send_batch('fbl', NULL::text[], ARRAY['a$i', 'b$i', 'c$i'])" >/dev/null
	sql "SELECT pg_sleep(0.003)" >/dev/null
done
# a partition whose timestamp type switches
sql "SELECT mq.create_topic('fbs', 1)" >/dev/null
for type in CreateTime LogAppendTime CreateTime LogAppendTime; do
	sql "SELECT mq.alter_topic('fbs', '{\"message.timestamp.type\": \"$type\"}')" >/dev/null
	sql "SELECT count(*) FROM mq.send_batch('fbs', NULL::text[], ARRAY['x', 'y', 'z', 'w'])" >/dev/null
done
# compaction's gaps
sql "SELECT mq.create_topic('fbc', 1, '{\"cleanup.policy\": \"compact\", \"segment.records\": 10,
                                        \"min.cleanable.dirty.ratio\": 0, \"delete.retention.ms\": \"1d\"}')" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('fbc',
       ARRAY(SELECT 'k' || i % 3 FROM generate_series(0, 34) i),
       ARRAY(SELECT CASE WHEN i = 29 THEN NULL ELSE 'v' || i END FROM generate_series(0, 34) i))" >/dev/null
check_eq "$(sql "SELECT mq.compact('fbc') > 0")" "t" "compaction left gaps"
# a moved log start
sql "SELECT mq.create_topic('fbd', 1)" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('fbd', NULL::text[], ARRAY(SELECT 'd' || i FROM generate_series(1, 20) i))" >/dev/null
sql "SELECT mq.delete_records('fbd', 0, 7)" >/dev/null

# leader epochs (as test/kafka/epochs.sh writes them): 0 from 0, 2 from 3, 5 from 5
elect() {
	sql "INSERT INTO mq.leader_epoch_history (topic_id, partition, leader_epoch, start_offset)
	     SELECT topic_id, 0, $2, mq._log_end_offset(topic_id, 0) FROM mq.topic WHERE topic_name = '$1';
	     UPDATE mq.partition_state SET leader_epoch = $2
	      WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = '$1')" >/dev/null
}
sql "SELECT mq.create_topic('fbe', 1)" >/dev/null
elect fbe 0
sql "SELECT count(*) FROM mq.send_batch('fbe', NULL::text[], ARRAY['a', 'b', 'c'])" >/dev/null
elect fbe 2
sql "SELECT count(*) FROM mq.send_batch('fbe', NULL::text[], ARRAY['d', 'e'])" >/dev/null
elect fbe 5
sql "SELECT count(*) FROM mq.send_batch('fbe', NULL::text[], ARRAY['f', 'g', 'h'])" >/dev/null

kafka_start || { fail "mq-kafka starts"; finish; }
PORT_DB="$KAFKA_PORT"
PID_DB="$KAFKA_PID"
kill_db() { kill -9 "$PID_DB" 2>/dev/null || true; }
on_exit kill_db
KAFKA_PORT=""
kafka_start --fetch-encoder=daemon || { fail "mq-kafka --fetch-encoder=daemon starts"; finish; }

run perl test/kafka/fetch_batch.pl "$PORT_DB" "$KAFKA_PORT" \
	fbm:0:0 fbm:1:37 fbm:2:149 fbm:0:0,fbm:1:0,fbm:2:0 fbm:2:100,fbm:0:45,fbm:1:150 \
	fbl:0:0 fbl:0:4 fbs:0:0 fbs:0:6 fbc:0:0 fbc:0:3 fbc:0:28 fbd:0:7 fbd:0:3 fbd:0:20 fbd:0:25 \
	fbm:0:10,fbl:0:0,fbs:0:2,fbc:0:0,fbd:0:10 nope:0:0,fbm:7:0,fbm:0:140 \
	fbe:0:0 fbe:0:3 fbe:0:5 fbe:0:6
printf '%s\n' "$OUT" | grep -v '^ok ' | sed 's/^/# /'
expect_rc 0 "every response the same bytes from both encoders, every batch's CRC right"
check_eq "$(printf '%s\n' "$OUT" | grep -c '^ok ')" "1056" "1056 responses compared"
records="$(printf '%s\n' "$OUT" | sed -n 's/^records \([0-9]*\) .*/\1/p')"
check_eq "$((records > 5000))" "1" "they held records ($records)"

# the default daemon reads through mq.kafka_fetch: without it, Fetch fails
sql "ALTER FUNCTION mq.kafka_fetch(text[], integer[], bigint[], integer[], integer[], integer)
       RENAME TO kafka_fetch_away" >/dev/null
run perl test/kafka/fetch_batch.pl "$PORT_DB" "$KAFKA_PORT" fbm:0:0
sql "ALTER FUNCTION mq.kafka_fetch_away(text[], integer[], bigint[], integer[], integer[], integer)
       RENAME TO kafka_fetch" >/dev/null
check_eq "$RC" "1" "without mq.kafka_fetch the default daemon's answers differ from the daemon encoder's"

finish
