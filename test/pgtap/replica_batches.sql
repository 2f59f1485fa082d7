-- Producer batches and replication: a follower never holds part of a
-- producer batch, so producer state and records agree between the old
-- leader, a follower and the new leader (issue 12).  Two topics of one
-- database stand for two nodes: 'bl' is led here, 'bf' follows it; the
-- batches the leader's fetch returns are appended to 'bf' as a broker
-- would, then 'bf' is elected and the producer retries.
BEGIN;
SELECT plan(12);

SELECT mq.create_topic('bl', 1);
SELECT mq.create_topic('bf', 1);
SELECT mq.replica_become_leader('bl', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('bf', 0, 1, 1);
CREATE TEMP TABLE pr AS SELECT * FROM mq.init_producer();

-- batches of 7, 25 and 3 records, then 30 records without a producer
SELECT mq.send_batch('bl', NULL, array_agg(('a' || i)::bytea), partition => 0,
                     producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 0)
  FROM generate_series(1, 7) i;
SELECT mq.send_batch('bl', NULL, array_agg(('b' || i)::bytea), partition => 0,
                     producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 7)
  FROM generate_series(1, 25) i;
SELECT mq.send_batch('bl', NULL, array_agg(('c' || i)::bytea), partition => 0,
                     producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 32)
  FROM generate_series(1, 3) i;
SELECT mq.send_batch('bl', NULL, array_agg(('d' || i)::bytea), partition => 0)
  FROM generate_series(1, 30) i;

-- where fetches of at most 10 records end, from each offset
CREATE TEMP TABLE cuts AS
SELECT o AS fetch_offset, (b).base_offset + cardinality((b).vals) AS fetch_end
  FROM (SELECT o, mq.replica_fetch('bl', 0, 1, 2, o, 10, 0) AS b FROM generate_series(0, 64) o) f;
SELECT is((SELECT fetch_end FROM cuts WHERE fetch_offset = 0), 7::bigint,
          'a fetch of 10 from offset 0 ends at the end of the first batch, not inside the second');
SELECT is((SELECT fetch_end FROM cuts WHERE fetch_offset = 7), 32::bigint,
          'a fetch of 10 from the second batch returns the whole batch of 25 (at least one whole batch)');
SELECT is((SELECT fetch_end FROM cuts WHERE fetch_offset = 32), 42::bigint,
          'records without a producer are cut by count');
SELECT is((SELECT count(*) FROM cuts
            WHERE fetch_end IN (8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                26, 27, 28, 29, 30, 31, 33, 34)),
          0::bigint, 'no fetch from any offset ends inside a producer batch');

-- the follower copies the log in fetches of 10 as its broker would
DO $$
DECLARE
    v_end bigint := 0;
BEGIN
    WHILE v_end < 65 LOOP
        v_end := mq.replica_append('bf', 0, 1, mq.replica_fetch('bl', 0, 1, 2, v_end, 10, 0));
    END LOOP;
END $$;
SELECT results_eq($$SELECT producer_epoch, batch_first, batch_last, batch_offset FROM mq.producer_state
                     WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'bf')$$,
                  $$SELECT producer_epoch, batch_first, batch_last, batch_offset FROM mq.producer_state
                     WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'bl')$$,
                  'the follower''s producer state is the leader''s');

-- A follower that holds only part of the log: it stopped after its first
-- fetch of 10 from offset 7 (which must hold the whole second batch).
SELECT mq.create_topic('bp', 1);
SELECT mq.replica_become_follower('bp', 0, 1, 1);
SELECT mq.replica_append('bp', 0, 1, mq.replica_fetch('bl', 0, 1, 3, 0, 10, 0));
SELECT is(mq.replica_append('bp', 0, 1, mq.replica_fetch('bl', 0, 1, 3, 7, 10, 0)), 32::bigint,
          'the partial follower holds the whole second batch');
-- it is elected (the old leader died) and the producer retries the batch
SELECT mq.replica_become_leader('bp', 0, 2, 3, ARRAY[1, 3], ARRAY[3]);
SELECT results_eq($$SELECT min(msg_offset), max(msg_offset)
                     FROM mq.send_batch('bp', NULL, (SELECT array_agg(('b' || i)::bytea) FROM generate_series(1, 25) i),
                      partition => 0, producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 7)$$,
                  $$VALUES (7::bigint, 31::bigint)$$, 'the retry on the new leader returns the original offsets');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'bp'), 32::bigint, 'and writes nothing');
SELECT results_eq($$SELECT min(msg_offset) FROM mq.send_batch('bp', NULL, ARRAY['c1', 'c2', 'c3']::bytea[],
                      partition => 0, producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 32)$$,
                  ARRAY[32::bigint], 'the batch the new leader never saw is written once, after it');
SELECT throws_ok($$SELECT * FROM mq.send_batch('bp', NULL, ARRAY['x']::bytea[], partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 36)$$,
                 'MQ011', NULL, 'a gap after it is still out of order');

-- Truncation keeps the batches below the cut and forgets those above it
SELECT mq.replica_become_follower('bf', 0, 2, 3);
SELECT mq.replica_truncate('bf', 0, 2, 32);
SELECT is((SELECT batch_offset FROM mq.producer_state
            WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'bf')),
          ARRAY[0, 7]::bigint[], 'a truncated follower forgets the batch it cut');
SELECT is(mq.replica_append('bf', 0, 2, mq.replica_fetch('bp', 0, 2, 1, 32, 10, 0)), 35::bigint,
          'and takes the new leader''s batch at the same place');

SELECT * FROM finish();
ROLLBACK;
