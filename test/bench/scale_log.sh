#!/usr/bin/env bash
# Fetch at the tail of the log against log size (issue 15, "Scale"), as one
# curve in ONE run on ONE throwaway cluster: a single partition grows in
# steps (10k, 100k, 1M, 10M, 30M, 100M records of 100 B, loaded with
# mq.send_batch in batches of 10,000), and after each step the same two
# fetches are timed with pgbench (one client, --duration s each):
#
#   last  mq.fetch of the last 1,000 records (from log end - 1,000)
#   end   mq.fetch at the log end (returns nothing: what a caught-up
#         consumer pays for each poll)
#
# Each is timed alternately with the same fetch of a second topic that
# keeps 10,000 records (--runs pairs, medians), so that the ratio big/small
# of each step compares two figures taken under the same load: on a shared
# machine the absolute times move with the other work, the ratio should
# stay at 1 if the tail does not grow with the log.
# The run stops at --max records, or earlier when the next step would
# leave less than 10 GB free on the cluster's file system or --budget
# seconds of loading are spent (it says which).  Not a test: prints
# figures (with --out FILE a markdown table, with --data FILE the plot's
# input) and never fails on them.  Uses the INSTALLED extension.
#
# Usage: test/bench/scale_log.sh [--max N] [--budget S] [--duration S]
#                                [--runs N] [--out FILE] [--data FILE]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

MAX=100000000 BUDGET=3600 DURATION=3 RUNS=3 OUT="" DATA=""
while (($#)); do
	case "$1" in
	--max) MAX="${2:?}"; shift ;;
	--budget) BUDGET="${2:?}"; shift ;;
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--data) DATA="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done

mq_bench_work scalelog

mq_phase "a throwaway cluster (fsync on)"
cluster_start scalelog "fsync = on" "shared_buffers = 256MB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 30min" "log_min_messages = warning"
sql() { cluster_psql scalelog -A -t -c "$1"; }
sql "CREATE EXTENSION mq" >/dev/null
sql "SELECT mq.create_topic('tail', 1)" >/dev/null
sql "SELECT mq.create_topic('small', 1)" >/dev/null
sql "CREATE TABLE input AS SELECT array_agg(substr(decode(md5(i::text) || md5((i + 1)::text)
       || md5((i + 2)::text) || md5((i + 3)::text), 'hex'), 1, 100)) AS v
       FROM generate_series(1, 10000) i" >/dev/null

# load TOPIC N: grow the topic to N records
load() {
	local topic="$1" want="$2" have calls
	have="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$topic'")"
	calls=$(((want - have) / 10000))
	while ((calls > 0)); do
		local c=$((calls < 100 ? calls : 100))
		cluster_psql scalelog -A -t >/dev/null <<-EOF
			SELECT 'SELECT count(*) FROM mq.send_batch(''$topic'', NULL, (SELECT v FROM input), partition => 0)'
			  FROM generate_series(1, $c) \gexec
		EOF
		have=$((have + c * 10000))
		calls=$((calls - c))
	done
	[[ "$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$topic'")" == "$want" ]] ||
		mq_die "log end offset is not $want"
}
# us FILE: microseconds per transaction of one pgbench run of FILE
us() {
	local tps
	tps="$("$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$1" \
		-d "$(cluster_conninfo scalelog)" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')"
	[[ -n "$tps" ]] || mq_die "pgbench failed: $1"
	awk -v t="$tps" 'BEGIN { printf "%.1f\n", 1e6 / t }'
}
# pair BIG SMALL: --runs alternating runs of each; prints the medians of
# big and small and the median of the runs' ratios
pair() {
	local r b s
	: >"$WORK/pair"
	for ((r = 1; r <= RUNS; r++)); do
		b="$(us "$1")" s="$(us "$2")"
		echo "$b $s" >>"$WORK/pair"
	done
	echo "$(awk '{ print $1 }' "$WORK/pair" | mq_median) $(awk '{ print $2 }' "$WORK/pair" | mq_median) $(awk '{ printf "%.3f\n", $1 / $2 }' "$WORK/pair" | mq_median)"
}

rows=() stopped="reached --max $MAX"
t0=$SECONDS
for n in 10000 100000 1000000 10000000 30000000 100000000; do
	((n <= MAX)) || break
	have="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'tail'")"
	# 100 B records take some 190 B of table and index per record
	need_kb=$(((n - have) / 1000 * 200 + 10 * 1024 * 1024))
	free_kb="$(df -Pk "$MQ_PGDATA" | awk 'NR == 2 { print $4 }')"
	if ((free_kb < need_kb)); then
		stopped="stopped before $n records: $((free_kb / 1024 / 1024)) GB free, the step needs $((need_kb / 1024 / 1024)) GB"
		break
	fi
	if ((SECONDS - t0 > BUDGET)); then
		stopped="stopped before $n records: the loading budget of $BUDGET s is spent"
		break
	fi
	mq_phase "$n records"
	t1=$SECONDS
	load tail "$n"
	((n == 10000)) && load small 10000
	sql "CHECKPOINT" >/dev/null
	for t in tail small; do
		e="$n"
		[[ "$t" == small ]] && e=10000
		printf 'SELECT count(*) FROM mq.fetch(%s, 0, %d, 1000);\n' "'$t'" $((e - 1000)) >"$WORK/$t.last.sql"
		printf 'SELECT count(*) FROM mq.fetch(%s, 0, %d, 1000);\n' "'$t'" "$e" >"$WORK/$t.end.sql"
	done
	[[ "$(sql "SELECT count(*) FROM mq.fetch('tail', 0, $((n - 1000)), 1000)")" == 1000 ]] || mq_die "short last page"
	read -r last slast rlast <<<"$(pair "$WORK/tail.last.sql" "$WORK/small.last.sql")"
	read -r end send rend <<<"$(pair "$WORK/tail.end.sql" "$WORK/small.end.sql")"
	segs="$(sql "SELECT count(*) || ' segments, ' || pg_size_pretty(sum(pg_total_relation_size(relid))) FROM mq.segments WHERE topic = 'tail'")"
	echo "$n records ($segs, step done in $((SECONDS - t1)) s): last 1000 $last us (10k: $slast, ratio $rlast), at the end $end us (10k: $send, ratio $rend)"
	rows+=("$n $last $slast $rlast $end $send $rend|$segs")
done
cluster_stop scalelog

mq_phase "results ($stopped)"
table="| records | last 1,000: µs | same run, 10k-record topic: µs | ratio | at the end: µs | same run, 10k: µs | ratio | log |
|---:|---:|---:|---:|---:|---:|---:|---|"
[[ -n "$DATA" ]] && echo "# records last_us last_small_us last_ratio end_us end_small_us end_ratio" >"$DATA"
for row in "${rows[@]}"; do
	read -r n last slast rlast end send rend <<<"${row%%|*}"
	table+="
| $n | $last | $slast | $rlast | $end | $send | $rend | ${row#*|} |"
	[[ -n "$DATA" ]] && echo "${row%%|*}" >>"$DATA"
done
echo "$table"
echo "($stopped)"
[[ -n "$OUT" ]] && printf '%s\n\n(%s)\n' "$table" "$stopped" >"$OUT"
exit 0
