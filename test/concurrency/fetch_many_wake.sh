#!/usr/bin/env bash
# A follower's fetch of many partitions (mq.replica_fetch_many) waits while
# every partition is idle, and a commit to any one of them ends the wait
# at once (mq._replica_wait_any: the backend watches every commit's
# wake-up, src/replica_wait.c).  The answer holds that partition alone:
# the idle ones' progress is not due.  A wait that missed the commit would
# sleep its 60 s and then answer all three.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('fmw', 3);
SELECT mq.replica_become_leader('fmw', p, 1, 1, ARRAY[1, 2], ARRAY[1, 2]) FROM generate_series(0, 2) p;
CREATE VIEW fmw_ov AS SELECT array_agg(mq._offsets_version(t.topic_id, p) ORDER BY p) AS v
  FROM mq.topic t, generate_series(0, 2) p WHERE t.topic_name = 'fmw';
-- the follower's progress at the (empty) log ends is recorded: idle
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fmw', 'fmw', 'fmw'], ARRAY[0, 1, 2], ARRAY[1, 1, 1],
                                           ARRAY[0, 0, 0]::bigint[], (SELECT v FROM fmw_ov), 100, 0);
SQL

start=$(date +%s)
PGAPPNAME=fmw_fetch psql -X -qAt -v ON_ERROR_STOP=1 -c "SELECT i, (batch).vals FROM mq.replica_fetch_many(2,
	ARRAY['fmw', 'fmw', 'fmw'], ARRAY[0, 1, 2], ARRAY[1, 1, 1], ARRAY[0, 0, 0]::bigint[], (SELECT v FROM fmw_ov),
	100, 60000)" > "$work/fetch.out" 2>&1 &
fetch=$!
wait_for "application_name = 'fmw_fetch' AND wait_event_type = 'Extension'" || fail "the fetch did not wait"
q -c "SELECT mq.send('fmw', NULL::bytea, 'one'::bytea, partition => 1)" >/dev/null
wait "$fetch" || fail "the fetch failed: $(cat "$work/fetch.out")"
took=$(($(date +%s) - start))

[[ "$(cat "$work/fetch.out")" == '2|{"\\x6f6e65"}' ]] || fail "the fetch answered: $(cat "$work/fetch.out")"
((took < 30)) || fail "the fetch took $took s: the commit did not end its wait"
echo "ok: the commit to one partition ended the wait of a fetch of three, which answered that one"
