-- ISR expansion on the leader's node (mq.replica_set_isr): the node's ISR
-- is the maximal ISR the high watermark is computed over.  A replica joins
-- it once it reached the log end in the current epoch (and holds the group
-- offsets the ISR acknowledged), even if the high watermark has moved past
-- it since: the high watermark then waits for it and never moves back.
-- The broker adds it to the coordinator's ISR, which elections use, only
-- once mq.replica_leader_state shows it in this ISR holding the high
-- watermark (test/t/125 runs that under load).
BEGIN;
SELECT plan(12);

SELECT mq.create_topic('il', 1);
SELECT mq.replica_become_leader('il', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT mq.send_batch('il', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
CREATE TEMP VIEW v AS SELECT mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'il'), 0) AS version;
CREATE TEMP VIEW hwm AS SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
                         WHERE t.topic_name = 'il';
CREATE TEMP VIEW isr AS SELECT isr FROM mq.replica_partition rp JOIN mq.topic t USING (topic_id)
                         WHERE t.topic_name = 'il';

-- replica 3 fetched the first five records, then five more: it never
-- asked at the log end; replica 2 (in the ISR) took all ten
SELECT mq.replica_fetch('il', 0, 1, 3, 0, 5, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 3, 5, 5, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 2, 0, 100, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 2, 10, 100, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM hwm), 10::bigint, 'the ISR holds all ten: the high watermark is 10');

SELECT throws_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 2, 3])$$, 'MQ028', NULL,
                 'a replica that never reached the log end does not join the ISR');
SELECT is((SELECT isr FROM isr), ARRAY[1, 2], 'and the ISR is unchanged');
SELECT throws_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 2, 4])$$, 'MQ028', NULL,
                 'nor does a replica that never fetched in this epoch');
SELECT is((SELECT caught_up FROM mq.replica_leader_state('il', 0, 1) WHERE replica_id = 3), false,
          'the leader state says replica 3 has not caught up');

-- replica 3 reaches the log end (10); then ten more records, which
-- replica 2 takes: the high watermark is 20, replica 3 is below it
SELECT mq.replica_fetch('il', 0, 1, 3, 10, 100, 0, (SELECT version FROM v));
SELECT mq.send_batch('il', NULL, array_agg(('s' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
SELECT mq.replica_fetch('il', 0, 1, 2, 20, 100, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM hwm), 20::bigint, 'replica 2 took all twenty: the high watermark is 20');
SELECT is((SELECT caught_up FROM mq.replica_leader_state('il', 0, 1) WHERE replica_id = 3), true,
          'the leader state says replica 3 caught up');

SELECT lives_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 2, 3])$$,
                'a replica that reached the log end joins the node''s ISR below the high watermark');
SELECT mq.send_batch('il', NULL, array_agg(('u' || i)::bytea), partition => 0) FROM generate_series(1, 5) i;
SELECT mq.replica_fetch('il', 0, 1, 2, 25, 100, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM hwm), 20::bigint,
          'the high watermark waits for the new member and does not move back');
SELECT mq.replica_fetch('il', 0, 1, 3, 25, 100, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM hwm), 25::bigint, 'once it fetched everything the high watermark moves');

-- shrinking is always allowed: the high watermark never moves back
SELECT lives_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1])$$, 'a shrink needs no check');
SELECT is((SELECT high_watermark FROM hwm), 25::bigint, 'the high watermark stayed at 25');

SELECT * FROM finish();
ROLLBACK;
