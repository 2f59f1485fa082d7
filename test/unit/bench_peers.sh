#!/usr/bin/env bash
# test/bench/peers.sh works: in its short mode (MQ_PEERS_SHORT=1: tiny
# sizes, one round) it builds its clients, starts its own throwaway
# PostgreSQL (mq, PgQ and its ticker), two Redis servers and NATS on free
# loopback ports, runs every workload on every system, prints a figure for
# each and a durability statement for each system, and stops every server
# it started.  It needs no shared test server (it starts its own), and the
# figures themselves never decide anything: timing is not a test.  Then
# the same for --replicated (mq with RF 3 on three nodes, a coordinator and
# three brokers; Redis with two replicas; a NATS cluster of three).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

tap_tmp bench-peers-test
# everything the run creates (its clients, data directories, logs) lies
# under $tmp, so that its processes can be told from any other run's
mkdir -m 755 "$tmp/run"
# run_short NAME SYSTEMS [ARGS...]: the short run, a figure for every
# workload on every system, and a durability statement for each
run_short() {
	local tag="$1" systems="$2" rc=0 s line bad="" missing=""
	shift 2
	TMPDIR="$tmp/run" MQ_PEERS_SHORT=1 bash test/bench/peers.sh --out "$tmp/$tag.md" --data "$tmp/$tag.dat" \
		"$@" >"$tmp/$tag.out" 2>&1 || rc=$?
	ok "$rc" "peers.sh $* runs in its short mode (exit $rc)"
	((rc == 0)) || tail -n 30 "$tmp/$tag.out"
	for s in $systems; do
		# system, five throughputs/latencies: all positive numbers
		line="$(awk -v s="$s" '$1 == s' "$tmp/$tag.dat" 2>/dev/null || true)"
		if ! awk '{ if (NF != 7) exit 1; for (i = 2; i <= 7; i++) if ($i !~ /^[0-9.]+$/ || $i + 0 <= 0) exit 1 }' \
			<<<"${line:-x}"; then
			bad+=" $s"
		fi
		grep -q "^| $s | .*| [a-zA-Z].* |\$" "$tmp/$tag.md" 2>/dev/null || missing+=" $s"
	done
	ok "$([[ -z "$bad" ]] && echo 0 || echo 1)" "a figure for every workload on every system${bad:+ (missing:$bad)}"
	[[ -z "$bad" ]] || cat "$tmp/$tag.dat"
	ok "$([[ -z "$missing" ]] && echo 0 || echo 1)" "the table states each system's durability${missing:+ (missing:$missing)}"
}
run_short single "mq mq-async pgq plain redis-always redis-everysec nats"
run_short replicated "mq-rf3 redis-wait2 nats-r3" --replicated

# (Redis rewrites its title, but runs in its --dir: tap_none_left looks
# at the working directory too)
tap_none_left "$tmp/run" 'redis-server|nats-server|pgqd|postgres|mq-broker'
tap_done
