#!/usr/bin/env bash
# The maintenance pass against the number of topics (issue 25, item 5: a
# pass over 10,000 topics under 1 s), in ONE run on ONE throwaway cluster:
# topics of --partitions partitions are created in steps (1,000, 5,000,
# 10,000 by default); after each step two passes are timed, each in a
# fresh session (wall time, and the backend's CPU from /proc, in 10 ms
# ticks), alternating for --rounds rounds (medians):
#
#   new   mq.run_maintenance(): partitions due are those noted in
#         mq.last_segment_written by the produce path
#   old   the pass before the note, the same batches with the last
#         segment's file size asked for every partition (as
#         mq._file_unwritten did: an index lookup in mq.segment, the
#         pg_class row, a stat(); emulated here with pg_relation_filepath
#         and pg_stat_file, since that C function is gone)
#
# each over the same cluster in two states:
#
#   idle    no record sent since the last pass: nothing is due
#   active  --active topics (segment.records 100, retention.ms 1 h) get
#           100 records in every partition before each pass, so that each
#           of their partitions has its last segment written and the pass
#           makes it a segment ahead (DDL) and applies their retention
#
# Printed per point: ms per pass (wall, CPU), µs per partition, segments
# made, and new/old.  The maintenance worker is kept out of the way
# (mq.maintenance_interval one hour).  Not a test: prints figures (with
# --out FILE a markdown table, with --data FILE the plot's input) and never
# fails on them.  Uses the INSTALLED extension.
#
# Usage: test/bench/maintenance.sh [--steps "1000 5000 10000"] [--partitions N]
#                                  [--active N] [--rounds N] [--out FILE] [--data FILE]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

STEPS="1000 5000 10000" PARTS=4 ACTIVE=20 ROUNDS=3 OUT="" DATA=""
while (($#)); do
	case "$1" in
	--steps) STEPS="${2:?}"; shift ;;
	--partitions) PARTS="${2:?}"; shift ;;
	--active) ACTIVE="${2:?}"; shift ;;
	--rounds) ROUNDS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--data) DATA="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done

mq_bench_work maint

mq_phase "a throwaway cluster (fsync on)"
cluster_start maint "fsync = on" "shared_buffers = 256MB" "max_wal_size = 4GB" \
	"log_min_messages = warning" "mq.maintenance_interval = 3600000"
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
    b := bench_old_batch(NULL, 1000);
    WHILE b.last_topic IS NOT NULL LOOP
        v_created := v_created + b.created;
        b := bench_old_batch(b.last_topic, 1000);
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
TICK_MS="$(awk -v h="$(getconf CLK_TCK)" 'BEGIN { print 1000 / h }')"

# timed KIND: one pass (new: mq.run_maintenance(), old: bench_old_pass())
# in a fresh session; prints "wall_ms cpu_ms segments_made"
timed() {
	local fn=mq.run_maintenance
	[[ "$1" == old ]] && fn=bench_old_pass
	cluster_psql maint -A -t -F ' ' <<-EOF
		SELECT bench_ticks() AS c0, clock_timestamp() AS t0 \gset
		SELECT $fn() AS made \gset
		SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1000, 1), (bench_ticks() - :c0) * $TICK_MS, :made;
	EOF
}
# feed: 100 records into every partition of the active topics
feed() {
	sql "SELECT count(*) FROM generate_series(1, $ACTIVE) a, generate_series(0, $PARTS - 1) p,
	       LATERAL mq.send_batch('active' || a, NULL, array_fill('x'::bytea, ARRAY[100]), partition => p)" >/dev/null
}
# point STATE: --rounds alternating pairs of passes; prints the medians
# "new_wall new_cpu old_wall old_cpu made"
point() {
	local r k
	: >"$WORK/new" ; : >"$WORK/old"
	for ((r = 1; r <= ROUNDS; r++)); do
		for k in new old; do
			[[ "$1" == active ]] && feed
			timed "$k" >>"$WORK/$k"
		done
	done
	echo "$(awk '{ print $1 }' "$WORK/new" | mq_median) $(awk '{ print $2 }' "$WORK/new" | mq_median)" \
		"$(awk '{ print $1 }' "$WORK/old" | mq_median) $(awk '{ print $2 }' "$WORK/old" | mq_median)" \
		"$(awk '{ print $3 }' "$WORK/new" | mq_median)"
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
	sql "SELECT 'SELECT mq.create_topic(''t' || i || ''', $PARTS);' FROM generate_series($((have + 1)), $n) i" |
		cluster_psql maint >/dev/null
	have=$n
	echo "created in $((SECONDS - t0)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	parts=$(((n + ACTIVE) * PARTS))
	timed new >/dev/null	# settle: nothing due left over from creation
	read -r nw nc ow oc _ <<<"$(point idle)"
	echo "idle: new $nw ms (CPU $nc), old $ow ms (CPU $oc)"
	read -r aw ac aow aoc made <<<"$(point active)"
	echo "active: new $aw ms (CPU $ac), old $aow ms (CPU $aoc), $made segments made per pass"
	rows+=("$n $parts $nw $nc $ow $oc $aw $ac $aow $aoc $made $(cut -d' ' -f1 /proc/loadavg)")
done
cluster_stop maint

mq_phase "results (medians of $ROUNDS rounds)"
table="| topics | partitions | idle: new pass, ms (CPU) | idle: old pass, ms (CPU) | new/old | new, µs per partition | active: new pass, ms (CPU) | active: old pass, ms (CPU) | new/old | segments made per pass | load average |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
[[ -n "$DATA" ]] && echo "# topics partitions idle_new_ms idle_new_cpu idle_old_ms idle_old_cpu active_new_ms active_new_cpu active_old_ms active_old_cpu made load" >"$DATA"
for row in "${rows[@]}"; do
	table+="
$(echo "$row" | awk '{ printf "| %d | %d | %.0f (%.0f) | %.0f (%.0f) | %.2f | %.1f | %.0f (%.0f) | %.0f (%.0f) | %.2f | %d | %s |",
		$1, $2, $3, $4, $5, $6, $3 / $5, $3 * 1000 / $2, $7, $8, $9, $10, $7 / $9, $11, $12 }')"
	[[ -n "$DATA" ]] && echo "$row" >>"$DATA"
done
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
