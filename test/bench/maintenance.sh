#!/usr/bin/env bash
# The maintenance pass against the number of topics (issue 25, item 5: a
# pass over 10,000 topics under 1 s), in ONE run on ONE throwaway cluster:
# topics of --partitions partitions (default 1) are created in steps
# (1,000, 5,000, 10,000 by default; 100 topics per transaction, --jobs
# sessions at a time (3), and fsync off: creating them is DDL whose
# flushes would take most of the run, and a pass that has nothing to do
# writes nothing); after each step two
# passes are timed, each in a fresh session (wall time, and the backend's
# CPU from /proc, in 10 ms ticks), alternating for --rounds rounds
# (medians):
#
#   new   mq.run_maintenance(): partitions due are those noted in
#         mq.last_segment_written by the produce path
#   old   the pass before the note, the same batches with the last
#         segment's file size asked for every partition (as
#         mq._file_unwritten did: an index lookup in mq.segment, the
#         pg_class row, a stat(); emulated here with pg_relation_filepath
#         and pg_stat_file, since that C function is gone)
#
# With --compare retention, old is instead mq.run_maintenance() with the
# retention of before closed segments' sizes were recorded
# (test/bench/maintenance/retain_before.sql, put in place for the old
# passes' sessions only): both passes then differ only in retention.
#
# each over the same cluster in two states:
#
#   idle    no record sent since the last pass: nothing is due
#   active  --active topics (segment.records 100, retention.ms 1 h) get
#           100 records in every partition before each pass, so that each
#           of their partitions has its last segment written and the pass
#           makes it a segment ahead (DDL) and applies their retention
#
# Printed per point: ms per pass (wall, CPU) with the session cold and
# warm, CPU µs per partition, segments made, and new/old.  The maintenance worker is kept out of the way
# (mq.maintenance_interval one hour).  Not a test: prints figures (with
# --out FILE a markdown table, with --data FILE the plot's input) and never
# fails on them.  Uses the INSTALLED extension.
#
# Usage: test/bench/maintenance.sh [--steps "1000 5000 10000"] [--partitions N]
#                                  [--active N] [--rounds N] [--jobs N] [--compare pass|retention]
#                                  [--out FILE] [--data FILE]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

STEPS="1000 5000 10000" PARTS=1 ACTIVE=20 ROUNDS=3 JOBS=3 OUT="" DATA="" COMPARE=pass
while (($#)); do
	case "$1" in
	--steps) STEPS="${2:?}"; shift ;;
	--partitions) PARTS="${2:?}"; shift ;;
	--active) ACTIVE="${2:?}"; shift ;;
	--rounds) ROUNDS="${2:?}"; shift ;;
	--jobs) JOBS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--data) DATA="${2:?}"; shift ;;
	--compare) COMPARE="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done

mq_bench_work maint

mq_phase "a throwaway cluster (fsync off)"
cluster_start maint "fsync = off" "synchronous_commit = off" "shared_buffers = 256MB" "max_wal_size = 4GB" \
	"log_min_messages = warning" "mq.maintenance_interval = 3600000" "max_locks_per_transaction = 256"
