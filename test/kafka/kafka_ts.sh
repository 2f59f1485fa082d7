#!/usr/bin/env bash
# kafka-ts (npm, pinned by test/kafka/js/package-lock.json), a TypeScript
# client that sends every request at the newest version both it and the
# broker serve, against mq-kafka at its defaults (test/kafka/js/
# kafka_ts.mjs): records with headers produced, read by a group from the
# beginning and committed, checked against what SQL sees; through its
# low-level API the group's offsets (OffsetFetch v9), the topic's
# partitions and leaders (DescribeTopicPartitions), ElectLeaders (no
# election needed: its error) and DescribeDelegationToken (not allowed
# without SASL: its error, as from Kafka at its defaults).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

js_install kafka-ts
sql "SELECT mq.create_topic('kts', 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 node test/kafka/js/kafka_ts.mjs "$BROKER" kts
check_eq "$RC" 0 "the client runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{send}')" "ok" "the producer's send is acknowledged"
check_eq "$(sql "SELECT string_agg(convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8') || ':' || (headers -> 0 ->> 1), ' ' ORDER BY key)
                   FROM (SELECT * FROM mq.fetch('kts', 0, 0) UNION ALL SELECT * FROM mq.fetch('kts', 1, 0)) r")" \
	"k0=v0:x0 k1=v1:x1 k2=v2:x2 k3=v3:x3 k4=v4:x4 k5=v5:x5 k6=v6:x6 k7=v7:x7 k8=v8:x8 k9=v9:x9" \
	"SQL reads the ten records with their keys, values and headers"
check_eq "$(json_get "$J" '{consume}')" \
	'["k0=v0:x0", "k1=v1:x1", "k2=v2:x2", "k3=v3:x3", "k4=v4:x4", "k5=v5:x5", "k6=v6:x6", "k7=v7:x7", "k8=v8:x8", "k9=v9:x9"]' \
	"the group reads every record, headers included"
ends="$(sql "SELECT string_agg('kts-' || partition || ':' || high_watermark, ',' ORDER BY partition) FROM mq.partitions WHERE topic = 'kts'")"
check_eq "$(json_get "$J" '{offsets}')" "[\"${ends/,/\", \"}\"]" "OffsetFetch: the group committed the log ends"
check_eq "$(sql "SELECT string_agg('kts-' || p || ':' || mq.committed_offset('kts-group', 'kts', p), ',' ORDER BY p) FROM generate_series(0, 1) p")" \
	"$ends" "SQL sees the same committed offsets"
check_eq "$(json_get "$J" '{describeTopicPartitions}')" '["kts:2:1,1"]' \
	"DescribeTopicPartitions: both partitions, led by this daemon"
check_match "$(json_get "$J" '{electLeaders}')" 'ERR.*ELECTION_NOT_NEEDED' "ElectLeaders: no election needed"
check_match "$(json_get "$J" '{describeDelegationToken}')" 'ERR.*DELEGATION_TOKEN_REQUEST_NOT_ALLOWED' \
	"DescribeDelegationToken without SASL: not allowed, as from Kafka"
finish
