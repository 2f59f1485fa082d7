#!/usr/bin/env bash
# Kafka's members seen from SQL and mqctl: kcat consumers at their
# defaults (a session timeout of 6 s so that the test is short) show in
# mq.groups, mq.group_members and mq.group_assignments and in mqctl's
# group commands, stay live past their session timeout while mq-kafka
# holds them (it touches their group), and refuse what Kafka refuses for a
# group with members: resetting its offsets (mqctl and SQL) and deleting
# it.  Once they have left, the group is Empty at once and may be reset.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('gms', 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

member() {	# member NAME: a kcat consumer of gms in group gms-g, in the background
	kcat -b "$BROKER" -G gms-g gms -X session.timeout.ms=6000 -X client.id="kcat-$1" -X auto.offset.reset=earliest \
		>"$T/$1.out" 2>"$T/$1.err" &
	eval "${1}_pid=$!"
}
member a
member b
groups() { sql "SELECT state || ':' || members || ':' || coalesce(assignor, '') FROM mq.groups WHERE group_id = 'gms-g'"; }
wait_eq 60 "Stable:2:range" groups || fail "the group is Stable with two members in mq.groups" "$(groups)"
# a record for each member, which it commits (auto commit, every 5 s)
sql "SELECT mq.send('gms', NULL::bytea, convert_to('r' || p, 'UTF8'), partition => p) FROM generate_series(0, 1) p" >/dev/null
check_eq "$(sql "SELECT abs(version / 1e6 - extract(epoch FROM clock_timestamp())) < 60
                   FROM mq.kafka_group_state WHERE group_id = 'gms-g'")" "t" \
	"mq-kafka stamps its saves with the time of day"
check_eq "$(sql "SELECT string_agg(client_id || ':' || kafka || ':' || active || ':' || partitions
                                   || ':' || array_to_string(topics, ','), ' ' ORDER BY client_id)
                   FROM mq.group_members WHERE group_id = 'gms-g'")" \
	"kcat-a:true:true:1:gms kcat-b:true:true:1:gms" \
	"mq.group_members: each Kafka member with its client id, subscription and partition"
check_eq "$(sql "SELECT count(DISTINCT owner) || ':' || string_agg(partition::text, ',' ORDER BY partition)
                   FROM mq.group_assignments WHERE group_id = 'gms-g'")" "2:0,1" \
	"mq.group_assignments: one partition owned by each"

run mqctl group describe gms-g --format json
expect_rc 0 "mqctl group describe"
check_match "$OUT" '"members": ?2,.*"topics": ?\[[[:space:]]*"gms"' "mqctl group describe counts the Kafka members and their topics"
check_match "$OUT" '"owner": ?"kcat-[ab]-' "and names each partition's owner"
run mqctl group reset-offsets gms-g --topic gms --to-earliest --execute
check_eq "$RC" "1" "mqctl group reset-offsets refuses a group with live Kafka members"
check_match "$ERR" "has 2 active members" "saying why"
run sql "SELECT * FROM mq.reset_offsets('gms-g', 'gms', '-infinity')"
check_match "$ERR" "live members subscribed" "mq.reset_offsets refuses it (MQ037)"
run sql "SELECT mq.delete_group('gms-g')"
check_match "$ERR" "has live members" "mq.delete_group refuses it (MQ036)"

# mq-kafka touches the group it holds: live well past the session timeout
# after the group's last save (its version is the save's time in us)
saved="$(sql "SELECT version FROM mq.kafka_group_state WHERE group_id = 'gms-g'")"
after() { test "$(sql "SELECT clock_timestamp() > to_timestamp($saved / 1e6) + interval '8 seconds'")" = t; }
wait_for 30 after
check_eq "$(sql "SELECT version = $saved FROM mq.kafka_group_state WHERE group_id = 'gms-g'")" "t" \
	"no rebalance saved the group since"
check_eq "$(groups)" "Stable:2:range" "8 s after its last save, the members are still live (mq-kafka touches them)"

wait_eq 30 2 sql "SELECT count(*) FROM mq.consumer_offset WHERE group_id = 'gms-g' AND next_offset = 1" ||
	fail "the members commit their records"
# the members leave (kcat closes its consumer on SIGTERM): Empty at once
kill "$a_pid" "$b_pid"
wait "$a_pid" "$b_pid" 2>/dev/null || true
check_eq "$(groups)" "Empty:0:" "the group is Empty as soon as its members have left" || sql "SELECT * FROM mq.kafka_group_state; SELECT * FROM mq.consumer_offset" >&2
run mqctl group reset-offsets gms-g --topic gms --to-earliest --execute
expect_rc 0 "and mqctl group reset-offsets resets it"
check_eq "$(sql "SELECT string_agg(next_offset::text, ',' ORDER BY partition) FROM mq.consumer_offset
                  WHERE group_id = 'gms-g'")" "0,0" "to the log start"
finish
