#!/usr/bin/env bash
# The group coordinator with kcat consumers: static membership fences an
# older instance with the same group.instance.id, a static member that
# restarts within its session timeout gets its partition back without a
# rebalance (KIP-345), also with cooperative-sticky (whose metadata, the
# partitions owned, changes across the restart; and on the wire with
# JoinGroup v5 and v9: static_rejoin.pl), membership outlives an
# mq-kafka crash, and a member that dies without leaving is expired after
# its session timeout, its partitions going to the others; a session
# shorter than the daemon's minimum is refused.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('gt', 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

member() {	# member NAME GROUP [kcat options]: a consumer in the background
	local name="$1" group="$2"
	shift 2
	kcat -b "$BROKER" -G "$group" gt -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 "$@" \
		>"$T/$name.out" 2>"$T/$name.err" &
	eval "${name}_pid=$!"
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# the partitions a cooperative kcat member owns, from its incremental
# assignments and revocations ("gt [0], gt [1]")
kcat_owned() {
	awk '/incremental (assignment|revoke) of/ {
		r = /revoke/; sub(/.*\): /, ""); n = split($0, a, ", ")
		for (i = 1; i <= n; i++) if (r) delete own[a[i]]; else own[a[i]] = 1
	} END { s = ""; for (k in own) s = s (s == "" ? "" : ", ") k; print s }' "$1"
}
rebalances() { grep -c 'rebalanced' "$1" || true; }

# static membership: a second instance with the same id fences the first
member s1 static -X group.instance.id=inst-1
wait_for 30 grep -q 'assigned: gt \[0\], gt \[1\]' "$T/s1.err" || fail "the first instance gets both partitions"
member s2 static -X group.instance.id=inst-1
wait_for 30 grep -q 'assigned: gt \[0\], gt \[1\]' "$T/s2.err"
RC=0
wait_for 30 bash -c "! kill -0 $s1_pid 2>/dev/null" || RC=$?
check_eq "$RC" "0" "the older instance stops"
check_match "$(cat "$T/s1.err")" 'fenced by other consumer with same group.instance.id' \
	"the older instance was fenced (FENCED_INSTANCE_ID)"
stop "$s2_pid"

# a static member restarted within its session timeout: same partition,
# same generation, and the other member is neither revoked nor reassigned
member a1 restart -X group.instance.id=inst-a
member b1 restart -X group.instance.id=inst-b
wait_for 60 bash -c "grep -q 'assigned: gt \[[01]\]\$' '$T/a1.err' && grep -q 'assigned: gt \[[01]\]\$' '$T/b1.err'" ||
	fail "two static members get a partition each" "$(cat "$T/a1.err" "$T/b1.err")"
a_part="$(grep -o 'assigned: gt \[[01]\]$' "$T/a1.err" | tail -1)"
b_events="$(grep -c 'revoked\|assigned' "$T/b1.err")"
kill -9 "$a1_pid"
wait "$a1_pid" 2>/dev/null || true
member a2 restart -X group.instance.id=inst-a
wait_for 30 grep -q 'assigned: gt' "$T/a2.err" || fail "the restarted instance is assigned" "$(cat "$T/a2.err")"
check_eq "$(grep -o 'assigned: gt .*' "$T/a2.err" | tail -1)" "$a_part" \
	"the restarted static member gets its partition back"
check_match "$(cat "$(tmpdir)/mq-kafka.log")" 'group restart: static member inst-a rejoined as .*, generation [0-9]+ kept' \
	"mq-kafka kept the generation"
# a rebalance would have revoked b1's partition before a2 could be assigned
check_eq "$(grep -c 'revoked\|assigned' "$T/b1.err")" "$b_events" \
	"the other member was not revoked or reassigned"
stop "$a2_pid"
stop "$b1_pid"

# the same with cooperative-sticky, whose subscription metadata lists the
# partitions a member owns: c1, which joined first (the leader) and owned
# both, rejoined owning one; restarted it owns none, so its metadata
# changed, but the group's protocol would not, and Kafka keeps the
# generation (the metadata replaced; the leader answered as a follower,
# JoinGroup < v9); mq used to rebalance
coop=(-X partition.assignment.strategy=cooperative-sticky)
member c1 coop -X group.instance.id=inst-c "${coop[@]}"
wait_for 30 grep -q 'incremental assignment of 2' "$T/c1.err" || fail "the first cooperative member gets both partitions"
member d1 coop -X group.instance.id=inst-d "${coop[@]}"
one_each() {
	[[ "$(kcat_owned "$T/c1.err")" =~ ^gt\ \[[01]\]$ && "$(kcat_owned "$T/d1.err")" =~ ^gt\ \[[01]\]$ ]]
}
wait_for 60 one_each || fail "two cooperative static members get a partition each" "$(cat "$T/c1.err" "$T/d1.err")"
sleep 2	# settled: no further rebalance
c_part="$(kcat_owned "$T/c1.err")"
d_events="$(rebalances "$T/d1.err")"
gen_before="$(grep -o 'group coop: generation [0-9]*' "$(tmpdir)/mq-kafka.log" | tail -1 || true)"
kill -9 "$c1_pid"
wait "$c1_pid" 2>/dev/null || true
member c2 coop -X group.instance.id=inst-c "${coop[@]}"
wait_for 30 grep -q 'incremental assignment of [1-9]' "$T/c2.err" || fail "the restarted cooperative instance is assigned" "$(cat "$T/c2.err")"
check_eq "$(kcat_owned "$T/c2.err")" "$c_part" "the restarted cooperative-sticky member gets its partition back"
check_match "$(cat "$(tmpdir)/mq-kafka.log")" 'group coop: static member inst-c rejoined as .*, generation [0-9]+ kept' \
	"mq-kafka kept the generation although the member's metadata changed"
