#!/usr/bin/env bash
# mqctl group list / describe / reset-offsets: groups that only commit
# (mq.commit_offset) and groups with members (mq.join_group), lag,
# owners, retention headroom and records lost, JSON output, the reset
# plan (dry run), --execute in one transaction, the refusal while members
# are active, --force, the targets (--to-datetime, --by-duration,
# --shift-by, --to-current), --topic T:P,P and --all-topics, the warnings
# for offsets moved into the log, group delete, group delete-offsets, and
# errors.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create g3 --partitions 3 >/dev/null
mqctl topic create g1 >/dev/null
# g3: partition 0 has 4 records, 1 has 2, 2 has none
seq -f 'a%g' 1 4 | mqctl produce g3 -p 0
seq -f 'b%g' 1 2 | mqctl produce g3 -p 1

offsets() { # GROUP TOPIC: committed offsets of partitions 0..n-1, "-" for none
	sql "SELECT string_agg(coalesce(mq.committed_offset('$1', '$2', p.partition)::text, '-'), ',' ORDER BY p.partition)
	       FROM mq.partitions p WHERE p.topic = '$2'"
}

# --- no groups yet -------------------------------------------------------------
run mqctl group list
expect_rc 0 "group list without groups"
check_eq "$OUT" "GROUP  STATE  MEMBERS  GENERATION  ASSIGNOR  TOPICS  LAG" "only the header"
run mqctl group list --format json
check_eq "$OUT" "[]" "json: an empty array"

# --- a group that only commits ----------------------------------------------------
# no member ever joined (consume --group would: test/cli/consume_member.sh)
sql "SELECT count(mq.commit_offset('readers', 'g3', partition, high_watermark)) FROM mq.partitions
      WHERE topic = 'g3'" >/dev/null
check_eq "$(offsets readers g3)" "4,2,0" "a group commits the log ends"
seq -f 'a%g' 5 6 | mqctl produce g3 -p 0
run mqctl group list
expect_rc 0 "group list"
check_eq "$OUT" $'GROUP    STATE  MEMBERS  GENERATION  ASSIGNOR  TOPICS  LAG\nreaders  Empty  0        -           -         g3      2' \
	"a committing group: no members, no generation, its topic and total lag"

run mqctl group describe readers
expect_rc 0 "group describe"
check_eq "$(echo "$OUT" | head -n 1)" $'Group: readers\tState: Empty\tMembers: 0\tGeneration: -\tAssignor: -\tLag: 2' \
	"describe: the group's line first"
lag_table="$(echo "$OUT" | tail -n +3)"
want="$(sql "SELECT string_agg(format('%s %s %s %s %s', topic, partition, committed_offset, end_offset, lag), E'\n'
                                ORDER BY partition) FROM mq.consumer_lag WHERE group_id = 'readers'")"
check_eq "$(echo "$lag_table" | tail -n +2 | awk '{print $1, $2, $3, $4, $5}')" "$want" \
	"describe: committed offset, log end and lag per partition, as mq.consumer_lag"
check_eq "$(echo "$lag_table" | head -n 1)" \
	"TOPIC  PARTITION  COMMITTED_OFFSET  LOG_END_OFFSET  LAG  OWNER  RETENTION_HEADROOM  RECORDS_LOST" "describe: the columns"
check_eq "$(echo "$lag_table" | awk 'NR > 1 {print $6, $7, $8}' | sort -u)" "- - 0" \
	"describe: no owner, no time retention, nothing lost"

run mqctl group describe readers --format json
expect_rc 0 "group describe --format json"
check_eq "$(json_get "$OUT" '{group}') $(json_get "$OUT" '{state}') $(json_get "$OUT" '{members}') $(json_get "$OUT" '{lag}')" \
	"readers Empty 0 2" "json: group, state, members, lag"
check_eq "$(json_get "$OUT" '{topics,0}')" "g3" "json: topics is an array"
check_eq "$(sql "SELECT jsonb_typeof('$OUT'::jsonb->'generation')")" "null" "json: no generation is null"
check_eq "$(json_get "$OUT" '{partitions,0,committed_offset}')/$(json_get "$OUT" '{partitions,0,log_end_offset}')/$(json_get "$OUT" '{partitions,0,lag}')" \
	"4/6/2" "json: partition 0's offsets and lag are numbers"
