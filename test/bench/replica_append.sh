#!/usr/bin/env bash
# A follower's append (mq.replica_append) and the leader's fetch that
# feeds it (mq.replica_fetch), on one throwaway cluster: records per
# second, WAL bytes per record and the batch's size on the wire, for
# batches of consecutive offsets (the common case), or with --gaps for a
# compacted range (every other record removed: the batches carry offsets).
# Two topics of one database stand for the leader and the follower, as in
# test/pgtap/replica_*.sql; no broker runs.
#
# The leader's partition gets BATCHES x 1,000 records of 100 B (segments
# of 10,000; with --gaps every other record has the same key and a pass
# removes all of those but the last, in the closed segments); the leader
# serves them in fetches of 1,000 records (timed), kept in a table; each
# run then appends them to a fresh follower topic, one transaction per
# batch as mq-broker does (commit with a local flush), and reads the WAL
# position before and after.  Printed: the median of --runs runs.
#
# Usage: test/bench/replica_append.sh [--batches N] [--runs N] [--gaps]
# It uses the INSTALLED extension (MQ_PG_ROOT honoured, as core.sh), so
# that two builds are compared by installing each in turn.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR/../..
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

BATCHES=100 RUNS=3 GAPS=0
while (($#)); do
	case "$1" in
	--batches) BATCHES="${2:?--batches N}"; shift ;;
	--runs) RUNS="${2:?--runs N}"; shift ;;
	--gaps) GAPS=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
CONFIG='{"segment.records": 10000}'
((GAPS)) && CONFIG='{"segment.records": 10000, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0}'

cluster_start rappend "shared_buffers = '512MB'" "autovacuum = off" "max_wal_size = '8GB'" \
	"checkpoint_timeout = '1h'" "log_min_messages = warning"
# a database the maintenance worker (mq.database) leaves alone: the appends
# make the segments they need, the same in every run (a worker's round
# racing an append's segment creation fails the append: two CREATE TABLEs
# of one segment)
createdb rappend
export PGDATABASE=rappend
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION mq'
q >/dev/null <<SQL
SELECT mq.create_topic('l', 1, '$CONFIG');
SELECT mq.replica_become_leader('l', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
DO \$\$
BEGIN
    FOR b IN 1 .. $BATCHES LOOP
        PERFORM mq.send_batch('l', (SELECT array_agg(convert_to(CASE WHEN $GAPS = 1 AND i % 2 = 1 THEN 'same'
                                                                     ELSE b || '-' || i END, 'UTF8') ORDER BY i)
                                      FROM generate_series(1, 1000) i),
                              (SELECT array_agg(convert_to(repeat('x', 96) || lpad(i::text, 4, '0'), 'UTF8') ORDER BY i)
                                 FROM generate_series(1, 1000) i), partition => 0);
    END LOOP;
END \$\$;
SELECT mq.replica_leader_state('l', 0, 1);
SELECT mq.compact('l');
SQL
# where the follower's log ends after a batch: its last record + 1 (a build
# from before batches carried offsets has base_offset + records only)
NEXT='b.base_offset + cardinality(b.vals)'
[[ "$(q -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'mq.replica_batch'::regclass
              AND attname = 'offsets'")" == 1 ]] && NEXT="coalesce(b.offsets[cardinality(b.offsets)] + 1, $NEXT)"
fetch_ms="$(q <<SQL
CREATE TABLE fetched (i integer PRIMARY KEY, b mq.replica_batch);
SELECT extract(epoch FROM clock_timestamp()) * 1000 AS t0 \gset
DO \$\$
DECLARE
    v_next bigint := 0;
    v_i integer := 0;
    b mq.replica_batch;
BEGIN
    WHILE v_next < mq._log_end_offset(mq._topic_id('l'), 0) LOOP
        b := mq.replica_fetch('l', 0, 1, 2, v_next, 1000, 0);
        INSERT INTO fetched VALUES (v_i, b);
        v_next := $NEXT;
        v_i := v_i + 1;
    END LOOP;
END \$\$;
SELECT round(extract(epoch FROM clock_timestamp()) * 1000 - :t0);
SQL
)"
LEO="$(q -c "SELECT log_end_offset FROM mq.partitions WHERE topic = 'l'")"
RECORDS="$(q -c 'SELECT sum(cardinality((b).vals)) FROM fetched')"
FETCHES="$(q -c 'SELECT count(*) FROM fetched')"
wire="$(q -c 'SELECT round(avg(octet_length(record_send(b)))) FROM fetched')"
offsets="$(q -c "SELECT count(*) FILTER (WHERE (b).offsets IS NOT NULL) FROM fetched" 2>/dev/null || echo n/a)"
script="$MQ_CLUSTER/append.sql"
rates=() wals=()
for run in $(seq 1 "$RUNS"); do
	q -c "SELECT mq.create_topic('f$run', 1, '$CONFIG')" \
		-c "SELECT mq.replica_become_follower('f$run', 0, 1, 1)" >/dev/null
	for ((i = 0; i < FETCHES; i++)); do
		echo "SELECT mq.replica_append('f$run', 0, 1, (SELECT b FROM fetched WHERE i = $i));"
	done >"$script"
	lsn0="$(q -c 'SELECT pg_current_wal_lsn()')"
	t0="$(date +%s%N)"
	q -f "$script" >/dev/null
	t1="$(date +%s%N)"
	end="$(q -c "SELECT log_end_offset FROM mq.partitions WHERE topic = 'f$run'")"
	[[ "$end" == "$LEO" ]] || mq_die "run $run: the follower ends at $end, not $LEO"
	wal="$(q -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')")"
	rates+=("$((RECORDS * 1000000000 / (t1 - t0)))")
	wals+=("$(awk -v w="$wal" -v n="$RECORDS" 'BEGIN { printf "%.1f", w / n }')")
	printf 'run %d: %s records/s, %s WAL bytes/record\n' "$run" "${rates[-1]}" "${wals[-1]}"
done
printf '%d records of %d offsets; leader fetch: %s ms for %d fetches (%d records/s); batch on the wire: %s bytes (%s with offsets)\n' \
	"$RECORDS" "$LEO" "$fetch_ms" "$FETCHES" "$((RECORDS * 1000 / (fetch_ms > 0 ? fetch_ms : 1)))" "$wire" "$offsets"
printf 'follower append, median of %d: %s records/s, %s WAL bytes/record\n' "$RUNS" \
	"$(printf '%s\n' "${rates[@]}" | mq_median)" "$(printf '%s\n' "${wals[@]}" | mq_median)"
cluster_stop
