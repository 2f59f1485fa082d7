#!/usr/bin/env bash
# Fetch in many small steps: records of varied sizes (null keys, null and
# empty values, repeated headers with a null value) on two partitions, read
# by kcat under small byte limits, so that every response is cut by bytes
# and the consumer's next Fetch is read ahead while it decodes this one
# (broker/mq-kafka/fetch_ahead.c).  kcat checks every batch's CRC-32C
# (check.crcs=true).  What kcat prints must be exactly what
# mq.fetch reads: every record once, in order, nothing more.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('kf', 2)" >/dev/null
sql "SELECT count(*) FROM generate_series(0, 1) p, LATERAL mq.send_batch('kf',
       ARRAY(SELECT CASE WHEN i % 7 <> 0 THEN 'k' || i END FROM generate_series(1, 1500) i),
       ARRAY(SELECT CASE WHEN i % 11 <> 0 THEN repeat(chr(97 + i % 26), i % 300) END
               FROM generate_series(1, 1500) i),
       ARRAY(SELECT CASE WHEN i % 5 = 0 THEN jsonb_build_array(jsonb_build_array('h', i::text),
                                                               jsonb_build_array('h', NULL)) END
               FROM generate_series(1, 1500) i),
       partition => p)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

# kcat's format: partition offset key|value size (-1: null)|value|headers
sql "SELECT f.partition || ' ' || f.msg_offset || ' ' || coalesce(convert_from(f.key, 'UTF8'), '')
            || '|' || coalesce(octet_length(f.value), -1) || '|' || coalesce(convert_from(f.value, 'UTF8'), '')
            || '|' || coalesce((SELECT string_agg(h.key || '=' || coalesce(convert_from(h.value, 'UTF8'), 'NULL'),
                                                  ',' ORDER BY h.n)
                                  FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n)), '')
       FROM generate_series(0, 1) p, mq.fetch('kf', p, 0, 10000) f
      ORDER BY f.partition, f.msg_offset" >"$T/want"
check_eq "$(wc -l <"$T/want")" "3000" "3000 records stored"

run kcat_ -C -t kf -e -o beginning -q -X check.crcs=true -X fetch.max.bytes=3000 -X message.max.bytes=2000 \
	-X max.partition.fetch.bytes=1500 -f '%p %o %k|%S|%s|%h\n'
expect_rc 0 "kcat -C in steps of at most 1500 bytes a partition"
printf '%s\n' "$OUT" | sort -s -k1,1n -k2,2n >"$T/got"
if cmp -s "$T/want" "$T/got"; then pass "kcat read every record once, in order, as stored"; else
	fail "kcat read every record once, in order, as stored" "$(diff "$T/want" "$T/got" | head -10)"
fi

# one partition from an offset
run kcat_ -C -t kf -p 1 -e -o 700 -q -X check.crcs=true -X fetch.max.bytes=1200 -X message.max.bytes=1000 \
	-X max.partition.fetch.bytes=1200 -f '%p %o %k|%S|%s|%h\n'
expect_rc 0 "kcat -C of one partition from offset 700"
if printf '%s\n' "$OUT" | cmp -s - <(grep '^1 ' "$T/want" | tail -n +701); then
	pass "one partition from an offset: the records from there, in order"
else
	fail "one partition from an offset: the records from there, in order"
fi

# a consumer still catching up while SQL appends 500 more: no gap, no repeat
timeout 120 kcat -b "$BROKER" -C -t kf -p 0 -o beginning -c 2000 -q -X check.crcs=true -X fetch.max.bytes=1200 \
	-X message.max.bytes=1000 -X max.partition.fetch.bytes=1200 -f '%o|%s\n' >"$T/live" &
KC=$!
for b in 1 2 3 4 5; do
	sql "SELECT count(*) FROM mq.send_batch('kf', NULL::text[],
	       ARRAY(SELECT 'live-$b-' || i FROM generate_series(1, 100) i), partition => 0)" >/dev/null
done
wait "$KC"
check_eq "$?" "0" "the consumer read 2000 records"
sql "SELECT msg_offset || '|' || coalesce(convert_from(value, 'UTF8'), '')
       FROM mq.fetch('kf', 0, 0, 10000) ORDER BY msg_offset" >"$T/live.want"
if cmp -s "$T/live.want" "$T/live"; then pass "records appended while it read came once, in order"; else
	fail "records appended while it read came once, in order" "$(diff "$T/live.want" "$T/live" | head -10)"
fi

finish
