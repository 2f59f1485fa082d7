#!/usr/bin/env bash
# Exactly-once pipeline throughput against the same pipeline at-least-once
# (issue: exactly-once, acceptance).  Topic A (4 partitions) is loaded
# with records; two pgbench clients move batches of 100 from A to topic B
# and an application table:
#   exactly-once   one transaction: poll, send_batch to B, insert rows,
#                  commit_polled
#   at-least-once  poll in its own transaction, then send_batch + insert in
#                  a second, then the offset commit in a third
# Each mode runs for the same time on its own copy of the data, alternated
# three times; the median records/s and the ratio are printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

SECONDS_PER_RUN="${EOS_SECONDS:-8}"
RECORDS=200000

mq_phase "build"
mq_build_install || mq_die "build/install failed"
cluster_start eos
work=$(mktemp -d)
chmod 755 "$work"
mq_on_exit "rm -rf '$work'"
psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE EXTENSION mq;
SELECT mq.create_topic('A', 4, '{"segment.records": 1000000}');
SELECT mq.create_topic('B', 4, '{"segment.records": 1000000}');
SELECT count(*) FROM generate_series(0, 3) p,
       LATERAL mq.send_batch('A', NULL, (SELECT array_agg(convert_to(repeat('x', 90) || i, 'UTF8'))
                                            FROM generate_series(1, $RECORDS / 4) i), partition => p);
CREATE TABLE app (topic text, partition int, msg_offset bigint, value bytea);
-- one step of each pipeline; returns the records moved
CREATE FUNCTION eos_step(g text) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE n int;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS batch (LIKE mq.record) ON COMMIT DELETE ROWS;
    INSERT INTO batch SELECT * FROM mq.poll(g, 'A', 100);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM mq.send_batch('B', array_agg(key), array_agg(value)) FROM batch HAVING count(*) > 0;
    INSERT INTO app SELECT topic, partition, msg_offset, value FROM batch;
    PERFORM mq.commit_polled(g, 'A');
    RETURN n;
END \$\$;
SQL
cat > "$work/eos.sql" <<'SQL'
SELECT eos_step(:group);
SQL
# at-least-once: three transactions per batch, the client carrying the rows
cat > "$work/alos.sql" <<'SQL'
BEGIN;
CREATE TEMP TABLE IF NOT EXISTS held (LIKE mq.record);
TRUNCATE held;
INSERT INTO held SELECT * FROM mq.poll(:group, 'A', 100);
COMMIT;
BEGIN;
SELECT count(*) FROM mq.send_batch('B', (SELECT array_agg(key) FROM held), (SELECT coalesce(array_agg(value), '{}') FROM held));
INSERT INTO app SELECT topic, partition, msg_offset, value FROM held;
COMMIT;
SELECT mq.commit_offset(:group, 'A', partition, max(msg_offset) + 1) FROM held GROUP BY partition;
SQL

moved() { psql -X -At -c "SELECT coalesce(sum(mq.committed_offset('$1', 'A', p)), 0) FROM generate_series(0, 3) p"; }
declare -a eos alos
for run in 1 2 3; do
	for mode in eos alos; do
		g="$mode-$run"
		pgbench -n -c 2 -j 2 -T "$SECONDS_PER_RUN" -D group="'$g'" -f "$work/$mode.sql" > "$work/$g.out" 2>&1 ||
			{ cat "$work/$g.out"; exit 1; }
		rate=$(awk -v n="$(moved "$g")" -v s="$SECONDS_PER_RUN" 'BEGIN {printf "%.0f", n / s}')
		echo "run $run $mode: $rate records/s"
		if [[ $mode == eos ]]; then eos+=("$rate"); else alos+=("$rate"); fi
	done
done
cluster_stop
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
e=$(median "${eos[@]}")
a=$(median "${alos[@]}")
echo
echo "| pipeline, batches of 100, 2 workers | records/s (median of 3) |"
echo "|---|---|"
echo "| exactly-once (one transaction per batch) | $e |"
echo "| at-least-once (poll, process, commit) | $a |"
echo "| ratio exactly-once / at-least-once | $(awk -v e="$e" -v a="$a" 'BEGIN {printf "%.2f", e / a}') |"
