-- Idempotent producers: sequences, retries, fencing, expiry.
-- Runs in a fresh database where pgtap and mq are installed.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(42);

SELECT mq.create_topic('idem', 2);
CREATE TEMP TABLE p AS SELECT * FROM mq.init_producer();
CREATE TEMP TABLE tx AS SELECT * FROM mq.init_producer('tx-1');

SELECT is((SELECT producer_epoch FROM p), 0, 'a new producer starts at epoch 0');
SELECT isnt((SELECT producer_id FROM p), (SELECT producer_id FROM tx), 'each init_producer without an id gets a new producer id');

-- five batches, sequences 0..9
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send_batch('idem', NULL, ARRAY['\x00','\x01']::bytea[], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 0)$$,
    ARRAY[0::bigint, 1], 'first batch gets offsets 0 and 1');
SELECT mq.send_batch('idem', NULL, ARRAY[('\x0' || i)::bytea, ('\x1' || i)::bytea], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 2 * i)
  FROM generate_series(1, 5) i;
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'idem' AND partition = 0), 12::bigint,
          'six batches of two appended');

-- retries of the last batch and of an older one return the original offsets and write nothing
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send_batch('idem', NULL, ARRAY['\x05','\x15']::bytea[], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 10)$$,
    ARRAY[10::bigint, 11], 'a retry of the last batch returns its offsets');
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send_batch('idem', NULL, ARRAY['\x02','\x12']::bytea[], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 4)$$,
    ARRAY[4::bigint, 5], 'a retry of the fourth-newest batch returns its offsets');
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send_batch('idem', NULL, ARRAY['\x01','\x11']::bytea[], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 2)$$,
    ARRAY[2::bigint, 3], 'a retry of the fifth-newest batch returns its offsets');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'idem' AND partition = 0), 12::bigint,
          'retries wrote nothing');
SELECT throws_ok(
    $$SELECT * FROM mq.send_batch('idem', NULL, ARRAY['\x00','\x10']::bytea[], partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 0)$$,
    'MQ015', NULL, 'a batch older than the last five is a duplicate too old to return its offsets');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 13)$$,
    'MQ011', NULL, 'a gap in the sequence is out of order');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 10)$$,
    'MQ011', NULL, 'a retry whose size differs from the original is refused');
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 12)$$,
    ARRAY[12::bigint], 'the next sequence is accepted');

-- sequences are per partition; as on Kafka since KIP-360, a producer's
-- first batch on a partition may start anywhere (its state there may
-- have expired)
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 13)$$,
    ARRAY[0::bigint], 'a producer''s first batch on another partition starts it there at its own sequence');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 15)$$,
    'MQ011', NULL, 'from then on that partition takes only the next sequence');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 0)$$,
    'MQ011', NULL, 'a batch before the first the partition took is a gap, not a duplicate: nothing says it was written');

-- the records carry the producer identity
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW idem_log AS SELECT * FROM %s',
                   (SELECT relid FROM mq.topic WHERE topic_name = 'idem'));
END $$;
SELECT is((SELECT count(*) FROM idem_log WHERE partition = 0 AND producer_id = (SELECT producer_id FROM p)
             AND producer_epoch = 0 AND sequence = msg_offset), 13::bigint,
          'records on partition 0 carry producer id, epoch and their own sequence');

-- errors
SELECT is((SELECT count(*) FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => 999999, producer_epoch => 0, base_sequence => 0)), 1::bigint,
    'an id mq never issued is taken, as Kafka takes any producer');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 7, base_sequence => 13)$$,
    'MQ011', NULL, 'a batch of an epoch newer than the registered one, not at sequence 0, is out of order (Kafka''s OUT_OF_ORDER_SEQUENCE_NUMBER)');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), base_sequence => 13)$$,
    'MQ010', NULL, 'producer fields must come together');
SELECT throws_ok(
    $$SELECT * FROM mq.send_batch('idem', ARRAY['a', 'b', 'c', 'd'], ARRAY['1', '2', '3', '4'],
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 0, base_sequence => 0)$$,
    'MQ010', NULL, 'an idempotent batch must not span partitions');
SELECT throws_ok($$SELECT * FROM mq.init_producer('')$$, 'MQ010', NULL, 'an empty transactional id is refused');

-- fencing by a new epoch of the same transactional id
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 0, base_sequence => 0)$$,
    ARRAY[1::bigint], 'epoch 0 of tx-1 produces');
