#!/usr/bin/env bash
# kafkajs (npm, pinned by test/kafka/js/package-lock.json) against
# mq-kafka: admin.createTopics, an idempotent producer, and a consumer
# group that commits; then the same records and commits seen from SQL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

if [[ ! -d test/kafka/js/node_modules/kafkajs ]]; then
	run npm ci --prefix test/kafka/js --no-audit --no-fund
	expect_rc 0 "npm ci installs kafkajs"
fi
kafka_start || { fail "mq-kafka starts"; finish; }

run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/client.js "$BROKER" jstopic jsgroup
expect_rc 0 "kafkajs client"
check_eq "$OUT" '{"created":true,"listed":true,"produced":100,"consumed":100}' \
	"kafkajs creates the topic, produces 100 records and consumes them in a group"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'jstopic'")" "2" \
	"CreateTopics made an mq topic with 2 partitions"
check_eq "$(sql "SELECT count(*) FILTER (WHERE convert_from(value, 'UTF8') = 'v' || substr(convert_from(key, 'UTF8'), 2))
                   FROM generate_series(0, 1) p, mq.fetch('jstopic', p, 0, 1000)")" "100" \
	"SQL reads the 100 records kafkajs produced"
check_eq "$(sql "SELECT sum(mq.committed_offset('jsgroup', 'jstopic', p)) FROM generate_series(0, 1) p")" "100" \
	"the group's commits are mq's committed offsets"

finish
