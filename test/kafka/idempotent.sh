#!/usr/bin/env bash
# Idempotent producers whose state changes under them, as Kafka's
# partition leaders take it (KIP-360):
# - librdkafka (python3-confluent-kafka) bumps its own producer epoch
#   after a batch timed out in flight (mq-kafka stopped with SIGSTOP past
#   message.timeout.ms) and starts its sequences again at 0; mq must take
#   the newer epoch, or every later record fails INVALID_PRODUCER_EPOCH.
# - A producer id expires in mq (mq.producer_id_expiration_ms, a day by
#   default) while its producer idles; the producer goes on with its next
#   sequences, which mq must take, registering the id again: kafkajs
#   treats UNKNOWN_PRODUCER_ID as fatal, and librdkafka looped on it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafkajs
kafka_start || { fail "mq-kafka starts"; finish; }
sql "SELECT mq.create_topic('bump', 1)" >/dev/null
sql "SELECT mq.create_topic('idle', 1)" >/dev/null
expire="psql -X -q -c 'SET mq.producer_id_expiration_ms = 1' -c 'SELECT pg_sleep(0.01)' -c 'SELECT mq.run_maintenance()' >/dev/null"
log_of() { sql "SELECT string_agg(convert_from(value, 'UTF8'), ' ' ORDER BY msg_offset) FROM mq.fetch('$1', 0, 0)"; }

run timeout 120 /usr/bin/python3 test/kafka/py/idempotent_bump.py "$BROKER" bump "$KAFKA_PID" "$expire"
expect_rc 0 "the librdkafka producer runs"
check_eq "$(json_get "$OUT" '{failed,paused}')" "_MSG_TIMED_OUT" \
	"the batch sent while mq-kafka was stopped timed out"
check_eq "$(json_get "$OUT" '{fatal}')" "" "the producer meets no fatal error"
check_eq "$(json_get "$OUT" '{delivered}')" '["first", "after0", "after1", "after2", "expired0", "expired1", "expired2"]' \
	"the records sent after the epoch bump, and after the id expired, are acknowledged"
check_eq "$(sql "SELECT producer_epoch FROM mq.producer")" "1" \
	"mq took the epoch the producer bumped itself, and the id again after it expired"
check_match "$(log_of bump)" '^first (paused )?after0 after1 after2 expired0 expired1 expired2$' \
	"the log holds each record once (the timed-out one perhaps, as on Kafka)"

run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/idempotent_expiry.js "$BROKER" idle "$expire"
expect_rc 0 "the kafkajs producer runs"
check_eq "$(json_get "$OUT" '{b0}') $(json_get "$OUT" '{b1}')" "ok ok" \
	"kafkajs goes on sending after its producer id expired"
check_eq "$(log_of idle)" "a0 a1 b0 b1" "the log holds each of its records once"

finish
