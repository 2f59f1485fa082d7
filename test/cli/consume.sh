#!/usr/bin/env bash
# mqctl consume: by offset and as a consumer group, the output formats,
# bytes that are not text, when to stop (end of log, --max-messages,
# --timeout-ms, Ctrl-C), follow mode with a producer running, long polling
# (an idle consumer waits in the server and wakes when a producer commits),
# and errors (missing topic or partition, bad offset, lost connection).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create c3 --partitions 3 >/dev/null
# partition 0: v0..v4, partition 1: k1=w0, k2=w1; partition 2: empty
seq -f 'v%g' 0 4 | mqctl produce c3 -p 0
printf 'k1\tw0\nk2\tw1\n' | mqctl produce c3 -p 1 --key-separator '\t'

# --- without a group ------------------------------------------------------
run mqctl consume c3 --from-beginning --no-follow
expect_rc 0 "consume all from the beginning"
check_eq "$(echo "$OUT" | sort | tr '\n' ' ')" "v0 v1 v2 v3 v4 w0 w1 " "every record once"
check_eq "$(echo "$OUT" | grep '^v' | tr '\n' ' ')" "v0 v1 v2 v3 v4 " "a partition's records in offset order"
check_eq "$ERR" "Processed a total of 7 messages" "the total goes to stderr"

run mqctl consume c3 --no-follow
expect_rc 0 "consume without --from-beginning"
check_eq "$OUT" "" "without --from-beginning only new records (none)"

run mqctl consume c3 -p 0 -o 3 --no-follow
check_eq "$OUT" $'v3\nv4' "--partition --offset"
run mqctl consume c3 -p 0 -o earliest --no-follow --max-messages 2
check_eq "$OUT" $'v0\nv1' "--offset earliest, --max-messages"
run mqctl consume c3 -p 0 -o latest --no-follow
check_eq "$OUT" "" "--offset latest"
run mqctl consume c3 -p 0 -o 5 --no-follow
expect_rc 0 "--offset at the log end is fine"
run mqctl consume c3 -p 0 --from-beginning --no-follow -b 2
check_eq "$OUT" $'v0\nv1\nv2\nv3\nv4' "small batches read it all"
run mqctl consume c3 --from-beginning --no-follow -n 6 -b 4
check_eq "$(echo "$OUT" | wc -l)" 6 "--max-messages across partitions and batches"

# --- formats ------------------------------------------------------------------
run mqctl consume c3 -p 1 --from-beginning --no-follow --print-key
check_eq "$OUT" $'k1\tw0\nk2\tw1' "--print-key: key, tab, value"
run mqctl consume c3 -p 1 --from-beginning --no-follow --print-key --key-separator ' => '
check_eq "$OUT" $'k1 => w0\nk2 => w1' "--key-separator"
run mqctl consume c3 -p 0 --from-beginning --no-follow --print-key -n 1
check_eq "$OUT" $'null\tv0' "a null key prints as null"
run mqctl consume c3 -p 1 --from-beginning --no-follow --format kv -n 1
check_match "$OUT" '^partition=1 offset=0 timestamp=[0-9]{13} key=k1 value=w0$' "--format kv"
run mqctl consume c3 -p 1 --from-beginning --no-follow --format json
expect_rc 0 "--format json"
first="$(echo "$OUT" | head -n 1)"
check_eq "$(json_get "$first" '{topic}')|$(json_get "$first" '{partition}')|$(json_get "$first" '{offset}')|$(json_get "$first" '{key}')|$(json_get "$first" '{value}')" \
	"c3|1|0|k1|w0" "json: topic, partition, offset, key, value"
check_eq "$(json_get "$first" '{timestamp}')" \
	"$(sql "SELECT floor(extract(epoch FROM created_at) * 1000)::bigint FROM mq.fetch('c3', 1, 0, 1)")" \
	"json: timestamp in milliseconds since 1970"
check_eq "$(echo "$OUT" | wc -l)" 2 "json: one object per line"
sql "SELECT mq.create_topic('c-ts', 1)" >/dev/null
sql "SELECT mq.send('c-ts', 'k', 'v', \"timestamp\" => '2001-02-03 04:05:06.789Z')" >/dev/null
run mqctl consume c-ts -p 0 --from-beginning --no-follow --format json
check_eq "$(json_get "$OUT" '{timestamp}')" "981173106789" "json: the timestamp is the producer's CreateTime"

