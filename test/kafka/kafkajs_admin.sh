#!/usr/bin/env bash
# kafkajs's admin API (test/kafka/js/admin.js) on the APIs that delete
# and alter: DeleteGroups, resetOffsets and setOffsets, DeleteRecords,
# AlterConfigs, DescribeConfigs' defaults, and partition reassignments on
# a single daemon; then what they did, seen from SQL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafkajs
kafka_start || { fail "mq-kafka starts"; finish; }

run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/admin.js "$BROKER" jsadm
expect_rc 0 "kafkajs admin client"
JS="$OUT"

# DeleteGroups
check_eq "$(json_get "$JS" '{groups,live}')" "68" "DeleteGroups of a group with a live consumer: NON_EMPTY_GROUP"
check_eq "$(json_get "$JS" '{groups,unknown}')" "69" "DeleteGroups of an unknown group: GROUP_ID_NOT_FOUND"
check_eq "$(json_get "$JS" '{groups,gone}')" "0" "DeleteGroups of a group whose consumer left: deleted"
check_eq "$(json_get "$JS" '{groups,never}')" "0" \
	"DeleteGroups of a group whose consumer left without committing (Empty, no offsets): deleted"
check_eq "$(json_get "$JS" '{groups,goneOffsets}')" "-1" "the deleted group has no committed offset left"
check_eq "$(json_get "$JS" '{groups,goneListed}')" "false" "nor is it listed by ListGroups"
check_eq "$(sql "SELECT count(*) FROM mq.consumer_offset WHERE group_id = 'jsadm-gone'")" "0" \
	"SQL sees its offsets gone"
check_eq "$(sql "SELECT count(*) FROM mq.consumer_offset WHERE group_id = 'jsadm-live'")" "1" \
	"the refused group keeps its offsets"

# resetOffsets and setOffsets: kafkajs commits -2 and -1 (earliest,
# latest), which Kafka's coordinator takes as any offset; mq commits the
# position they name (broker/mq-kafka/h_offsets.c)
check_eq "$(json_get "$JS" '{reset,before}')" "10" "the reset group committed its 10 records"
check_eq "$(json_get "$JS" '{reset,earliest}') $(json_get "$JS" '{reset,afterEarliest}')" "ok 0" \
	"resetOffsets earliest settles: the group's offset is the log start"
check_eq "$(json_get "$JS" '{reset,latest}') $(json_get "$JS" '{reset,afterLatest}')" "ok 10" \
	"resetOffsets (latest) settles: the group's offset is the high watermark"
check_eq "$(json_get "$JS" '{reset,set}') $(json_get "$JS" '{reset,afterSet}')" "ok 7" \
	"setOffsets to 7 settles: the group's offset is 7"
check_eq "$(sql "SELECT mq.committed_offset('jsadm-reset', 'jsadm', 0)")" "7" "SQL sees it"
check_eq "$(json_get "$JS" '{reset,resumed}')" "7" "the group's next consumer resumes at 7"

# DeleteRecords
check_eq "$(json_get "$JS" '{records,deleted}') $(json_get "$JS" '{records,low}')" "none 4" \
	"DeleteRecords up to 4: the low watermark is 4"
check_eq "$(json_get "$JS" '{records,first}')" "4" "a new consumer from the beginning starts at 4"
check_eq "$(json_get "$JS" '{records,beyond}')" "OFFSET_OUT_OF_RANGE" \
	"DeleteRecords beyond the high watermark: OFFSET_OUT_OF_RANGE"
check_eq "$(json_get "$JS" '{records,lowAfterBeyond}')" "4" "and the low watermark did not move"
check_eq "$(json_get "$JS" '{records,all}') $(json_get "$JS" '{records,lowAll}') $(json_get "$JS" '{records,high}')" \
	"none 10 10" "DeleteRecords -1: up to the high watermark"
check_eq "$(sql "SELECT log_start_offset FROM mq.partitions WHERE topic = 'jsadm'")" "10" \
	"SQL sees the new log start"
run sql "SELECT count(*) FROM mq.fetch('jsadm', 0, 9)"
check_match "$ERR" "below the log start offset 10" "mq.fetch below it is out of range"

# AlterConfigs
check_eq "$(json_get "$JS" '{configs,validated}') $(json_get "$JS" '{configs,afterValidate}')" \
	"none retention.ms=86400000" "AlterConfigs validate_only: accepted, nothing changed"
