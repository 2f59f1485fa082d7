-- A follower whose whole log lies below the leader's log start (a new
-- replica after retention dropped the start of the leader's log, or one
-- that was away that long) restarts its log empty at the leader's log
-- start, as Kafka's followers do, and copies on from there; it used to be
-- refused for ever (MQ007) and never joined the ISR.  Two topics of one
-- database stand for the two nodes.
BEGIN;
SELECT plan(10);

SELECT mq.create_topic('lsl', 1, '{"segment.records": 10, "retention.bytes": 0}');
SELECT mq.create_topic('lsf', 1, '{"segment.records": 10, "retention.bytes": 0}');
SELECT mq.replica_become_leader('lsl', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.replica_become_follower('lsf', 0, 1, 1);
SELECT mq.send_batch('lsl', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(0, 34) i;

-- the follower copies five records, then the leader's retention drops 0-29
SELECT mq.replica_append('lsf', 0, 1, mq.replica_fetch('lsl', 0, 1, 2, 0, 5, 0, NULL));
SELECT is(mq.apply_retention('lsl'), 3, 'the leader drops its three closed segments');

CREATE TEMP TABLE f1 AS SELECT mq.replica_fetch('lsl', 0, 1, 2, 5, 100, 0, NULL) AS b;
SELECT is((SELECT (b).base_offset FROM f1), 30::bigint, 'a fetch below the leader''s log start answers at it');
SELECT is((SELECT (b).vals FROM f1), NULL, 'with no records');
SELECT is(mq.replica_append('lsf', 0, 1, (SELECT b FROM f1)), 30::bigint,
          'the follower restarts its log there');
SELECT results_eq($$SELECT log_start_offset, log_end_offset FROM mq.partition_stats WHERE topic = 'lsf'$$,
                  $$VALUES (30::bigint, 30::bigint)$$, 'empty, from offset 30');

CREATE TEMP TABLE f2 AS SELECT mq.replica_fetch('lsl', 0, 1, 2, 30, 100, 0, NULL) AS b;
SELECT is(mq.replica_append('lsf', 0, 1, (SELECT b FROM f2)), 35::bigint, 'and copies on from there');
SELECT results_eq(format('SELECT msg_offset, value FROM %s ORDER BY msg_offset',
                         (SELECT ps.relid FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
                           WHERE t.topic_name = 'lsf')),
                  $$SELECT i::bigint, ('r' || i)::bytea FROM generate_series(30, 34) i$$,
                  'the follower holds exactly the leader''s records 30-34');
SELECT is((SELECT count(*) FROM mq.segments WHERE topic = 'lsf' AND base_offset < 30), 0::bigint,
          'no segment of the old log is left');
SELECT mq.replica_fetch('lsl', 0, 1, 2, 35, 100, 0,
                        mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'lsl'), 0));
SELECT is((SELECT log_end_offset FROM mq.replica_leader_state('lsl', 0, 1) WHERE replica_id = 2), 35::bigint,
          'the leader counts the follower at its log end, so it can join the ISR');
SELECT is((SELECT leader_epoch FROM mq.leader_epoch_history h JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'lsf' ORDER BY start_offset DESC LIMIT 1), 1,
          'the follower knows the epoch in force at its new log start');

SELECT * FROM finish();
ROLLBACK;
