-- A segment table dropped behind mq's back (DROP TABLE in mq_log,
-- pg_restore --clean into the database): what reads the partition's log
-- end fails with MQ074 at once.  It read the catalog again for ever,
-- expecting a segment dropped by maintenance to vanish from it; a
-- maintenance worker did so under pg_restore --clean, holding the lock
-- that made the restore's DROP EXTENSION wait for ever.
BEGIN;
SELECT plan(4);
SET LOCAL statement_timeout = '20s';   -- a regression fails, not hangs

SELECT mq.create_topic('gone', 1, '{"segment.records": 5}');
SELECT count(*) FROM mq.send_batch('gone', NULL, ARRAY['a', 'b', 'c'], partition => 0);
SELECT format('DROP TABLE %s', s.relid) FROM mq.segment s JOIN mq.topic t USING (topic_id)
 WHERE t.topic_name = 'gone' AND s.base_offset = 0 \gexec

SELECT throws_ok($$SELECT mq._log_end_offset((SELECT topic_id FROM mq.topic WHERE topic_name = 'gone'), 0)$$,
                 'MQ074', 'a log table of topic "gone" partition 0 is missing',
                 'the log end of a partition whose segment table was dropped: MQ074');
SELECT throws_ok($$SELECT * FROM mq.partitions WHERE topic = 'gone'$$, 'MQ074', NULL, 'so is mq.partitions');
SELECT throws_ok($$SELECT mq.send('gone', 'k', 'v')$$, 'MQ074', NULL, 'and a send');
SELECT lives_ok($$SELECT mq.run_maintenance()$$, 'a maintenance pass ends');

SELECT * FROM finish();
ROLLBACK;
