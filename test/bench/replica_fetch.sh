#!/usr/bin/env bash
# The leader's fetch on an acks=all record's path, alone (issue 25, item
# 1; docs/benchmarks.md, "The leader's fetch, planned once").  Not a test:
# prints figures; nothing here passes or fails on timing.
#
# One throwaway cluster (fsync off: the statements' CPU, not the disk),
# one database whose two topics stand for a leader and a follower, as in
# test/pgtap/replica_*.sql; no broker runs.  Each cycle is what the
# leader and a follower do for one single-record acks=all write: send one
# record, fetch it and append it, then the acknowledging fetch (the
# follower's log end; no records) and its append.  pgbench runs CYCLES
# cycles per round; the figures are pgbench's latency per cycle, the CPU
# its backend used per cycle (the postmaster's reaped children's time:
# on a loaded machine the latencies include the wait for a core, the CPU
# does not), the WAL bytes per cycle and, from pg_stat_user_functions, the mean ms per call of the
# fetch and its read (wall time, with the waits).
#
# With --old REV the rounds alternate between this build and REV's
# records read (mq._replica_fetch_records as REV's src/sql defines it,
# put in place with CREATE OR REPLACE in the same database; it must have
# this build's signature), so that both
# are measured in the same conditions; the ratio is of medians.
#
# With --malloc the rounds alternate between mq.malloc_trim_threshold at
# its default ("kept": a backend keeps the memory a batch freed) and at 0
# ("returned": glibc's 128 kB thresholds, the memory handed back to the
# kernel after each batch and faulted in again), set per pgbench session
# (src/malloc_tune.c).  --records N sends N records of 100 B per cycle
# (default 1), so the cycle is the batch path's.
#
# Usage: test/bench/replica_fetch.sh [--cycles N] [--rounds N] [--records N]
#        [--old REV | --malloc]
# It uses the INSTALLED extension (MQ_PG_ROOT honoured).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

CYCLES=500 ROUNDS=3 OLD="" RECORDS=1 MALLOC=""
while (($#)); do
	case "$1" in
	--cycles) CYCLES="${2:?}"; shift ;;
	--rounds) ROUNDS="${2:?}"; shift ;;
	--old) OLD="${2:?}"; shift ;;
	--records) RECORDS="${2:?}"; shift ;;
	--malloc) MALLOC=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done

