#!/usr/bin/env bash
# DescribeTopicPartitions v0 (KIP-966; Kafka 3.9's Java admin describes
# topics with it) as Kafka's broker answers it (py/topic_partitions.py):
# topics in name order with Metadata's ids, leaders and replicas, empty
# eligible leader replicas, and their authorized operations; pages of
# response_partition_limit partitions (at least 1), each with the cursor the next
# starts from (a topic's next partition, or the next topic's first);
# unknown names UNKNOWN_TOPIC_OR_PARTITION, names outside Kafka's rule
# INVALID_TOPIC_EXCEPTION, a cursor outside the topics asked or with a
# negative partition INVALID_REQUEST; nothing created.  As a role that may
# describe only some topics: every-topic answers list those alone, and a
# topic asked that it may not describe is TOPIC_AUTHORIZATION_FAILED
# without an id, whether it exists or not.  @platformatic/kafka's raw
# DescribeTopicPartitions pages through every topic, cursor to cursor.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PY=/usr/bin/python3

sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_test') THEN CREATE ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_tp_user') THEN CREATE ROLE mq_tp_user IN ROLE mq_sasl_test; END IF;
END \$\$" >/dev/null
sql "SELECT mq.create_topic('tp_a', 3); SELECT mq.create_topic('tp_b', 2); SELECT mq.create_topic('tp_c', 1);
     SELECT mq.grant('describe', 'topic', 'tp_a', 'mq_tp_user'); SELECT mq.grant('read', 'topic', 'tp_b', 'mq_tp_user')" >/dev/null

# describe PORT CALL...: each CALL a JSON [topics, limit, cursor]; OUT
# holds one line per answer: "topic/error/internal:partition=leader,...
# ops" for each topic, then "-> topic:partition" for a next cursor
describe() {
	local port="$1" calls
	shift
	calls="[$(IFS=,; echo "$*")]"
	run timeout 60 env PYTHONPATH=test/kafka/py "$PY" test/kafka/py/topic_partitions.py "$port" "$calls"
	[[ $RC == 0 ]] || { printf "# %s\n" "$OUT"; J="{}"; return; }
	J="$OUT"
	OUT="$("$PY" -c '
import json, sys
for c in json.loads(sys.argv[1])["calls"]:
    ts = ["%s/%d/%d:%s %d" % (t[1], t[0], t[3], ",".join("%d=%d" % (p[1], p[2]) for p in t[4]), t[5]) for t in c["topics"]]
    print(" ".join(ts) + (" -> %s:%d" % tuple(c["next"]) if c["next"] else ""))' "$J")"
}

kafka_start || { fail "mq-kafka starts"; finish; }
ALL=3576 # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
describe "$KAFKA_PORT" '[[], 2000, null]'
check_eq "$OUT" "tp_a/0/0:0=1,1=1,2=1 $ALL tp_b/0/0:0=1,1=1 $ALL tp_c/0/0:0=1 $ALL" \
	"no topics asked: every topic in name order, each partition led by this daemon, with every operation the daemon's role may do"
check_eq "$("$PY" -c '
import json, sys
j = json.loads(sys.argv[1])
t = j["calls"][0]["topics"]
print(all(x[2] == j["ids"][x[1]] for x in t), {tuple(p[4:9]) == ([1], [1], [], [], []) for x in t for p in x[4]}, {p[0] for x in t for p in x[4]})' "$J")" \
	"True {True} {0}" "the topic ids are Metadata's; replicas and ISR this daemon, no eligible leader replicas, no offline replicas, no errors"

describe "$KAFKA_PORT" '[["tp_c", "tp_a", "tp_b"], 2, null]' '[["tp_c", "tp_a", "tp_b"], 2, ["tp_a", 2]]' \
	'[["tp_c", "tp_a", "tp_b"], 2, ["tp_b", 1]]' '[[], 3, null]' '[[], 2, ["tp_b", 0]]' '[[], 0, null]'
check_eq "$OUT" "tp_a/0/0:0=1,1=1 $ALL -> tp_a:2
tp_a/0/0:2=1 $ALL tp_b/0/0:0=1 $ALL -> tp_b:1
tp_b/0/0:1=1 $ALL tp_c/0/0:0=1 $ALL
tp_a/0/0:0=1,1=1,2=1 $ALL -> tp_b:0
tp_b/0/0:0=1,1=1 $ALL -> tp_c:0
tp_a/0/0:0=1 $ALL -> tp_a:1" \
	"pages of response_partition_limit partitions (a limit of 0 is 1, as in Kafka): a cut topic's next partition, or at a topic's end the next topic, is the next cursor; the last page has none"

describe "$KAFKA_PORT" '[["tp_zz", "bad name!", "tp_a", "tp_a"], 10, null]' '[["tp_a", "tp_b"], 10, ["tp_c", 0]]' \
	'[["tp_a"], 10, ["tp_a", -1]]'
check_eq "$OUT" "bad name!/17/0: -2147483648 tp_a/0/0:0=1,1=1,2=1 $ALL tp_zz/3/0: -2147483648
tp_a/42/0: -2147483648 tp_b/42/0: -2147483648
tp_a/42/0: -2147483648" \
	"an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a name outside Kafka's rule INVALID_TOPIC_EXCEPTION, a topic asked twice answered once; a cursor outside the topics asked or with a negative partition INVALID_REQUEST"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'tp_zz'")" "0" "describing an unknown topic does not create it"

if platformatic_install; then
	run timeout 60 node test/kafka/platformatic/topic_partitions.mjs "$BROKER" 2
	check_eq "$RC $OUT" '0 {"pages":["tp_a:0,tp_a:1 -> tp_a:2","tp_a:2,tp_b:0 -> tp_b:1","tp_b:1,tp_c:0"]}' \
		"@platformatic/kafka's DescribeTopicPartitions pages through every partition once, cursor to cursor"
fi

kafka_kill
KAFKA_PORT=""
kafka_start --anonymous=role:mq_tp_user || { fail "mq-kafka --anonymous=role:mq_tp_user starts"; finish; }
describe "$KAFKA_PORT" '[[], 2000, null]' '[["tp_c", "tp_nope", "tp_b", "tp_a"], 2000, null]'
check_eq "$OUT" "tp_a/0/0:0=1,1=1,2=1 256 tp_b/0/0:0=1,1=1 264
tp_a/0/0:0=1,1=1,2=1 256 tp_b/0/0:0=1,1=1 264 tp_c/29/0: -2147483648 tp_nope/29/0: -2147483648" \
	"as a role with DESCRIBE on one topic and READ on another: those alone, with those operations (READ implies DESCRIBE, neither DESCRIBE_CONFIGS, which DescribeConfigs refuses them); the others asked TOPIC_AUTHORIZATION_FAILED, existing or not"
check_eq "$("$PY" -c '
import json, sys
print({x[2] for x in json.loads(sys.argv[1])["calls"][1]["topics"] if x[0] == 29})' "$J")" \
	"{'00000000000000000000000000000000'}" "a topic the role may not describe has no id"
finish
