#!/usr/bin/env bash
# An idempotent librdkafka producer (python3-confluent-kafka) bumps its own
# producer epoch after a batch timed out in flight (mq-kafka stopped with
# SIGSTOP past message.timeout.ms) and starts its sequences again at 0.
# Kafka's partition leaders accept the newer epoch; mq must too, or every
# later record fails with INVALID_PRODUCER_EPOCH.  Then its producer id
# expires in mq: librdkafka answers UNKNOWN_PRODUCER_ID with another bump
# and sequence 0, which must start the id again rather than loop.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

kafka_start || { fail "mq-kafka starts"; finish; }
sql "SELECT mq.create_topic('bump', 1)" >/dev/null

expire="psql -X -q -c 'SET mq.producer_id_expiration_ms = 1' -c 'SELECT pg_sleep(0.01)' -c 'SELECT mq.run_maintenance()'"
run timeout 120 /usr/bin/python3 test/kafka/py/idempotent_bump.py "$BROKER" bump "$KAFKA_PID" "$expire"
expect_rc 0 "the producer runs"
check_eq "$(json_get "$OUT" '{failed,paused}')" "_MSG_TIMED_OUT" \
	"the batch sent while mq-kafka was stopped timed out"
check_eq "$(json_get "$OUT" '{fatal}')" "" "the producer meets no fatal error"
check_eq "$(json_get "$OUT" '{delivered}')" '["first", "after0", "after1", "after2", "expired0", "expired1", "expired2"]' \
	"the records sent after each epoch bump are acknowledged"
check_eq "$(sql "SELECT producer_epoch FROM mq.producer")" "2" \
	"mq took the epochs the producer bumped itself"
check_match "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ' ' ORDER BY msg_offset) FROM mq.fetch('bump', 0, 0)")" \
	'^first (paused )?after0 after1 after2 expired0 expired1 expired2$' \
	"the log holds each record once (the timed-out one perhaps, as on Kafka)"

finish
