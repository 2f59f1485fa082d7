#!/usr/bin/env bash
# Every numeric option of every mqctl command at and beyond its bounds:
# out of range or not a number is a usage error (exit 2) that names the
# option and its range; a number in range that the server refuses (a
# partition the topic lacks) is the server's error (exit 1), never a crash
# or a huge allocation; and the smallest sizes still send what they say
# (an empty value is empty, not NULL).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

mqctl topic create lim --partitions 3 >/dev/null

# --- usage errors: exit 2, the option, its range ----------------------------
range() {
	local want="$1"
	shift
	run mqctl "$@" </dev/null
	expect_rc 2 "mqctl $*"
	check_match "$ERR" "$want" "mqctl $*: says why"
}
big=99999999999999999999 # beyond int64: not a whole number we can hold
range '--partitions: 10001 is out of range \(1 to 10000\)' topic create x --partitions 10001
range "--partitions: \"$big\" is not a whole number" topic create x --partitions "$big"
range '--count: 0 is out of range \(1 to 10000\)' topic add-partitions lim --count 0
range '--count: 10001 is out of range' topic add-partitions lim --count 10001
# produce and perf produce share their producer options, and their checks
for c in "produce" "perf produce"; do
	n=""
	[[ "$c" == "perf produce" ]] && n="--records=1"
	# shellcheck disable=SC2086 # the words of the command, and n when set
	{
		range '--partition: -1 is out of range \(0 to 2147483647\)' $c lim $n --partition -1
		range '--partition: 2147483648 is out of range' $c lim $n -p 2147483648
		range '--batch-size: 0 is out of range \(1 to 1000000\)' $c lim $n --batch-size 0
		range '--batch-size: 1000001 is out of range' $c lim $n -b 1000001
		range '--request-timeout-ms: 3600001 is out of range \(1 to 3600000\)' $c lim $n --acks all --request-timeout-ms 3600001
		range '--request-timeout-ms is the wait of --acks all' $c lim $n --request-timeout-ms 10
		range '--acks: "2" is not one of' $c lim $n --acks 2
	}
done
range '--linger-ms: -1 is out of range \(0 to 3600000\)' produce lim --linger-ms -1
range '--linger-ms: 3600001 is out of range' produce lim --linger-ms 3600001
range '--records: 0 is out of range' perf produce lim --records 0
range "--records: \"$big\" is not a whole number" perf produce lim --records "$big"
range '--record-size: -1 is out of range \(0 to 104857600\)' perf produce lim --records 1 --record-size -1
range '--record-size: 104857601 is out of range' perf produce lim --records 1 -s 104857601
range 'is over 512 MB: use a smaller --batch-size' perf produce lim --records 1 -s 1048576 -b 1000
range '--clients: 0 is out of range \(1 to 256\)' perf produce lim --records 1 --clients 0
range '--clients: 257 is out of range' perf produce lim --records 1 -c 257
range '--throughput: -2 is out of range' perf produce lim --records 1 --throughput -2
range '--reporting-interval-ms: 0 is out of range' perf produce lim --records 1 --reporting-interval-ms 0
range '--partition: -1 is out of range \(0 to 2147483647\)' consume lim --partition -1
range '--offset: -1 is out of range' consume lim -p 0 --offset -1
range '--max-messages: 0 is out of range' consume lim --max-messages 0
range '--timeout-ms: -1 is out of range \(0 to 2147483647\)' consume lim --timeout-ms -1
range '--batch-size: 0 is out of range \(1 to 100000\)' consume lim --batch-size 0
range '--batch-size: 100001 is out of range' consume lim -b 100001
range '--records: 0 is out of range' perf consume lim --records 0
range '--batch-size: 100001 is out of range \(1 to 100000\)' perf consume lim --records 1 -b 100001
range '--timeout-ms: -1 is out of range' perf consume lim --records 1 --timeout-ms -1
range '--reporting-interval-ms: 0 is out of range' perf consume lim --records 1 --reporting-interval-ms 0
range '--to-offset: -1 is out of range' group reset-offsets g -t lim --to-offset -1
range "--to-offset: \"$big\" is not a whole number" group reset-offsets g -t lim --to-offset "$big"
range '--timeout-ms: 0 is out of range \(1 to 3600000\)' cluster status --timeout-ms 0
range '--timeout-ms: 3600001 is out of range' cluster status --timeout-ms 3600001

# --- in range, but not on the server: its error, exit 1 ----------------------
count() { sql "SELECT sum(log_end_offset) FROM mq.partitions WHERE topic = 'lim'"; }