mq_bench_work replica_fetch
mq_phase "cluster"
cluster_start fetch "track_functions = all" "fsync = off" "synchronous_commit = off" >/dev/null
psql_q() { cluster_psql fetch -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_q >/dev/null <<'SQL'
CREATE EXTENSION mq;
SELECT mq.create_topic('leader', 1);
SELECT mq.create_topic('follower', 1);
SELECT mq.replica_become_leader('leader', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('follower', 0, 1, 1);
SQL
psql_q -c "SELECT mq.replica_append('follower', 0, 1, mq.replica_fetch('leader', 0, 1, 2, 0, 100, 0, NULL))" >/dev/null
OV="$(psql_q -A -t -c "SELECT mq._offsets_version(mq._topic_id('leader'), 0)")"

# the build's definition, and REV's
psql_q -A -t -c "SELECT pg_get_functiondef('mq._replica_fetch_records'::regproc)" >"$WORK/new.sql"
if [[ -n "$OLD" ]]; then
	git -C "$REPO" show "$OLD:src/sql/60_replica_fetch.sql" |
		perl -0ne 'print "$1;\n" if /(CREATE FUNCTION mq\._replica_fetch_records\(.*?(?:\$\$;|LANGUAGE C[^;]*;))/s' |
		sed 's/^CREATE FUNCTION/CREATE OR REPLACE FUNCTION/' >"$WORK/old.sql"
	[[ -s "$WORK/old.sql" ]] || mq_die "no mq._replica_fetch_records in $OLD"
	BUILDS=(new old)
elif [[ -n "$MALLOC" ]]; then
	BUILDS=(kept returned)
else
	BUILDS=(new)
fi
# the session setting of each side (--malloc)
declare -A SIDE_OPTS=([kept]="" [returned]="-c mq.malloc_trim_threshold=0" [new]="" [old]="")
MAX=$((RECORDS > 100 ? RECORDS : 100))

cat >"$WORK/cycle.sql" <<SQL
SELECT count(*) FROM mq.send_batch('leader', NULL,
    (SELECT array_agg(convert_to(repeat('x', 100), 'UTF8')) FROM generate_series(1, $RECORDS)),
    partition => 0);
SELECT mq.replica_append('follower', 0, 1, mq.replica_fetch('leader', 0, 1, 2,
    (SELECT log_end_offset FROM mq.replica_status WHERE topic = 'follower'), $MAX, 0, $OV));
SELECT mq.replica_append('follower', 0, 1, mq.replica_fetch('leader', 0, 1, 2,
    (SELECT log_end_offset FROM mq.replica_status WHERE topic = 'follower'), $MAX, 0, $OV));
SQL
PM="$(head -1 "$MQ_PGDATA/postmaster.pid")"
CHILDREN="$(pgrep -P "$PM" | wc -l)"
# CPU (ms) of the postmaster's exited children: the backends of finished sessions
reaped_cpu_ms() {
	local t
	t="$(mq_reaped_ticks "$PM")" || return 1
	awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { print t * 1000 / hz }'
}
fn_ms() {
	psql_q -A -t -c "SELECT coalesce(round((sum(total_time) / nullif(sum(calls), 0))::numeric, 3), 0)
		FROM pg_stat_user_functions WHERE schemaname = 'mq' AND funcname = '$1'"
}

mq_phase "$ROUNDS rounds of $CYCLES cycles of $RECORDS records (${BUILDS[*]} alternating)"
for ((r = 1; r <= ROUNDS; r++)); do
	for b in "${BUILDS[@]}"; do
		psql_q -f "$WORK/$([[ $b == old ]] && echo old || echo new).sql" >/dev/null
		# another signature would be a second function the fetch never calls
		(($(psql_q -A -t -c "SELECT count(*) FROM pg_proc WHERE proname = '_replica_fetch_records'") == 1)) ||
			mq_die "$OLD's mq._replica_fetch_records has another signature: compare the builds installed apart (MQ_PG_ROOT)"
		psql_q -c "SELECT pg_stat_reset()" >/dev/null
		while (($(pgrep -P "$PM" | wc -l) > CHILDREN)); do sleep 0.05; done
		cpu0="$(reaped_cpu_ms)"
		lsn0="$(psql_q -A -t -c "SELECT pg_current_wal_lsn()")"
		PGOPTIONS="${SIDE_OPTS[$b]}" "$PG_BINDIR/pgbench" -n -M prepared -c 1 -t "$CYCLES" -f "$WORK/cycle.sql" \
			-d "$(cluster_conninfo fetch)" >"$WORK/pgbench.log" 2>&1 || {
			cat "$WORK/pgbench.log" >&2
			mq_die "pgbench failed"
		}
		lat="$(awk '/latency average/ {print $4}' "$WORK/pgbench.log")"
		for ((i = 0; i < 100; i++)); do # pgbench's backend flushes its statistics as it exits
			n="$(psql_q -A -t -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
				WHERE funcname = 'replica_fetch'")"
			((n >= 2 * CYCLES)) && break
			sleep 0.05
		done
		while (($(pgrep -P "$PM" | wc -l) > CHILDREN)); do sleep 0.05; done
		wal="$(psql_q -A -t -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0') / $CYCLES)")"
		cpu="$(awk -v a="$cpu0" -v b="$(reaped_cpu_ms)" -v n="$CYCLES" 'BEGIN {printf "%.3f", (b - a) / n}')"
		echo "$b $lat $(fn_ms replica_fetch) $(fn_ms _replica_fetch_records) $cpu $wal $(fn_ms send_batch)" \
			"$(fn_ms _replica_append_records)" | tee -a "$WORK/rounds"
		echo "round $r $b: cycle $lat ms, server CPU $cpu ms, WAL $wal B, replica_fetch $(fn_ms replica_fetch) ms," \
			"_replica_fetch_records $(fn_ms _replica_fetch_records) ms; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	done
done >/dev/null

mq_phase "medians (ms)"
printf '| | %s |\n|---|%s\n' "$(printf '%s | ' "${BUILDS[@]}" | sed 's/ | $//')" "$(printf -- '---:|%.0s' "${BUILDS[@]}")"
for col in 2:"cycle (send, two fetches, two appends)" 5:"server CPU per cycle (its backends)" 6:"WAL bytes per cycle" 3:"mq.replica_fetch per call" 4:"mq._replica_fetch_records per call" \
	7:"mq.send_batch per call" 8:"mq._replica_append_records per call"; do
	i="${col%%:*}"
	row="| ${col#*:} |"
	for b in "${BUILDS[@]}"; do
		row+=" $(awk -v b="$b" -v i="$i" '$1 == b {print $i}' "$WORK/rounds" | mq_median) |"
	done
	echo "$row"
done
