#!/usr/bin/env bash
# Automatic topic creation, Kafka's auto.create.topics.enable: on by
# default, as in Kafka, so a producer at its defaults creates the topic it
# names (with 1 partition, Kafka's num.partitions); a consumer, whose
# Metadata request does not allow creation (librdkafka's default), does
# not, nor does a role that may not create topics (it gets
# TOPIC_AUTHORIZATION_FAILED, as from Kafka); --auto-create-topics=0
# turns it off (a produce to an unknown topic fails and creates nothing)
# and --auto-create-topics N creates N partitions.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

topic_partitions() { sql "SELECT coalesce((SELECT partitions FROM mq.topics WHERE topic = '$1'), 0)"; }

kafka_start || { fail "mq-kafka starts"; finish; }
run kcat_ -P -t autotopic <<<"created on the fly"
expect_rc 0 "at the defaults, producing to a new topic"
check_eq "$(topic_partitions autotopic)" "1" "made the topic, with 1 partition"
check_eq "$(sql "SELECT convert_from(value, 'UTF8') FROM mq.fetch('autotopic', 0, 0)")" "created on the fly" \
	"and the record is stored"
run timeout 20 kcat_ -C -t ghost -e -X topic.metadata.refresh.interval.ms=100
check_eq "$(topic_partitions ghost)" "0" "a consumer of an unknown topic does not create it"
kafka_kill

# a role that may describe but not create topics, as Kafka answers it:
# TOPIC_AUTHORIZATION_FAILED at once (not a wait for the message timeout),
# and nothing is made; the same for a name it may not even describe
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_ac_reader') THEN CREATE ROLE mq_ac_reader; END IF;
END \$\$" >/dev/null
sql "SELECT mq.grant('describe', 'topic', 'denied_', 'mq_ac_reader', 'prefixed')" >/dev/null
kafka_start --anonymous=role:mq_ac_reader || fail "mq-kafka restarts with --anonymous=role:mq_ac_reader"
for t in denied_new hidden_new; do
	run timeout 60 kcat -b "$BROKER" -P -t "$t" <<<"lost"
	check_match "$RC:$ERR" '^[1-9].*[Tt]opic authorization failed' \
		"producing to $t as a role that may not create it: TOPIC_AUTHORIZATION_FAILED"
	check_eq "$(topic_partitions "$t")" "0" "and nothing is made"
done
kafka_kill

kafka_start --auto-create-topics=0 || fail "mq-kafka restarts with --auto-create-topics=0"
run kcat_ -P -t nosuch -X message.timeout.ms=2000 <<<"lost"
check_match "$RC:$ERR" '^[1-9].*(Unknown topic|timed out)' "with --auto-create-topics=0, producing to an unknown topic fails"
check_eq "$(topic_partitions nosuch)" "0" "and creates no topic"
kafka_kill

kafka_start --auto-create-topics 2 || fail "mq-kafka restarts with --auto-create-topics 2"
run kcat_ -P -t autotopic2 <<<"in one of two"
expect_rc 0 "producing to a new topic with --auto-create-topics 2"
check_eq "$(topic_partitions autotopic2)" "2" "the topic was created with 2 partitions"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('autotopic2', p, 0)")" "1" \
	"the record is stored"

finish
