#!/usr/bin/env bash
# mqctl given the coordinator's address (docs/cli.md, "A replicated
# cluster"), in one database that is both the coordinator and the only
# node: the test plays the broker by writing mq_coord's tables itself
# (broker 1 leads every partition, its node is this database).  It runs
# the commands of the documentation's example and checks what they print;
# test/t/123 does the same across real nodes and a failover.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

node="host=${PGHOST:-localhost} port=${PGPORT:-5432} dbname=${PGDATABASE:-postgres}"
psql -X -q -v ON_ERROR_STOP=1 -v node="$node" <<'SQL'
SELECT mq.create_topic('orders', 3);
INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name, heartbeat_at)
VALUES (1, :'node', 'node1', clock_timestamp());
INSERT INTO mq_coord.topic (topic, partitions) VALUES ('orders', 3);
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
SELECT 'orders', p, '{1}', 1, 1, '{1}' FROM generate_series(0, 2) p;
SQL

run mqctl produce orders -p 1 -v < <(printf 'hello\nbonjour\nhola\n')
expect_rc 0 "produce through the coordinator"
check_eq "$OUT" $'partition=1 offset=0\npartition=1 offset=1\npartition=1 offset=2' "routed to partition 1's leader"
check_eq "$(psql -X -At -c "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('orders', 1, 0)")" \
	"hello,bonjour,hola" "the records are on the node"

# a member that stays: the coordinator shows it, and its partitions
"$MQCTL" consume orders --group billing --from-beginning >"$(tmpdir)/member.out" 2>"$(tmpdir)/member.err" &
member=$!
on_exit "kill $member 2>/dev/null; wait $member 2>/dev/null"
for _ in $(seq 100); do
	[[ "$(wc -l <"$(tmpdir)/member.out")" -ge 3 ]] && break
	sleep 0.1
done
check_eq "$(cat "$(tmpdir)/member.out")" $'hello\nbonjour\nhola' "the member read the records"
check_eq "$(psql -X -At -c "SELECT count(*) FROM mq_coord.cluster_group_member WHERE group_id = 'billing'")" 1 \
	"the member joined the cluster group on the coordinator"

run mqctl group describe billing
expect_rc 0 "group describe through the coordinator"
check_match "$OUT" $'^Group: billing\tState: Stable\tMembers: 1\tGeneration: 1\tAssignor: range\tLag: 0' "group line"
check_match "$OUT" 'orders +1 +3 +3 +0 +billing-[0-9a-f-]+ +1' "partition 1: committed, its owner and leader"

run mqctl group describe billing --format json
expect_rc 0 "group describe --format json"
check_eq "$(json_get "$OUT" '{members}')" 1 "json: members"
check_eq "$(json_get "$OUT" '{partitions,1,committed_offset}')" 3 "json: committed offset of partition 1"

# partitions added to the topic (the coordinator's rows, as a placement
# change would write them): the member gets them in a new generation
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
SELECT mq.add_partitions('orders', 1);
UPDATE mq_coord.topic SET partitions = 4 WHERE topic = 'orders';
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('orders', 3, '{1}', 1, 1, '{1}');
SQL
printf 'hej\n' | mqctl produce orders -p 3
for _ in $(seq 100); do
	[[ "$(wc -l <"$(tmpdir)/member.out")" -ge 4 ]] && break
	sleep 0.1
done
check_eq "$(tail -n 1 "$(tmpdir)/member.out")" "hej" "the member reads a partition added to the topic"
check_eq "$(psql -X -At -c "SELECT generation || ' ' || array_to_string(assigned, ',') FROM mq_coord.cluster_group_members('billing')")" \
	"2 orders:0,orders:1,orders:2,orders:3" "in a new generation"

kill -TERM "$member"
wait "$member" || true
check_eq "$(psql -X -At -c "SELECT count(*) FROM mq_coord.cluster_group_member WHERE group_id = 'billing'")" 0 \
	"a member that stops leaves the group"

# the offsets live on the leader: a new member goes on from them
printf 'ciao\n' | mqctl produce orders -p 1
run mqctl consume orders --group billing --no-follow
expect_rc 0 "a second member"
check_eq "$OUT" "ciao" "it reads from the committed offset"

run mqctl perf produce orders --records 2000
expect_rc 0 "perf produce through the coordinator"
run mqctl perf consume orders --records 2000 --group perf
expect_rc 0 "perf consume --group through the coordinator"
check_match "$OUT" '2000 records received' "perf consume read them"

run mqctl consume orders --no-follow
expect_rc 4 "no group through the coordinator"
check_match "$ERR" 'replicated topic and this is its coordinator' "says why"

# creating a topic given the coordinator's address makes a replicated one
# there (mq_coord.create_topic), placed on live brokers: none runs here
run mqctl topic create fresh -c replication.factor=1
check_eq "$RC" "1" "topic create through the coordinator asks the coordinator"
check_match "$ERR" 'cannot be placed: all brokers are down' "which places on its brokers (none is live here)"
check_eq "$(psql -X -At -c "SELECT count(*) FROM mq.topic WHERE topic_name = 'fresh'")" "0" \
	"and nothing is created on the connected database alone"

# deleting a replicated topic goes on the coordinator (its brokers drop
# their copies; here no broker runs, so the node keeps its copy)
run mqctl topic delete orders
expect_rc 0 "topic delete through the coordinator"
check_eq "$(psql -X -At -c "SELECT (SELECT count(*) FROM mq_coord.topic WHERE topic = 'orders')
                                   || ' ' || (SELECT count(*) FROM mq_coord.deleted_topic WHERE topic = 'orders')")" \
	"0 1" "the coordinator deleted it (mq_coord.delete_topic), leaving a tombstone for the brokers"

finish
