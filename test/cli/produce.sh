#!/usr/bin/env bash
# mqctl produce: lines of standard input become records; keys, partitions,
# batching (full batches, end of input, idle input), idempotence (producer
# id, sequences, a batch sent again), acks 0, 1 and all (with a replicated
# partition whose follower is played by psql), bytes that are not text, and
# errors (missing topic or partition, line without key separator).
# Retries after a lost connection: produce_retry.sh.
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
run mqctl produce p3 --key-separator '::' < <(printf 'd::1\nno separator\n')
expect_rc 5 "a second line without the key separator"
check_match "$ERR" 'line 2 has no key separator; the line before it was sent$' "one line: singular"

# --- CRLF input: the \r goes with the \n, as Kafka's console producer reads lines --
mqctl topic create pcrlf >/dev/null
run mqctl produce pcrlf --key-separator : < <(printf 'k1:v1\r\nk2:v\r2\r\nk3:v3\r')
expect_rc 0 "produce CRLF lines"
check_eq "$(sql "SELECT string_agg(encode(key, 'hex') || '=' || encode(value, 'hex'), ' ' ORDER BY msg_offset)
                  FROM mq.fetch('pcrlf', 0, 0)")" "6b31=7631 6b32=760d32 6b33=7633" \
	"a trailing \\r is dropped (also on a last line without newline), one inside is kept"

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

