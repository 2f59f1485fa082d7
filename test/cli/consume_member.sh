#!/usr/bin/env bash
# mqctl consume --group on one node is a member of the group, as Kafka's
# console consumer is: while it runs mq.groups and group describe show it
# (Stable, one member, the owner of every partition) and group
# reset-offsets --execute, group delete, mq.reset_offsets and
# mq.delete_group refuse the group; two consumers of a group split a
# 2-partition topic and print every record once (through a rebalance
# whose commits come from the old generation: MQ030, retried); a member
# whose session expired joins again; and on every way out (SIGTERM,
# --max-messages, --no-follow, --timeout-ms) it leaves the group at once,
# perf consume --group too.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create cm --partitions 2 >/dev/null
dir="$(tmpdir)"

# wait_until SQL WANT: until SQL returns WANT (10 s at most); prints the last value
wait_until() {
	local i v
	for ((i = 0; i < 100; i++)); do
		v="$(sql "$1")"
		[[ "$v" == "$2" ]] && break
		sleep 0.1
	done
	printf '%s\n' "$v"
}
group_state() { sql "SELECT state || ' ' || members FROM mq.groups WHERE group_id = '$1'"; }
owners() { # GROUP: the owner of each partition of cm, in order
	sql "SELECT string_agg(coalesce(owner, '-'), ' ' ORDER BY partition)
	       FROM mq.group_assignments WHERE group_id = '$1' AND topic = 'cm'"
}
# lines FILE...: how many lines the files hold together
lines() { cat "$@" | wc -l; }

# --- one member ------------------------------------------------------------------
"$MQCTL" consume cm --group gm --format kv >"$dir/a.out" 2>"$dir/a.err" &
a=$!
on_exit "kill -KILL $a 2>/dev/null"
check_eq "$(wait_until "SELECT state || ' ' || members FROM mq.groups WHERE group_id = 'gm'" "Stable 1")" \
	"Stable 1" "while consume --group runs, mq.groups shows the group Stable with 1 member"
ma="$(sql "SELECT member_id FROM mq.group_members WHERE group_id = 'gm'")"
check_match "$ma" '^consumer-' "the member is in mq.group_members"
check_eq "$(owners gm)" "$ma $ma" "it owns both partitions"

run mqctl group describe gm
expect_rc 0 "group describe of a running consumer's group"
check_match "$(echo "$OUT" | head -n 1)" $'^Group: gm\tState: Stable\tMembers: 1\tGeneration: [0-9]+\tAssignor: range\t' \
	"describe: Stable, one member, the range assignor"
check_eq "$(echo "$OUT" | awk 'NR > 3 {print $6}' | sort -u)" "$ma" "describe: the consumer owns every partition"
run mqctl group list
check_match "$OUT" $'\ngm +Stable +1 ' "group list: one member"

run mqctl group reset-offsets gm --topic cm --to-earliest --execute
expect_rc 1 "reset-offsets --execute is refused while consume --group runs"
check_match "$ERR" 'consumer group "gm" has 1 active member: stop it before resetting its offsets' \
	"says why, as Kafka refuses a group that is not empty"
run mqctl group delete gm
expect_rc 1 "group delete is refused while consume --group runs"
run sql "SELECT mq.delete_group('gm')"
check_match "$ERR" 'group "gm" has live members' "mq.delete_group refuses it (MQ036)"
run sql "SELECT count(*) FROM mq.reset_offsets('gm', 'cm', now())"
check_match "$ERR" 'group "gm" has live members subscribed to topic "cm"' "mq.reset_offsets refuses it"

# --- two members split the partitions ---------------------------------------------------
"$MQCTL" consume cm --group gm --format kv -n 101 >"$dir/b.out" 2>"$dir/b.err" &
b=$!
on_exit "kill -KILL $b 2>/dev/null"
check_eq "$(wait_until "SELECT state || ' ' || members FROM mq.groups WHERE group_id = 'gm'" "Stable 2")" \
	"Stable 2" "a second consumer joins: two members"
