#!/usr/bin/env bash
# kafka-python (Debian's python3-kafka 2.0.2) with its default settings,
# as a new user runs it (issue 23): no api_version, so each client probes
# with ApiVersions and Metadata v0 and picks its versions from the answer.
# Probing clients run several times (a refused probe made about a third of
# connections fail); a producer sends, a consumer group reads and commits,
# a second consumer of the group resumes after the commit; the admin
# client creates, describes and deletes a topic (test/kafka/py/defaults.py).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3 # Debian's python3-kafka, whatever python is first on the PATH
sql "SELECT mq.create_topic('kpy', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 250 "$PY" test/kafka/py/defaults.py "$BROKER" kpy kpyg 8
expect_rc 0 "defaults.py runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
# kafka-python names the version by the newest API it finds: DescribeAcls
# v2 (mq-kafka serves v0-v3) makes it 2.5.0; nothing in kafka-python 2.0.2
# depends on more than 2.1, and its admin client's ACL requests are v1
check_eq "$(json_get "$J" '{probes}')" '{"versions": ["2.5.0"], "connected": 24, "first_error": null}' \
	"eight rounds of producer, consumer and admin client connect, each inferring the same broker version"
check_eq "$(json_get "$J" '{produced}')" '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]' "the producer sends 10 records"
check_eq "$(json_get "$J" '{first}')" '["v0", "v1", "v2", "v3"]' "the group's first consumer reads the first 4"
check_eq "$(json_get "$J" '{second}')" '["v4", "v5", "v6", "v7", "v8", "v9"]' \
	"a second consumer of the group resumes after the first one's commit"
check_eq "$(sql "SELECT mq.committed_offset('kpyg', 'kpy', 0)")" "10" "the commits are mq's"
check_eq "$(json_get "$J" '{admin}')" '{"create": [0], "delete": [0], "describe": [3]}' \
	"the admin client creates, describes (3 partitions) and deletes a topic"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'kpy_adm'")" "0" "the deleted topic is gone"

# offset metadata over Kafka's offset.metadata.max.bytes (4096)
run timeout 60 "$PY" -c '
import sys
import kafka.errors as errors
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id="kpyg", enable_auto_commit=False)
tp = TopicPartition("kpy", 0)
c.assign([tp])
try:
    c.commit({tp: OffsetAndMetadata(3, "m" * 4097)})
    print("committed")
except errors.OffsetMetadataTooLargeError:
    print("too large")
c.commit({tp: OffsetAndMetadata(10, "m" * 4096)})
print("4096 committed")
' "$BROKER"
check_eq "$OUT" $'too large\n4096 committed' \
	"a commit with 4097 bytes of metadata is OFFSET_METADATA_TOO_LARGE, one with 4096 is stored"
check_eq "$(sql "SELECT next_offset || ':' || length(metadata) FROM mq.committed_offsets('kpyg')")" "10:4096" \
	"the refused commit stored nothing"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
if ((FAILED > 0)); then
	grep -i 'not supported\|closing' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | sed 's/^/# /' || true
fi

finish
