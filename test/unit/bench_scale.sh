#!/usr/bin/env bash
# test/bench/scale.sh --replicated works: in its short mode
# (MQ_SCALE_SHORT=1: two points per curve, one run of 1 s) it starts three
# data nodes, a coordinator and three brokers of its own, moves every
# partition's leadership to broker 1, runs every curve against the
# replicated topics (RF 3, acks=all) and the same topics on one node,
# prints a figure and a ratio for every point, and stops every server it
# started.  It needs no shared test server, and the figures themselves
# never decide anything: timing is not a test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

tap_tmp bench-scale-test
# everything the run creates (data directories, logs) lies under $tmp, so
# that its processes can be told from any other run's
mkdir -m 755 "$tmp/run"
rc=0
TMPDIR="$tmp/run" MQ_SCALE_SHORT=1 bash test/bench/scale.sh --replicated --out "$tmp/scale.md" \
	>"$tmp/out" 2>&1 || rc=$?
ok "$rc" "scale.sh --replicated runs in its short mode (exit $rc)"
((rc == 0)) || tail -n 30 "$tmp/out"

# | curve | point | replicated | one node | ratio |: two points per curve,
# each with positive figures
bad="$(awk -F '|' '$2 ~ /^ [PCS]:/ {
		rows[substr($2, 2, 1)]++
		for (i = 4; i <= 6; i++) if ($i !~ /^ *[0-9.]+ *$/ || $i + 0 <= 0) print $3
	}
	END { for (c in rows) if (rows[c] != 2) print c ": " rows[c] " points"; if (length(rows) != 3) print "curves missing" }' \
	"$tmp/scale.md" 2>/dev/null || echo "no table")"
ok "$([[ -z "$bad" ]] && echo 0 || echo 1)" "a figure and a ratio for every point of every curve${bad:+ (bad: $(tr '\n' ' ' <<<"$bad"))}"
[[ -z "$bad" ]] || cat "$tmp/scale.md" 2>/dev/null || true
named=1
grep -q 'RF 3 acks=all records/s | one node records/s' "$tmp/scale.md" 2>/dev/null && named=0
ok "$named" "the table names its two sides"

tap_none_left "$tmp/run" 'postgres|mq-broker'
tap_done
