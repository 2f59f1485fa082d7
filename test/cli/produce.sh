#!/usr/bin/env bash
# mqctl produce: lines of standard input become records; keys, partitions,
# batching (full batches, end of input, idle input), acks, bytes that are
# not text, and errors (missing topic or partition, line without key
# separator).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create p3 --partitions 3 >/dev/null
mqctl topic create p1 >/dev/null

# records of a topic as "partition offset key value" (hex for bytes)
records() {
	sql "SELECT f.partition || ' ' || f.msg_offset || ' ' || coalesce(encode(f.key, 'escape'), '<null>')
	            || ' ' || coalesce(encode(f.value, 'escape'), '<null>')
	       FROM mq.partitions p, mq.fetch(p.topic, p.partition, 0, 100000) f
	      WHERE p.topic = '$1' ORDER BY f.partition, f.msg_offset"
}

# --- values, one per line ---------------------------------------------------
run mqctl produce p1 < <(printf 'one\ntwo\n\nlast without newline')
expect_rc 0 "produce four lines"
check_eq "$OUT" "" "produce prints nothing by default"
check_eq "$(records p1)" $'0 0 <null> one\n0 1 <null> two\n0 2 <null> \n0 3 <null> last without newline' \
	"values in order; an empty line is an empty value; the last line needs no newline"

run mqctl produce p1 < /dev/null
expect_rc 0 "empty input"
check_eq "$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'p1'")" 4 "empty input sends nothing"

# --- --verbose: partition and offset of every record ------------------------
run mqctl produce p1 --verbose < <(printf 'a\nb\n')
check_eq "$OUT" $'partition=0 offset=4\npartition=0 offset=5' "--verbose prints partition and offset"

# --- keys: Kafka's partitioner puts a key where mq.partition_for says ------
run mqctl produce p3 --key-separator : -v < <(printf 'alpha:1\nbeta:2\ngamma:3:with colon\nalpha:4\n')
expect_rc 0 "produce with keys"
want=""
for k in alpha beta gamma alpha; do
	want+="partition=$(sql "SELECT mq.partition_for('p3', '$k'::text)") "
done
check_eq "$(echo "$OUT" | sed 's/ offset=.*//' | tr '\n' ' ')" "$want" "each key goes to mq.partition_for(key)"
check_eq "$(sql "SELECT encode(value, 'escape') FROM mq.partitions p, mq.fetch('p3', p.partition, 0) f
                  WHERE p.topic = 'p3' AND key = 'gamma'")" "3:with colon" "the line is split at the first separator"
check_eq "$(sql "SELECT string_agg(encode(value, 'escape'), ',' ORDER BY msg_offset)
                   FROM mq.fetch('p3', mq.partition_for('p3', 'alpha'::text), 0) WHERE key = 'alpha'")" "1,4" \
	"records of one key keep their order"

run mqctl produce p3 --key-separator '\t' -p 2 < <(printf 'k\tv\n')
check_eq "$(sql "SELECT encode(key, 'escape') || '=' || encode(value, 'escape') FROM mq.fetch('p3', 2, 0) ORDER BY msg_offset DESC LIMIT 1")" \
	"k=v" "--key-separator understands \\t; --partition picks the partition"

run mqctl produce p3 --key-separator '::' < <(printf 'a::1\nb::2\nno separator here\nc::3\n')
expect_rc 5 "a line without the key separator"
check_match "$ERR" 'line 3 has no key separator; the 2 lines before it were sent' "says which line"
check_eq "$(sql "SELECT count(*) FROM mq.partitions p, mq.fetch('p3', p.partition, 0) f WHERE p.topic = 'p3' AND f.key IN ('a', 'b', 'c')")" \
	2 "the lines before it were sent, the ones after were not"

# --- bytes that are not text go through unchanged -----------------------------
run mqctl produce p1 --key-separator '|' < <(printf 'k\001\377|v\000\376\n')
expect_rc 0 "produce bytes that are not UTF-8"
check_eq "$(sql "SELECT encode(key, 'hex') || ' ' || encode(value, 'hex') FROM mq.fetch('p1', 0, 6)")" \
	"6b01ff 7600fe" "keys and values hold the line's bytes"

# --- batching -------------------------------------------------------------------
# the records of one mq.send_batch call share created_at
batches() {
	sql "SELECT count(DISTINCT created_at) FROM mq.fetch('$1', 0, $2, 100000)"
}
start=$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'p1'")
run mqctl produce p1 --batch-size 500 < <(seq 1 1200)
expect_rc 0 "1200 lines"
check_eq "$(batches p1 "$start")" 3 "1200 lines in batches of 500 are 3 batches"
start=$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'p1'")
run mqctl produce p1 -b 1 < <(seq 1 5)
check_eq "$(batches p1 "$start")" 5 "--batch-size 1: one batch per line"

# idle input: the batch waiting goes out after --linger-ms, not at the end
start=$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'p1'")
(
	echo first
	sleep 2
	echo second
) | mqctl produce p1 --linger-ms 100 &
producer=$!
sleep 1
check_eq "$(sql "SELECT log_end_offset - $start FROM mq.partitions WHERE topic = 'p1'")" 1 \
	"a paused input sends what it has after --linger-ms"
wait "$producer"
check_eq "$(sql "SELECT log_end_offset - $start FROM mq.partitions WHERE topic = 'p1'")" 2 "and the rest at the end"

# --- acks -------------------------------------------------------------------------
run mqctl produce p1 --acks 0 -v < <(printf 'async\n')
expect_rc 0 "--acks 0"
check_match "$OUT" '^partition=0 offset=[0-9]+$' "--acks 0 sends"
run mqctl produce p1 --acks 1 < <(printf 'sync\n')
expect_rc 0 "--acks 1"
check_eq "$(sql "SELECT string_agg(encode(value, 'escape'), ',' ORDER BY msg_offset) FROM mq.fetch('p1', 0, 0, 100000) WHERE value IN ('async', 'sync')")" \
	"async,sync" "both acks settings stored their records"

# --- server errors ---------------------------------------------------------------------
run mqctl produce nosuch < <(printf 'x\n')
expect_rc 1 "produce to a missing topic"
check_match "$ERR" 'topic "nosuch" does not exist \[SQLSTATE MQ001\]' "says the topic is missing"
run mqctl produce p3 --partition 7 < <(printf 'x\n')
expect_rc 1 "produce to a missing partition"
check_match "$ERR" 'SQLSTATE MQ006' "missing partition: MQ006"
check_match "$ERR" '0 records were sent before this error' "says how many records got through"

finish
