-- The leader's state of many partitions in one statement
-- (mq.replica_leader_states, src/sql/60_replica_roles.sql), the broker's
-- read at each tick (broker/mq-broker/isr.c): a quiet partition (this
-- node leads it in that epoch and its high watermark would not move) is
-- answered with the rows mq.replica_leader_state would return, one row
-- with no replica when it has no followers; every other partition is
-- flagged for mq.replica_leader_state, and nothing moves meanwhile.
BEGIN;
SELECT plan(10);

SELECT mq.create_topic('ls', 3);
SELECT mq.replica_become_leader('ls', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT mq.replica_become_leader('ls', 1, 1, 1, ARRAY[1], ARRAY[1]);
SELECT mq.replica_become_follower('ls', 2, 1, 2, NULL, ARRAY[1, 2]);
SELECT mq.send_batch('ls', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
CREATE TEMP VIEW v AS SELECT mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'ls'), 0) AS version;
CREATE TEMP VIEW hwm AS SELECT partition, high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
                         WHERE t.topic_name = 'ls';
-- replica 2 (in the ISR) took all ten, replica 3 five
SELECT mq.replica_fetch('ls', 0, 1, 2, 0, 100, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('ls', 0, 1, 2, 10, 100, 0, (SELECT version FROM v));
SELECT mq.replica_fetch('ls', 0, 1, 3, 0, 5, 0, (SELECT version FROM v));
SELECT is((SELECT high_watermark FROM hwm WHERE partition = 0), 10::bigint, 'partition 0''s ISR holds all ten');
SELECT mq.send_batch('ls', NULL, ARRAY['a'::bytea, 'b'], partition => 1);

CREATE TEMP VIEW many AS
SELECT * FROM mq.replica_leader_states(ARRAY['ls', 'ls', 'ls', 'ls', 'nope'], ARRAY[0, 1, 2, 0, 0],
                                       ARRAY[1, 1, 1, 2, 1]);
PREPARE cols(integer) AS
SELECT replica_id, in_isr, log_end_offset, leader_log_end_offset, high_watermark, epoch_start_offset, caught_up
  FROM many WHERE i = $1 ORDER BY replica_id;

SELECT results_eq('EXECUTE cols(1)',
    $$SELECT replica_id, in_isr, log_end_offset, leader_log_end_offset, high_watermark, epoch_start_offset, caught_up
        FROM mq.replica_leader_state('ls', 0, 1) ORDER BY replica_id$$,
    'a quiet partition''s rows are mq.replica_leader_state''s');
SELECT ok((SELECT bool_and(quiet AND lag_ms >= 0) FROM many WHERE i = 1), 'flagged quiet, with each follower''s lag');
SELECT results_eq($$SELECT i, quiet FROM many WHERE i > 1 ORDER BY i$$,
    $$VALUES (2, false), (3, false), (4, false), (5, false)$$,
    'a high watermark that would move, a follower, a newer epoch and an unknown topic are each flagged once');

-- partition 1, the leader alone: its new records move the high watermark
-- only through mq.replica_leader_state, which the broker then calls
SELECT is((SELECT high_watermark FROM hwm WHERE partition = 1), 0::bigint, 'the looks moved nothing');
SELECT mq.replica_leader_state('ls', 1, 1);
SELECT results_eq($$SELECT quiet, replica_id, high_watermark, leader_log_end_offset FROM many WHERE i = 2$$,
    $$VALUES (true, NULL::integer, 2::bigint, 2::bigint)$$,
    'once moved it is quiet: one row, no follower');

-- records replica 2 has not fetched yet cannot move partition 0's high
-- watermark: still quiet, with the new log end
SELECT mq.send_batch('ls', NULL, ARRAY['x'::bytea], partition => 0);
SELECT results_eq($$SELECT DISTINCT quiet, leader_log_end_offset, high_watermark FROM many WHERE i = 1$$,
    $$VALUES (true, 11::bigint, 10::bigint)$$, 'records beyond an ISR member''s progress: still quiet');
-- once it has, the high watermark would move: the broker's call moves it
SELECT mq.replica_fetch('ls', 0, 1, 2, 11, 100, 0, (SELECT version FROM v));
UPDATE mq.partition_state SET high_watermark = 10
 WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'ls') AND partition = 0;
SELECT is((SELECT DISTINCT quiet FROM many WHERE i = 1), false, 'an ISR holding more than the high watermark: not quiet');
SELECT is((SELECT DISTINCT high_watermark FROM mq.replica_leader_state('ls', 0, 1)), 11::bigint,
          'the broker''s call moves it');
SELECT results_eq('EXECUTE cols(1)',
    $$SELECT replica_id, in_isr, log_end_offset, leader_log_end_offset, high_watermark, epoch_start_offset, caught_up
        FROM mq.replica_leader_state('ls', 0, 1) ORDER BY replica_id$$,
    'then it is quiet again, with the new high watermark');
SELECT * FROM finish();
ROLLBACK;