check_eq "$(json_get "$JS" '{configs,replaced}') $(json_get "$JS" '{configs,afterReplace}')" \
	"none max.message.bytes=1000" "AlterConfigs replaces the whole config, as Kafka does"
check_eq "$(json_get "$JS" '{configs,invalid}') $(json_get "$JS" '{configs,afterInvalid}')" \
	"INVALID_CONFIG max.message.bytes=1000" "an invalid value: INVALID_CONFIG, nothing changed"
check_eq "$(json_get "$JS" '{configs,unknown}')" "UNKNOWN_TOPIC_OR_PARTITION" "an unknown topic: UNKNOWN_TOPIC_OR_PARTITION"
check_eq "$(json_get "$JS" '{configs,broker}')" "INVALID_REQUEST" "a broker resource: INVALID_REQUEST"
check_eq "$(sql "SELECT config FROM mq.topics WHERE topic = 'jsadm-cfg'")" '{"max.message.bytes": 1000}' \
	"SQL sees the new config"

# DescribeConfigs: the keys not set, with mq's defaults (source DEFAULT_CONFIG, 5)
check_eq "$(json_get "$JS" '{configs,defaults}')" \
	"$(sql "SELECT string_agg(k || '=' || v || '(5)', ',' ORDER BY k COLLATE \"C\") FROM jsonb_each_text(mq.config_defaults()) d(k, v)
	         WHERE k <> 'max.message.bytes'")" \
	"DescribeConfigs lists every other key mq knows with its default, as DEFAULT_CONFIG"
check_match "$(json_get "$JS" '{configs,defaults}')" 'cleanup.policy=delete\(5\).*retention.ms=-1\(5\)' \
	"such as cleanup.policy delete and retention.ms -1"

# DescribeConfigs of the broker: mq's topic defaults under Kafka's broker
# names (DEFAULT_CONFIG, 5), the daemon's own settings (STATIC_BROKER_CONFIG,
# 4), all read-only
B="$(json_get "$JS" '{configs,brokerConfigs}')"
for want in 'log.retention.ms=-1(5,ro)' 'log.retention.bytes=-1(5,ro)' 'log.cleanup.policy=delete(5,ro)' \
	'log.segment.bytes=1073741824(5,ro)' "message.max.bytes=$(sql "SELECT setting FROM pg_settings WHERE name = 'mq.message_max_bytes'")(5,ro)" \
	'min.insync.replicas=1(5,ro)' 'compression.type=producer(5,ro)' 'log.roll.jitter.ms=0(5,ro)' 'broker.id=1(4,ro)' 'auto.create.topics.enable=true(4,ro)' 'connections.max.idle.ms=600000(4,ro)' \
	'num.partitions=1(4,ro)' 'default.replication.factor=1(4,ro)' 'group.initial.rebalance.delay.ms=300(4,ro)' \
	'group.min.session.timeout.ms=6000(4,ro)' 'group.max.session.timeout.ms=1800000(4,ro)'; do
	check_match " $B " " ${want//[().]/\\&} " "DescribeConfigs of broker 1: $want"
done
check_eq "$(wc -w <<<"$B")" "38" "and nothing else: 30 topic defaults renamed, 8 settings of the daemon"

# ListPartitionReassignments and AlterPartitionReassignments on a single
# daemon (h_reassign.c): nothing moves, only broker 1 may hold a replica
check_eq "$(json_get "$JS" '{reassign,listed}') $(json_get "$JS" '{reassign,listedOne}')" "[] []" \
	"listPartitionReassignments: nothing is moving"
check_eq "$(json_get "$JS" '{reassign,same}')" "none" "alterPartitionReassignments to broker 1 alone: nothing to do"
check_eq "$(json_get "$JS" '{reassign,other}')" "INVALID_REPLICA_ASSIGNMENT" \
	"to brokers 1 and 2: INVALID_REPLICA_ASSIGNMENT (this daemon is the only broker)"
check_eq "$(json_get "$JS" '{reassign,unknown}') $(json_get "$JS" '{reassign,partition}')" \
	"UNKNOWN_TOPIC_OR_PARTITION UNKNOWN_TOPIC_OR_PARTITION" "an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION"

finish