CREATE TEMP TABLE tx2 AS SELECT * FROM mq.init_producer('tx-1');
SELECT is((SELECT producer_id FROM tx2), (SELECT producer_id FROM tx), 'a transactional id keeps its producer id');
SELECT is((SELECT producer_epoch FROM tx2), 1, 'and gets the next epoch');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 0, base_sequence => 1)$$,
    'MQ012', NULL, 'the older epoch is fenced for produce');
SELECT throws_ok(
    $$SELECT mq.commit_offset('g', 'idem', 1, 1, NULL, (SELECT producer_id FROM tx), 0)$$,
    'MQ012', NULL, 'the older epoch is fenced for offset commits');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 1, base_sequence => 1)$$,
    'MQ011', NULL, 'a new epoch starts its sequences at 0');
SELECT results_eq(
    $$SELECT msg_offset FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 1, base_sequence => 0)$$,
    ARRAY[2::bigint], 'the new epoch produces from sequence 0');
SELECT lives_ok($$SELECT mq.commit_offset('g', 'idem', 1, 2, NULL, (SELECT producer_id FROM tx), 1)$$,
    'the current epoch commits offsets');
SELECT is(mq.committed_offset('g', 'idem', 1), 2::bigint, 'the fenced commit changed nothing, the current one did');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'idem', 1, 2, NULL, (SELECT producer_id FROM tx), NULL)$$,
    'MQ010', NULL, 'producer_id without producer_epoch is refused');

-- an idempotent producer bumps its own epoch after batches timed out
-- (librdkafka, Java): as on a Kafka partition leader, its first batch at
-- sequence 0 starts the newer epoch
SELECT is((SELECT count(*) FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 1, base_sequence => 0)), 1::bigint,
    'a newer epoch of an idempotent producer at sequence 0 produces');
SELECT is((SELECT producer_epoch FROM mq.producer WHERE producer_id = (SELECT producer_id FROM p)), 1,
    'and is the producer''s epoch from then on');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 0, base_sequence => 0)$$,
    'MQ012', NULL, 'the older epoch is fenced on every partition');
SELECT throws_ok(
    $$SELECT * FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 1,
        producer_id => (SELECT producer_id FROM tx), producer_epoch => 2, base_sequence => 0)$$,
    'MQ014', NULL, 'a transactional id''s epochs come from init_producer only');

-- expiry (producer.id.expiration.ms)
SET mq.producer_id_expiration_ms = 1;
SELECT pg_sleep(0.05);
SELECT mq.run_maintenance();
SELECT is((SELECT count(*) FROM mq.producer), 0::bigint, 'unused producer ids expire');
SELECT is((SELECT count(*) FROM mq.send('idem', NULL::bytea, '\x00'::bytea, partition => 0,
        producer_id => (SELECT producer_id FROM p), producer_epoch => 1, base_sequence => 1)), 1::bigint,
    'an expired id this node issued goes on at its next sequence, as on Kafka (kafkajs keeps its sequences)');
SELECT is((SELECT producer_epoch FROM mq.producer WHERE producer_id = (SELECT producer_id FROM p)), 1,
    'registered again with the batch''s epoch');
SELECT throws_ok(
    $$SELECT mq.commit_offset('g', 'idem', 0, 1, NULL, 999998, 0)$$,
    'MQ013', NULL, 'a fenced offset commit of an unknown id is refused');

-- Kafka's epoch is an int16: a transactional id past 32766 gets a new
-- producer id at epoch 0 (the coordinator's: transactional_ids.sql), and
-- the old id stays fenced
CREATE TEMP TABLE l0 AS SELECT * FROM mq.init_producer('local-1');
UPDATE mq.producer SET producer_epoch = 32765 WHERE transactional_id = 'local-1';
CREATE TEMP TABLE l1 AS SELECT * FROM mq.init_producer('local-1');
CREATE TEMP TABLE l2 AS SELECT * FROM mq.init_producer('local-1');
SELECT is((SELECT (producer_id, producer_epoch)::text FROM l1), (SELECT (producer_id, 32766)::text FROM l0),
          'a node bumps an epoch up to 32766');
SELECT ok((SELECT producer_epoch = 0 AND producer_id <> (SELECT producer_id FROM l0) FROM l2),
          'then gives the transactional id a new producer id at epoch 0');
SELECT throws_ok($$SELECT mq.send('idem', NULL::bytea, 'zombie'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM l1), producer_epoch => 32766, base_sequence => 0)$$,
                 'MQ012', NULL, 'the old id''s last instance is fenced');

SELECT * FROM finish();
ROLLBACK;
