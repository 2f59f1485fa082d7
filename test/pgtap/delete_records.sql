-- mq.delete_records (Kafka's DeleteRecords, issue 14): the log start moves
-- up to an offset (-1: the high watermark), whole segments below it are
-- dropped, reads start there, lagging groups count the loss; beyond the
-- high watermark is MQ007, an unknown partition MQ006, a follower MQ020,
-- a role without DELETE on the topic 42501, and each changes nothing.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(31);

SELECT mq.create_topic('dr', 2, '{"segment.records": 10}');
SELECT mq.send_batch('dr', NULL, (SELECT array_agg(('r' || i)::bytea) FROM generate_series(0, 34) i), partition => 0);
SELECT mq.commit_offset('slow', 'dr', 0, 5);
SELECT mq.commit_offset('fast', 'dr', 0, 30);
CREATE TEMP VIEW p0 AS SELECT * FROM mq.partitions WHERE topic = 'dr' AND partition = 0;
CREATE TEMP VIEW segs AS
SELECT string_agg(base_offset || '-' || end_offset, ',' ORDER BY base_offset) AS s
  FROM mq.segments WHERE topic = 'dr' AND partition = 0;
CREATE TEMP TABLE before AS SELECT (SELECT s FROM segs) AS segs;

-- bad input: its own SQLSTATE, nothing changed
SELECT throws_ok($$SELECT mq.delete_records('dr', 0, 36)$$, 'MQ007', NULL, 'beyond the high watermark is MQ007');
SELECT throws_ok($$SELECT mq.delete_records('dr', 0, -2)$$, 'MQ007', NULL, 'a negative offset other than -1 is MQ007');
SELECT throws_ok($$SELECT mq.delete_records('dr', 2, 1)$$, 'MQ006', NULL, 'an unknown partition is MQ006');
SELECT throws_ok($$SELECT mq.delete_records('dr-nope', 0, 1)$$, 'MQ001', NULL, 'an unknown topic is MQ001');
SELECT throws_ok($$SELECT mq.delete_records('dr', 0, NULL)$$, 'MQ010', NULL, 'a null offset is MQ010');
SELECT is((SELECT log_start_offset FROM p0), 0::bigint, 'the refused calls left the log start');
SELECT is((SELECT s FROM segs), (SELECT segs FROM before), 'and the segments');

-- privileges: DELETE on the topic
CREATE ROLE dr_reader;
SELECT mq.grant('read', 'topic', 'dr', 'dr_reader');
SET ROLE dr_reader;
SELECT throws_ok($$SELECT mq.delete_records('dr', 0, 3)$$, '42501', NULL, 'READ on the topic does not allow deleting records');
RESET ROLE;
SELECT is((SELECT log_start_offset FROM p0), 0::bigint, 'the refused deletion changed nothing');

-- inside a segment: the log start moves, the segment stays
SELECT mq.grant('delete', 'topic', 'dr', 'dr_reader');
SET ROLE dr_reader;
SELECT is(mq.delete_records('dr', 0, 3), 3::bigint, 'with DELETE on the topic: the new log start');
RESET ROLE;
SELECT is((SELECT log_start_offset FROM p0), 3::bigint, 'mq.partitions shows it');
SELECT is((SELECT s FROM segs), (SELECT segs FROM before), 'the segment holding it stays');
SELECT throws_ok($$SELECT * FROM mq.fetch('dr', 0, 2)$$, 'MQ007', NULL, 'below the log start is out of range');
SELECT is((SELECT convert_from(value, 'UTF8') FROM mq.fetch('dr', 0, 3, 1)), 'r3', 'reads start at the log start');
SELECT is(mq.delete_records('dr', 0, 2), 3::bigint, 'below the log start: nothing moves, the log start is returned');

-- across segments: those entirely below are dropped
SELECT is(mq.delete_records('dr', 0, 25), 25::bigint, 'the log start moves to 25');
SELECT is((SELECT s FROM segs), '20-30,30-40', 'the segments below it are dropped');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'slow' AND partition = 0), 20::bigint,
          'a group that had not read them lost them');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'fast' AND partition = 0), 0::bigint,
          'a group past them lost none');
SELECT is((SELECT msg_offset FROM mq.poll('slow', 'dr', 1, auto_offset_reset => 'earliest') WHERE partition = 0 LIMIT 1),
          25::bigint, 'a committed offset below the log start resets as after retention');

-- -1: the high watermark, and the partition goes on
SELECT is(mq.delete_records('dr', 0, -1), 35::bigint, '-1 deletes up to the high watermark');
SELECT is((SELECT log_end_offset FROM p0), 35::bigint, 'the log end stays');
SELECT is((SELECT count(*) FROM mq.fetch('dr', 0, 35)), 0::bigint, 'nothing is left to read');
SELECT mq.send('dr', NULL::bytea, 'after'::bytea, partition => 0);
SELECT is((SELECT convert_from(value, 'UTF8') FROM mq.fetch('dr', 0, 35)), 'after', 'producing goes on at the log end');

-- replicated: only the leader takes it, and followers follow its log
-- start up to their high watermark (docs/replication.md).  Topics of one
-- database stand for nodes:
-- drl leads, drf followed it to its log end, drn is a new follower.
SELECT mq.create_topic('drl', 1);
SELECT mq.create_topic('drf', 1);
SELECT mq.create_topic('drn', 1);
SELECT mq.replica_become_leader('drl', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1]);
SELECT mq.replica_become_follower('drf', 0, 1, 1);
SELECT mq.replica_become_follower('drn', 0, 1, 1);
SELECT mq.send_batch('drl', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(0, 19) i;
SELECT mq.replica_append('drf', 0, 1, mq.replica_fetch('drl', 0, 1, 2, 0, 100, 0, NULL));
SELECT throws_ok($$SELECT mq.delete_records('drf', 0, 0)$$, 'MQ020', NULL, 'a follower refuses: MQ020');
SELECT throws_ok($$SELECT mq.delete_records('drl', 0, (SELECT high_watermark + 1 FROM mq.partitions WHERE topic = 'drl'))$$,
                 'MQ007', NULL, 'the leader refuses beyond its high watermark');
SELECT is(mq.delete_records('drl', 0, 12), 12::bigint, 'the leader moves its log start');
SELECT mq.replica_append('drf', 0, 1, mq.replica_fetch('drl', 0, 1, 2, 20, 100, 0, NULL));
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'drf'), 12::bigint,
          'a follower above it moves its log start to the leader''s');
CREATE TEMP TABLE nf AS SELECT mq.replica_fetch('drl', 0, 1, 3, 0, 100, 0, NULL) AS b;
SELECT is((SELECT (b).base_offset FROM nf), 12::bigint, 'a follower below it is answered at it');
SELECT is(mq.replica_append('drn', 0, 1, (SELECT b FROM nf)), 12::bigint, 'and restarts its log there');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'drn'), 12::bigint, 'from the new log start');

SELECT * FROM finish();
ROLLBACK;
