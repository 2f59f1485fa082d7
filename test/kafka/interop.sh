#!/usr/bin/env bash
# SQL and Kafka clients on the same topics: records sent with mq.send are
# read by kcat and the reverse; offsets a Kafka group commits are mq's
# (mq.committed_offset, mq.consumer_lag, mqctl group describe), and a
# group can move from SQL to Kafka; topics made with CreateTopics are
# ordinary mq topics.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('io', 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

# SQL -> Kafka
sql "SELECT mq.send('io', 'sql-key'::bytea, '\x00ff10'::bytea, partition => 0)" >/dev/null
sql "SELECT mq.send('io', NULL::bytea, 'no key'::bytea, partition => 0)" >/dev/null
kcat_ -C -t io -p 0 -e -o beginning -q -f '%k|%S|%s\n' >"$T/sql.out"
check_eq "$(od -An -tx1 <"$T/sql.out" | tr -d ' \n')" \
	"$(printf 'sql-key|3|\x00\xff\x10\n|6|no key\n' | od -An -tx1 | tr -d ' \n')" \
	"kcat reads records sent with mq.send, bytes intact"

# headers and a timestamp given in SQL reach Kafka consumers
sql "SELECT mq.send('io', 'h'::bytea, 'with headers'::bytea, partition => 0, \"timestamp\" => '2020-01-02 03:04:05.678Z',
                    header_list => ARRAY[('k', 'v1'), ('k', NULL), ('bin', '\\xff01')]::mq.header[])" >/dev/null
kcat_ -C -t io -p 0 -o 2 -c 1 -q -f '%T|%h\n' >"$T/hdr.out"
check_eq "$(od -An -tx1 <"$T/hdr.out" | tr -d ' \n')" \
	"$(printf '1577934245678|k=v1,k=NULL,bin=\xff\x01\n' | od -An -tx1 | tr -d ' \n')" \
	"kcat sees the headers and timestamp given to mq.send"

# Kafka -> SQL
printf 'kafka-key\tkafka value\n' | kcat_ -P -t io -p 1 -K $'\t'
check_eq "$(sql "SELECT convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8') FROM mq.fetch('io', 1, 0, 10)")" \
	"kafka-key=kafka value" "mq.fetch reads records produced by kcat"

# a Kafka group's commits are mq's
run kcat_ -G iogrp -X auto.offset.reset=earliest -e -q -f '%p:%o\n' io
expect_rc 0 "kcat group consumes"
check_eq "$(sql "SELECT mq.committed_offset('iogrp', 'io', 0) || ',' || mq.committed_offset('iogrp', 'io', 1)")" \
	"3,1" "mq.committed_offset shows the Kafka group's commits"
check_eq "$(sql "SELECT string_agg(partition || ':' || committed_offset || ':' || lag, ',' ORDER BY partition)
                   FROM mq.consumer_lag WHERE group_id = 'iogrp'")" "0:3:0,1:1:0" "mq.consumer_lag sees them"
run mqctl group describe iogrp --format json
expect_rc 0 "mqctl group describe"
check_match "$OUT" '"committed_offset": ?3' "mqctl group describe shows the committed offset"

# a group moves from SQL to Kafka: kcat resumes where SQL committed
sql "SELECT mq.send('io', 'a'::text, 'after-sql-commit'::text, partition => 0)" >/dev/null
sql "SELECT mq.commit_offset('sqlgrp', 'io', 0, 3), mq.commit_offset('sqlgrp', 'io', 1, 1)" >/dev/null
run kcat_ -G sqlgrp -X auto.offset.reset=earliest -e -q io
check_eq "$OUT" "after-sql-commit" "a Kafka consumer resumes from offsets committed in SQL"

# a group with SQL members (mq.join_group) is refused to Kafka clients
sql "SELECT member FROM mq.join_group('mixgrp', ARRAY['io'])" >/dev/null
timeout 10 kcat -b "$BROKER" -G mixgrp -e -q io >/dev/null 2>"$T/mix.err" || true
check_match "$(cat "$T/mix.err")" 'Inconsistent group protocol' \
	"a Kafka member of a group with SQL members gets INCONSISTENT_GROUP_PROTOCOL"

# long polling: a consumer waiting at the end gets a record sent with SQL,
# and one produced through Kafka (its first fetch is sent before either)
hw="$(sql "SELECT high_watermark FROM mq.partitions WHERE topic = 'io' AND partition = 1")"
kcat_ -C -u -t io -p 1 -o "$hw" -c 2 -f '%s\n' -X fetch.wait.max.ms=30000 -X debug=protocol \
	>"$T/poll.out" 2>"$T/poll.err" &
poller=$!
wait_for 30 grep -q 'Sent FetchRequest' "$T/poll.err" || fail "the consumer sent a fetch"
sql "SELECT mq.send('io', 'w'::text, 'woken by sql'::text, partition => 1)" >/dev/null
wait_for 30 grep -q 'woken by sql' "$T/poll.out" || fail "the waiting consumer got the SQL record"
printf 'woken by kafka\n' | kcat_ -P -t io -p 1
RC=0
wait "$poller" || RC=$?
check_eq "$(cat "$T/poll.out")" $'woken by sql\nwoken by kafka' "a waiting fetch returns records from SQL and Kafka producers"

finish
