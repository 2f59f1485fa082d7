#!/usr/bin/env bash
# idle_cpu.sh: the CPU an idle replicated cluster spends, with the tick
# every tick.ms whatever the state against tick.idle.ms while steady, in
# the same run (test/bench/idle_cpu.pl says how; docs/benchmarks.md, "An
# idle cluster").  Not a test: nothing passes or fails on timing.
#   --seconds N     measured seconds per run (default 20)
#   --rounds N      alternating rounds (default 2)
#   --partitions N  partitions of the idle topic (default 6)
#   --out FILE      also write the medians (config<TAB>ms of CPU per s)
# With MQ_BENCH_FUNCTIONS=1 in the environment, each run also prints node
# 1's costliest functions (calls and ms per second).
set -euo pipefail
# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

SECONDS_RUN=20 ROUNDS=2 PARTS=6 OUT=""
while (($#)); do
	case "$1" in
	--seconds) SECONDS_RUN="${2:?}"; shift ;;
	--rounds) ROUNDS="${2:?}"; shift ;;
	--partitions) PARTS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
[[ -x "$REPO/broker/mq-broker/mq-broker" ]] || mq_die "mq-broker is not built: run make first"

mq_bench_work idle
mkdir -p "$WORK/tmp"
if mq_is_root; then chown -R postgres:postgres "$WORK"; fi
mq_log "idle cluster: $ROUNDS round(s) of ${SECONDS_RUN}s, $PARTS partitions (load $(cut -d' ' -f1 /proc/loadavg))"
if ! as_postgres env TESTDIR="$WORK" PG_REGRESS="$PG_REGRESS" TMPDIR="$WORK/tmp" \
	PERL5LIB="$PG_TAP_PERL:$REPO/test/t" MQ_REPO_ROOT="$REPO" MQ_BENCH_OUT="$WORK/out.tsv" \
	MQ_BENCH_SECONDS="$SECONDS_RUN" MQ_BENCH_ROUNDS="$ROUNDS" MQ_BENCH_PARTITIONS="$PARTS" \
	perl "$HERE/idle_cpu.pl" >"$WORK/idle.log" 2>&1 </dev/null; then
	tail -n 40 "$WORK/idle.log"
	mq_die "the idle run failed"
fi
grep -ho '# \(round\|idle cluster\|  node 1\).*' "$WORK/tmp_check/log/regress_log_idle_cpu" | sed 's/^# //'
[[ -z "$OUT" ]] || cp "$WORK/out.tsv" "$OUT"
