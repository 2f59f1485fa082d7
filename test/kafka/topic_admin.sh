#!/usr/bin/env bash
# Topic administration refused as Kafka 3.9 refuses it, before anything is
# made (test/kafka/py/topic_admin.py, kafka-python's request objects and
# hand-made DeleteTopics v6 and IncrementalAlterConfigs): partition counts
# of 0 or below -1 (INVALID_PARTITIONS), replication factors of 0 or below
# -1 or above the one broker (INVALID_REPLICATION_FACTOR), a name (or id)
# given twice in one request (INVALID_REQUEST, answered once, nothing of
# it made, grown or dropped), manual replica assignments as Kafka's one
# broker checks them (made where they name only it, partitions 0 .. n-1), a DeleteTopics v6 entry with neither or both
# of name and id, a name differing from an existing one only in '.'
# against '_' (INVALID_TOPIC_EXCEPTION); AlterConfigs and
# IncrementalAlterConfigs naming a key twice, a resource twice (each
# answered) or (incremental) setting a null value (INVALID_REQUEST,
# nothing of them changed); and Metadata of a name outside Kafka's rule
# (INVALID_TOPIC_EXCEPTION: a producer fails at once, and automatic
# creation, on by default, never makes it).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3
sql "SELECT mq.create_topic(t) FROM unnest(ARRAY['co_ll', 'grown', 'keep']) t" >/dev/null
keep_id="$(sql "SELECT md5('keep')")"
kafka_start --auto-create-topics 0 || { fail "mq-kafka starts"; finish; }

OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")/py" && $PY topic_admin.py "$BROKER" "$keep_id" 2>&1)" ||
	fail "topic_admin.py runs" "$OUT"
case_is() { check_eq "$(json_get "$OUT" "{$1}")" "$2" "$3"; }
positive='the number of partitions must be positive, or -1 for the default'
rf_positive='the replication factor must be positive, or -1 for the default'
case_is create_partitions "[[\"pm\", 37, \"$positive\"], [\"pz\", 37, \"$positive\"]]" \
	"partition counts 0 and -2: INVALID_PARTITIONS"
case_is create_replication "[[\"r3\", 38, \"a single mq-kafka is one broker: replication factor 1 at most\"], [\"rm\", 38, \"$rf_positive\"], [\"rz\", 38, \"$rf_positive\"]]" \
	"replication factors 0, -2 and 3 (one broker): INVALID_REPLICATION_FACTOR"
case_is create_twice '[["dup", 42, "duplicate topic name"], ["uniq", 0, null]]' \
	"CreateTopics naming a topic twice: INVALID_REQUEST, answered once; the other topic made"
case_is create_collision '[["co.ll", 17, "topic \"co.ll\" collides with existing topic \"co_ll\""]]' \
	"a name differing from an existing one only in . against _: INVALID_TOPIC_EXCEPTION"
case_is create_assignment '[["asg", 0, null], ["asg_both", 42, "both a partition count or replication factor and a replica assignment were given"], ["asg_dup", 39, "duplicate brokers in the replica assignment"], ["asg_gap", 39, "the assigned partitions must be 0, 1, 2, ... each once"], ["asg_unknown", 39, "unknown broker in the replica assignment"]]' \
	"manual assignments: made where they name only this broker, partitions 0 .. n-1 (as Kafka's one broker); refused as Kafka refuses them otherwise"
case_is grow_assignment '[["asg", 0, null], ["keep", 39, "unknown broker in the replica assignment"]]' \
	"CreatePartitions with an assignment naming this broker grows the topic; naming another is INVALID_REPLICA_ASSIGNMENT"
case_is grow_assignment_count '[["asg", 39, "the assignments must name each partition added, one list each"]]' \
	"growing by two with one assignment: INVALID_REPLICA_ASSIGNMENT, nothing grown (below)"
check_eq "$(sql "SELECT string_agg(topic || ':' || partitions, ',' ORDER BY topic) FROM mq.topics")" "asg:3,co_ll:1,grown:1,keep:1,uniq:1" \
	"of all these, only the unrepeated valid topics were made, the assigned one with its two partitions, then grown to three"
case_is grow_twice '[["grown", 42, "duplicate topic name"]]' \
	"CreatePartitions naming a topic twice: INVALID_REQUEST, answered once"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'grown'")" "1" "and the topic was not grown"
case_is delete_twice '[["keep", 42, null]]' "DeleteTopics naming a topic twice: INVALID_REQUEST, answered once"
case_is delete_v6 '[[null, 42, "duplicate topic id"], [null, 42, "neither topic name nor id was given"], ["keep", 42, "a topic name and a topic id were both given"]]' \
	"DeleteTopics v6: an id twice, neither name nor id, both: INVALID_REQUEST"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'keep'")" "1" "and the topic was not dropped"
case_is alter_twice '[["keep", 42, "error due to duplicate config keys"], ["grown", 42, "each resource must appear at most once"], ["grown", 42, "each resource must appear at most once"]]' \
	"AlterConfigs: a key named twice, a resource given twice (each answered): INVALID_REQUEST"
case_is incremental_refused '[["keep", 42, "error due to duplicate config keys"], ["grown", 42, "null value not supported but for DELETE"], ["co_ll", 0, null]]' \
	"IncrementalAlterConfigs: a key named twice, a null value to SET: INVALID_REQUEST; the valid one applied"
check_eq "$(sql "SELECT string_agg(topic || '=' || coalesce(config->>'retention.ms', '-'), ' ' ORDER BY topic)
                   FROM mq.topics WHERE topic IN ('keep', 'grown', 'co_ll')")" "co_ll=5000 grown=- keep=-" \
	"of all these config changes, only the valid one was made"
case_is metadata '[["bad name", 17], ["keep", 0], ["nosuch", 3]]' \
	"Metadata: a name outside Kafka's rule INVALID_TOPIC_EXCEPTION, an unknown one UNKNOWN_TOPIC_OR_PARTITION"
kafka_kill

# with automatic creation (the default): a valid unknown name is made, an invalid one fails at once
kafka_start || fail "mq-kafka restarts"
run kcat_ -P -t "bad name" -X message.timeout.ms=30000 <<<"x"
check_match "$RC:$ERR" '^[1-9].*Invalid topic' "kcat producing to an invalid name fails with Kafka's error"
run kcat_ -P -t made_on_the_fly <<<"x"
expect_rc 0 "kcat producing to a valid new name"
check_eq "$(sql "SELECT string_agg(topic, ',' ORDER BY topic) FROM mq.topics WHERE topic NOT IN ('asg', 'co_ll', 'grown', 'keep', 'uniq')")" \
	"made_on_the_fly" "only the valid name was made"
kafka_kill
finish
