#!/usr/bin/env bash
# What leader epochs add to mq-kafka's Fetch statement (h_fetch.c): the
# partition's epoch and its epoch history from the fetch offset on, read
# from mq.leader_epochs beside each partition's bounds.  One throwaway
# cluster, one run: pgbench (-M prepared, one client) of the statement as
# it was (bounds and records) and as it is (with the epoch columns), over
# 8 partitions of 20,000 records each, every partition with an epoch
# history of 3 elections, 100 records a partition a call.  Printed: calls
# per second of each, alternating, the median of --runs, and the ratio.
#
# Usage: test/bench/kafka_epochs.sh [--runs N] [--seconds S]
# It uses the INSTALLED extension (MQ_PG_ROOT honoured, as core.sh).
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

RUNS=3 SECS=10
while (($#)); do
	case "$1" in
	--runs) RUNS="${2:?--runs N}"; shift ;;
	--seconds) SECS="${2:?--seconds S}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done

bench_node kafkaepochs "shared_buffers = '256MB'" "autovacuum = off" "log_min_messages = warning"

psqlq >/dev/null <<'EOF2'
CREATE EXTENSION mq;
SELECT mq.create_topic('be', 8);
-- three elections per partition, as mq.replica_become_leader records them
SELECT count(*) FROM generate_series(0, 7) p, LATERAL (
  SELECT mq.send_batch('be', NULL, (SELECT array_agg(repeat('x', 100)::bytea) FROM generate_series(1, 5000)), partition => p)
    FROM generate_series(1, 4)) s;
INSERT INTO mq.leader_epoch_history (topic_id, partition, leader_epoch, start_offset)
SELECT t.topic_id, p, e, (e - 1) * 5000 FROM mq.topic t, generate_series(0, 7) p, generate_series(1, 3) e
 WHERE t.topic_name = 'be';
UPDATE mq.partition_state SET leader_epoch = 3;
VACUUM ANALYZE;
EOF2

# the arguments of one Fetch of the 8 partitions from random offsets
ARGS="ARRAY['be','be','be','be','be','be','be','be']::text[], ARRAY[0,1,2,3,4,5,6,7]::int4[],
  ARRAY[:o0,:o1,:o2,:o3,:o4,:o5,:o6,:o7]::int8[], array_fill(100, ARRAY[8])::int4[], array_fill(1048576, ARRAY[8])::int4[]"
SETS="$(for i in 0 1 2 3 4 5 6 7; do printf '\\set o%d random(0, 19899)\n' "$i"; done)"
# the statement as h_fetch.c runs it, with (new) and without (old) the epoch columns
fetch_sql() {
	local with="$1" ep="" cols="" lat="" nulls=""
	if [[ "$with" == new ]]; then
		ep=", s.leader_epoch AS ep"
		cols=", r0.ep, e.eps, e.starts"
		lat=" LEFT JOIN LATERAL (SELECT array_agg(q.leader_epoch ORDER BY q.leader_epoch) AS eps,
		        array_agg(q.start_offset ORDER BY q.leader_epoch) AS starts FROM (
		     SELECT w.leader_epoch, w.start_offset FROM (
		       SELECT h.leader_epoch, h.start_offset,
		              lead(h.start_offset) OVER (ORDER BY h.leader_epoch) AS next_start
		         FROM mq.leader_epochs h WHERE h.topic = r0.t AND h.partition = r0.p) w
		      WHERE w.next_start IS NULL OR w.next_start > r0.o
		      ORDER BY w.leader_epoch LIMIT 9) q) e ON r0.lso IS NOT NULL"
		nulls=", NULL::int4, NULL::int4[], NULL::int8[]"
	fi
	cat <<EOF3
$SETS
WITH r0 AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, u.n, u.mb, s.log_start_offset AS lso,
                  s.high_watermark AS hw, s.log_end_offset AS leo$ep
             FROM unnest($ARGS) WITH ORDINALITY AS u(t, p, o, n, mb, i)
             LEFT JOIN mq.partitions s ON s.topic = u.t AND s.partition = u.p),
 r AS (SELECT * FROM r0 WHERE r0.lso IS NOT NULL)
 SELECT r0.i, r0.lso, r0.hw, NULL::int8, NULL::timestamptz, NULL::bytea, NULL::bytea, NULL::bool$cols FROM r0$lat
 UNION ALL
 SELECT r.i, NULL, NULL, f.msg_offset, f.created_at, f.key, f.value, NULL$nulls
   FROM r CROSS JOIN LATERAL mq.fetch(r.t, r.p, r.o, r.n, max_bytes => r.mb) f;
EOF3
}
fetch_sql old >"$W/old.sql"
fetch_sql new >"$W/new.sql"
chmod a+r "$W"/*.sql

declare -A TPS=()
for ((run = 1; run <= RUNS; run++)); do
	for v in old new; do
		out="$("$PGBENCH" -n -M prepared -T "$SECS" -f "$W/$v.sql" 2>&1)" || { printf '%s\n' "$out" >&2; mq_die "pgbench failed: $v"; }
		t="$(sed -nE 's/^tps = ([0-9.]+) \(without.*/\1/p' <<<"$out")"
		TPS[$v]="${TPS[$v]:-} $t"
		printf 'run %d %s: %s calls/s\n' "$run" "$v" "$t"
	done
done
o="$(median "${TPS[old]}")" n="$(median "${TPS[new]}")"
printf 'Fetch statement, 8 partitions x 100 records: without epochs %s calls/s, with epochs %s calls/s, ratio %s\n' \
	"$o" "$n" "$(mq_ratio "$n" "$o")"
cluster_stop kafkaepochs immediate
