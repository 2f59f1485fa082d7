#!/usr/bin/env bash
# __consumer_offsets through Kafka clients (issue 23, item 3): offset
# commits from SQL and from a Kafka group (kafka-python's OffsetCommit)
# are records of the internal topic in Kafka's key/value format, which
# kafka-python reads from the beginning and decodes (test/kafka/py/
# coffsets.py); the topic is created when a client first asks for it, with
# the commits made before; it is internal in Metadata (kafka-python's
# topics() leaves it out); producing to it is refused (kafka-python and
# kcat: INVALID_TOPIC_EXCEPTION) and changes nothing; a Kafka group's
# membership appears as Kafka's group metadata records, and so does an SQL
# group's (mq.join_group), decoded by kafka-python's ConsumerProtocol.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3 # Debian's python3-kafka
sql "SELECT mq.create_topic('cot', 3)" >/dev/null
sql "SELECT mq.send('cot', NULL::bytea, 'x'::bytea, partition => i % 3) FROM generate_series(0, 8) i" >/dev/null
sql "SELECT mq.commit_offset('cos', 'cot', 0, 2, 'from sql')" >/dev/null
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = '__consumer_offsets'")" "0" \
	"__consumer_offsets does not exist before a client asks for it"
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$PY" test/kafka/py/coffsets.py commit "$BROKER" cot cok 0:1 1:1 2:1
expect_rc 0 "a kafka-python group member commits"
run timeout 120 "$PY" test/kafka/py/coffsets.py read "$BROKER"
expect_rc 0 "kafka-python reads __consumer_offsets"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{partitions}') $(json_get "$J" '{complete}') $(json_get "$J" '{undecoded}')" "10 true 0" \
	"it has 10 partitions, read to their end, every record decoded in Kafka's formats"
check_eq "$(json_get "$J" '{internal}') $(json_get "$J" '{listed_by_topics}')" "true false" \
	"Metadata marks it internal: kafka-python's topics() leaves it out"
# one line per record: group topic partition offset metadata key/value versions
summary() {
	json_get "$1" '{records}' | "$PY" -c '
import json, sys
for r in json.load(sys.stdin):
    if r["kind"] != "offset":
        continue
    print(r["group"], r["topic"], r["partition"], r["offset"], repr(r["metadata"]),
          r["key_version"], r["value_version"], r["key_complete"] and r["value_complete"],
          r["kafka_partition"])' | sort
}
check_eq "$(summary "$J")" "cok cot 0 1 'by kafka-python' 1 3 True True
cok cot 1 1 'by kafka-python' 1 3 True True
cok cot 2 1 'by kafka-python' 1 3 True True
cos cot 0 2 'from sql' 1 3 True True" \
	"the SQL commit made before and the Kafka group's: offset commit key v1, value v3, on Kafka's partition for the group"
check_eq "$(json_get "$J" '{produce}')" "InvalidTopicError" "kafka-python's produce to it is refused (INVALID_TOPIC_EXCEPTION)"

END_SQL="SELECT sum(log_end_offset) FROM mq.partitions WHERE topic = '__consumer_offsets'"
before="$(sql "$END_SQL")"
run kcat_ -P -t __consumer_offsets -K: -X message.send.max.retries=0 <<<"k:v"
check_match "$ERR" "Invalid topic" "kcat's produce to it is refused (INVALID_TOPIC_EXCEPTION)"
check_eq "$(sql "$END_SQL")" "$before" "nothing was written to it"

# commits after it exists append at its end, from SQL and from Kafka
sql "SELECT mq.commit_offset('cos', 'cot', 0, 3)" >/dev/null
run timeout 120 "$PY" test/kafka/py/coffsets.py commit "$BROKER" cot cok 1:3
expect_rc 0 "the Kafka group commits again"
run timeout 120 "$PY" test/kafka/py/coffsets.py read "$BROKER"
J2="$(tail -n 1 <<<"$OUT")"
check_eq "$(comm -13 <(summary "$J") <(summary "$J2"))" "cok cot 1 3 'by kafka-python' 1 3 True True
cos cot 0 3 '' 1 3 True True" \
	"later commits are new records (a null metadata is Kafka's empty string)"
# the group's metadata (GroupMetadataKey v2, value v3) as mq-kafka saved it
groups() {
	json_get "$1" '{records}' | "$PY" -c '
import json, sys
for r in json.load(sys.stdin):
    if r["kind"] == "group" and r["group"] == "cok":
        print(r["key_version"], r["value_version"], r["protocol_type"], r["protocol"] is not None,
              [(m["client_id"], m["subscription_len"] > 0, m["assignment_len"] > 0) for m in r["members"]],
              r["key_complete"] and r["value_complete"])'
}
check_eq "$(groups "$J2")" "2 3 consumer True [('kafka-python-2.0.2', True, True)] True
2 3 consumer False [] True" \
	"the Kafka group's metadata: its member with subscription and assignment, then empty once it left"
check_eq "$(sql "$END_SQL")" "$((before + 4))" "two commits and two group records were appended"

# an SQL group's members (mq.join_group): Kafka's group metadata record,
# which kafka-python decodes down to each member's subscription and
# assignment (ConsumerProtocol)
sql "SELECT count(*) FROM mq.join_group('cosg', ARRAY['cot'], instance_id => 'a')" >/dev/null
sql "SELECT count(*) FROM mq.join_group('cosg', ARRAY['cot'], instance_id => 'b')" >/dev/null
run timeout 120 "$PY" test/kafka/py/coffsets.py read "$BROKER"
J3="$(tail -n 1 <<<"$OUT")"
check_eq "$(json_get "$J3" '{undecoded}')" "0" "every record decoded"
sqlgroup() {
	json_get "$1" '{records}' | "$PY" -c '
import json, sys
for r in json.load(sys.stdin):
    if r["kind"] == "group" and r["group"] == "cosg":
        print(r["value_version"], r["protocol_type"], r["generation"], r["protocol"],
              r["leader"] == min(m["member_id"] for m in r["members"]),
              [(m["instance_id"], m["client_id"], m["subscription"], m["assignment"], m.get("protocol_error"))
               for m in sorted(r["members"], key=lambda m: m["instance_id"])],
              r["value_complete"], r["kafka_partition"])'
}
check_eq "$(sqlgroup "$J3")" "3 consumer 1 range True [('a', 'mq', ['cot'], {'cot': [0, 1, 2]}, None)] True True
3 consumer 2 range True [('a', 'mq', ['cot'], {'cot': [0, 1]}, None), ('b', 'mq', ['cot'], {'cot': [2]}, None)] True True" \
	"an SQL group's generations: group metadata v3 with its members' subscriptions and assignments, on Kafka's partition for the group"

finish