check_eq "$(sql "SELECT jsonb_typeof('$OUT'::jsonb#>'{partitions,1,lag}')")" "number" "json: lag is a number"

# --- a group with members ------------------------------------------------------------
m1="$(sql "SELECT member FROM mq.join_group('workers', ARRAY['g3'], instance_id => 'w1')")"
m2="$(sql "SELECT member FROM mq.join_group('workers', ARRAY['g3', 'g1'], instance_id => 'w2')")"
run mqctl group list
check_eq "$(echo "$OUT" | awk '$1 == "workers" {print $2, $3, $4, $5, $6, $7}')" "Stable 2 2 range g1,g3 0" \
	"members: state, count, generation, assignor, subscribed topics"
run mqctl group describe workers
expect_rc 0 "describe a group with members"
check_match "$(echo "$OUT" | head -n 1)" $'^Group: workers\tState: Stable\tMembers: 2\tGeneration: 2\tAssignor: range' \
	"describe: members, generation and assignor"
owners="$(sql "SELECT string_agg(topic || ' ' || partition || ' ' || owner, E'\n' ORDER BY topic, partition)
                 FROM mq.group_assignments WHERE group_id = 'workers'")"
check_eq "$(echo "$OUT" | tail -n +4 | awk '{print $1, $2, $6}')" "$owners" \
	"describe: every assigned partition with its owner (mq.group_assignments)"
check_eq "$(echo "$OUT" | tail -n +4 | awk '{print $3, $5}' | sort -u)" "- -" \
	"describe: no committed offset yet: no lag either"

# a member whose session timed out is not active
sql "SELECT mq.join_group('stale', ARRAY['g1'], session_timeout_ms => 100)" >/dev/null
sleep 0.3
run mqctl group list
# (its generation: 1, or 2 once maintenance has removed it)
check_eq "$(echo "$OUT" | awk '$1 == "stale" {print $2, $3, $5, $6, $7}')" "Empty 0 range g1 0" \
	"a member past its session timeout does not count"

# --- retention: headroom and records lost -------------------------------------------
mqctl topic create short -c segment.records=2 -c retention.ms=1d >/dev/null
seq 1 3 | mqctl produce short
mqctl consume short --group slow --from-beginning --no-follow -n 1 >/dev/null 2>&1
seq 4 7 | mqctl produce short
run mqctl group describe slow
check_match "$(echo "$OUT" | tail -n 1)" '^short +0 +1 +7 +6 +- +23:59:5[0-9] +0$' \
	"retention headroom: a day, less the seconds since"
mqctl topic alter short -c retention.bytes=0 >/dev/null
sql "SELECT mq.apply_retention('short')" >/dev/null
run mqctl group describe slow --format json
check_eq "$(json_get "$OUT" '{partitions,0,records_lost}') $(json_get "$OUT" '{partitions,0,lag}')" "5 1" \
	"records lost to retention, and the lag that is left"
check_match "$(json_get "$OUT" '{partitions,0,retention_headroom_ms}')" '^86[0-9]{6}$' "json: headroom in milliseconds"

# --- reset-offsets: the plan ---------------------------------------------------------
check_eq "$(offsets readers g3)" "4,2,0" "readers' offsets before"
run mqctl group reset-offsets readers --topic g3 --to-earliest
expect_rc 0 "reset-offsets dry run"
check_eq "$OUT" $'TOPIC  PARTITION  CURRENT_OFFSET  NEW_OFFSET\ng3     0          4               0\ng3     1          2               0\ng3     2          0               0' \
	"the plan: partition, current and new offset"
check_match "$ERR" 'dry run: no offset was changed; add --execute' "says it was a dry run"
check_eq "$(offsets readers g3)" "4,2,0" "a dry run changes nothing"

run mqctl group reset-offsets readers --topic g3 --to-latest --execute
expect_rc 0 "reset-offsets --to-latest --execute"
check_eq "$(offsets readers g3)" "6,2,0" "--to-latest: the log ends"
check_match "$ERR" 'committed the new offsets of group "readers" on 3 partitions of topic "g3"' "says what it did"
run mqctl group describe readers
check_match "$(echo "$OUT" | head -n 1)" 'Lag: 0$' "and the lag is gone"

run mqctl group reset-offsets readers --topic g3 --to-offset 1 --execute
check_eq "$(offsets readers g3)" "1,1,0" "--to-offset: moved into [log start, log end]"
run mqctl group reset-offsets readers -t g3 --to-offset 100 --format json
expect_rc 0 "reset-offsets --format json"
check_eq "$(json_get "$OUT" '{0,current_offset}') $(json_get "$OUT" '{0,new_offset}') $(json_get "$OUT" '{1,new_offset}')" \
	"1 6 2" "json: an array of current and new offsets"

# a new group gets offsets too (Kafka's reset creates them)
run mqctl group reset-offsets newcomers --topic g3 --to-earliest --execute
expect_rc 0 "reset a group that does not exist yet"
check_eq "$(offsets newcomers g3)" "0,0,0" "it gets offsets on every partition"
run mqctl consume g3 --group newcomers --no-follow
check_eq "$(echo "$OUT" | wc -l)" 8 "and reads from there"

# --to-datetime: the first record timestamped at or after the time
seq -f 'late%g' 1 2 | mqctl produce g1 -p 0
sleep 0.3
mark="$(sql "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")"
sleep 0.3
seq -f 'later%g' 1 3 | mqctl produce g1 -p 0
run mqctl group reset-offsets readers --topic g1 --to-datetime "$mark" --execute
expect_rc 0 "--to-datetime"
check_eq "$(offsets readers g1)" "2" "--to-datetime: the first record at or after the time"
run mqctl group reset-offsets readers --topic g1 --to-datetime 2000-01-01T00:00:00Z
check_match "$OUT" 'g1 +0 +2 +0$' "--to-datetime before every record: the log start"
run mqctl group reset-offsets readers --topic g1 --to-datetime tomorrow
check_match "$OUT" 'g1 +0 +2 +5$' "--to-datetime after every record: the log end"
run mqctl group reset-offsets readers --topic short --to-datetime 2000-01-01T00:00:00Z
check_match "$OUT" 'short +0 +- +6$' "--to-datetime after retention: the log start"
# record timestamps (a producer's CreateTime) decide, not append times
sql "SELECT mq.create_topic('gts', 1)" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('gts', NULL, ARRAY['a', 'b', 'c']::bytea[],
         timestamps => ARRAY['2001-01-01Z', '2003-01-01Z', '2002-01-01Z']::timestamptz[])" >/dev/null
run mqctl group reset-offsets readers --topic gts --to-datetime 2002-06-01T00:00:00Z
check_match "$OUT" 'gts +0 +- +1$' "--to-datetime follows the records' timestamps"

# --- reset-offsets: Kafka's other targets, --dry-run, partitions, --all-topics ------------
check_eq "$(offsets readers g3)" "1,1,0" "readers' offsets on g3 before (log ends 6, 2, 0)"
run mqctl group reset-offsets readers --topic g3 --to-earliest --dry-run
expect_rc 0 "--dry-run, as Kafka's scripts pass it"
check_match "$ERR" 'dry run: no offset was changed' "is a dry run"
check_eq "$(offsets readers g3)" "1,1,0" "changing nothing"

# offsets asked for outside the log are moved into it, with a warning each (Kafka's)
run mqctl group reset-offsets readers -t g3 --to-offset 100
check_match "$ERR" 'mqctl: warning: new offset \(100\) is higher than the log end offset \(6\) of topic g3 partition 0: it will be set to 6' \
	"--to-offset beyond the log end: a warning"
check_eq "$(grep -c 'warning: new offset' <<<"$ERR")" 3 "one per partition moved"
run mqctl group reset-offsets readers --topic g3 --shift-by 2 --execute
expect_rc 0 "--shift-by 2 --execute"
check_eq "$(offsets readers g3)" "3,2,0" "--shift-by: the committed offsets plus 2, moved into the log"
check_match "$ERR" 'warning: new offset \(3\) is higher than the log end offset \(2\) of topic g3 partition 1: it is set to 2' \
	"with a warning for each moved"
check_no_match "$ERR" 'partition 0:' "none for a partition not moved"
run mqctl group reset-offsets readers --topic g3 --shift-by -5
check_match "$OUT" 'g3 +0 +3 +0' "--shift-by -5: the log start at least"
check_match "$ERR" 'new offset \(-2\) is lower than the log start offset \(0\) of topic g3 partition 0: it will be set to 0' \
	"with a warning"

# --shift-by refuses a partition without a committed offset (Kafka's "Cannot shift offset")
sql "SELECT mq.commit_offset('shifty', 'g3', 0, 1)" >/dev/null
run mqctl group reset-offsets shifty --topic g3 --shift-by 1 --execute
expect_rc 1 "--shift-by where a partition has no committed offset"
check_match "$ERR" 'error: cannot shift the offset of topic g3 partition 1: group "shifty" has no committed offset there' \
	"says which partition"
check_eq "$OUT" "" "prints no plan"
check_eq "$(offsets shifty g3)" "1,-,-" "nothing changed"
run mqctl group reset-offsets shifty --topic g3:0 --shift-by 1 --execute
expect_rc 0 "--topic g3:0: only partition 0"
check_eq "$OUT" $'TOPIC  PARTITION  CURRENT_OFFSET  NEW_OFFSET\ng3     0          1               2' "the plan of that partition"
check_eq "$(offsets shifty g3)" "2,-,-" "shifted there only"

# --to-current: the committed offset, the log end where there is none
run mqctl group reset-offsets shifty --topic g3 --to-current --execute
expect_rc 0 "--to-current"
check_eq "$(offsets shifty g3)" "2,2,0" "the committed offset, or the log end"

# --topic T:P,P: only those partitions; a partition the topic lacks is an error
run mqctl group reset-offsets readers --topic g3:0,2 --to-earliest --execute
expect_rc 0 "--topic g3:0,2"
check_eq "$(echo "$OUT" | awk 'NR > 1 {print $2}' | tr '\n' ' ')" "0 2 " "the plan has those partitions"
check_eq "$(offsets readers g3)" "0,2,0" "and only they changed"
run mqctl group reset-offsets readers --topic g3:0,7 --topic nosuch --to-latest --execute
expect_rc 1 "a partition the topic lacks"
check_match "$ERR" 'error: partition 7 of topic "g3" does not exist' "says which"
check_match "$ERR" 'error: topic "nosuch" does not exist' "and names a missing topic too"
check_eq "$(offsets readers g3)" "0,2,0" "nothing changed"

# --by-duration: the first record at or after now minus an ISO 8601 duration
run mqctl group reset-offsets readers --topic g1 --by-duration PT1H
expect_rc 0 "--by-duration PT1H"
check_match "$OUT" 'g1 +0 +2 +0$' "every record is younger than an hour: the log start"
run mqctl group reset-offsets readers --topic g1 --by-duration P1DT2H
check_match "$OUT" 'g1 +0 +2 +0$' "P1DT2H"
run mqctl group reset-offsets readers --topic g1 --by-duration PT0S
check_match "$OUT" 'g1 +0 +2 +5$' "none younger than now: the log end"
run mqctl group reset-offsets readers --topic g1 --by-duration PT1X
expect_rc 2 "--by-duration that is no duration"
check_match "$ERR" '--by-duration: "PT1X" is not an ISO 8601 duration' "says so"

# --all-topics: every partition the group has a committed offset on (Kafka's)
run mqctl group reset-offsets readers --all-topics --to-latest --execute
expect_rc 0 "--all-topics"
check_eq "$(echo "$OUT" | awk 'NR > 1 {print $1 ":" $2}' | tr '\n' ' ')" "g1:0 g3:0 g3:1 g3:2 " \
	"the partitions with committed offsets, in every topic"
check_match "$ERR" 'committed the new offsets of group "readers" on 4 partitions of 2 topics' "says what it did"
check_eq "$(offsets readers g3) $(offsets readers g1)" "6,2,0 5" "all at the log end"
run mqctl group reset-offsets nobody --all-topics --to-earliest
expect_rc 0 "--all-topics of a group without offsets"
check_match "$ERR" 'group "nobody" has no committed offset: no partition to reset' "says there is nothing to do"

# --- reset-offsets and active members --------------------------------------------------
before="$(offsets workers g3)"
run mqctl group reset-offsets workers --topic g3 --to-earliest --execute
expect_rc 1 "reset refused while members are active"
check_match "$ERR" 'consumer group "workers" has 2 active members: stop them before resetting its offsets' \
	"says why, as Kafka refuses a non-empty group"
check_match "$ERR" 'hint: .*--force' "and how to go on anyway"
check_eq "$(offsets workers g3)" "$before" "nothing changed"
run mqctl group reset-offsets workers --topic g3 --to-earliest
expect_rc 0 "a dry run is allowed"
check_match "$ERR" 'has 2 active members: --execute will be refused without --force' "with a warning"
run mqctl group reset-offsets workers --topic g3 --to-earliest --execute --force
expect_rc 0 "--force"
check_eq "$(offsets workers g3)" "0,0,0" "--force resets all the same"
sql "SELECT mq.leave_group('workers', '$m1'), mq.leave_group('workers', '$m2')" >/dev/null
run mqctl group reset-offsets workers --topic g3 --to-latest --execute
expect_rc 0 "reset once the members left"
check_eq "$(offsets workers g3)" "6,2,0" "applied"

# --- group delete ---------------------------------------------------------------------------
m3=$(sql "SELECT member FROM mq.join_group('workers', ARRAY['g3'])")
run mqctl group delete workers
expect_rc 1 "delete refused while the group has a live member"
check_match "$ERR" 'group "workers" has live members' "says why"
check_eq "$(offsets workers g3)" "6,2,0" "nothing deleted"
sql "SELECT mq.leave_group('workers', '$m3')" >/dev/null
readers_before=$(offsets readers g3)
run mqctl group delete workers
expect_rc 0 "delete once the member left"
check_eq "$OUT" "Deleted group workers (3 committed offsets)." "says what it deleted"
check_eq "$(offsets workers g3)" "-,-,-" "the group's offsets are gone"
check_eq "$(offsets readers g3)" "$readers_before" "another group's are kept"
run mqctl group delete workers
expect_rc 1 "delete a missing group"
check_match "$ERR" 'group "workers" does not exist' "says the group does not exist"
run mqctl group delete workers --if-exists
expect_rc 0 "--if-exists"
check_eq "$OUT" "Group workers does not exist." "says so"

# --- group delete-offsets -------------------------------------------------------------------
sql "SELECT mq.commit_offset('offs', 'g3', 0, 4), mq.commit_offset('offs', 'g3', 1, 2), mq.commit_offset('offs', 'g1', 0, 0)" >/dev/null
m4=$(sql "SELECT member FROM mq.join_group('offs', ARRAY['g3'])")
run mqctl group delete-offsets offs --topic g3
expect_rc 1 "delete-offsets refused while a member reads the topic"
check_match "$ERR" 'has live members subscribed to topic "g3"' "says why"
run mqctl group delete-offsets offs --topic g1
expect_rc 0 "a topic the member does not read"
check_eq "$OUT" "Deleted 1 committed offsets of group offs on topic g1." "says what it deleted"
sql "SELECT mq.leave_group('offs', '$m4')" >/dev/null
run mqctl group delete-offsets offs --topic g3 --partitions 1,2
expect_rc 0 "delete-offsets of some partitions once the member left"
check_eq "$OUT" "Deleted 1 committed offsets of group offs on topic g3." "partition 1's offset (2 had none)"
check_eq "$(offsets offs g3)" "4,-,-" "partition 0 keeps its offset"
run mqctl group delete-offsets offs --topic g3 --partitions 1,,2
expect_rc 2 "--partitions that is not a list of numbers"
run mqctl group delete-offsets offs
expect_rc 2 "--topic is required"
run mqctl group delete-offsets offs --topic g3 --partitions 7
expect_rc 1 "a partition outside the topic"
check_match "$ERR" 'partition 7 of topic "g3" does not exist' "says so"

# --- errors ---------------------------------------------------------------------------------
run mqctl group describe nosuch
expect_rc 1 "describe a missing group"
check_match "$ERR" 'consumer group "nosuch" does not exist .* \[SQLSTATE MQ035\]' "says the group does not exist, with its SQLSTATE"
run mqctl group reset-offsets readers --topic nosuch --to-earliest
expect_rc 1 "reset on a missing topic"
check_match "$ERR" 'topic "nosuch" does not exist \[SQLSTATE MQ001\]' "says the topic does not exist, with its SQLSTATE"
run mqctl group reset-offsets readers --topic g1 --to-datetime 'half past noon'
expect_rc 2 "--to-datetime that is not a time"
check_match "$ERR" '--to-datetime: "half past noon" is not a date and time' "says so"
check_match "$ERR" 'Try "mqctl group reset-offsets --help"' "a usage error"

# --- a team's role: its own group and topic, and nothing else ----------------------
login_role mq_cli_group_team
sql "SELECT mq.grant('read', 'topic', 'g3', 'mq_cli_group_team'), mq.grant('read', 'group', 'readers', 'mq_cli_group_team')" >/dev/null
team=(-d "dbname=$PGDATABASE user=mq_cli_group_team")
run mqctl "${team[@]}" group list --format json
check_eq "$RC $(json_get "$OUT" '{0,group}') $(json_get "$OUT" '{1}')" "0 readers " \
	"a role with rights on one group and topic lists that group alone (mq.consumer_lag, readable by any role)"
run mqctl "${team[@]}" group describe readers
expect_rc 0 "and describes it with its lag"

finish