# the largest partition number: refused by the server, not an allocation
# of one sequence number per partition up to it
run mqctl produce lim -p 2147483647 < <(printf 'x\n')
expect_rc 1 "produce to partition 2147483647"
check_match "$ERR" 'partition 2147483647 of topic "lim" does not exist \[SQLSTATE MQ006\]' \
	"produce -p 2147483647: the server's MQ006"
check_no_match "$ERR" 'out of memory' "produce -p 2147483647: no huge allocation"
run mqctl produce lim -p 2147483647 --no-idempotence < <(printf 'x\n')
expect_rc 1 "produce to partition 2147483647 without idempotence"
check_match "$ERR" 'SQLSTATE MQ006' "without idempotence: MQ006 too"
run mqctl perf produce lim --records 5 -p 2147483647
expect_rc 1 "perf produce to partition 2147483647"
check_match "$ERR" 'SQLSTATE MQ006' "perf produce -p 2147483647: MQ006"
run mqctl consume lim -p 2147483647 --no-follow
expect_rc 1 "consume partition 2147483647"
check_match "$ERR" 'topic "lim" has no partition 2147483647' "consume -p 2147483647 says so"
check_eq "$(count)" 0 "nothing was written"

# keys whose partitions were added after produce started: sequences for the
# new partitions, not a partition the client thinks is out of range
keys="$(for i in $(seq 1 40); do printf 'k%d\tv\n' "$i"; done)"
run mqctl produce lim --key-separator '\t' < <(
	printf 'k0\tv\n'
	# the first batch goes after --linger-ms: add the partitions once it is in
	until [[ "$(count)" == 1 ]]; do sleep 0.05; done
	sql "SELECT mq.add_partitions('lim', 5)" >/dev/null
	printf '%s\n' "$keys"
)
expect_rc 0 "produce by key while partitions are added"
check_eq "$(sql "SELECT count(*) FROM mq.partitions p, mq.fetch('lim', p.partition, 0) f WHERE p.topic = 'lim'")" \
	41 "every keyed record arrived"
check_eq "$(sql "SELECT bool_and(f.partition = mq.partition_for('lim', f.key))
                   FROM mq.partitions p, mq.fetch('lim', p.partition, 0) f
                  WHERE p.topic = 'lim' AND f.key <> 'k0'::bytea")" t \
	"each key after the change on its partition of 8"
check_eq "$(sql "SELECT count(DISTINCT f.partition) > 0 AND count(DISTINCT s.partition) = count(DISTINCT f.partition)
                   FROM mq.partitions p JOIN mq.fetch('lim', p.partition, 0) f ON true
                   LEFT JOIN mq.topics t ON t.topic = 'lim'
                   LEFT JOIN mq.producer_state s ON s.topic_id = t.topic_id AND s.partition = f.partition
                  WHERE p.topic = 'lim' AND f.partition >= 3")" t \
	"the new partitions got the producer's sequences (idempotent), not sends without producer id"

# --- the smallest sizes: empty values are empty, not NULL ---------------------
mqctl topic create small --partitions 2 >/dev/null
run mqctl produce small -p 0 < <(printf '\n')
expect_rc 0 "produce one empty line"
check_eq "$(sql "SELECT coalesce(length(value)::text, 'NULL') FROM mq.fetch('small', 0, 0)")" 0 \
	"an empty line alone is an empty value, not NULL"
run mqctl perf produce small --records 3 --record-size 0 --batch 3
expect_rc 0 "perf produce --record-size 0"
check_match "$(echo "$OUT" | head -n 1)" '^Sending 3 records of 0 bytes to small' "perf produce: records of 0 bytes"
check_eq "$(sql "SELECT count(*) FILTER (WHERE f.value = ''::bytea) || ' ' || count(*) FILTER (WHERE f.value IS NULL)
                   FROM mq.partitions p, mq.fetch('small', p.partition, 0) f WHERE p.topic = 'small'")" "4 0" \
	"perf produce --record-size 0: three more empty values, none NULL"

# perf produce takes produce's options: --partition, --batch-size, --request-timeout-ms
ends() { sql "SELECT string_agg(log_end_offset::text, ' ' ORDER BY partition) FROM mq.partitions WHERE topic = 'small'"; }
read -r end0 end1 <<<"$(ends)"
run mqctl perf produce small --records 4 --batch-size 2 --acks all --request-timeout-ms 1000 -p 1
expect_rc 0 "perf produce --partition 1 --batch-size 2 --acks all --request-timeout-ms 1000"
check_match "$(echo "$OUT" | head -n 1)" 'batches of 2, 1 client, acks=all, idempotent\.$' "perf produce: batches of 2, acks=all"
check_eq "$(ends)" "$end0 $((end1 + 4))" "perf produce -p 1: the 4 records are on partition 1"

finish
