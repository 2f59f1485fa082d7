-- A maintenance pass in batches of topics (src/sql/85_maintenance.sql):
-- mq._maintain_batch walks the topics by id, a batch at a time; a topic
-- that needs nothing costs no log table (none of its segments read), one
-- whose last segment was written gets the next one.  The produce path
-- notes a record landing in a partition's last segment in
-- mq.last_segment_written (src/log.c), once per segment; the pass makes
-- the segment ahead and removes the note (a follower's append notes too).
-- Topics that become due after passes that found them idle are
-- maintained: a segment ahead, retention.
-- That the worker commits after each batch: test/t/146_maintenance_batches.pl.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- committed before the test's transaction, so that their tables hold no
-- lock of this session's (the worker may maintain them meanwhile: they
-- need nothing)
SELECT mq.create_topic('mb_idle', 2);
SELECT mq.create_topic('mb_full', 1, '{"segment.records": 10}');
SELECT mq.create_topic('mb_retain', 1, '{"segment.records": 10, "retention.bytes": 1}');
BEGIN;
SELECT plan(21);

CREATE FUNCTION pg_temp.noted(p_topic text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM mq.last_segment_written w JOIN mq.topic t USING (topic_id) WHERE t.topic_name = p_topic
$$;
CREATE FUNCTION pg_temp.ahead(p_topic text) RETURNS boolean LANGUAGE sql AS $$
    SELECT EXISTS (SELECT 1 FROM mq.segments s JOIN mq.partitions p USING (topic, partition)
                    WHERE s.topic = p_topic AND s.base_offset > p.log_end_offset)
$$;

SELECT is(pg_temp.noted('mb_full'), 0::bigint, 'a new topic has no note: its last segment is unwritten');
SELECT is((SELECT count(*)::int FROM mq.send_batch('mb_idle', NULL, ARRAY['a', 'b']::bytea[], partition => 0)), 2,
          'two records into the first segment of a topic');
SELECT is(pg_temp.noted('mb_idle'), 0::bigint, 'records in the segment being written note nothing');

-- scans of a topic's segments since here (this backend's counts not yet
-- reported, pg_stat_xact_all_tables, minus those before)
CREATE FUNCTION pg_temp.scan_counts(p_topic text) RETURNS TABLE (relid oid, n bigint) LANGUAGE sql AS $$
    SELECT x.relid, x.seq_scan + coalesce(x.idx_scan, 0) FROM pg_stat_xact_all_tables x
      JOIN mq.segment sg ON sg.relid = x.relid JOIN mq.topic t USING (topic_id) WHERE t.topic_name = p_topic
$$;
CREATE TEMP TABLE scans_before AS
SELECT * FROM pg_temp.scan_counts('mb_idle') UNION ALL SELECT * FROM pg_temp.scan_counts('mb_full');
CREATE FUNCTION pg_temp.scans(p_topic text) RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(a.n - coalesce(b.n, 0)), 0)::bigint
      FROM pg_temp.scan_counts(p_topic) a LEFT JOIN scans_before b USING (relid)
$$;

-- an idle pass first: nothing due, nothing read, nothing made
SELECT is(mq.run_maintenance(), 0, 'a pass while every topic is idle makes no segment');
SELECT is((SELECT pg_temp.scans('mb_idle') + pg_temp.scans('mb_full')), 0::bigint,
          'it read none of the idle topics'' segments');

-- then the segment ahead of mb_full is written to: it becomes due
SELECT is((SELECT count(*)::int FROM mq.send_batch('mb_full', NULL, array_fill('x'::bytea, ARRAY[15]))), 15,
          '15 records: the segment ahead [10, 20) is written now');
SELECT is(pg_temp.noted('mb_full'), 1::bigint, 'the record that landed in the last segment noted its partition');
SELECT ok(NOT pg_temp.ahead('mb_full'), 'no segment lies ahead of its log end now');

-- the batches cover every topic once, in order of id, then say none is left
SELECT is((SELECT last_topic FROM mq._maintain_batch(NULL, 1)), (SELECT min(topic_id) FROM mq.topic),
          'a batch of one topic from the start ends at the first topic');
SELECT is((SELECT last_topic FROM mq._maintain_batch((SELECT min(topic_id) FROM mq.topic), 1000000)),
          (SELECT max(topic_id) FROM mq.topic), 'the next batch ends at the last topic');
SELECT is((SELECT last_topic FROM mq._maintain_batch((SELECT max(topic_id) FROM mq.topic), 1000)), NULL,
          'after the last topic, none is left');

-- what reads a segment (its log end through its index) is counted on it
SELECT is((SELECT pg_temp.scans('mb_idle')), 0::bigint, 'a topic that needs nothing had none of its segments read');
SELECT cmp_ok((SELECT pg_temp.scans('mb_full')), '>', 0::bigint, 'the one that needed a segment had its log end read');
SELECT ok(pg_temp.ahead('mb_full'), 'the partition whose last segment was written got a segment ahead');
SELECT is(pg_temp.noted('mb_full'), 0::bigint, 'and its note is gone');
SELECT is(mq.run_maintenance(), 0, 'a whole pass after that has nothing to do');

-- retention of a topic that passes found idle (nothing to drop) once it
-- holds more than retention.bytes: the closed segments go
SELECT is((SELECT count(*)::int FROM mq.send_batch('mb_retain', NULL, array_fill('y'::bytea, ARRAY[25]))), 25,
          '25 records into a topic of 10-record segments and retention.bytes 1');
SELECT lives_ok($$SELECT mq.run_maintenance()$$, 'a pass');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'mb_retain'), 20::bigint,
          'retention dropped the two full segments, the one being written stays');

-- a follower's append notes its last segment as the produce path does
-- (two topics of one database stand for two nodes, as in replica_batches.sql)
SELECT mq.create_topic('mb_lead', 1, '{"segment.records": 10}');
SELECT mq.create_topic('mb_follow', 1, '{"segment.records": 10}');
SELECT mq.replica_become_leader('mb_lead', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('mb_follow', 0, 1, 1);
SELECT count(*) FROM mq.send_batch('mb_lead', NULL, array_fill('z'::bytea, ARRAY[15]), partition => 0);
SELECT is(mq.replica_append('mb_follow', 0, 1, mq.replica_fetch('mb_lead', 0, 1, 2, 0, 100, 0)), 15::bigint,
          'the follower appended the leader''s 15 records');
SELECT is(pg_temp.noted('mb_follow'), 1::bigint, 'its append into its last segment noted the partition');

SELECT * FROM finish();
ROLLBACK;
