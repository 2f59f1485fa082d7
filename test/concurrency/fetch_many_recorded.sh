#!/usr/bin/env bash
# A follower's fetch of many partitions (mq.replica_fetch_many) that a
# record wakes on a partition whose progress it recorded when it went idle
# records none, and so does not take that partition's progress lock,
# which the other follower's fetch of the same record may hold (here a
# third session holds it): the answer comes at once.  As a single
# partition's long poll (fetch_long_poll.sh; mq._replica_fetch_look's
# recorded).
# Its next fetch, one record on, records the progress as before (it
# acknowledges the record).
#
# This database leads two partitions replicated on 1, 2 and 3; replica 2
# fetches both in one session.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('fmr', 2);
SELECT mq.replica_become_leader('fmr', p, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2, 3]) FROM generate_series(0, 1) p;
CREATE VIEW fmr_ov AS
SELECT ARRAY[mq._offsets_version(topic_id, 0), mq._offsets_version(topic_id, 1)] AS v
  FROM mq.topic WHERE topic_name = 'fmr';
-- replica 2 fetches both partitions at 0 without a wait: its progress is
-- recorded at 0 on each
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fmr', 'fmr'], ARRAY[0, 1], ARRAY[1, 1],
                                           ARRAY[0, 0]::bigint[], (SELECT v FROM fmr_ov), 100, 0);
SQL
recorded() { q -c "SELECT last_fetch_at || ' ' || log_end_offset FROM mq.replica_progress rp
	JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'fmr' AND rp.partition = 0 AND rp.replica_id = 2"; }
before=$(recorded)
[[ "$before" == *" 0" ]] || fail "replica 2's progress on partition 0 is '$before', expected at 0"

# replica 2, idle on both, long-polls for up to 60 s
PGAPPNAME=fmr_poll psql -X -qAt -v ON_ERROR_STOP=1 -c "SELECT i || ' ' || (batch).base_offset || ' '
	|| coalesce(array_length((batch).vals, 1), 0) FROM mq.replica_fetch_many(2, ARRAY['fmr', 'fmr'],
	ARRAY[0, 1], ARRAY[1, 1], ARRAY[0, 0]::bigint[], (SELECT v FROM fmr_ov), 100, 60000)" \
	> "$work/poll.out" 2>&1 &
poll=$!
wait_for "application_name = 'fmr_poll' AND wait_event_type = 'Extension'" || fail "the long poll did not wait"

# another session holds partition 0's progress lock (as the other
# follower's fetch of the record may)
hold_progress_lock fmr "$work"

# a record on partition 0 ends the long poll at once, while the lock is held
q -c "SELECT mq.send('fmr', NULL::bytea, 'one'::bytea, partition => 0)" >/dev/null
ends_within "$poll" 20 ||
	fail "the long poll did not end within 20 s of the record (waiting for the progress lock?)"
wait "$poll" || fail "the long poll failed: $(cat "$work/poll.out")"
[[ "$(cat "$work/poll.out")" == '1 0 1' ]] ||
	fail "the long poll answered '$(cat "$work/poll.out")', expected partition 0's record alone (1 0 1)"
[[ "$(recorded)" == "$before" ]] || fail "the woken fetch recorded the follower's progress again"
release_progress_lock

# replica 2 appended the record and fetches at 1: that records its progress
q -c "SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fmr', 'fmr'], ARRAY[0, 1], ARRAY[1, 1],
	ARRAY[1, 0]::bigint[], (SELECT v FROM fmr_ov), 100, 60000)" >/dev/null
[[ "$(recorded)" == *" 1" ]] || fail "replica 2's fetch at 1 left its progress at '$(recorded)', expected at 1"
echo "ok: a record woke a session's long poll and was answered without the progress lock; the next fetch" \
	"recorded the progress"