sql() { cluster_psql maint -A -t -c "$1"; }
sql "CREATE EXTENSION mq" >/dev/null
# the old pass: mq._maintain_batch with the file-size test of its last
# segment for every partition instead of the note; the same loop as
# mq.run_maintenance() around it
cluster_psql maint -q <<'SQL'
CREATE FUNCTION bench_old_batch(p_after integer, p_limit integer, OUT last_topic integer, OUT created integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_after integer := coalesce(p_after, -2147483648);
    r record;
BEGIN
    created := 0;
    SELECT max(b.topic_id) INTO last_topic
      FROM (SELECT t.topic_id FROM mq.topic t WHERE t.topic_id > v_after ORDER BY t.topic_id LIMIT p_limit) b;
    IF last_topic IS NULL THEN
        RETURN;
    END IF;
    FOR r IN SELECT t.topic_id, t.topic_name FROM mq.topic t
              WHERE t.topic_id > v_after AND t.topic_id <= last_topic
                AND t.config ?| ARRAY['retention.ms', 'retention.bytes', 'cleanup.policy']
              ORDER BY t.topic_id LOOP
        PERFORM mq._maintain_topic(r.topic_id, r.topic_name);
    END LOOP;
    FOR r IN SELECT ps.topic_id, ps.partition
               FROM mq.topic t JOIN mq.partition_state ps USING (topic_id)
              WHERE t.topic_id > v_after AND t.topic_id <= last_topic
                AND (t.config ?| ARRAY['segment.ms', 'max.compaction.lag.ms']
                     OR NOT coalesce((SELECT (pg_stat_file(pg_relation_filepath(c.oid), true)).size = 0
                                        FROM mq.segment sg JOIN pg_class c ON c.oid = sg.relid
                                       WHERE sg.topic_id = ps.topic_id AND sg.partition = ps.partition
                                       ORDER BY sg.base_offset DESC LIMIT 1), false))
              ORDER BY ps.topic_id, ps.partition LOOP
        created := created + mq._maintain_segments(r.topic_id, r.partition);
    END LOOP;
END $$;
CREATE FUNCTION bench_old_pass() RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer := 0;
    b record;
BEGIN
    b := public.bench_old_batch(NULL, 1000);
    WHILE b.last_topic IS NOT NULL LOOP
        v_created := v_created + b.created;
        b := public.bench_old_batch(b.last_topic, 1000);
    END LOOP;
    PERFORM mq._maintain_rest();
    RETURN v_created;
END $$;
-- CPU ticks (user + system) of this backend so far
CREATE FUNCTION bench_ticks() RETURNS bigint LANGUAGE sql AS $$
    SELECT f[14]::bigint + f[15]::bigint
      FROM (SELECT string_to_array(split_part(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), ') ', 2), ' ') AS g) s,
           LATERAL (SELECT ARRAY['', ''] || g AS f) x
$$;
SQL
# --compare retention: the installed retention, to put back after old passes
if [[ "$COMPARE" == retention ]]; then
	{ sql "SELECT pg_get_functiondef('mq._retain_topic(integer, jsonb)'::regprocedure)"; echo ';'; } >"$WORK/retain_new.sql"
fi
TICK_MS="$(awk -v h="$(getconf CLK_TCK)" 'BEGIN { print 1000 / h }')"

# timed KIND STATE: two passes (new: mq.run_maintenance(), old:
# bench_old_pass()) in one fresh session, the first with the session's
# caches cold, the second warm as in the worker, a long-lived backend;
# with STATE active, the active topics get 100 records per partition
# before each.  Prints "cold_ms cold_cpu_ms warm_ms warm_cpu_ms made"
timed() {
	local fn=mq.run_maintenance feed="" before="" after=""
	if [[ "$1" == old && "$COMPARE" == retention ]]; then
		before="\\i $HERE/maintenance/retain_before.sql" after="\\i $WORK/retain_new.sql"
	elif [[ "$1" == old ]]; then
		fn=public.bench_old_pass
	fi
	[[ "$2" == active ]] && feed="SELECT count(*) FROM generate_series(1, $ACTIVE) a, generate_series(0, $PARTS - 1) p,
	       LATERAL mq.send_batch('active' || a, NULL, array_fill('x'::bytea, ARRAY[100]), partition => p);"
	cluster_psql maint -A -t -F ' ' <<-EOF | tr '\n' ' '
		\o /dev/null
		$before
		$feed
		\o
		SELECT bench_ticks() AS c0, clock_timestamp() AS t0 \gset
		SELECT $fn() AS made \gset
		SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1000, 1), (bench_ticks() - :c0) * $TICK_MS;
		\o /dev/null
		$feed
		\o
		SELECT bench_ticks() AS c0, clock_timestamp() AS t0 \gset
		SELECT $fn() AS made2 \gset
		SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1000, 1), (bench_ticks() - :c0) * $TICK_MS, :made;
		\o /dev/null
		$after
	EOF
	echo
}
# point STATE: --rounds alternating sessions of each pass; prints the
# medians "new_cold new_cold_cpu new_warm new_warm_cpu old_cold
# old_cold_cpu old_warm old_warm_cpu made"
point() {
	local r k
	: >"$WORK/new"
	: >"$WORK/old"
	for ((r = 1; r <= ROUNDS; r++)); do
		for k in new old; do timed "$k" "$1" >>"$WORK/$k"; done
	done
	for k in new old; do
		for f in 1 2 3 4; do printf '%s ' "$(awk -v f="$f" '{ print $f }' "$WORK/$k" | mq_median)"; done
	done
	awk '{ print $5 }' "$WORK/new" | mq_median
}

