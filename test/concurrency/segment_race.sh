#!/usr/bin/env bash
# Segment creation racing maintenance (src/sql/85_maintenance.sql): a
# producer whose batch runs past the last segment creates the next one
# under the partition's produce lock, in its own transaction.  Maintenance
# that wants the same segment meanwhile must not create it too: it waited
# for the producer's uncommitted table and then failed on pg_type's unique
# key (and a follower's append or a producer could be the one failing, if
# maintenance got there first).  Now maintenance makes segments only under
# the produce lock, taken without waiting: a busy partition gets its
# segment on the next pass.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# segments of 10 offsets: [0,10) and [10,20) exist; 10 records fill the
# first, so maintenance would now add [20,30), one whole segment ahead
q >/dev/null <<'SQL'
SELECT mq.create_topic('sr', 1, '{"segment.records": 10}');
SELECT count(*) FROM mq.send_batch('sr', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 10)), partition => 0);
SQL
segments() { q -c "SELECT string_agg(base_offset || '-' || end_offset, ' ' ORDER BY base_offset) FROM mq.segment s JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'sr'"; }
[[ "$(segments)" == "0-10 10-20" ]] || fail "segments at the start: $(segments)"

# A: a producer's batch of 11 runs into [20,30), which it creates; open
mkfifo "$work/a"
PGAPPNAME=sr_a psql -X -qAt -v ON_ERROR_STOP=1 < "$work/a" > "$work/a.out" 2>&1 &
a=$!
exec 3> "$work/a"
echo "BEGIN; SELECT count(*) FROM mq.send_batch('sr', NULL, (SELECT array_agg('y'::bytea) FROM generate_series(1, 11)), partition => 0);" >&3
wait_for "application_name = 'sr_a' AND state = 'idle in transaction'" || fail "the producer did not run"

# B: a maintenance pass meanwhile
PGAPPNAME=sr_b psql -X -qAt -v ON_ERROR_STOP=1 -c "SELECT mq.run_maintenance()" > "$work/b.out" 2>&1 &
b=$!
waited=no
for _ in $(seq 1 100); do
	kill -0 "$b" 2>/dev/null || break
	if [[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sr_b' AND wait_event_type = 'Lock'")" != 0 ]]; then
		waited=yes
		break
	fi
	sleep 0.1
done
echo "COMMIT;" >&3
exec 3>&-
wait "$a" || fail "the producer failed: $(cat "$work/a.out")"
wait "$b" || fail "maintenance failed after waiting for the producer's segment: $(cat "$work/b.out")"
! grep -q WARNING "$work/b.out" || fail "maintenance skipped the topic: $(cat "$work/b.out")"
[[ "$waited" == no ]] || fail "maintenance waited for the producer's uncommitted segment"

# the next pass adds the segment ahead; the log is whole
q -c "SELECT mq.run_maintenance()" >/dev/null
[[ "$(segments)" == "0-10 10-20 20-30 30-40" ]] || fail "segments at the end: $(segments)"
[[ "$(q -c "SELECT count(*) FROM mq.fetch('sr', 0, 0, 100)")" == 21 ]] || fail "the log does not hold 21 records"
echo "ok: maintenance left the producer's new segment to it and made the next one on its next pass"
