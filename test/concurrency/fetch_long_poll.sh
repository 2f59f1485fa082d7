#!/usr/bin/env bash
# A follower's long poll of one partition (mq.replica_fetch) is not ended
# by a new high watermark alone: the follower hears of it with its next
# records (or when the wait runs out), as Kafka's followers do and as a
# fetch of many partitions always did (src/replica_wait.c).  Waking for
# it cost a fetch and an append on the follower per acks=all record
# (docs/design.md, "acks=all: where a record's time goes").  Records still
# end the wait at once, and their answer carries the new high watermark.
# The fetch they wake records no progress (the follower's, at this
# offset, was recorded when it went idle), so it does not take the
# partition's progress lock, which the other follower's fetch of the same
# record may hold: here a third session holds it.  A long poll that runs
# out does record the follower's progress (an idle follower stays caught
# up).
#
# This database leads a partition replicated on 1, 2 and 3, all in the
# ISR.  Replica 2 holds the one record and long-polls; replica 3 then
# reports it, which moves the high watermark to 1.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('fhq', 1);
SELECT mq.replica_become_leader('fhq', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2, 3]);
SELECT mq.send('fhq', NULL::bytea, 'one'::bytea, partition => 0);
CREATE VIEW fhq_ov AS SELECT mq._offsets_version(topic_id, 0) AS v FROM mq.topic WHERE topic_name = 'fhq';
-- replica 2 takes the record and reports it: its progress is recorded at 1
SELECT mq.replica_fetch('fhq', 0, 1, 2, 0, 100, 0, (SELECT v FROM fhq_ov));
SELECT mq.replica_fetch('fhq', 0, 1, 2, 1, 100, 0, (SELECT v FROM fhq_ov));
SQL
hwm() { q -c "SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'fhq'"; }
[[ "$(hwm)" == 0 ]] || fail "high watermark $(hwm), expected 0 (replica 3 has not reported)"

# replica 2, idle at 1, long-polls for up to 60 s
PGAPPNAME=fhq_poll psql -X -qAt -v ON_ERROR_STOP=1 -c "SELECT (b).base_offset || ' ' || (b).high_watermark
	|| ' ' || coalesce(array_length((b).vals, 1), 0) FROM mq.replica_fetch('fhq', 0, 1, 2, 1, 100, 60000,
	(SELECT v FROM fhq_ov)) b" > "$work/poll.out" 2>&1 &
poll=$!
wait_for "application_name = 'fhq_poll' AND wait_event_type = 'Extension'" || fail "the long poll did not wait"

# replica 3 takes the record and reports it: the high watermark moves to 1
q -c "SELECT mq.replica_fetch('fhq', 0, 1, 3, 0, 100, 0, (SELECT v FROM fhq_ov))" >/dev/null
q -c "SELECT mq.replica_fetch('fhq', 0, 1, 3, 1, 100, 0, (SELECT v FROM fhq_ov))" >/dev/null
[[ "$(hwm)" == 1 ]] || fail "high watermark $(hwm), expected 1 once replica 3 reported"

# the long poll goes on (the one fixed wait, for something that must not
# happen: a woken poll answers within milliseconds)
sleep 1
kill -0 "$poll" 2>/dev/null || fail "the high watermark alone ended the long poll: $(cat "$work/poll.out")"
wait_for "application_name = 'fhq_poll' AND wait_event_type = 'Extension'" ||
	fail "the long poll is no longer waiting"

# another session holds the partition's progress lock (as the other
# follower's fetch of the record may)
hold_progress_lock fhq "$work"
recorded() { q -c "SELECT last_fetch_at FROM mq.replica_progress rp JOIN mq.topic t USING (topic_id)
	WHERE t.topic_name = 'fhq' AND rp.replica_id = 2"; }
before=$(recorded)

# a record ends the long poll at once, with the high watermark, while the
# lock is held
q -c "SELECT mq.send('fhq', NULL::bytea, 'two'::bytea, partition => 0)" >/dev/null
ends_within "$poll" 20 ||
	fail "the long poll did not end within 20 s of the record (waiting for the progress lock?)"
wait "$poll" || fail "the long poll failed: $(cat "$work/poll.out")"
[[ "$(cat "$work/poll.out")" == '1 1 1' ]] ||
	fail "the long poll answered '$(cat "$work/poll.out")', expected base 1, high watermark 1, one record"
[[ "$(recorded)" == "$before" ]] || fail "the woken fetch recorded the follower's progress again"
release_progress_lock

# replica 2 appended the record and reports 2; a long poll there that runs
# out records its progress again
q -c "SELECT mq.replica_fetch('fhq', 0, 1, 2, 2, 100, 0, (SELECT v FROM fhq_ov))" >/dev/null
before=$(recorded)
q -c "SELECT mq.replica_fetch('fhq', 0, 1, 2, 2, 100, 200, (SELECT v FROM fhq_ov))" >/dev/null
[[ "$(recorded)" > "$before" ]] || fail "a long poll that ran out did not record the follower's progress"
echo "ok: a new high watermark left the long poll waiting; the next record ended it, with the high watermark," \
	"without the progress lock; a long poll that ran out recorded the progress"
