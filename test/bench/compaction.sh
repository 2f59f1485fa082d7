#!/usr/bin/env bash
# Log compaction: cost and space (docs/benchmarks.md, "Compaction").
# Produces N records (default 1,000,000) over K keys (default 10,000),
# 100-byte values, into a compacted topic with segments of 100,000
# records, then runs the cleaner by hand:
#   pass     one mq.compact(): the DELETE of superseded records
#   rewrite  the next mq.compact(): CLUSTER of the segments that lost records
# and prints records removed per second, the bytes before, after the pass
# and after the rewrite, the rewrite time per segment (how long a reader
# of that closed segment could wait), and the throughput of a
# single-record producer of the active segment alone and during the pass.
# Usage: bash test/bench/compaction.sh [records] [keys]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
N="${1:-1000000}"
K="${2:-10000}"

mq_phase "build"
mq_build_install || mq_die "build/install failed"
cluster_start compactbench "mq.maintenance_interval = 3600000"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION mq" \
	-c "SELECT mq.create_topic('cb', 1, '{\"cleanup.policy\": \"compact\", \"segment.records\": 100000,
	     \"min.cleanable.dirty.ratio\": 0}')" >/dev/null
work=$(mktemp -d)
chmod 755 "$work"
mq_on_exit "rm -rf '$work'"

mq_phase "produce $N records over $K keys"
psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
DO \$\$
BEGIN
    FOR b IN 0 .. ($N - 1) / 10000 LOOP
        PERFORM count(*) FROM mq.send_batch('cb',
            (SELECT array_agg('key-' || (i % $K) ORDER BY i) FROM generate_series(b * 10000, least(b * 10000 + 9999, $N - 1)) i),
            (SELECT array_agg(rpad('value-' || i, 100, '.') ORDER BY i) FROM generate_series(b * 10000, least(b * 10000 + 9999, $N - 1)) i),
            partition => 0);
        COMMIT;
    END LOOP;
END \$\$;
SQL
bytes() { psql -X -At -c "SELECT sum(bytes) FROM mq.segments WHERE topic = 'cb'"; }
records() { psql -X -At -c "SELECT count(*) FROM mq.fetch('cb', 0, 0, 1000000)"; }
before=$(bytes)

# the alternative: copy the survivors into new tables (to be swapped in
# for the old segments), timed on the same data; dropped again
psql -X -q -c "CREATE TABLE swap_alt (LIKE mq_log.topic_1_p0_0)" >/dev/null
start=$(date +%s.%N)
psql -X -q -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
INSERT INTO swap_alt
WITH m AS (SELECT key, max(msg_offset) AS o FROM mq_log.topic_1_p0 WHERE msg_offset < 1000000 GROUP BY key)
SELECT s.* FROM mq_log.topic_1_p0 s JOIN m ON s.key = m.key AND s.msg_offset = m.o ORDER BY s.msg_offset;
CREATE UNIQUE INDEX ON swap_alt (msg_offset);
SQL
swap_s=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')
psql -X -q -c "DROP TABLE swap_alt" >/dev/null

echo "SELECT * FROM mq.send('cb', 'hot', 'x', partition => 0);" > "$work/p.sql"
alone=$(pgbench -n -T 3 -c 1 -f "$work/p.sql" 2>&1 | grep -oP 'tps = \K[0-9.]+')

mq_phase "pass (DELETE), with a producer of the active segment running"
pgbench -n -T 3 -c 1 -f "$work/p.sql" > "$work/during.out" 2>&1 &
start=$(date +%s.%N)
removed=$(psql -X -At -c "SELECT mq.compact('cb')")
pass_s=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')
wait
during=$(grep -oP 'tps = \K[0-9.]+' "$work/during.out")
after_pass=$(bytes)

mq_phase "rewrite (CLUSTER of each segment that lost records)"
segs=$(psql -X -At -c "SELECT sg.relid FROM mq.cleaner_rewrite w JOIN mq.segment sg USING (topic_id, partition, base_offset)")
start=$(date +%s.%N)
psql -X -At -c "SELECT mq.compact('cb')" >/dev/null
rewrite_s=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')
after_rewrite=$(bytes)
left=$(records)
cluster_stop

mb() { awk -v b="$1" 'BEGIN {printf "%.1f MB", b / 1048576}'; }
echo
echo "| $N records over $K keys | |"
echo "|---|---|"
echo "| records removed by the pass | $removed |"
echo "| pass (DELETE) | $pass_s s, $(awk -v r="$removed" -v s="$pass_s" 'BEGIN {printf "%d", r / s}') records/s |"
echo "| rewrite (CLUSTER, $(echo "$segs" | grep -c .) segments) | $rewrite_s s |"
nseg=$(echo "$segs" | grep -c .)
echo "| per segment (ACCESS EXCLUSIVE on that closed segment) | $(awk -v t="$rewrite_s" -v n="$nseg" 'BEGIN {printf "%.2f", t / n}') s |"
echo "| alternative: copy the survivors to new tables (no swap) | $swap_s s |"
echo "| log size before | $(mb "$before") |"
echo "| after the pass | $(mb "$after_pass") |"
echo "| after the rewrite | $(mb "$after_rewrite") ($left records) |"
echo "| producer of the active segment, alone | $alone tps |"
echo "| producer of the active segment, during the pass | $during tps |"