mq_phase "$ACTIVE active topics (segment.records 100, retention.ms 1 h), 50 records in each partition"
sql "SELECT count(mq.create_topic('active' || a, $PARTS, '{\"segment.records\": 100, \"retention.ms\": 3600000}'))
       FROM generate_series(1, $ACTIVE) a" >/dev/null
sql "SELECT count(*) FROM generate_series(1, $ACTIVE) a, generate_series(0, $PARTS - 1) p,
       LATERAL mq.send_batch('active' || a, NULL, array_fill('x'::bytea, ARRAY[50]), partition => p)" >/dev/null

rows=() have=0
for n in $STEPS; do
	mq_phase "$n topics of $PARTS partitions (and the $ACTIVE active ones)"
	t0=$SECONDS
	# --jobs sessions at a time
	sql "SELECT format('SELECT count(mq.create_topic(''t'' || i, $PARTS)) FROM generate_series(%s, %s) i', i, least(i + 99, $n))
	       FROM generate_series($((have + 1)), $n, 100) i" |
		xargs -d '\n' -P "$JOBS" -I{} psql -X -q -v ON_ERROR_STOP=1 -d "$(cluster_conninfo maint)" -c {} >/dev/null
	have=$n
	echo "created in $((SECONDS - t0)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	parts=$(((n + ACTIVE) * PARTS))
	timed new idle >/dev/null	# settle: nothing due left over from creation
	read -r a b c d e f g h _ <<<"$(point idle)"
	echo "idle: new $a ms (CPU $b) cold, $c ms (CPU $d) warm; old $e ms (CPU $f) cold, $g ms (CPU $h) warm"
	read -r aa ab ac ad ae af ag ah made <<<"$(point active)"
	echo "active: new $aa ms (CPU $ab) cold, $ac ms (CPU $ad) warm; old $ae ms (CPU $af) cold, $ag ms (CPU $ah) warm; $made segments made per pass"
	rows+=("$n $parts $a $b $c $d $e $f $g $h $aa $ab $ac $ad $ae $af $ag $ah $made $(cut -d' ' -f1 /proc/loadavg)")
done
cluster_stop maint

mq_phase "results (medians of $ROUNDS rounds)"
table="| topics | partitions | state | new pass, cold: ms (CPU) | new, warm: ms (CPU) | old pass, cold: ms (CPU) | old, warm: ms (CPU) | new/old, warm CPU | new, warm: CPU µs per partition | load average |
|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
[[ -n "$DATA" ]] && echo "# topics partitions idle: new_cold new_cold_cpu new_warm new_warm_cpu old_cold old_cold_cpu old_warm old_warm_cpu, active: the same, made load" >"$DATA"
for row in "${rows[@]}"; do
	table+="
$(echo "$row" | awk '{ printf "| %d | %d | idle | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %s | %.1f | %s |\n",
		$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ($10 > 0 ? sprintf("%.2f", $6 / $10) : "-"), $6 * 1000 / $2, $20
	printf "| %d | %d | active (%d segments made) | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %s | %.1f | %s |",
		$1, $2, $19, $11, $12, $13, $14, $15, $16, $17, $18, ($18 > 0 ? sprintf("%.2f", $14 / $18) : "-"), $14 * 1000 / $2, $20 }')"
	[[ -n "$DATA" ]] && echo "$row" >>"$DATA"
done
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
