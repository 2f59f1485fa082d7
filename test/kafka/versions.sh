#!/usr/bin/env bash
# Every API at every version mq-kafka advertises, flexible ones included:
# a minimal valid request each, the response decoded exactly by the
# layouts of test/kafka/versions.pl, the advertised ranges compared with
# Kafka 3.9's, and the new fields' meaning (topic ids in Metadata and
# Fetch, ListOffsets -3 and -5, OffsetFetch's groups, FindCoordinator's
# keys, OffsetForLeaderEpoch, Produce's error message, DescribeCluster's
# endpoint types).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('vt', 1)" >/dev/null
sql "SELECT mq.send_batch('vt', NULL, ARRAY['a', 'b']::bytea[])" >/dev/null
sql "SELECT mq.create_topic('vk', 1, '{\"cleanup.policy\": \"compact\"}')" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/versions.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "versions.pl: every version of every API decodes"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