# --- idempotence (the default) ------------------------------------------------------
producers() { sql "SELECT count(*) FROM mq.producer"; }
# the last producer's batches on a partition: "firsts lasts" (sequences)
last_batches() {
	sql "SELECT array_to_string(batch_first, ',') || ' ' || array_to_string(batch_last, ',')
	       FROM mq.producer_state s JOIN mq.topics t USING (topic_id)
	      WHERE t.topic = '$1' AND s.partition = $2 ORDER BY s.producer_id DESC LIMIT 1"
}
log_end() { sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$1' AND partition = ${2:-0}"; }

n0=$(producers)
run mqctl produce p1 -b 2 < <(seq -f 'i%g' 1 5)
expect_rc 0 "idempotent produce"
check_eq "$(producers)" $((n0 + 1)) "one producer id per run (mq.init_producer once)"
check_eq "$(last_batches p1 0)" "0,2,4 1,3,4" "each batch carries the sequence of its first record"

# keys: a batch is split by partition (mq.partition_for), sequences per partition
run mqctl produce p3 --key-separator : -b 100 -v < <(printf 'alpha:1\nbeta:2\ngamma:3\nalpha:4\n')
expect_rc 0 "idempotent produce with keys"
want=""
for k in alpha beta gamma alpha; do
	want+="partition=$(sql "SELECT mq.partition_for('p3', '$k'::text)") "
done
check_eq "$(echo "$OUT" | sed 's/ offset=.*//' | tr '\n' ' ')" "$want" \
	"keys go to mq.partition_for(key); offsets print in input order"
p_alpha=$(sql "SELECT mq.partition_for('p3', 'alpha'::text)")
n_alpha=$(echo "$want" | tr ' ' '\n' | grep -c "^partition=$p_alpha\$")
check_eq "$(last_batches p3 "$p_alpha")" "0 $((n_alpha - 1))" \
	"the batch's records on alpha's partition are one call with sequences from 0"

# records without key: one partition per batch, the next in turn
run mqctl produce p3 -b 2 -v < <(seq -f 's%g' 1 6)
mapfile -t parts < <(echo "$OUT" | sed 's/partition=\([0-9]*\).*/\1/')
check_eq "${parts[0]}${parts[2]}${parts[4]}" "${parts[1]}${parts[3]}${parts[5]}" "a batch stays on one partition"
check_eq "$(((parts[0] + 1) % 3))$(((parts[0] + 2) % 3))" "${parts[2]}${parts[4]}" "the next batch goes to the next partition"

# --retry-last-batch: the last batch again, as after a lost reply: same offsets, nothing written
start=$(log_end p1)
run mqctl produce p1 -b 3 -v --retry-last-batch < <(seq -f 'r%g' 1 5)
expect_rc 0 "--retry-last-batch"
check_eq "$OUT" "$(for o in 0 1 2 3 4 3 4; do echo "partition=0 offset=$((start + o))"; done)" \
	"the batch sent again gets its original offsets"
check_match "$ERR" 'sent the last batch of 2 records again' "says so"
check_eq "$(log_end p1)" $((start + 5)) "and nothing was written twice"

n0=$(producers)
start=$(log_end p1)
run mqctl produce p1 --no-idempotence -v --retry-last-batch < <(printf 'dup\n')
expect_rc 0 "--no-idempotence"
check_eq "$(producers)" "$n0" "--no-idempotence: no producer id"
check_eq "$OUT" $'partition=0 offset='"$start"$'\npartition=0 offset='"$((start + 1))" \
	"--no-idempotence: the same batch sent again is written again"

# --- acks all --------------------------------------------------------------------------
start=$(log_end p1)
run mqctl produce p1 --acks all -v < <(printf 'all1\nall2\n')
expect_rc 0 "--acks all on a partition that is not replicated"
check_eq "$OUT" $'partition=0 offset='"$start"$'\npartition=0 offset='"$((start + 1))" "acks all: offsets as acks 1"
run mqctl produce p3 --acks all --key-separator : -v < <(printf 'alpha:1\nbeta:2\n')
expect_rc 0 "--acks all with keys over partitions"
check_eq "$(echo "$OUT" | sed 's/ offset=.*//' | tr '\n' ' ')" \
	"partition=$p_alpha partition=$(sql "SELECT mq.partition_for('p3', 'beta'::text)") " "acks all: keys to their partitions"

# a replicated partition led here, with replica 2 as follower (played by psql)
sql "SELECT mq.create_topic('rep', 1, '{\"replication.factor\": 2, \"min.insync.replicas\": 2}')" >/dev/null
sql "SELECT mq.replica_become_leader('rep', 0, 1, 1, '{1,2}', '{1}')" >/dev/null
run mqctl produce rep --acks all < <(printf 'x\n')
expect_rc 1 "--acks all with too few in-sync replicas"
check_match "$ERR" 'not enough in-sync replicas .*\[SQLSTATE MQ021\]' "MQ021"
check_eq "$(log_end rep)" 0 "nothing was written"
# the follower fetches at offset 0 (the high watermark) twice, the second
# reporting the offsets version it applied, so it may join
for _ in 1 2; do
	sql "SELECT mq.replica_fetch('rep', 0, 1, 2, 0, 100, 0, mq._offsets_version(topic_id, 0)) FROM mq.topic WHERE topic_name = 'rep'" >/dev/null
done
sql "SELECT mq.replica_set_isr('rep', 0, 1, '{1,2}')" >/dev/null
run mqctl produce rep --acks all --request-timeout-ms 300 < <(printf 'x\n')
expect_rc 1 "--acks all when the follower does not fetch"
check_match "$ERR" 'SQLSTATE MQ023' "times out with MQ023 after --request-timeout-ms"
check_match "$ERR" 'the 1 of the last batch are on the leader but not acknowledged' "says where the records are"
run mqctl produce rep --acks 1 < <(printf 'y\n')
expect_rc 0 "--acks 1 does not wait for the follower"

out="$(tmpdir)/acks.out"
"$MQCTL" -d "application_name=mqctl_acks" produce rep --acks all -v --request-timeout-ms 20000 \
	< <(printf 'z\n') >"$out" 2>&1 &
producer=$!
on_exit "kill -KILL $producer 2>/dev/null"
for ((i = 0; i < 100; i++)); do
	[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mqctl_acks'
	             AND wait_event_type = 'Extension'")" != 0 ]] && break
	sleep 0.1
done
check_eq "$(log_end rep)" 3 "acks all: the record is committed on the leader"
check_eq "$(kill -0 $producer 2>/dev/null && echo waiting)" "waiting" "and the producer waits for the follower"
sql "SELECT (mq.replica_fetch('rep', 0, 1, 2, 0, 1000, 0)).log_end_offset" >/dev/null
sql "SELECT (mq.replica_fetch('rep', 0, 1, 2, 3, 1000, 0)).log_end_offset" >/dev/null
rc=0
wait "$producer" || rc=$?
check_eq "$rc" 0 "acks all: acknowledged once the follower has the records"
check_match "$(cat "$out")" 'partition=0 offset=2' "with its offset"

# --- server errors ---------------------------------------------------------------------
run mqctl produce nosuch < <(printf 'x\n')
expect_rc 1 "produce to a missing topic"
check_match "$ERR" 'topic "nosuch" does not exist \[SQLSTATE MQ001\]' "says the topic is missing"
run mqctl produce p3 --partition 7 < <(printf 'x\n')
expect_rc 1 "produce to a missing partition"
check_match "$ERR" 'SQLSTATE MQ006' "missing partition: MQ006"
check_match "$ERR" '0 records were sent before this error' "says how many records got through"

finish
