#!/usr/bin/env bash
# segmentio/kafka-go (Debian's golang-github-segmentio-kafka-go-dev 0.2.1,
# built offline with Debian's Go) against mq-kafka at its defaults
# (test/kafka/go/kafka_go_defaults.go): old protocol versions throughout
# (CreateTopics v0, Metadata v1, Produce v2 with message format v1, Fetch
# v2, JoinGroup v1, OffsetCommit v2, ListOffsets v1); a consumer group
# reads what its Writer sent and commits it where SQL sees it.  kafka-go's
# reader asks Fetch for min_bytes 1 MB with max_wait 9 s, so each of its
# fetches waits its 9 s, as Kafka makes it wait.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

go_build kafka_go_defaults kafka-go
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$BIN" "$BROKER" kgo kgog
check_eq "$RC" 0 "kafka_go_defaults runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{partitions}') $(sql "SELECT partitions FROM mq.topics WHERE topic = 'kgo'")" "2 2" \
	"CreateTopics v0 made the topic with 2 partitions, and Metadata v1 lists them"
check_eq "$(json_get "$J" '{read}')" '["k0=v0", "k1=v1", "k2=v2", "k3=v3", "k4=v4", "k5=v5", "k6=v6", "k7=v7", "k8=v8", "k9=v9"]' \
	"a group member reads the Writer's ten keyed records"
check_eq "$(sql "SELECT sum(mq.committed_offset('kgog', 'kgo', p)) FROM generate_series(0, 1) p")" "10" \
	"the group's commits (OffsetCommit v2) are mq's: all 10 records"
end0="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'kgo' AND partition = 0")"
check_eq "$(json_get "$J" '{offsets}') $(json_get "$J" '{batch}')" "0 $end0 $end0" \
	"ListOffsets v1 gives partition 0's first and last offsets, and a Fetch v2 batch holds its records"
if ((FAILED > 0)); then
	tail -n 20 <<<"$ERR" | sed 's/^/# /'
	grep -i 'not supported\|closing' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | sed 's/^/# /' || true
fi

finish
