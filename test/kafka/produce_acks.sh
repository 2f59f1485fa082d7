#!/usr/bin/env bash
# Kafka's acks through mq-kafka's Produce handler, which calls the produce
# contract (src/sql/31_produce_acks.sql) and maps its SQLSTATEs in kerr.c:
# acks=2 answered INVALID_REQUIRED_ACKS (21), nothing written; acks=0, 1 and -1 with a full ISR (-1 answered once the follower has the
# record); acks=-1 with the ISR already below min.insync.replicas answered
# NOT_ENOUGH_REPLICAS (19) with nothing written (the log end unchanged, so
# a client's retry cannot write it twice); acks=-1 whose ISR shrinks while
# it waits answered NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), the record
# written; acks=0 that fails closes the connection (Kafka's way of
# telling the client).  Raw Produce v3 requests (produce_acks.pl); the partition is led
# on this node in epoch 1, its follower (replica 2) played by psql.
# The same cases through SQL and mqctl: test/cli/produce_contract.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

t=kacks
log_end() { sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$t'"; }
follow() {
	sql "SELECT (mq.replica_fetch('$t', 0, 1, 2, $(log_end), 1000, 0, mq._offsets_version(topic_id, 0))).log_end_offset
	       FROM mq.topic WHERE topic_name = '$t'" >/dev/null
}
# the Produce of acks $1 and value $2 in the background: its answer in $out
produce_bg() {
	out="$(tmpdir)/produce.$RANDOM"
	perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" "$1" "$2" >"$out" 2>&1 &
	bg=$!
	on_exit "kill $bg 2>/dev/null"
}
waiting() {
	[[ "$(sql "SELECT count(*) FROM pg_stat_activity
	            WHERE wait_event_type = 'Extension' AND query LIKE '%mq.produce_await%'
	              AND pid <> pg_backend_pid()")" != 0 ]]
}

sql "SELECT mq.create_topic('$t', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null
sql "SELECT mq.replica_become_leader('$t', 0, 1, 1, '{1,2,3}', '{1}')" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" 2 two
check_eq "$OUT" "21 -1" "acks=2: INVALID_REQUIRED_ACKS"
check_eq "$(log_end)" 0 "and nothing was written"

# --- the ISR {1} is below min.insync.replicas 2 before the write -------------
run perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" -1 before
check_eq "$OUT" "19 -1" "acks=-1 with a short ISR: NOT_ENOUGH_REPLICAS"
check_eq "$(log_end)" 0 "and nothing was written (the log end is unchanged)"
run perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" 1 one
check_eq "$OUT" "0 0" "acks=1 with the short ISR is written"

# --- the follower joins: a full ISR {1, 2} -----------------------------------
follow
follow
sql "SELECT mq.replica_set_isr('$t', 0, 1, '{1,2}')" >/dev/null
run perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" 0 zero
check_eq "$OUT" "none" "acks=0 with a full ISR: no response"
wait_for 10 bash -c "[[ \$(psql -X -At -c \"SELECT log_end_offset FROM mq.partitions WHERE topic = '$t'\") == 2 ]]" ||
	fail "the acks=0 record is written"
run perl test/kafka/produce_acks.pl "$KAFKA_PORT" "$t" 1 one
check_eq "$OUT" "0 2" "acks=1 with a full ISR"
run perl test/kafka/produce_acks.pl "$KAFKA_PORT" nosuch 0 lost
check_eq "$OUT" "closed" "acks=0 that fails (an unknown topic): the connection closed, as Kafka does"
follow

produce_bg -1 full
wait_for 10 waiting || fail "acks=-1 waits for the follower"
check_eq "$(log_end)" 4 "acks=-1: the record is written before the wait"
check_eq "$(kill -0 $bg 2>/dev/null && echo waiting)" waiting "and the answer waits"
follow
wait "$bg" || true
check_eq "$(cat "$out")" "0 3" "acks=-1 is answered once the follower has it"

# --- the ISR shrinks while acks=-1 waits -------------------------------------
produce_bg -1 after
wait_for 10 waiting || fail "acks=-1 waits again"
sql "SELECT mq.replica_set_isr('$t', 0, 1, '{1}')" >/dev/null
wait "$bg" || true
check_eq "$(cat "$out")" "20 -1" "the ISR shrank after the write: NOT_ENOUGH_REPLICAS_AFTER_APPEND"
check_eq "$(log_end)" 5 "and the record is written"
check_eq "$(sql "SELECT convert_from(value, 'UTF8') FROM mq.fetch('$t', 0, 4, 1)")" after "it is the record sent"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
