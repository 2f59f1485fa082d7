#!/usr/bin/env bash
# kafkajs (npm, pinned by test/kafka/js/package-lock.json) against
# mq-kafka: admin.createTopics, an idempotent producer, a consumer group
# that commits, the admin API's listGroups, describeGroups, fetchOffsets
# deleteTopics, createPartitions and describeConfigs; then the same
# records, commits and topics seen from SQL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafkajs
kafka_start || { fail "mq-kafka starts"; finish; }

run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/client.js "$BROKER" jstopic jsgroup
expect_rc 0 "kafkajs client"
check_eq "$(json_get "$OUT" '{created}') $(json_get "$OUT" '{listed}') $(json_get "$OUT" '{consumed}')" \
	"true true 100" "kafkajs creates the topic, produces 100 records and consumes them in a group"
check_eq "$(json_get "$OUT" '{groupListed}') $(json_get "$OUT" '{groupState}') [$(json_get "$OUT" '{groupProtocol}')]" "true Empty []" \
	"ListGroups and DescribeGroups show the group, empty after its consumer left and without a protocol (as Kafka's next, empty generation)"
check_eq "$(json_get "$OUT" '{committed}')" "100" "OffsetFetch returns the committed offsets"
check_eq "$(json_get "$OUT" '{scratchDeleted}')" "true" "DeleteTopics deletes a topic"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'jstopic-scratch'")" "0" \
	"the deleted topic is gone from mq"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'jstopic-grow'")" "3" \
	"CreatePartitions grows a topic to the requested total"
check_eq "$(json_get "$OUT" '{retention}')" "$(sql "SELECT config->>'retention.ms' FROM mq.topics WHERE topic = 'jstopic-grow'")" \
	"DescribeConfigs returns the config mq stores"
check_match "$(json_get "$OUT" '{retention}')" '^86400000' "the config given to CreateTopics reached mq"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'jstopic'")" "2" \
	"CreateTopics made an mq topic with 2 partitions"
check_eq "$(sql "SELECT count(*) FILTER (WHERE convert_from(value, 'UTF8') = 'v' || substr(convert_from(key, 'UTF8'), 2))
                   FROM generate_series(0, 1) p, mq.fetch('jstopic', p, 0, 1000)")" "100" \
	"SQL reads the 100 records kafkajs produced"
check_eq "$(sql "SELECT sum(mq.committed_offset('jsgroup', 'jstopic', p)) FROM generate_series(0, 1) p")" "100" \
	"the group's commits are mq's committed offsets"

finish
