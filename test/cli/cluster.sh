#!/usr/bin/env bash
# mqctl cluster status against a coordinator: the test plays the brokers by
# writing mq_coord's tables itself, and holds broker 1's liveness lock from
# a background session (broker 2 has none, so it is not alive).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name, heartbeat_at)
VALUES (1, 'host=127.0.0.1 port=1', 'node1', clock_timestamp()),
       (2, 'host=127.0.0.1 port=2', 'node2', clock_timestamp());
INSERT INTO mq_coord.topic (topic, partitions) VALUES ('orders', 2);
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('orders', 0, '{1,2}', 1, 3, '{1,2}'),
       ('orders', 1, '{1,2}', 2, 5, '{2}');
SQL
# broker 1: a session that holds its liveness lock and registered its pid
psql -X -q -v ON_ERROR_STOP=1 -c "SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 1)" \
	-c "UPDATE mq_coord.broker SET backend_pid = pg_backend_pid(), heartbeat_at = clock_timestamp() WHERE broker_id = 1" \
	-c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
holder=$!
on_exit "kill $holder 2>/dev/null; wait $holder 2>/dev/null"
for _ in $(seq 50); do
	[[ "$(psql -X -At -c "SELECT mq_coord.broker_alive(1, 10000)")" == t ]] && break
	sleep 0.1
done

run mqctl cluster status
expect_rc 0 "cluster status"
check_match "$OUT" $'^Brokers: 2 \\(1 alive\\)\tPartitions: 2\tUnder-replicated: 1\tOffline: 1' "summary line"
check_match "$OUT" 'node1 +t ' "broker 1 is alive"
check_match "$OUT" 'node2 +f ' "broker 2 is not"
check_match "$OUT" 'orders +1 +2 +node2 +5 +2 +1,2 +t +t' "partition 1: under-replicated and offline (its leader is dead)"
check_match "$OUT" 'orders +0 +1 +node1 +3 +1,2 +1,2 +f +f' "partition 0: in sync, led by a live broker"

run mqctl cluster status --format json
expect_rc 0 "cluster status --format json"
check_eq "$(json_get "$OUT" '{under_replicated}')" 1 "json: under-replicated count"
check_eq "$(json_get "$OUT" '{offline}')" 1 "json: offline count"
check_eq "$(json_get "$OUT" '{partitions,1,isr}')" '[2]' "json: ISR as an array"
check_eq "$(json_get "$OUT" '{brokers,0,alive}')" true "json: broker 1 alive"

run mqctl cluster status --timeout-ms 0
expect_rc 2 "a timeout below 1 ms is a usage error"
check_match "$ERR" 'timeout-ms' "the message names the option"
run mqctl cluster status extra
expect_rc 2 "no positional arguments"
run mqctl cluster status --help
expect_rc 0 "--help"
check_match "$OUT" '^Usage: mqctl cluster status' "help text"
finish