# null values, headers, bytes that are not text
sql "SELECT mq.send('c3', NULL::bytea, NULL::bytea, '{\"trace\": \"t-1\"}', 2)" >/dev/null
sql "SELECT mq.send('c3', '\\x00ff'::bytea, '\\xc328'::bytea, NULL, 2)" >/dev/null
sql "SELECT mq.send('c3', 'ключ'::bytea, convert_to('значение \"q\"', 'UTF8'), NULL, 2)" >/dev/null
run mqctl consume c3 -p 2 --from-beginning --no-follow --print-key
check_eq "$OUT" $'null\tnull\n\\x00ff\t\\xc328\nключ\tзначение "q"' \
	"null as null, bytes that are not text as \\x hex, UTF-8 as text"
run mqctl consume c3 -p 2 --from-beginning --no-follow --format kv -n 1
check_match "$OUT" ' headers=\{"trace": "t-1"\} key=null value=null$' "kv: headers when present"
run mqctl consume c3 -p 2 --from-beginning --no-follow --format json
line1="$(echo "$OUT" | sed -n 1p)"
line2="$(echo "$OUT" | sed -n 2p)"
line3="$(echo "$OUT" | sed -n 3p)"
check_eq "$(json_get "$line1" '{headers,trace}')" "t-1" "json: headers are an object"
check_eq "$(sql "SELECT '$line1'::jsonb ? 'value' AND '$line1'::jsonb->'value' = 'null'")" t "json: a null value is null"
check_eq "$(json_get "$line2" '{key_hex}') $(json_get "$line2" '{value_hex}')" "00ff c328" "json: key_hex, value_hex for bytes"
check_eq "$(sql "SELECT '$line2'::jsonb ? 'value'")" f "json: no value field beside value_hex"
check_eq "$(json_get "$line3" '{value}')" 'значение "q"' "json: UTF-8 text, quotes escaped"

# --- consumer groups --------------------------------------------------------------
run mqctl consume c3 --group g1 --from-beginning --no-follow -p 0
expect_rc 2 "--group with --partition"
run mqctl consume c3 --group g1 --from-beginning --no-follow
expect_rc 0 "group g1 from the beginning"
check_eq "$(echo "$OUT" | grep -c .)" 10 "group reads every record"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('g1', 'c3', p)::text, ',' ORDER BY p) FROM generate_series(0, 2) p")" \
	"5,2,3" "offsets committed after the batch"
run mqctl consume c3 --group g1 --from-beginning --no-follow
check_eq "$OUT" "" "a group does not read a record twice (--from-beginning only applies without offsets)"

run mqctl consume c3 --group g2 --no-follow
check_eq "$OUT" "" "a new group without --from-beginning starts at the end"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('g2', 'c3', p)::text, ',' ORDER BY p) FROM generate_series(0, 2) p")" \
	"5,2,3" "and records that position"
seq -f 'n%g' 1 3 | mqctl produce c3 -p 0
run mqctl consume c3 --group g2 --no-follow
check_eq "$OUT" $'n1\nn2\nn3' "then it reads what comes after"

run mqctl consume c3 --group g3 --from-beginning --no-follow -n 2 -b 100
check_eq "$(echo "$OUT" | wc -l)" 2 "--max-messages in a group"
run mqctl consume c3 --group g3 --from-beginning --no-follow
check_eq "$(echo "$OUT" | wc -l)" 11 "only what was printed was committed: the rest comes next time"

# --- follow mode -----------------------------------------------------------------------
# wait_connected APPNAME: until a session of that application_name exists
wait_connected() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'")" != 0 ]] && return 0
		sleep 0.1
	done
	echo "# $1 did not connect within 10 s"
}

out="$(tmpdir)/follow.out"
"$MQCTL" -d "application_name=mqctl_follow" consume c3 --group g4 --timeout-ms 3000 >"$out" 2>&1 &
consumer=$!
on_exit "kill -KILL $consumer 2>/dev/null"
wait_connected mqctl_follow
sleep 0.5
seq -f 'f%g' 1 4 | mqctl produce c3 -p 1
sleep 0.5
seq -f 'f%g' 5 6 | mqctl produce c3 -p 2
rc=0
wait "$consumer" || rc=$?
check_eq "$rc" 0 "follow: exits 0 after --timeout-ms without records"
check_eq "$(grep -c '^f' "$out")" 6 "follow: records produced while it waits arrive"
check_eq "$(tail -n 1 "$out")" "Processed a total of 6 messages" "follow: the total at the end"

