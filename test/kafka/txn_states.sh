#!/usr/bin/env bash
# InitProducerId's check of the client's producer id and epoch (KIP-360)
# and EndTxn's transaction states, and AddPartitionsToTxn all or none, as
# Kafka 3.9 answers them (test/kafka/txn_states.pl on the wire).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('ts', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/txn_states.pl "$KAFKA_PORT" ts-txn ts
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "txn_states.pl: every check holds"
check_eq "$(sql "SELECT kafka_state FROM mq.kafka_transactions WHERE transactional_id = 'ts-txn'")" \
	"CompleteAbort" "the id's last transaction aborted"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
finish
