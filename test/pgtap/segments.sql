-- Segments and batches: a batch running past a partition's last segment
-- gets segments of the segment's span, but at most 32, the last covering
-- the rest of the batch, however small segment.records is: each segment
-- is a table whose locks the batch holds, and a batch of thousands of
-- records into a topic with segment.records 1 (a segment each) ran out of
-- PostgreSQL's lock table (53200) and wrote nothing.  The same on a
-- follower's append (mq._ensure_segments_to).  And when
-- mq.delete_records or retention drops every segment (the log end was a
-- segment's end with none made ahead yet), the next segment starts at
-- the log start: offsets went back to 0 below it, the records written
-- there unreadable.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(17);

CREATE FUNCTION pg_temp.segments(t text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM mq.segment s JOIN mq.topic USING (topic_id) WHERE topic_name = t
$$;
CREATE FUNCTION pg_temp.gapless(t text) RETURNS boolean LANGUAGE sql AS $$
    SELECT count(*) = max(msg_offset) + 1 AND count(DISTINCT msg_offset) = count(*)
      FROM mq.fetch(t, 0, 0, max_records => 100000)
$$;

SELECT mq.create_topic('one', 1, '{"segment.records": 1}');
SELECT is(pg_temp.segments('one'), 2::bigint, 'a new partition has its first segment and one ahead');
SELECT is((SELECT count(*) FROM mq.send_batch('one', NULL,
               (SELECT array_agg(('v' || i)::bytea) FROM generate_series(1, 20000) i), partition => 0)),
          20000::bigint, 'a batch of 20,000 records into a topic with segment.records 1 is written');
SELECT ok(pg_temp.gapless('one'), 'its offsets are gapless');
SELECT is(pg_temp.segments('one'), 34::bigint, 'the two segments there and 32 new ones');
SELECT results_eq($$SELECT base_offset, end_offset FROM mq.segment s JOIN mq.topic USING (topic_id)
                    WHERE topic_name = 'one' ORDER BY base_offset DESC LIMIT 2$$,
                  $$VALUES (33::bigint, 20000::bigint), (32, 33)$$,
                  'of a record each, but the last one, which holds the rest of the batch');
SELECT mq.send('one', NULL, 'next'::bytea, partition => 0);
SELECT is(pg_temp.segments('one'), 36::bigint, 'the next record gets a segment of its own and one ahead');

-- a span larger than the batch's rest stays the segment's length
SELECT mq.create_topic('ten', 1, '{"segment.records": 10}');
SELECT mq.send_batch('ten', NULL, (SELECT array_agg(('v' || i)::bytea) FROM generate_series(1, 25) i), partition => 0);
SELECT results_eq($$SELECT base_offset, end_offset FROM mq.segment s JOIN mq.topic USING (topic_id)
                    WHERE topic_name = 'ten' ORDER BY base_offset$$,
                  $$VALUES (0::bigint, 10::bigint), (10, 20), (20, 30), (30, 40)$$,
                  'a batch ending within a segment''s span gets a segment of the span');

-- a follower's append of its leader's batch (two topics of one database
-- stand for the two nodes)
SELECT mq.create_topic('lead', 1);
SELECT mq.create_topic('fol', 1, '{"segment.records": 1}');
SELECT mq.replica_become_leader('lead', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.replica_become_follower('fol', 0, 1, 1);
SELECT mq.send_batch('lead', NULL, (SELECT array_agg(('v' || i)::bytea) FROM generate_series(1, 5000) i), partition => 0);
SELECT is(mq.replica_append('fol', 0, 1, mq.replica_fetch('lead', 0, 1, 2, 0, 5000, 0, NULL)), 5000::bigint,
          'a follower appends a 5,000-record batch into a topic with segment.records 1');
SELECT is(pg_temp.segments('fol'), 34::bigint, 'into 32 new segments, the last holding the rest');

-- every segment dropped: the log continues at its end, whether the
-- produce path or maintenance makes the next segments
CREATE FUNCTION pg_temp.ranges(t text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(base_offset || '-' || end_offset, ',' ORDER BY base_offset)
      FROM mq.segment s JOIN mq.topic USING (topic_id) WHERE topic_name = t
$$;
SELECT mq.create_topic('all', 1, '{"segment.records": 10}');
SELECT mq.send_batch('all', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 20)), partition => 0);
SELECT is(pg_temp.ranges('all'), '0-10,10-20', 'a batch filling both segments leaves none ahead');
SELECT is(mq.delete_records('all', 0, -1), 20::bigint, 'deleting every record drops both segments');
SELECT mq.run_maintenance();
SELECT is(pg_temp.ranges('all'), '20-30,30-40', 'maintenance makes the next segments from the log end');
SELECT is((SELECT msg_offset FROM mq.send('all', NULL, 'after'::bytea, partition => 0)), 20::bigint,
          'the next record gets the offset after the last one');
SELECT results_eq($$SELECT msg_offset, value FROM mq.fetch('all', 0, 20)$$,
                  $$VALUES (20::bigint, 'after'::bytea)$$, 'and is read there');

SELECT mq.create_topic('all-ret', 1, '{"segment.records": 10, "retention.bytes": 0}');
SELECT mq.send_batch('all-ret', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 20)), partition => 0);
SELECT is(mq.apply_retention('all-ret'), 2, 'retention drops both closed segments');
SELECT is((SELECT msg_offset FROM mq.send('all-ret', NULL, 'after'::bytea, partition => 0)), 20::bigint,
          'after retention too, the log continues at its end');
SELECT is(pg_temp.ranges('all-ret'), '20-30,30-40', 'in a segment made from there by the produce path');

SELECT * FROM finish();
ROLLBACK;
