-- Cluster-wide transactional ids (issue 12): mq_coord.init_producer gives
-- a transactional id one producer id from the cluster's counter and a new
-- epoch per call; a brokered node takes such an (id, epoch) with its first
-- batch or fenced offset commit and fences older epochs from then on.
BEGIN;
SELECT plan(14);

CREATE TEMP TABLE a0 AS SELECT * FROM mq_coord.init_producer('pipeline-1');
CREATE TEMP TABLE a1 AS SELECT * FROM mq_coord.init_producer('pipeline-1');
CREATE TEMP TABLE b0 AS SELECT * FROM mq_coord.init_producer('pipeline-2');
SELECT is((SELECT producer_epoch FROM a0), 0, 'a new transactional id starts at epoch 0');
SELECT is((SELECT (producer_id, producer_epoch)::text FROM a1),
          (SELECT (producer_id, 1)::text FROM a0), 'the next call keeps the id and bumps the epoch');
SELECT isnt((SELECT producer_id FROM b0), (SELECT producer_id FROM a0), 'another transactional id gets another id');
SELECT cmp_ok((SELECT next_id FROM mq_coord.producer_id_counter), '>', (SELECT producer_id FROM b0),
              'from the counter the brokers'' blocks come from, so no block holds them');
SELECT throws_ok($$SELECT mq_coord.init_producer('')$$, 'MQ010', NULL, 'an empty transactional id is refused');

-- a brokered data node (mq.replica_broker has a row)
INSERT INTO mq.replica_broker (broker_id) VALUES (7);
SELECT mq.create_topic('tx-in', 1);
SELECT mq.create_topic('tx-out', 1);
SELECT mq.send('tx-in', NULL::bytea, 'x'::bytea);
SELECT lives_ok($$SELECT mq.commit_offset('g', 'tx-in', 0, 1, NULL, (SELECT producer_id FROM a0), 0)$$,
                'a fenced offset commit registers a transactional producer issued by the coordinator');
SELECT lives_ok($$SELECT mq.send('tx-out', NULL::bytea, 'y'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM a0), producer_epoch => 0, base_sequence => 0)$$,
                'so does its first batch');
-- the new instance (epoch 1) writes: the old one (epoch 0) is fenced here
SELECT lives_ok($$SELECT mq.send('tx-out', NULL::bytea, 'z'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM a1), producer_epoch => 1, base_sequence => 0)$$,
                'the next epoch takes over with its first batch');
SELECT throws_ok($$SELECT mq.send('tx-out', NULL::bytea, 'old'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM a0), producer_epoch => 0, base_sequence => 1)$$,
                 'MQ012', NULL, 'the older epoch is fenced from then on');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'tx-in', 0, 1, NULL, (SELECT producer_id FROM a0), 0)$$,
                 'MQ012', NULL, 'its offset commits too');
SELECT lives_ok($$SELECT mq.send('tx-out', NULL::bytea, 'late'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM b0), producer_epoch => 0, base_sequence => 5)$$,
                'an unknown id whose batch does not start at 0 is taken, as on Kafka (its state may have expired)');

-- Kafka's epoch is an int16: from 32766 on a transactional id gets a new
-- producer id at epoch 0 on the coordinator (and on a node: idempotence.sql)
UPDATE mq_coord.transactional_producer SET producer_epoch = 32765 WHERE transactional_id = 'pipeline-2';
CREATE TEMP TABLE c1 AS SELECT * FROM mq_coord.init_producer('pipeline-2');
CREATE TEMP TABLE c2 AS SELECT * FROM mq_coord.init_producer('pipeline-2');
SELECT is((SELECT (producer_id, producer_epoch)::text FROM c1), (SELECT (producer_id, 32766)::text FROM b0),
          'the coordinator bumps an epoch up to 32766');
SELECT is((SELECT producer_epoch FROM c2), 0, 'then starts a new producer id at epoch 0');
SELECT isnt((SELECT producer_id FROM c2), (SELECT producer_id FROM b0), 'a new producer id');

SELECT * FROM finish();
ROLLBACK;