# --- long polling ----------------------------------------------------------------------
# waits_in_server APPNAME: the consumer's statement is waiting in mq's wait
# (wait event type Extension), not sleeping between polls in the client
waits_in_server() {
	local i
	for ((i = 0; i < 100; i++)); do
		if [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
		               AND state = 'active' AND wait_event_type = 'Extension'")" != 0 ]]; then
			echo yes
			return
		fi
		sleep 0.1
	done
	echo no
}
for mode in "group:--group lp" "one partition:-p 1" "all partitions:"; do
	name="${mode%%:*}"
	app="mqctl_lp_${name// /_}"
	# shellcheck disable=SC2086 # the options of the mode
	"$MQCTL" -d "application_name=$app" consume c3 ${mode#*:} --timeout-ms 10000 -n 1 >"$out" 2>&1 &
	consumer=$!
	on_exit "kill -KILL $consumer 2>/dev/null"
	check_eq "$(waits_in_server "$app")" yes "long polling, $name: an idle consumer waits in the server"
	echo "lp-$app" | mqctl produce c3 -p 1
	start=$(date +%s%N)
	rc=0
	wait "$consumer" || rc=$?
	elapsed=$((($(date +%s%N) - start) / 1000000))
	check_eq "$rc $(head -n 1 "$out")" "0 lp-$app" "long polling, $name: the record arrives"
	# without a wake-up it would come at the end of the wait, up to 1 s later
	check_match "$elapsed" '^([0-9]{1,2}|[0-4][0-9]{2})$' \
		"long polling, $name: woken by the commit, not at the end of the 1 s wait (${elapsed} ms after it)"
done
check_eq "$(sql "SELECT count(*) FROM mq.consumer_offset WHERE group_id LIKE 'mqctl.wait.%'")" 0 \
	"waiting over all partitions without a group leaves no offsets behind"

start=$(date +%s%N)
run mqctl consume c3 -p 2 --timeout-ms 700
elapsed=$((($(date +%s%N) - start) / 1000000))
check_match "$elapsed" '^([7-9][0-9][0-9]|[1-2][0-9][0-9][0-9])$' "--timeout-ms 700 stops after about 0.7 s (took ${elapsed} ms)"

# Ctrl-C: a clean stop with exit 0 (the binary itself in the background,
# so that $! is its pid and not that of a subshell ignoring SIGINT)
"$MQCTL" -d "application_name=mqctl_sigint" consume c3 --group g5 >"$out" 2>&1 &
consumer=$!
on_exit "kill -KILL $consumer 2>/dev/null"
wait_connected mqctl_sigint
sleep 0.3
start=$(date +%s%N)
kill -INT "$consumer"
rc=0
wait "$consumer" || rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
check_eq "$rc" 0 "SIGINT stops consume cleanly"
check_match "$elapsed" '^([0-9]{1,2}|[0-4][0-9]{2})$' "at once: it cancels the wait in the server (${elapsed} ms)"
check_eq "$(cat "$out")" "Processed a total of 0 messages" "and prints the total"

# a lost connection: exit 3
"$MQCTL" -d "application_name=mqctl_victim" consume c3 -p 0 >"$out" 2>&1 &
consumer=$!
on_exit "kill -KILL $consumer 2>/dev/null"
wait_connected mqctl_victim
sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'mqctl_victim'" >/dev/null
rc=0
wait "$consumer" || rc=$?
check_eq "$rc" 3 "a lost connection exits with 3"
check_match "$(cat "$out")" 'terminat|connection' "and says what happened"

# --- errors ----------------------------------------------------------------------------------
run mqctl consume nosuch --no-follow
expect_rc 1 "consume a missing topic"
check_match "$ERR" 'topic "nosuch" does not exist' "says the topic is missing"
run mqctl consume nosuch --group g --no-follow
expect_rc 1 "consume a missing topic in a group"
check_match "$ERR" 'SQLSTATE MQ001' "group: MQ001"
run mqctl consume c3 -p 5 --no-follow
expect_rc 1 "consume a missing partition"
check_match "$ERR" 'topic "c3" has no partition 5' "says the partition is missing"
run mqctl consume c3 -p 0 -o 1000 --no-follow
expect_rc 1 "offset beyond the log end"
check_match "$ERR" 'SQLSTATE MQ007' "offset out of range: MQ007"

finish
