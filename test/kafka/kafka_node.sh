#!/usr/bin/env bash
# kafka-node (npm 5.0.0, pinned by test/kafka/js/package-lock.json), an
# older client still in wide use, at its defaults against mq-kafka:
# topic creation, a Producer and a HighLevelProducer, Offset, a
# ConsumerGroup that commits, Admin's group listing, and the old simple
# Consumer's auto-commit; then the same records and commits from SQL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafka-node
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 node test/kafka/js/kafka_node.js "$BROKER" kntopic
expect_rc 0 "the kafka-node client runs"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'kntopic'")" "2" \
	"CreateTopics made an mq topic with 2 partitions"
check_eq "$(json_get "$OUT" '{latest,kntopic,0}')" \
	"$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'kntopic' AND partition = 0")" \
	"Offset's log end is mq's"
check_eq "$(sql "SELECT count(*) FILTER (WHERE convert_from(value, 'UTF8') = 'v' || substr(convert_from(key, 'UTF8'), 2))
                   FROM mq.fetch('kntopic', 0, 0, 1000)")" "50" \
	"SQL reads the 50 keyed records on partition 0"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('kntopic', p, 0, 1000)")" "53" \
	"and the HighLevelProducer's 3 besides"
check_eq "$(json_get "$OUT" '{consumed}')" "53" "the ConsumerGroup reads all 53"
check_eq "$(json_get "$OUT" '{groups,kn-group}') $(json_get "$OUT" '{groupState}')" "consumer Empty" \
	"Admin lists the group as a consumer group, empty after its member left"
check_match "$(json_get "$OUT" '{groupCommitted,kntopic,0}')=$(sql "SELECT mq.committed_offset('kn-group', 'kntopic', 0)")" \
	'^([0-9]+)=\1$' "the group's commit is mq's committed offset"
check_eq "$(sql "SELECT mq.committed_offset('kn-group', 'kntopic', 0) + mq.committed_offset('kn-group', 'kntopic', 1)")" "53" \
	"which covers every record read"
check_match "$(json_get "$OUT" '{simpleConsumed}')" '^[1-9][0-9]*$' "the simple Consumer reads partition 0"
check_match "$(json_get "$OUT" '{simpleCommitted,kntopic,0}')=$(sql "SELECT mq.committed_offset('kn-simple', 'kntopic', 0)")" \
	'^([0-9]+)=\1$' "its auto-commit is mq's committed offset"
check_eq "$(sql "SELECT mq.committed_offset('kn-simple', 'kntopic', 0) = $(json_get "$OUT" '{simpleConsumed}')")" "t" \
	"just past what it read"

finish
