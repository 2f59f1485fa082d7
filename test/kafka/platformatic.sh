#!/usr/bin/env bash
# @platformatic/kafka (npm, pinned by test/kafka/platformatic/package-lock.json),
# a pure-JavaScript client at the newest versions Kafka 3.9 serves, against
# mq-kafka at its defaults (test/kafka/platformatic/client.mjs): topics
# created, records with headers, an idempotent producer, a group that
# autocommits, ListOffsets, transactions that consume, transform and
# produce (one aborted), a new producer of the same transactional id
# (which sends producer id 0 and epoch 0: no pair), both groups' offsets in one OffsetFetch (the
# admin's listConsumerGroupOffsets), ListGroups, DescribeGroups and
# DeleteTopics; each checked against what SQL sees.  The client needs Node.js 20.19.4 or
# newer (Debian 12's is 18): with an older one the test says so and skips.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
D=test/kafka/platformatic

platformatic_install || finish
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 node "$D/client.mjs" "$BROKER" pf
check_eq "$RC" 0 "the client runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{create}')" '["pf:2", "pf_in:2", "pf_out:2", "pf_scratch:2"]' "CreateTopics creates four topics"
check_eq "$(json_get "$J" '{send}') $(json_get "$J" '{seed}')" "2 ok" "Produce answers both partitions"

all() { echo "(SELECT * FROM mq.fetch('$1', 0, 0) UNION ALL SELECT * FROM mq.fetch('$1', 1, 0)) r"; }
check_eq "$(sql "SELECT string_agg(convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8') || ':' || coalesce(headers -> 0 ->> 1, ''), ' ' ORDER BY key)
                   FROM $(all pf)")" \
	"i=idem: k0=v0:x0 k1=v1:x1 k2=v2:x2 k3=v3:x3 k4=v4:x4 k5=v5:x5 k6=v6:x6 k7=v7:x7 k8=v8:x8 k9=v9:x9" \
	"SQL reads the records with their keys, values and headers"
check_eq "$(sql "SELECT count(*) FROM mq.producers WHERE topic = 'pf' AND producer_id::text = '$(json_get "$J" '{idempotent}')'")" "1" \
	"the idempotent producer's id is the one the partition holds (mq.producers)"
check_eq "$(json_get "$J" '{consumed}')" \
	'["i=idem:", "k0=v0:x0", "k1=v1:x1", "k2=v2:x2", "k3=v3:x3", "k4=v4:x4", "k5=v5:x5", "k6=v6:x6", "k7=v7:x7", "k8=v8:x8", "k9=v9:x9"]' \
	"the group reads every record, headers included"
ends="$(sql "SELECT string_agg(high_watermark::text, ',' ORDER BY partition) FROM mq.partitions WHERE topic = 'pf'")"
check_eq "$(json_get "$J" '{listOffsets}')" "[[\"pf\", [\"${ends/,/\", \"}\"]]]" "ListOffsets gives the log ends"
check_eq "$(json_get "$J" '{committed}')" "[[\"pf\", [\"${ends/,/\", \"}\"]]]" "the group's autocommit reached the log ends"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('pf-group', 'pf', p)::text, ',' ORDER BY p) FROM generate_series(0, 1) p")" \
	"$ends" "SQL sees the same committed offsets"

check_eq "$(json_get "$J" '{transactions}')" "ok" "six transactions, one aborted, end without error"
check_eq "$(json_get "$J" '{reopened}')" "ok" \
	"a new producer of the same transactional id commits (its InitProducerId's pair is 0, 0: none)"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY value) FROM $(all pf_out)")" "REOPENED,V0,V1,V2,V4,V5" \
	"the committed transactions' records are in the log, the aborted one's not"
check_eq "$(json_get "$J" '{transformed}')" '["REOPENED", "V0", "V1", "V2", "V4", "V5"]' "a consumer reads the same six"
check_eq "$(sql "SELECT sum(mq.committed_offset('pf-txn-group', 'pf_in', p)) FROM generate_series(0, 1) p")" \
	"$(sql "SELECT sum(CASE WHEN last_v3 THEN n - 1 ELSE n END) FROM (
	          SELECT partition, count(*) n, bool_or(value = 'v3' AND msg_offset = (SELECT max(msg_offset) FROM mq.fetch('pf_in', partition, 0))) last_v3
	            FROM $(all pf_in) GROUP BY partition) s")" \
	"the transactions committed the input offsets with their output"

check_eq "$(json_get "$J" '{groupOffsets}')" \
	"$(sql "SELECT string_agg(g || ':' || (SELECT string_agg(topic || '=' || ps, ';' ORDER BY topic)
	                                        FROM (SELECT topic, string_agg(partition || '/' || next_offset, ',' ORDER BY partition) ps
	                                                FROM mq.committed_offsets(g) GROUP BY topic) t), ' ' ORDER BY n)
	          FROM unnest(ARRAY['pf-group', 'pf-txn-group']) WITH ORDINALITY u(g, n)")" \
	"the admin's OffsetFetch of both groups in one request answers each group's offsets"
check_eq "$(json_get "$J" '{groups}')" '["pf-group", "pf-reader", "pf-txn-group"]' "ListGroups lists the groups"
check_eq "$(json_get "$J" '{groupStates}')" '["pf-group:EMPTY:"]' \
	"DescribeGroups: empty after its member left, with no protocol (Kafka's next generation)"
check_eq "$(json_get "$J" '{deleted}') $(sql "SELECT count(*) FROM mq.topics WHERE topic = 'pf_scratch'")" "ok 0" "DeleteTopics deletes a topic"
if ((FAILED > 0)); then
	tail -n 20 <<<"$ERR" | sed 's/^/# /'
	grep -i 'not supported\|closing\|error' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | head | sed 's/^/# /' || true
fi
finish
