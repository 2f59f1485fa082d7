#!/usr/bin/env bash
# Record timestamps: what they cost in WAL, and what mq.offsets_for_times
# costs on a 1,000,000-record partition.  Figures in docs/design.md.
#
#   W  WAL bytes per record of mq.send_batch, 1,000 x 100 B records per
#      call: without timestamps (CreateTime now), with producer timestamps
#      out of order (so max_timestamp is stored for some rows), and on a
#      LogAppendTime topic.  Deterministic: pg_current_wal_lsn() around
#      the calls.  On an mq without record timestamps (an older build) only
#      the first is measured, for the before/after comparison.
#   T  mq.offsets_for_times on one partition of N records (default
#      1,000,000, one segment) whose CreateTimes go up by 1 ms with up to
#      5 s of jitter: us per lookup over 1,000 random times, the index
#      probes of one lookup, and for comparison the scan that answers the
#      same question without the time index.
#
# It uses the INSTALLED extension (build and install first; with
# MQ_PG_ROOT, the private copy).  The server: a throwaway cluster
# (scripts/lib.sh), stopped and removed at exit.
#
# Usage: test/bench/timeindex.sh [--records N]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

RECORDS=1000000
while (($#)); do
	case "$1" in
	--records) RECORDS="$2"; shift 2 ;;
	*) mq_die "usage: $0 [--records N]" ;;
	esac
done

cluster_start bench-timeindex "shared_buffers = 512MB" "max_wal_size = 4GB" >/dev/null
q() { cluster_psql bench-timeindex -At "$@"; }
q -c "CREATE EXTENSION mq" >/dev/null

has_ts="$(q -c "SELECT to_regproc('mq.offsets_for_times') IS NOT NULL")"

# wal_per_record TOPIC EXTRA_ARGS: WAL bytes per record over 20 batches
wal_per_record() {
	q <<-SQL
	SELECT pg_current_wal_lsn() AS s \gset
	DO \$\$ BEGIN
	    FOR i IN 1 .. 20 LOOP
	        PERFORM mq.send_batch('$1', NULL,
	            (SELECT array_agg(decode(repeat('ab', 100), 'hex')) FROM generate_series(1, 1000))
	            $2);
	    END LOOP;
	END \$\$;
	SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), :'s') / 20000.0, 1);
	SQL
}

q -c "SELECT mq.create_topic('w-now', 1)" >/dev/null
echo "W  WAL bytes per record, CreateTime now:            $(wal_per_record w-now '')"
if [[ "$has_ts" != t ]]; then
	echo "(this mq has no record timestamps: nothing more to measure)"
	exit 0
fi
q -c "SELECT mq.create_topic('w-jitter', 1)" >/dev/null
echo "W  WAL bytes per record, CreateTime out of order:   $(wal_per_record w-jitter ", timestamps => (SELECT array_agg(clock_timestamp() - random() * interval '5 s') FROM generate_series(1, 1000))")"
q -c "SELECT mq.create_topic('w-append', 1, '{\"message.timestamp.type\": \"LogAppendTime\"}')" >/dev/null
echo "W  WAL bytes per record, LogAppendTime:             $(wal_per_record w-append '')"

q -c "SELECT mq.create_topic('t', 1, '{\"segment.records\": $RECORDS}')" >/dev/null
q <<-SQL >/dev/null
SELECT mq.send_batch('t', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 10000)),
    timestamps => (SELECT array_agg('2020-01-01+00'::timestamptz + (b * 10000 + i) * interval '1 ms'
                                    - random() * interval '5 s')
                     FROM generate_series(1, 10000) i))
  FROM generate_series(0, $RECORDS / 10000 - 1) b;
VACUUM ANALYZE;
SQL
span_ms=$RECORDS
q <<-SQL
SELECT count(*) AS segments FROM mq.segments WHERE topic = 't' AND end_offset <= $RECORDS + 1 \gset
\echo T  records: $RECORDS in :segments segment(s)
SELECT array_agg('2020-01-01+00'::timestamptz + (random() * $span_ms) * interval '1 ms') AS times
  FROM generate_series(1, 1000) \gset
SELECT clock_timestamp() AS s \gset
SELECT count(mq.offsets_for_times('t', 0, t)) FROM unnest(:'times'::timestamptz[]) t \g /dev/null
SELECT round(extract(epoch FROM clock_timestamp() - :'s') * 1e6 / 1000, 1) AS us \gset
\echo T  mq.offsets_for_times: :us us per lookup (mean of 1,000)
SET client_min_messages = debug1;
SELECT mq.offsets_for_times('t', 0, '2020-01-01+00'::timestamptz + ($span_ms / 3) * interval '1 ms') \g /dev/null
RESET client_min_messages;
SELECT ps.relid AS rel FROM mq.partition_state ps JOIN mq.topic USING (topic_id) WHERE topic_name = 't' \gset
SELECT clock_timestamp() AS s \gset
SELECT min(msg_offset) FROM :rel WHERE coalesce("timestamp", created_at) >= '2020-01-01+00'::timestamptz + ($span_ms / 3) * interval '1 ms' \g /dev/null
SELECT min(msg_offset) FROM :rel WHERE coalesce("timestamp", created_at) >= '2020-01-01+00'::timestamptz + ($span_ms / 3 * 2) * interval '1 ms' \g /dev/null
SELECT round(extract(epoch FROM clock_timestamp() - :'s') * 1e6 / 2, 1) AS us \gset
\echo T  the same lookup as a scan (no time index): :us us per lookup (mean of 2)
SQL
