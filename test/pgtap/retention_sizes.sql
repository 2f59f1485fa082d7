-- Retention weighs closed segments by the size and age mq.segment recorded
-- of them when a pass first saw them closed (70_retention.sql): only the
-- segment being written (and the ones ahead) is sized from its files.
-- Size-based retention still drops the right segments, compaction and a
-- follower's truncation clear what was recorded, and a later pass records
-- it again.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(16);

-- four segments of 10 records: three closed, one being written
SELECT mq.create_topic('rs', 1, '{"segment.records": 10, "retention.bytes": 1000000000000}');
SELECT mq.send_batch('rs', NULL, (SELECT array_agg(convert_to(repeat('x', 100 * i), 'UTF8'))
                                   FROM generate_series(1, 35) i));
CREATE TEMP VIEW rs_seg AS
    SELECT sg.base_offset, sg.end_offset, sg.relid, sg.closed_bytes, sg.closed_last_time
      FROM mq.segment sg JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rs';

SELECT is((SELECT count(*) FROM rs_seg WHERE closed_bytes IS NOT NULL), 0::bigint,
          'nothing recorded before a retention pass');
SELECT is(mq.apply_retention('rs'), 0, 'a limit far above the log drops nothing');
SELECT is((SELECT string_agg(base_offset::text, ',' ORDER BY base_offset) FROM rs_seg WHERE closed_bytes IS NOT NULL),
          '0,10,20', 'the pass recorded the three closed segments');
SELECT ok((SELECT bool_and(closed_bytes = pg_total_relation_size(relid)) FROM rs_seg WHERE end_offset <= 30),
          'their sizes are their tables''');
SELECT ok((SELECT bool_and(closed_last_time = mq._segment_last_time(relid)) FROM rs_seg WHERE end_offset <= 30),
          'their ages are their last records''');
SELECT is((SELECT count(*) FROM rs_seg WHERE end_offset > 30 AND closed_bytes IS NOT NULL), 0::bigint,
          'the segment being written is not recorded');

-- retention.bytes: keep what leaves the log at least that large; the
-- limit is set so that exactly the first segment goes
CREATE TEMP TABLE rs_size AS
    SELECT (SELECT sum(pg_total_relation_size(relid)) FROM rs_seg) AS total,
           (SELECT closed_bytes FROM rs_seg WHERE base_offset = 0) AS s0,
           (SELECT closed_bytes FROM rs_seg WHERE base_offset = 10) AS s1;
SELECT mq.alter_topic('rs', jsonb_build_object('retention.bytes', (SELECT total - s0 - s1 + 1 FROM rs_size)));
SELECT is(mq.apply_retention('rs'), 1, 'retention.bytes drops the one segment that brings the log under it');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'rs'), 10::bigint, 'the log start is at its end');

-- the pass reads what was recorded, not the files: with the segment after
-- it recorded as large as the limit, the oldest segment goes
UPDATE mq.segment sg SET closed_bytes = 1000000000000
  FROM mq.topic t WHERE t.topic_id = sg.topic_id AND t.topic_name = 'rs' AND sg.base_offset = 20;
SELECT mq.alter_topic('rs', '{"retention.bytes": 1000000000000}');
SELECT is(mq.apply_retention('rs'), 1, 'the log is as large as its segments'' records say');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'rs'), 20::bigint, 'the log start is past it');

-- retention.ms by the recorded age
SELECT mq.alter_topic('rs', '{"retention.ms": 3600000}');
SELECT is(mq.apply_retention('rs'), 0, 'a segment younger than retention.ms stays');
UPDATE mq.segment sg SET closed_last_time = now() - interval '2 hours'
  FROM mq.topic t WHERE t.topic_id = sg.topic_id AND t.topic_name = 'rs' AND sg.base_offset = 20;
SELECT is(mq.apply_retention('rs'), 1, 'one recorded as older goes');

-- compaction clears what it changed; the next pass records it again
SELECT mq.create_topic('rs-c', 1, '{"segment.records": 10, "cleanup.policy": "compact,delete", '
                                  '"retention.bytes": 1000000000000, "min.cleanable.dirty.ratio": 0}');
SELECT mq.send_batch('rs-c', ARRAY(SELECT convert_to('k' || (i % 3), 'UTF8') FROM generate_series(1, 25) i),
                     (SELECT array_agg('v'::bytea) FROM generate_series(1, 25)));
SELECT mq.apply_retention('rs-c');
SELECT mq.compact('rs-c');
SELECT ok((SELECT count(*) FROM mq.segment sg JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'rs-c' AND sg.end_offset <= 20 AND sg.closed_bytes IS NULL) > 0,
          'compaction cleared the record of a segment it removed records from');
SELECT mq.apply_retention('rs-c');
SELECT is((SELECT count(*) FROM mq.segment sg JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'rs-c' AND sg.end_offset <= 20 AND sg.closed_bytes IS NULL), 0::bigint,
          'the next pass recorded it again');

-- a follower's truncation (KIP-101) clears the record of the segments it
-- cuts into; the ones wholly below the cut keep theirs
SELECT mq.create_topic('rs-t', 1, '{"segment.records": 10, "retention.bytes": 1000000000000}');
SELECT mq.send_batch('rs-t', NULL, (SELECT array_agg('v'::bytea) FROM generate_series(1, 25)));
SELECT mq.apply_retention('rs-t');
SELECT mq.replica_become_follower('rs-t', 0, 1, 2);
SELECT mq.replica_truncate('rs-t', 0, 1, 15);
SELECT is((SELECT string_agg(sg.base_offset || ':' || (sg.closed_bytes IS NOT NULL), ',' ORDER BY sg.base_offset)
             FROM mq.segment sg JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'rs-t' AND sg.end_offset <= 20),
          '0:true,10:false', 'truncation cleared the record of the segment it cut into, not the one below');
SELECT is((SELECT log_end_offset FROM mq.replica_status WHERE topic = 'rs-t' AND partition = 0), 15::bigint,
          'the follower''s log ends at the cut');

SELECT * FROM finish();
ROLLBACK;
