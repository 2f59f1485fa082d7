#!/usr/bin/env bash
# Kafka's topic configs from a Kafka client at its defaults
# (confluent-kafka, test/kafka/py/topic_configs.py): configs Kafka 3.9
# takes that mq keeps without acting on them (compression.type,
# segment.jitter.ms, preallocate, flush.messages, message.format.version),
# Kafka's "no limit" for a time (the int8 maximum) and min.insync.replicas
# above the replication factor are taken as by Kafka, and DescribeConfigs
# reports them, with Kafka's defaults for the others and, as librdkafka
# asks, their synonyms (the key set on the topic, then the broker's
# default under its broker name); tiered storage is
# INVALID_CONFIG; a producer at its defaults (acks=all) to the topic with
# one replica and min.insync.replicas 2 gets NOT_ENOUGH_REPLICAS and
# writes nothing, one with acks=1 writes (docs/sql.md, "Configuration").
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

kafka_start || { fail "mq-kafka starts"; finish; }
run timeout 90 /usr/bin/python3 test/kafka/py/topic_configs.py "$BROKER"
expect_rc 0 "the client runs"
printf '%s\n' "$OUT" | sed 's/^/# /'
check_eq "$OUT" "created
compression.type=zstd default=False
flush.messages=1 default=False
message.format.version=3.0-IV1 default=False
min.insync.replicas=2 default=False
preallocate=true default=False
retention.ms=9223372036854775807 default=False
segment.jitter.ms=1000 default=False
segment.index.bytes=10485760 default=True
synonyms: retention.ms retention.ms=9223372036854775807,log.retention.ms=-1; segment.index.bytes log.index.size.max.bytes=10485760
tiered: INVALID_CONFIG
defaults (acks=all): NOT_ENOUGH_REPLICAS
acks=1: ok" "configs taken and described as by Kafka; acks=all refused below min.insync.replicas"
check_eq "$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'tc'")" 1 "only the acks=1 record was written"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'tc-tiered'")" 0 "the tiered topic was not created"
finish
