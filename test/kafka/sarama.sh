#!/usr/bin/env bash
# sarama (Debian's golang-github-shopify-sarama-dev 1.22.1, built offline
# with Debian's Go) against mq-kafka (issue 23; test/kafka/go/
# sarama_defaults.go): its default configuration lists topics with
# Metadata v0 and its offset manager commits with OffsetCommit v1; a
# group at the lowest version with record batches (0.11.0, defaults
# otherwise) produces, consumes, commits with OffsetCommit v1 and a
# second member resumes after the commit.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

go_build sarama_defaults sarama
sql "SELECT mq.create_topic('srm', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 150 "$BIN" "$BROKER" srm srmg
check_eq "$RC" 0 "sarama_defaults runs"
J="$(tail -n 1 <<<"$OUT")"
SARAMA_LOG="$ERR"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{defaults,version}') $(json_get "$J" '{defaults,topic_listed}') $(json_get "$J" '{defaults,partitions}')" \
	"0.8.2.0 true [0]" "the default configuration (0.8.2) lists the topic and its partition (Metadata v0)"
check_eq "$(json_get "$J" '{defaults,committed_before}') $(json_get "$J" '{defaults,committed_after}')" "-1 5" \
	"its offset manager commits offset 5 (OffsetCommit v1) and a second one finds it (OffsetFetch v1)"
check_eq "$(sql "SELECT mq.committed_offset('srmg-plain', 'srm', 0)")" "5" "that commit is mq's"
check_eq "$(json_get "$J" '{group,produced}')" "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" "the producer sends 10 records"
check_eq "$(json_get "$J" '{group,first}')" '["v0", "v1", "v2", "v3"]' "a group member reads the first 4"
check_eq "$(json_get "$J" '{group,second}')" '["v4", "v5", "v6", "v7", "v8", "v9"]' \
	"a second member resumes after the first one's commit"
check_eq "$(sql "SELECT mq.committed_offset('srmg', 'srm', 0)")" "10" "the group's commits (OffsetCommit v1) are mq's"
if ((FAILED > 0)); then
	tail -n 40 <<<"$SARAMA_LOG" | sed 's/^/# /'
	grep -i 'not supported\|closing' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | sed 's/^/# /' || true
fi

finish
