-- A maintenance pass in batches of topics (src/sql/85_maintenance.sql):
-- mq._maintain_batch walks the topics by id, a batch at a time; a topic
-- that needs nothing costs no log table (none of its segments read), one
-- whose last segment was written gets the next one; mq._file_unwritten
-- tells an unwritten segment from a written one by its file's size.  That
-- the worker commits after each batch: test/t/146_maintenance_batches.pl.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- committed before the test's transaction, so that their tables hold no
-- lock of this session's (the worker may maintain them meanwhile: they
-- need nothing)
SELECT mq.create_topic('mb_idle', 2);
SELECT mq.create_topic('mb_full', 1, '{"segment.records": 10}');
BEGIN;
SELECT plan(11);

CREATE TEMP TABLE last_seg AS
SELECT t.topic_name, sg.relid, c.reltablespace, c.relfilenode
  FROM mq.topic t JOIN mq.segment sg USING (topic_id) JOIN pg_class c ON c.oid = sg.relid
 WHERE t.topic_name = 'mb_full' AND sg.base_offset = 10;
SELECT is((SELECT mq._file_unwritten(reltablespace, relfilenode) FROM last_seg), true,
          'the segment ahead of a new topic is unwritten');
SELECT is((SELECT count(*)::int FROM mq.send_batch('mb_full', NULL, array_fill('x'::bytea, ARRAY[15]))), 15,
          '15 records: the segment ahead [10, 20) is written now');
SELECT is((SELECT mq._file_unwritten(reltablespace, relfilenode) FROM last_seg), false,
          'a written segment is not unwritten');
SELECT is(mq._file_unwritten(0, 0), false, 'a mapped relation (no filenode) is not unwritten');

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
SELECT ok(EXISTS (SELECT 1 FROM mq.segments s JOIN mq.partitions p USING (topic, partition)
                   WHERE s.topic = 'mb_full' AND s.base_offset > p.log_end_offset),
          'the partition whose last segment was written got a segment ahead');
SELECT is(mq.run_maintenance(), 0, 'a whole pass after that has nothing to do');

SELECT * FROM finish();
ROLLBACK;
