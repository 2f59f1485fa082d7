-- A follower's append waits for its WAL flush at commit only when it
-- brings what the follower's next fetch acknowledges to the leader:
-- records, or committed offsets.  One that only moves the high watermark
-- (the fetch that acknowledges an append on the acks=all path, a long
-- poll woken by the high watermark) commits without it: that flush used
-- to queue on the disk the records' flushes share (docs/design.md,
-- "acks=all: where a record's time goes").  What is tested is the
-- synchronous_commit the append leaves for its transaction's commit.
-- Two topics of one database stand for two nodes: 'afl' is led here,
-- 'aff' follows it.
BEGIN;
SELECT plan(7);

SELECT mq.create_topic('afl', 1);
SELECT mq.create_topic('aff', 1);
SELECT mq.replica_become_leader('afl', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('aff', 0, 1, 1);
SELECT mq.send_batch('afl', NULL, ARRAY['a', 'b']::bytea[], partition => 0);
CREATE TEMP VIEW ids AS
SELECT (SELECT topic_id FROM mq.topic WHERE topic_name = 'afl') AS l,
       (SELECT topic_id FROM mq.topic WHERE topic_name = 'aff') AS f;
SET LOCAL synchronous_commit = local;    -- as the broker's node session

SELECT is(mq.replica_append('aff', 0, 1, mq.replica_fetch('afl', 0, 1, 2, 0, 100, 0, NULL)), 2::bigint,
          'the follower appends two records');
SELECT is(current_setting('synchronous_commit'), 'local', 'an append of records keeps its flush');

-- the fetch that acknowledges them: no records, a new high watermark
CREATE TEMP TABLE ack AS
SELECT mq.replica_fetch('afl', 0, 1, 2, 2, 100, 0, mq._offsets_version((SELECT l FROM ids), 0)) AS b;
SELECT is((SELECT (b).high_watermark FROM ack), 2::bigint, 'the acknowledging fetch moves the high watermark');
SELECT is(mq.replica_append('aff', 0, 1, (SELECT b FROM ack)), 2::bigint, 'its answer is appended');
SELECT is(current_setting('synchronous_commit'), 'off', 'without a flush: it moves the high watermark only');

-- committed offsets without records keep the flush
SET LOCAL synchronous_commit = local;
SELECT mq.commit_offset('g1', 'afl', 0, 1);
SELECT mq.replica_append('aff', 0, 1,
                         mq.replica_fetch('afl', 0, 1, 2, 2, 100, 0, mq._offsets_version((SELECT f FROM ids), 0)));
SELECT is(mq._offsets_version((SELECT f FROM ids), 0), mq._offsets_version((SELECT l FROM ids), 0),
          'the follower applied the new offsets version');
SELECT is(current_setting('synchronous_commit'), 'local', 'an append of committed offsets keeps its flush');

SELECT * FROM finish();
ROLLBACK;
