-- Retention drops whole closed segments, advances the log start, counts
-- what lagging groups lost, and auto_offset_reset decides where they resume.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(22);

SELECT mq.create_topic('ret', 1, '{"segment.records": 10, "retention.bytes": 0}');
SELECT mq.send_batch('ret', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 35)));
SELECT mq.commit_offset('slow', 'ret', 0, 5);
SELECT mq.commit_offset('fast', 'ret', 0, 35);
CREATE TEMP TABLE old_segments AS
    SELECT relid::text AS name FROM mq.segments WHERE topic = 'ret' AND end_offset <= 30;
SELECT is((SELECT count(*) FROM old_segments), 3::bigint, 'three closed segments before retention');

SELECT is(mq.apply_retention('ret'), 3, 'retention.bytes 0 drops every closed segment');
SELECT is((SELECT count(*) FROM old_segments WHERE to_regclass(name) IS NOT NULL), 0::bigint,
          'their tables are gone');
SELECT is((SELECT string_agg(base_offset || '-' || end_offset, ',' ORDER BY base_offset) FROM mq.segments WHERE topic = 'ret'),
          '30-40', 'the segment being written remains');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'ret'), 30::bigint, 'the log start advanced');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'ret'), 35::bigint, 'the log end did not move');
SELECT throws_ok($$SELECT * FROM mq.fetch('ret', 0, 0)$$, 'MQ007', NULL, 'fetching below the log start is out of range');
SELECT is((SELECT count(*) FROM mq.fetch('ret', 0, 30)), 5::bigint, 'the rest is readable');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'slow'), 25::bigint,
          'the lagging group lost 25 records to retention');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'fast'), 0::bigint, 'the group that kept up lost none');
SELECT is((SELECT lag FROM mq.consumer_lag WHERE group_id = 'slow'), 5::bigint, 'lag counts only what is left');
SELECT throws_ok($$SELECT * FROM mq.poll('slow', 'ret', 100, auto_offset_reset => 'none')$$, 'MQ007', NULL,
                 'auto_offset_reset none refuses a position below the log start');
SELECT is((SELECT min(msg_offset) FROM mq.poll('slow', 'ret', 100)), 30::bigint, 'earliest resumes at the log start');
SELECT is((SELECT count(*) FROM mq.poll('newcomer', 'ret', 100, auto_offset_reset => 'latest')), 0::bigint,
          'latest starts a new group at the log end');

-- time-based retention
SELECT mq.create_topic('ret-ms', 1, '{"segment.records": 5, "retention.ms": 1}');
SELECT mq.send_batch('ret-ms', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 12)));
SELECT pg_sleep(0.02);
SELECT is(mq.apply_retention('ret-ms'), 2, 'retention.ms drops the closed segments older than it');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'ret-ms'), 10::bigint,
          'never the segment being written');

-- segment.ms closes the segment being written early, so retention.ms can drop it
SELECT mq.create_topic('ret-roll', 1, '{"segment.ms": 50}');
SELECT mq.send_batch('ret-roll', NULL, ARRAY['a', 'b', 'c']);
SELECT pg_sleep(0.1);
SELECT mq.run_maintenance();
SELECT is((SELECT base_offset || '-' || end_offset FROM mq.segments WHERE topic = 'ret-roll' ORDER BY base_offset LIMIT 1),
          '0-3', 'segment.ms shrank the segment to the records it holds');
SELECT is((SELECT min(base_offset) FROM mq.segments WHERE topic = 'ret-roll' AND base_offset > 0), 3::bigint,
          'the next segment starts at the log end');
SELECT mq.send_batch('ret-roll', NULL, ARRAY['d', 'e']);
SELECT is((SELECT string_agg(msg_offset || convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('ret-roll', 0, 0)),
          '0a,1b,2c,3d,4e', 'records continue gapless in the new segment');
SELECT mq.alter_topic('ret-roll', '{"retention.ms": 1}');
SELECT pg_sleep(0.02);
SELECT is(mq.apply_retention('ret-roll'), 1, 'the rolled segment can now be dropped by time');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'ret-roll'), 3::bigint, 'log start at the roll point');
SELECT throws_ok($$SELECT mq.apply_retention('ret-nosuch')$$, 'MQ001', NULL, 'apply_retention of a topic that does not exist: MQ001');

SELECT * FROM finish();
ROLLBACK;
