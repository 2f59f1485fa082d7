#!/usr/bin/env bash
# The groups a lag monitor discovers (kafka_exporter, kafka-lag-exporter,
# Kafka UI: ListGroups, then DescribeGroups and OffsetFetch), with
# kafka-python's admin client at its defaults (test/kafka/py/groups_known.py):
# besides the groups mq-kafka holds members of, every group mq.groups
# knows, as Kafka lists a group that only has committed offsets: SQL
# consumers committing without joining, an SQL group (mq.join_group) with
# its members and their assignments, and a Kafka group that committed and
# left before mq-kafka restarted; not a group whose JoinGroup was refused.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3
sql "SELECT mq.create_topic('gk', 3)" >/dev/null
sql "SELECT mq.send('gk', NULL, 'v'::bytea, NULL, p) FROM generate_series(0, 2) p" >/dev/null
sql "SELECT mq.commit_offset('gk_offsets', 'gk', 0, 1)" >/dev/null
# an SQL group of two members, heartbeating until its partitions have settled
m1="$(sql "SELECT member FROM mq.join_group('gk_sql', ARRAY['gk'])")"
m2="$(sql "SELECT member FROM mq.join_group('gk_sql', ARRAY['gk'])")"
settled() {
	sql "SELECT (SELECT count(*) FROM mq.heartbeat('gk_sql', '$m1')) + (SELECT count(*) FROM mq.heartbeat('gk_sql', '$m2'))" >/dev/null
	[[ "$(sql "SELECT state FROM mq.groups WHERE group_id = 'gk_sql'")" == Stable ]]
}
wait_for 10 settled || fail "the SQL group settles" "$(sql "SELECT * FROM mq.group_assignments")"
kafka_start || { fail "mq-kafka starts"; finish; }

# a Kafka group that reads, commits and leaves; then mq-kafka restarts
run timeout 60 kcat -b "$BROKER" -G gk_kafka gk -e -o beginning -q -X auto.commit.interval.ms=100
check_eq "$(sql "SELECT count(*) FROM mq.consumer_lag WHERE group_id = 'gk_kafka'")" "3" "the Kafka group committed its three partitions"
kafka_kill
kafka_start || { fail "mq-kafka restarts"; finish; }

run timeout 60 "$PY" test/kafka/py/groups_known.py "$BROKER" gk_offsets gk_sql gk_kafka gk_nobody
check_eq "$RC" 0 "groups_known.py runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{listed}')" '[["gk_kafka", ""], ["gk_offsets", ""], ["gk_sql", "consumer"]]' \
	"ListGroups lists the groups with committed offsets (empty protocol type) and the SQL group"
check_eq "$(json_get "$J" '{described,gk_offsets}')" '["Empty", "", "", []]' \
	"DescribeGroups: a group with only committed offsets is Empty, as in Kafka"
check_eq "$(json_get "$J" '{described,gk_kafka}')" '["Empty", "", "", []]' \
	"and so is the Kafka group whose members left before the restart"
check_eq "$(json_get "$J" '{described,gk_nobody}')" '["Dead", "", "", []]' "a group nobody knows is Dead"
want="$(sql "SELECT json_agg(json_build_array(m.member_id, 'mq', m.topics,
                  (SELECT coalesce(json_agg(a.topic || ':' || a.partition ORDER BY a.topic, a.partition), '[]')
                     FROM mq.group_assignments a WHERE a.group_id = m.group_id AND a.target = m.member_id))
                  ORDER BY m.member_id)
               FROM mq.group_members m WHERE m.group_id = 'gk_sql'")"
check_eq "$(json_get "$J" '{described,gk_sql}')" "$(json_get "[\"Stable\", \"consumer\", \"range\", $want]" '{}')" \
	"DescribeGroups: the SQL group is Stable, with its members, subscriptions and assignments as mq.group_assignments has them"
check_match "$(json_get "$J" '{described,gk_sql,3}')" '"gk:0".*"gk:1".*"gk:2"' "between them the members hold the three partitions"

# a JoinGroup refused for its session timeout, or naming a member of a
# group that does not exist, makes no group: Kafka lists neither
run env PYTHONPATH=test/kafka/py "$PY" -c "
import struct; from kwire import Client, s
c = Client($KAFKA_PORT)
def join(group, session_ms, member):
    body = s(group) + struct.pack('>i', session_ms) + s(member) + s('consumer') + struct.pack('>i', 1) + s('range') \
        + struct.pack('>i', 0)
    return struct.unpack_from('>h', c.call(11, 0, body))[0]
print(join('gk_short', 1000, ''), join('gk_stranger', 10000, 'someone'), ','.join(g for g in c.list_groups() if g in ('gk_short', 'gk_stranger')) or 'none')"
check_eq "$OUT" "26 25 none" \
	"JoinGroup with a session timeout below the minimum: INVALID_SESSION_TIMEOUT; with an unknown member id: UNKNOWN_MEMBER_ID; neither group listed"
finish
