#!/usr/bin/env bash
# Fetch at the tail of the log against log size (issue 15, "Scale"), as one
# curve in ONE run on ONE throwaway cluster: a single partition grows in
# steps (10k, 100k, 1M, 10M, 30M, 100M records of 100 B, loaded with
# mq.send_batch in batches of 10,000), and after each step the same two
# fetches are timed with pgbench (one client, --duration s each, median of
# --runs):
#
#   last  mq.fetch of the last 1,000 records (from log end - 1,000)
#   end   mq.fetch at the log end (returns nothing: what a caught-up
#         consumer pays for each poll)
#
# beside the same two reads of a plain table of the same rows (msg_offset
# with a unique index: SELECT ... WHERE msg_offset >= end - 1000 ORDER BY
# msg_offset LIMIT 1000), loaded in the same run, so that the ratio to the
# first point can be read against what PostgreSQL's own index gives.
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

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-scalelog.XXXXXX")"
chmod 755 "$WORK"
mq_on_exit "rm -rf '$WORK'"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

mq_phase "a throwaway cluster (fsync on)"
cluster_start scalelog "fsync = on" "shared_buffers = 256MB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 30min" "log_min_messages = warning"
sql() { cluster_psql scalelog -A -t -c "$1"; }
sql "CREATE EXTENSION mq" >/dev/null
sql "SELECT mq.create_topic('tail', 1)" >/dev/null
sql "CREATE TABLE plain (msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
                         key bytea, value bytea, headers jsonb)" >/dev/null
sql "CREATE UNIQUE INDEX ON plain (msg_offset)" >/dev/null
sql "CREATE TABLE input AS SELECT array_agg(substr(decode(md5(i::text) || md5((i + 1)::text)
       || md5((i + 2)::text) || md5((i + 3)::text), 'hex'), 1, 100)) AS v
       FROM generate_series(1, 10000) i" >/dev/null

# load N: grow the topic and the plain table to N records each
load() {
	local want="$1" have calls
	have="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'tail'")"
	calls=$(((want - have) / 10000))
	while ((calls > 0)); do
		local c=$((calls < 100 ? calls : 100))
		cluster_psql scalelog -A -t >/dev/null <<-EOF
			SELECT 'SELECT count(*) FROM mq.send_batch(''tail'', NULL, (SELECT v FROM input), partition => 0)'
			  FROM generate_series(1, $c) \gexec
			INSERT INTO plain (msg_offset, value)
			  SELECT $have + (g - 1) * 10000 + u.o - 1, u.v
			    FROM generate_series(1, $c) g, input, unnest(input.v) WITH ORDINALITY u(v, o);
		EOF
		have=$((have + c * 10000))
		calls=$((calls - c))
	done
	[[ "$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'tail'")" == "$want" ]] ||
		mq_die "log end offset is not $want"
}
# us FILE: median microseconds per transaction of pgbench runs of FILE
us() {
	local r tps
	for ((r = 1; r <= RUNS; r++)); do
		tps="$("$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$1" \
			-d "$(cluster_conninfo scalelog)" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')"
		[[ -n "$tps" ]] || mq_die "pgbench failed: $1"
		awk -v t="$tps" 'BEGIN { printf "%.1f\n", 1e6 / t }'
	done | median
}

rows=() stopped="reached --max $MAX"
t0=$SECONDS
for n in 10000 100000 1000000 10000000 30000000 100000000; do
	((n <= MAX)) || break
	have="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'tail'")"
	# 100 B records take some 190 B of table and index per record, twice
	need_kb=$(((n - have) / 1000 * 400 + 10 * 1024 * 1024))
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
	load "$n"
	sql "CHECKPOINT" >/dev/null
	sql "VACUUM ANALYZE plain" >/dev/null
	printf 'SELECT count(*) FROM mq.fetch(%s, 0, %d, 1000);\n' "'tail'" $((n - 1000)) >"$WORK/last.sql"
	printf 'SELECT count(*) FROM mq.fetch(%s, 0, %d, 1000);\n' "'tail'" "$n" >"$WORK/end.sql"
	printf 'SELECT count(value) FROM (SELECT value FROM plain WHERE msg_offset >= %d ORDER BY msg_offset LIMIT 1000) s;\n' \
		$((n - 1000)) >"$WORK/plast.sql"
	printf 'SELECT count(value) FROM (SELECT value FROM plain WHERE msg_offset >= %d ORDER BY msg_offset LIMIT 1000) s;\n' \
		"$n" >"$WORK/pend.sql"
	[[ "$(sql "SELECT count(*) FROM mq.fetch('tail', 0, $((n - 1000)), 1000)")" == 1000 ]] || mq_die "short last page"
	last="$(us "$WORK/last.sql")" end="$(us "$WORK/end.sql")"
	plast="$(us "$WORK/plast.sql")" pend="$(us "$WORK/pend.sql")"
	segs="$(sql "SELECT count(*) || ' segments, ' || pg_size_pretty(sum(pg_total_relation_size(relid))) FROM mq.segments WHERE topic = 'tail'")"
	echo "$n records ($segs, loaded in $((SECONDS - t1)) s): last 1000 $last us (plain $plast), at the end $end us (plain $pend)"
	rows+=("$n $last $end $plast $pend|$segs")
done
cluster_stop scalelog

mq_phase "results ($stopped)"
read -r _ last0 end0 plast0 pend0 <<<"${rows[0]%%|*}"
table="| records | mq: last 1,000, µs | × first | mq: at the end, µs | × first | plain: last 1,000, µs | plain: at the end, µs | log |
|---:|---:|---:|---:|---:|---:|---:|---|"
[[ -n "$DATA" ]] && echo "# records mq_last_us mq_end_us plain_last_us plain_end_us" >"$DATA"
for row in "${rows[@]}"; do
	read -r n last end plast pend <<<"${row%%|*}"
	table+="
| $n | $last | $(awk -v a="$last" -v b="$last0" 'BEGIN { printf "%.2f", a / b }') | $end | $(awk -v a="$end" -v b="$end0" 'BEGIN { printf "%.2f", a / b }') | $plast | $pend | ${row#*|} |"
	[[ -n "$DATA" ]] && echo "$n $last $end $plast $pend" >>"$DATA"
done
echo "$table"
echo "($stopped)"
[[ -n "$OUT" ]] && printf '%s\n\n(%s)\n' "$table" "$stopped" >"$OUT"
exit 0