check_eq "$(wait_until "SELECT count(DISTINCT owner) FROM mq.group_assignments WHERE group_id = 'gm'" 2)" 2 \
	"each owns one partition"
seq -f 'x%g' 1 100 | mqctl produce cm -p 0
seq -f 'y%g' 1 100 | mqctl produce cm -p 1
for ((i = 0; i < 100; i++)); do
	(($(lines "$dir/a.out" "$dir/b.out") >= 200)) && break
	sleep 0.1
done
check_eq "$(cat "$dir/a.out" "$dir/b.out" | sed 's/.* value=//' | sort | uniq | wc -l) $(lines "$dir/a.out" "$dir/b.out")" \
	"200 200" "together they print every record exactly once"
pa="$(grep -o 'partition=[0-9]' "$dir/a.out" | sort -u | tr '\n' ' ')"
pb="$(grep -o 'partition=[0-9]' "$dir/b.out" | sort -u | tr '\n' ' ')"
check_eq "$(printf '%s\n' "$pa" "$pb" | sort | tr -d '\n')" "partition=0 partition=1 " \
	"each read one partition, the other's other (a: $pa, b: $pb)"
check_eq "$(cat "$dir/a.err" "$dir/b.err")" "" "no warnings"

# SIGTERM: the member leaves at once (the other gets both partitions)
kill -TERM "$a"
rc=0
wait "$a" || rc=$?
check_eq "$rc $(cat "$dir/a.err")" "0 Processed a total of 100 messages" "SIGTERM ends consume --group cleanly"
check_eq "$(group_state gm)" "Stable 1" "at once the group has one member left"
mb="$(sql "SELECT member_id FROM mq.group_members WHERE group_id = 'gm'")"
check_eq "$(owners gm)" "$mb $mb" "which owns both partitions"

# --max-messages: the last member leaves, the group is Empty at once
pa="${pa#partition=}"
echo last | mqctl produce cm -p "${pa% }"
rc=0
wait "$b" || rc=$?
check_eq "$rc $(tail -n 1 "$dir/b.out" | sed 's/.* value=//')" "0 last" "the remaining member reads the other partition"
check_eq "$(group_state gm)" "Empty 0" "after --max-messages the group is Empty at once"

# --- a member whose session expired joins again ---------------------------------------------
"$MQCTL" consume cm --group ge --format kv -n 1 >"$dir/e.out" 2>"$dir/e.err" &
e=$!
on_exit "kill -KILL $e 2>/dev/null"
check_eq "$(wait_until "SELECT state || ' ' || members FROM mq.groups WHERE group_id = 'ge'" "Stable 1")" \
	"Stable 1" "another group, one member"
me="$(sql "SELECT member_id FROM mq.group_members WHERE group_id = 'ge'")"
# its session times out now: maintenance removes it and rebalances
sql "UPDATE mq.group_member SET last_heartbeat = now() - interval '1 hour' WHERE group_id = 'ge'" >/dev/null
sql "SELECT mq.run_maintenance()" >/dev/null
check_eq "$(wait_until "SELECT count(*) FROM mq.group_members WHERE group_id = 'ge' AND member_id <> '$me'" 1)" 1 \
	"the expired member joins again, as a new member (mq.join_group refuses the old id)"
check_eq "$(group_state ge)" "Stable 1" "and the group is Stable again"
echo again | mqctl produce cm -p 1
rc=0
wait "$e" || rc=$?
check_eq "$rc $(sed 's/.* value=//' "$dir/e.out")" "0 again" "it goes on reading"
check_match "$(cat "$dir/e.err")" 'group "ge": the session of member consumer-[^ ]+ expired; joining again' \
	"and says it joined again"

# --- a partition revoked while its batch is being printed -----------------------------------
# r1 reads both partitions in one batch and blocks printing it (nobody reads
# its pipe); r2 joins meanwhile and gets one of them, claimed by r1's batch.
# r1's commit then comes from the old generation (MQ030): it commits again,
# fenced for the partition it keeps, plainly for the one it lost, which r2
# then reads from there: nothing is printed twice.
mqctl topic create cr --partitions 2 >/dev/null
seq -f 'a%099g' 1 2000 | mqctl produce cr -p 0
seq -f 'b%099g' 1 2000 | mqctl produce cr -p 1
mkfifo "$dir/r1.pipe"
exec 3<>"$dir/r1.pipe" # opens it without a reader that reads
"$MQCTL" -d "application_name=mqctl_r1" consume cr --group gr --from-beginning -b 100000 --format kv \
	>"$dir/r1.pipe" 2>"$dir/r1.err" 3>&- &
