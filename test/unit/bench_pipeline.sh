#!/usr/bin/env bash
# test/bench/pipeline_floor.sh works: one short round (1 s per order,
# 10 records a call) starts its three clusters, appends on the two
# follower partitions through mq.replica_append (so a change of
# mq.replica_batch that the script's batches no longer satisfy fails
# here, not in the next measurement), prints a figure for each of the
# three orders and their ratios, and stops every server it started.  The
# figures never decide anything: timing is not a test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

tap_tmp bench-pipeline-test
mkdir -m 755 "$tmp/run"
rc=0
TMPDIR="$tmp/run" bash test/bench/pipeline_floor.sh --runs 1 --duration 1 --records 10 \
	>"$tmp/out" 2>&1 || rc=$?
ok "$rc" "pipeline_floor.sh runs one short round (exit $rc)"
((rc == 0)) || tail -n 30 "$tmp/out"

# the medians: one line per order, a positive rate and latencies
bad="$(awk '$1 ~ /^(one|serial|pipelined)$/ && $2 ~ /^[0-9]/ && NF == 7 {
		seen[$1] = 1
		if ($2 + 0 <= 0 || $3 + 0 <= 0 || $4 + 0 <= 0) print $1
	}
	END { if (length(seen) != 3) print "orders missing" }' "$tmp/out")"
ok "$([[ -z "$bad" ]] && echo 0 || echo 1)" "a rate and latencies for each order${bad:+ (bad: $(tr '\n' ' ' <<<"$bad"))}"
grep -q '^pipelined / serial: records/s [0-9.]*, p50 [0-9.]*$' "$tmp/out" && r=0 || r=1
ok "$r" "the ratio of the two replicated orders is printed"

tap_none_left "$tmp/run" 'postgres'
tap_done