check_eq "$(grep -o 'group coop: generation [0-9]*' "$(tmpdir)/mq-kafka.log" | tail -1)" "$gen_before" \
	"no new generation was made"
sleep 2
check_eq "$(rebalances "$T/d1.err")" "$d_events" \
	"the other cooperative member saw no rebalance"
stop "$c2_pid"
stop "$d1_pid"

# a static leader's restart on the wire (test/kafka/static_rejoin.pl)
run perl test/kafka/static_rejoin.pl "$KAFKA_PORT" raw-static
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "static_rejoin.pl runs"
step() { sed -n "s/^$1 //p" <<<"$OUT"; }
g="$(step first | cut -d' ' -f2)"
check_eq "$(step first)" "0 $g range leader 1 - a" "a static member joins alone and leads"
check_eq "$(step restart-v5)" "0 $g range follower 0 -" \
	"restarted with other range metadata: the generation is kept; JoinGroup v5 answers it as a follower"
check_eq "$(step restart-v5-leader-was-old)" "yes" "naming its old member id as the leader's, as Kafka"
check_eq "$(step restart-v5-sync)" "0 A" "its SyncGroup gets the generation's assignment"
check_eq "$(step restart-v9)" "0 $g range leader 1 1 c" \
	"JoinGroup v9: the leader with the members (its new metadata) and skip_assignment"
check_eq "$(step restart-new-protocol)" "0 $((g + 1)) roundrobin leader 1 - y" \
	"restarted with protocols that change the group's: a rebalance"

# membership outlives an mq-kafka crash: the members (kafka-python, which
# rides out a broker restart as applications do; kcat exits) carry on with
# their partitions, without a rebalance, and read what is produced after it
pymember() {	# pymember NAME GROUP: a kafka-python member in the background
	/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/py/member.py" "$BROKER" gt "$2" >"$T/$1.out" 2>"$T/$1.err" &
	eval "${1}_pid=$!"
}
pymember k1 keep
pymember k2 keep
wait_for 60 bash -c "grep -qx 'assigned [01]' '$T/k1.out' && grep -qx 'assigned [01]' '$T/k2.out'" ||
	fail "two members get a partition each" "$(cat "$T/k1.out" "$T/k2.out" "$T/k1.err")"
k1_part="$(grep -x 'assigned [01]' "$T/k1.out" | tail -1 | tr -dc 0-1)"
k_events="$(cat "$T/k1.out" "$T/k2.out" | grep -c '^revoked\|^assigned')"
kafka_kill
kafka_start || fail "mq-kafka starts again"
wait_for 30 grep -Eq 'took up [0-9]+ consumer groups? kept before the restart' "$(tmpdir)/mq-kafka.log" ||
	fail "the restarted mq-kafka takes the group up" "$(tail -5 "$(tmpdir)/mq-kafka.log")"
produced() { for p in 0 1; do echo "after-$p" | kcat -P -b "$BROKER" -t gt -p "$p"; done; }
read_both() {
	grep -qx "record $k1_part after-$k1_part" "$T/k1.out" &&
		grep -qx "record $((1 - k1_part)) after-$((1 - k1_part))" "$T/k2.out"
}
# produced again until read: a member may still be reconnecting
wait_for 60 bash -c "$(declare -f produced read_both); BROKER='$BROKER' T='$T' k1_part=$k1_part; produced; sleep 1; read_both" ||
	fail "each member reads its partition after the restart" \
		"$(tail -n 15 "$T/k1.out" "$T/k2.out" "$T/k1.err" "$(tmpdir)/mq-kafka.log")"
check_eq "$(cat "$T/k1.out" "$T/k2.out" | grep -c '^revoked\|^assigned')" "$k_events" \
	"neither member was revoked or reassigned"
stop "$k1_pid"
stop "$k2_pid"

# session expiry: a member killed without leaving loses its partition
member e1 expiry
member e2 expiry
both() { grep -q 'assigned: gt \[[01]\]$' "$T/e1.err" && grep -q 'assigned: gt \[[01]\]$' "$T/e2.err"; }
wait_for 60 both || fail "two members get a partition each" "$(cat "$T/e1.err" "$T/e2.err")"
kill -9 "$e1_pid"
wait "$e1_pid" 2>/dev/null || true
wait_for 60 grep -q 'assigned: gt \[0\], gt \[1\]' "$T/e2.err" || true
check_match "$(cat "$T/e2.err")" 'assigned: gt \[0\], gt \[1\]' \
	"after the session timeout the survivor owns both partitions"
stop "$e2_pid"

# a session timeout below Kafka's group.min.session.timeout.ms (6000, the
# daemon's default; every member above asks exactly that) is refused
member short short -X session.timeout.ms=5999
wait_for 30 grep -q 'Invalid session timeout' "$T/short.err" || true
check_match "$(cat "$T/short.err")" 'Invalid session timeout' \
	"a member asking a 5999 ms session gets INVALID_SESSION_TIMEOUT"
stop "$short_pid"

finish
