#!/usr/bin/env bash
# Retention while pg_dump runs (issue 21, item 6; docs/operations.md,
# "Maintenance and locks").  pg_dump holds ACCESS SHARE on every table it
# dumps until it ends; retention's DROP TABLE of a segment needs ACCESS
# EXCLUSIVE on it and on the partition's table.  The DROP used to wait,
# inside a maintenance pass that held the partition's produce lock (it had
# made the segment ahead), so producers stalled for the length of the dump.
# Here a session holds the dump's locks (LOCK TABLE ... IN ACCESS SHARE
# MODE on the topics' tables, as pg_dump takes them) during a maintenance
# pass: the pass must not wait, a producer must not wait, the segment stays;
# once the "dump" ends, the next pass drops it.  The same for a roll by
# segment.ms (which detaches and re-attaches the segment being written).
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# closed segments older than retention.ms go at once
q -c "SELECT mq.create_topic('rd', 1, '{\"segment.records\": 10, \"retention.ms\": 1}')" >/dev/null
tid=$(q -c "SELECT topic_id FROM mq.topic WHERE topic_name = 'rd'")
send() { q -c "SELECT count(*) FROM mq.send_batch('rd', NULL, (SELECT array_agg('v'::bytea) FROM generate_series(1, $1)), partition => 0)" >/dev/null; }
log_start() { q -c "SELECT log_start_offset FROM mq.partition_state WHERE topic_id = $tid"; }
send 25
# no segment ahead yet (a record in the last one): the pass makes one,
# under the produce lock
for _ in $(seq 1 30); do
	[[ "$(q -c "SELECT mq._segment_ahead($tid, 0)")" == f ]] && break
	send 1
done
[[ "$(q -c "SELECT mq._segment_ahead($tid, 0)")" == f ]] || fail "the produce path keeps a segment ahead"
# the log end is the last segment's base; a record in it makes the pass
# (which keeps the last segment unwritten) create the next one
send 1
records=$(q -c "SELECT count(*) FROM mq.fetch('rd', 0, 0, 1000)")
# a topic whose segment being written is due for a roll by segment.ms
q -c "SELECT mq.create_topic('rr', 1, '{\"segment.records\": 10, \"segment.ms\": 1}')" >/dev/null
q -c "SELECT count(*) FROM mq.send_batch('rr', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 0)" >/dev/null
rr_first() { q -c "SELECT base_offset || '-' || end_offset FROM mq.segments WHERE topic = 'rr' ORDER BY base_offset LIMIT 1"; }

# the "dump": ACCESS SHARE on the topic's table and every table under it
mkfifo "$work/d"
PGAPPNAME=rd_dump psql -X -qAt -v ON_ERROR_STOP=1 < "$work/d" > "$work/d.out" 2>&1 &
exec 3> "$work/d"
echo "BEGIN; LOCK TABLE $(q -c "SELECT string_agg(relid::regclass::text, ', ') FROM mq.topic") IN ACCESS SHARE MODE;" >&3
wait_for "application_name = 'rd_dump' AND state = 'idle in transaction'" || fail "the dump session did not lock"

# a maintenance pass meanwhile: it must not wait for the dump
PGAPPNAME=rd_maint psql -X -qAt -v ON_ERROR_STOP=1 -c "SELECT mq.run_maintenance()" > "$work/m.out" 2>&1 &
m=$!
for _ in $(seq 1 200); do
	kill -0 "$m" 2>/dev/null || break
	[[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rd_maint' AND wait_event_type = 'Lock'")" == 0 ]] || break
	sleep 0.1
done
# a producer meanwhile: it must not wait for maintenance
PGOPTIONS='-c statement_timeout=5s' send 5 ||
	fail "a producer waited while maintenance ran beside a dump: $(q -c "SELECT string_agg(application_name || ' ' || coalesce(wait_event_type, '-'), ', ') FROM pg_stat_activity WHERE application_name LIKE 'rd_%'")"
if kill -0 "$m" 2>/dev/null; then
	fail "maintenance waited for the dump's locks"
fi
wait "$m" || fail "maintenance failed: $(cat "$work/m.out")"
[[ "$(log_start)" == 0 ]] || fail "retention dropped a segment the dump holds"
[[ "$(q -c "SELECT count(*) FROM mq.segment WHERE topic_id = $tid AND base_offset = 0")" == 1 ]] ||
	fail "the segment the dump holds is gone"
[[ "$(q -c "SELECT mq._segment_ahead($tid, 0)")" == t ]] || fail "the pass made no segment ahead"
[[ "$(rr_first)" == 0-10 ]] || fail "segment.ms rolled a segment the dump holds: $(rr_first)"
PGOPTIONS='-c statement_timeout=5s' q -c "SELECT count(*) FROM mq.send_batch('rr', NULL, ARRAY['d']::bytea[], partition => 0)" >/dev/null ||
	fail "a producer of the topic due for a roll waited"

# the dump ends: the next pass drops the closed segments
echo "COMMIT;" >&3
exec 3>&-
wait
q -c "SELECT mq.run_maintenance()" >/dev/null
end=$(q -c "SELECT mq._log_end_offset($tid, 0)")
[[ "$end" == $((records + 5)) ]] || fail "log end $end, expected $((records + 5))"
[[ "$(log_start)" == $((end / 10 * 10)) ]] || fail "after the dump, log start $(log_start) for log end $end"
[[ "$(q -c "SELECT count(*) FROM mq.fetch('rd', 0, $(log_start), 1000)")" == $((end - end / 10 * 10)) ]] ||
	fail "the records of the segment being written are not all there"
[[ "$(rr_first)" == 0-4 ]] || fail "segment.ms did not roll after the dump: $(rr_first)"
echo "ok: retention and segment.ms left the dump's segments and the producers alone, and did their work after the dump"
