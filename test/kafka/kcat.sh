#!/usr/bin/env bash
# kcat against mq-kafka: metadata, produce with keys then consume byte for
# byte, each compression codec, headers and timestamps, consuming from a
# timestamp, and a consumer group that commits and resumes after its
# commit.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('kc', 3)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

# -L: topics, partitions, leaders
run kcat_ -L -J -t kc
expect_rc 0 "kcat -L"
check_eq "$(json_get "$OUT" '{topics,0,topic}')" "kc" "metadata names the topic"
check_eq "$(json_get "$OUT" '{topics,0,partitions,2,partition}')" "2" "three partitions"
check_eq "$(json_get "$OUT" '{topics,0,partitions,0,leader}')" "1" "leader is broker 1"
check_eq "$(json_get "$OUT" '{brokers,0,name}')" "$BROKER" "broker address"

# -P with keys, then -C from the beginning: byte for byte, in order
printf 'alpha\tone\nbeta\ttwo words\n\xc3\xa9t\xc3\xa9\t\xff\xfe binary\ngamma\t\nkey only\t-\n' >"$T/in"
run kcat_ -P -t kc -p 0 -K $'\t' -l "$T/in"
expect_rc 0 "kcat -P with keys"
run kcat_ -C -t kc -p 0 -e -o beginning -f '%k\t%s\n' -q
expect_rc 0 "kcat -C -e -o beginning"
printf '%s\n' "$OUT" >"$T/out"
if cmp -s "$T/in" "$T/out"; then pass "consumed bytes equal produced bytes"; else
	fail "consumed bytes equal produced bytes" "$(diff <(od -c "$T/in") <(od -c "$T/out") | head -20)"
fi
check_eq "$(sql "SELECT encode(value, 'hex') FROM mq.fetch('kc', 0, 2, 1)")" "fffe2062696e617279" \
	"stored value is the produced bytes"

# null key (no -K) arrives as a null key
echo "nokey" | kcat_ -P -t kc -p 0
check_eq "$(sql "SELECT key IS NULL FROM mq.fetch('kc', 0, 5, 1)")" "t" "a record without key has a null key"
run kcat_ -C -t kc -p 0 -o 5 -c 1 -J -q
check_match "$OUT" '"key":null' "kcat sees the null key"

# each codec
for codec in gzip snappy lz4 zstd; do
	seq 1 300 | sed "s/^/$codec-record-/" >"$T/c.in"
	run kcat_ -P -t kc -p 1 -z "$codec" -l "$T/c.in"
	expect_rc 0 "produce with -z $codec"
done
run kcat_ -C -t kc -p 1 -e -o beginning -q
for codec in gzip snappy lz4 zstd; do
	check_eq "$(grep -c "^$codec-record-" <<<"$OUT")" "300" "all $codec records read back"
done
check_eq "$(sql "SELECT count(DISTINCT value) FROM mq.fetch('kc', 1, 0, 10000)")" "1200" \
	"1200 distinct records stored"

# headers: ordered, repeated keys, a null value, round trip through mq
printf 'with headers\n' | kcat_ -P -t kc -p 2 -H trace=a -H trace=b -H none -H "bin=$(printf 'x\ty')"
check_eq "$(sql "SELECT headers FROM mq.fetch('kc', 2, 0, 1)")" '[["trace", "a"], ["trace", "b"], ["none", null], ["bin", "x\ty"]]' \
	"kcat's headers are stored in order, with the null value"
run kcat_ -C -t kc -p 2 -o 0 -c 1 -q -f '%h\n'
check_eq "$OUT" "trace=a,trace=b,none=NULL,bin=$(printf 'x\ty')" "and come back to kcat as sent"

# timestamps: the producer's (CreateTime) are stored and returned
run kcat_ -C -t kc -p 2 -o 0 -c 1 -q -f '%T\n'
check_eq "$OUT" "$(sql "SELECT (extract(epoch FROM timestamp) * 1000)::int8 || ' ' || timestamp_type FROM mq.fetch('kc', 2, 0, 1)" | sed 's/ CreateTime$//')" \
	"kcat sees the producer's timestamp mq stored (CreateTime)"

# -o s@TIMESTAMP starts at the first record stamped at or after it
echo "before" | kcat_ -P -t kc -p 2
wait_eq 10 t sql "SELECT clock_timestamp() > max(timestamp) + interval '5 ms' FROM mq.fetch('kc', 2, 0, 100)"
printf 'after1\nafter2\n' | kcat_ -P -t kc -p 2
ts="$(sql "SELECT (extract(epoch FROM timestamp) * 1000)::int8 FROM mq.fetch('kc', 2, 2, 1)")"
run kcat_ -C -t kc -p 2 -o "s@$ts" -e -q
check_eq "$OUT" $'after1\nafter2' "kcat -o s@<timestamp> starts at the right offset"

# a record larger than the consumer's byte limits still arrives whole (KIP-74)
sql "SELECT mq.create_topic('big', 1)" >/dev/null
head -c 300000 /dev/zero | tr '\0' 'x' >"$T/big"
printf 'small\n' | kcat_ -P -t big
kcat_ -P -t big -X message.max.bytes=1000000 "$T/big"
run kcat_ -C -t big -e -q -o beginning -X message.max.bytes=1000 -X fetch.max.bytes=1024 \
	-X max.partition.fetch.bytes=1024 -f '%S\n'
check_eq "$OUT" $'5\n300000' "fetch byte limits: a record over the limit is returned whole"

# -G: a group consumes, commits, and resumes after its commit
run kcat_ -G kgrp -X auto.offset.reset=earliest -e -q -f '%s\n' kc
expect_rc 0 "kcat -G consumes"
check_eq "$(wc -l <<<"$OUT" | tr -d ' ')" "$(sql "SELECT sum(high_watermark) FROM mq.partitions WHERE topic = 'kc'")" \
	"the group read every record"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('kgrp', 'kc', p)::text, ',' ORDER BY p) FROM generate_series(0, 2) p")" \
	"$(sql "SELECT string_agg(high_watermark::text, ',' ORDER BY partition) FROM mq.partitions WHERE topic = 'kc'")" \
	"the group committed the end offsets"
printf 'resume1\nresume2\n' | kcat_ -P -t kc -p 0
run kcat_ -G kgrp -X auto.offset.reset=earliest -e -q -f '%s\n' kc
check_eq "$OUT" $'resume1\nresume2' "a restarted group resumes after its commit"

finish