r1=$!
on_exit "kill -KILL $r1 2>/dev/null"
check_eq "$(wait_until "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mqctl_r1'
                          AND state = 'idle in transaction'" 1)" 1 "r1 holds its batch of both partitions, printing"
# (--from-beginning: without it r2 would commit the log ends, r1's commit or not)
"$MQCTL" consume cr --group gr --from-beginning --format kv >"$dir/r2.out" 2>"$dir/r2.err" 3>&- &
r2=$!
on_exit "kill -KILL $r2 2>/dev/null"
check_eq "$(wait_until "SELECT count(DISTINCT owner) FROM mq.group_assignments WHERE group_id = 'gr'" 2)" 2 \
	"r2 joins and is given one of r1's partitions"
cat "$dir/r1.pipe" >"$dir/r1.out" 3>&- &
reader=$!
check_eq "$(wait_until "SELECT count(*) FROM mq.consumer_offset WHERE group_id = 'gr' AND next_offset = 2000" 2)" 2 \
	"r1 committed its whole batch, the lost partition's offsets too"
echo c1 | mqctl produce cr -p 0
echo c2 | mqctl produce cr -p 1
for ((i = 0; i < 100; i++)); do
	(($(lines "$dir/r1.out" "$dir/r2.out") >= 4002)) && break
	sleep 0.1
done
kill -TERM "$r1" "$r2"
wait "$r1" "$r2" || true
exec 3>&-
wait "$reader" || true
check_eq "$(cat "$dir/r1.out" "$dir/r2.out" | sed 's/.* value=//' | sort -u | wc -l) $(lines "$dir/r1.out" "$dir/r2.out")" \
	"4002 4002" "every record printed once"
check_eq "$(grep -o 'partition=[0-9]' "$dir/r1.out" | sort -u | tr '\n' ' ')$(wc -l <"$dir/r2.out")" \
	"partition=0 partition=1 1" "r1 printed both partitions' records, r2 only the record after them"
check_eq "$(cat "$dir/r1.err" "$dir/r2.err" | grep -v '^Processed')" "" "no warnings"

# --- every way out leaves -------------------------------------------------------------------
run mqctl consume cm --group gn --no-follow
check_eq "$RC $(sql "SELECT state, members, generation FROM mq.groups WHERE group_id = 'gn'")" "0 Empty|0|2" \
	"--no-follow: it joined (generation 1) and left (generation 2)"
run mqctl consume cm --group gt --timeout-ms 200
check_eq "$RC $(sql "SELECT state, members, generation FROM mq.groups WHERE group_id = 'gt'")" "0 Empty|0|2" \
	"--timeout-ms: it joined and left"
run mqctl perf consume cm --records 202 --group gp --timeout-ms 3000
check_eq "$RC $(sql "SELECT state, members, generation FROM mq.groups WHERE group_id = 'gp'")" "0 Empty|0|2" \
	"perf consume --group: a member too, that left"

# --- a refused join changes nothing -----------------------------------------------------------
# a live member with another assignor: mqctl's join is refused (MQ032), and
# the group's offsets stay as they were: mqctl used to commit the log ends
# (its start at the end, as Kafka's console consumer) before joining, and
# the group's real member then skipped every record before them
sql "SELECT member FROM mq.join_group('grefused', ARRAY['cm'], assignor => 'roundrobin')" >/dev/null
run mqctl consume cm --group grefused --no-follow
check_match "$RC $ERR" "^1 .*MQ032" "a join refused for another assignor: exit 1, MQ032"
check_eq "$(sql "SELECT count(*) FROM mq.committed_offsets('grefused')")" "0" "and no offset was committed for the group"

finish
