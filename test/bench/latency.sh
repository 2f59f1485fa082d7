#!/usr/bin/env bash
# End-to-end latency benchmark (issue: long polling): from just before an
# autocommitted produce to the return of a waiting mq.poll, against the
# plain-PostgreSQL way to wake a consumer (INSERT + NOTIFY, LISTEN) on the
# same throwaway cluster in the same run.  Not a test: prints figures and
# ratios, and with --out FILE writes a markdown table.
#
# Usage: test/bench/latency.sh [--records N] [--runs N] [--out FILE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

RECORDS=2000
RUNS=3
OUT=""
while (($#)); do
	case "$1" in
	--records) RECORDS="$2"; shift 2 ;;
	--runs) RUNS="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	*) echo "usage: $0 [--records N] [--runs N] [--out FILE]" >&2; exit 2 ;;
	esac
done

mq_phase "build"
mq_build_install || mq_die "build/install failed"
bin="$(mktemp -d)/latency"
gcc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir)" -o "$bin" test/bench/latency.c -lpq
mq_on_exit "rm -rf '$(dirname "$bin")'"

mq_phase "throwaway cluster"
cluster_start latency "synchronous_commit = on"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION mq" \
	-c "SELECT mq.create_topic('latency', 1)" \
	-c "CREATE TABLE latency_plain (id bigserial PRIMARY KEY, sent bigint)" >/dev/null

declare -A res
for mode in mq notify; do
	: > "/tmp/latency.$mode.$$"
done
for ((r = 1; r <= RUNS; r++)); do
	for mode in mq notify; do
		line=$("$bin" "$mode" "$RECORDS")
		echo "run $r $mode: avg p50 p99 max (µs) = $line"
		echo "$line" >> "/tmp/latency.$mode.$$"
	done
done
for mode in mq notify; do
	for col in 1 2 3 4; do
		res[$mode,$col]=$(awk -v c=$col '{print $c}' "/tmp/latency.$mode.$$" | mq_median)
	done
	rm -f "/tmp/latency.$mode.$$"
done
cluster_stop

ms() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000}'; }
table="| figure (median of $RUNS runs, $RECORDS records each) | mq.poll waiting | INSERT+NOTIFY / LISTEN | ratio | goal |
|---|---|---|---|---|
| p50 latency, ms | $(ms "${res[mq,2]}") | $(ms "${res[notify,2]}") | $(mq_ratio "${res[mq,2]}" "${res[notify,2]}") | mq ≤ 2 ms |
| p99 latency, ms | $(ms "${res[mq,3]}") | $(ms "${res[notify,3]}") | $(mq_ratio "${res[mq,3]}" "${res[notify,3]}") | mq ≤ 5 ms |
| average, ms | $(ms "${res[mq,1]}") | $(ms "${res[notify,1]}") | $(mq_ratio "${res[mq,1]}" "${res[notify,1]}") | |
| max, ms | $(ms "${res[mq,4]}") | $(ms "${res[notify,4]}") | | |"
echo
echo "$(date -u +%F) on $(nproc) cores, $(postgres --version)"
echo "$table"
if [[ -n "$OUT" ]]; then
	{ echo "$(date -u +%F) on $(nproc) cores, $(postgres --version)"; echo; echo "$table"; } > "$OUT"
fi
