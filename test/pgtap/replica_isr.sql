-- ISR expansion on the leader's node (mq.replica_set_isr): a replica joins
-- only when it holds the high watermark in the current epoch (and the
-- group offsets the ISR acknowledged), checked when the ISR changes, not
-- only when the broker read the progress it decided on: the high
-- watermark may have moved in between, and a replica in the ISR that
-- lacks acknowledged records could be elected and lose them.
BEGIN;
SELECT plan(7);

SELECT mq.create_topic('il', 1);
SELECT mq.replica_become_leader('il', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT mq.send_batch('il', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
CREATE TEMP VIEW v AS SELECT mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'il'), 0) AS version;

-- replica 3 fetched the first five records; replica 2 (in the ISR) all ten
SELECT mq.replica_fetch('il', 0, 1, 3, 0, 5, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 3, 5, 5, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 2, 0, 100, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('il', 0, 1, 2, 10, 100, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'il'), 10::bigint, 'the ISR holds all ten: the high watermark is 10');

SELECT throws_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 2, 3])$$, 'MQ028', NULL,
                 'a replica below the high watermark does not join the ISR');
SELECT is((SELECT isr FROM mq.replica_partition rp JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'il'),
          ARRAY[1, 2], 'and the ISR is unchanged');
SELECT throws_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 2, 4])$$, 'MQ028', NULL,
                 'nor does a replica that never fetched in this epoch');

-- shrinking is always allowed: the high watermark never moves back
SELECT lives_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1])$$, 'a shrink needs no check');
SELECT mq.replica_fetch('il', 0, 1, 3, 10, 100, 0, (SELECT version FROM v));
SELECT lives_ok($$SELECT mq.replica_set_isr('il', 0, 1, ARRAY[1, 3])$$,
                'a replica that fetched up to the high watermark joins');
SELECT is((SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'il'), 10::bigint, 'the high watermark stayed at 10 throughout');

SELECT * FROM finish();
ROLLBACK;
