-- Kafka transactions' SQL part (src/sql/67_kafka_txn.sql): staged batches
-- take no offset and are invisible until the commit appends them with the
-- staged offsets; abort, a new epoch and the timeout drop them; an older
-- epoch is fenced; the transactional id is an ACL resource.
BEGIN;
SELECT plan(63);

SELECT mq.create_topic('ktx-out', 2);
SELECT mq.create_topic('ktx-in', 1);
SELECT mq.send('ktx-in', NULL::bytea, 'in'::bytea);

CREATE TEMP TABLE p0 AS SELECT * FROM mq.kafka_txn_init('app-1', 60000);
SELECT is((SELECT producer_epoch FROM p0), 0, 'a new transactional id starts at epoch 0');
SELECT is((SELECT producer_id FROM mq.producer WHERE transactional_id = 'app-1'), (SELECT producer_id FROM p0),
          'its producer id is mq''s (mq.init_producer)');
SELECT throws_ok($$SELECT mq.kafka_txn_init('', 60000)$$, 'MQ010', NULL, 'an empty transactional id is refused');
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-x', 0)$$, 'MQ010', NULL, 'a timeout of 0 is refused');

-- a batch staged: no offset yet, nothing to read
SELECT lives_ok($$SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 1, 0,
                     ARRAY['k1', 'k2']::bytea[], ARRAY['v1', 'v2']::bytea[])$$, 'a batch is staged');
SELECT lives_ok($$SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 1, 0,
                     ARRAY['k1', 'k2']::bytea[], ARRAY['v1', 'v2']::bytea[])$$, 'its retry is accepted');
SELECT is((SELECT count(*) FROM mq.kafka_txn_record), 1::bigint, 'and staged once');
SELECT is((SELECT count(*) FROM mq.fetch('ktx-out', 1, 0)), 0::bigint, 'a staged batch is not in the log');
SELECT is((SELECT (state, kafka_state, staged_batches, topics, partitions)::text FROM mq.kafka_transactions
            WHERE transactional_id = 'app-1'), '(ongoing,Ongoing,1,{ktx-out},{1})',
          'the transaction is open, with a batch staged for ktx-out partition 1');
SELECT lives_ok($$SELECT mq.send('ktx-out', NULL::bytea, 'plain'::bytea, partition => 1)$$,
                'another producer appends to the partition meanwhile');
SELECT throws_ok($$SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 5, 1,
                     ARRAY['k']::bytea[], ARRAY['v']::bytea[])$$, 'MQ006', NULL, 'an unknown partition is refused');
SELECT throws_ok($$SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0) + 1, 0, 'ktx-out', 0, 1,
                     ARRAY['k']::bytea[], ARRAY['v']::bytea[])$$, 'MQ073', NULL, 'another producer id is refused');
SELECT lives_ok($$SELECT mq.kafka_txn_add_offsets('app-1', (SELECT producer_id FROM p0), 0, 'g1')$$,
                'a group joins the transaction');
SELECT lives_ok($$SELECT mq.kafka_txn_offset('app-1', (SELECT producer_id FROM p0), 0, 'g1', 'ktx-in', 0, 1, 'm')$$,
                'an offset is staged');
SELECT is(mq.committed_offset('g1', 'ktx-in', 0), NULL, 'and not committed yet');
-- the producer id and epoch fence an old instance: null is no way around them
SELECT throws_ok($$SELECT mq.kafka_txn_stage('app-1', NULL, NULL, 'ktx-out', 0, 1,
                     ARRAY['k']::bytea[], ARRAY['v']::bytea[])$$, 'MQ010', NULL,
                 'a null producer id and epoch are refused when staging');
SELECT throws_ok($$SELECT mq.kafka_txn_offset('app-1', (SELECT producer_id FROM p0), NULL, 'g1', 'ktx-in', 0, 1)$$,
                 'MQ010', NULL, 'a null epoch is refused for an offset');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', NULL, 0, true)$$, 'MQ010', NULL,
                 'and a null producer id at the end');
SELECT throws_ok($$SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 0, -1,
                     ARRAY['k']::bytea[], ARRAY['v']::bytea[])$$, 'MQ010', NULL,
                 'a negative base sequence is refused');
-- TxnOffsetCommit's checks when the offset is staged, not at the commit
SELECT throws_ok($$SELECT mq.kafka_txn_offset('app-1', (SELECT producer_id FROM p0), 0, 'g1', 'ktx-in', 9, 1)$$,
                 'MQ006', NULL, 'an offset of a partition the topic lacks is refused when staged');
SELECT throws_ok($$SELECT mq.kafka_txn_offset('app-1', (SELECT producer_id FROM p0), 0, 'g1', 'ktx-none', 0, 1)$$,
                 'MQ001', NULL, 'so is one of a topic that does not exist');
SELECT throws_ok($$SELECT mq.kafka_txn_offset('app-1', (SELECT producer_id FROM p0), 0, '', 'ktx-in', 0, 1)$$,
                 'MQ010', NULL, 'and one of an empty group id');
SELECT throws_ok($$SELECT mq.kafka_txn_add_offsets('app-1', (SELECT producer_id FROM p0), 0, NULL)$$,
                 'MQ010', NULL, 'AddOffsetsToTxn without a group is refused');
SELECT is((SELECT count(*) FROM mq.kafka_txn_offset), 1::bigint, 'nothing refused was staged');

-- commit: appended after the plain record, offsets committed with them
SELECT is(mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, true), ARRAY['ktx-out'],
          'the commit appends to ktx-out');
SELECT is((SELECT array_agg(convert_from(value, 'UTF8') ORDER BY msg_offset) FROM mq.fetch('ktx-out', 1, 0)),
          ARRAY['plain', 'v1', 'v2'], 'the records take their offsets at commit, after the plain one');
SELECT is(mq.committed_offset('g1', 'ktx-in', 0), 1::bigint, 'the staged offset is committed with them');
SELECT is((SELECT (kafka_state, staged_batches)::text FROM mq.kafka_transactions WHERE transactional_id = 'app-1'),
          '(CompleteCommit,0)', 'then it is complete');
SELECT is(mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, true), '{}'::text[],
          'a retried commit succeeds and appends nothing');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, false)$$,
                 'MQ072', NULL, 'an abort after the commit is refused (Kafka: CompleteCommit, INVALID_TXN_STATE)');

-- abort: nothing appears
SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 0, 2,
                          ARRAY['k']::bytea[], ARRAY['aborted']::bytea[]);
SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, false);
SELECT is((SELECT count(*) FROM mq.fetch('ktx-out', 0, 0)), 0::bigint, 'an aborted batch never appears');
SELECT lives_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, false)$$,
                'a retried abort succeeds');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, true)$$,
                 'MQ072', NULL, 'a commit with nothing open after an abort is refused');

-- a new instance (epoch 1) fences the old one and aborts its open transaction
SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p0), 0, 'ktx-out', 0, 3,
                          ARRAY['k']::bytea[], ARRAY['zombie']::bytea[]);
CREATE TEMP TABLE p1 AS SELECT * FROM mq.kafka_txn_init('app-1', 60000);
SELECT is((SELECT (producer_id, producer_epoch)::text FROM p1), (SELECT (producer_id, 1)::text FROM p0),
          'the next InitProducerId keeps the id and bumps the epoch');
SELECT is((SELECT count(*) FROM mq.kafka_txn_record), 0::bigint, 'and drops the old epoch''s stage');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p0), 0, true)$$,
                 'MQ012', NULL, 'the old epoch is fenced');

-- the timeout: maintenance aborts and bumps the epoch
SELECT mq.kafka_txn_stage('app-1', (SELECT producer_id FROM p1), 1, 'ktx-out', 0, 0,
                          ARRAY['k']::bytea[], ARRAY['late']::bytea[]);
UPDATE mq.kafka_txn SET started_at = now() - interval '2 minutes' WHERE transactional_id = 'app-1';
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p1), 1, true)$$,
                 'MQ012', NULL, 'a transaction past its timeout is fenced at once');
SELECT is(mq._kafka_txn_expire(), 1, 'and aborted by the sweep');
SELECT is((SELECT count(*) FROM mq.kafka_txn_record), 0::bigint, 'which drops its stage');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-1', (SELECT producer_id FROM p1), 1, true)$$,
                 'MQ012', NULL, 'and its producer is fenced');

-- nothing ended since InitProducerId (Kafka's Empty): neither end is valid
CREATE TEMP TABLE e0 AS SELECT * FROM mq.kafka_txn_init('app-e', 60000);
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-e', (SELECT producer_id FROM e0), 0, false)$$,
                 'MQ072', NULL, 'an abort with no transaction begun is refused');
SELECT throws_ok($$SELECT mq.kafka_txn_end('app-e', (SELECT producer_id FROM e0), 0, true)$$,
                 'MQ072', NULL, 'so is a commit');

-- KIP-360: the client's current producer id and epoch
CREATE TEMP TABLE k0 AS SELECT * FROM mq.kafka_txn_init('app-k', 60000);
SELECT is((SELECT producer_epoch FROM mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), 0)), 1,
          'InitProducerId with the id''s pair bumps the epoch');
SELECT is((SELECT (producer_id, producer_epoch)::text
             FROM mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), 0)),
          (SELECT (producer_id, 1)::text FROM k0), 'its retry (the pair it replaced) gets the same pair again');
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), 5)$$,
                 'MQ012', NULL, 'an epoch the id never had is fenced');
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0) + 1000, 1)$$,
                 'MQ012', NULL, 'so is another producer id');
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), NULL)$$,
                 'MQ010', NULL, 'a producer id without its epoch is refused');
SELECT is((SELECT producer_epoch FROM mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), 1)), 2,
          'the current pair bumps again');
SELECT is((SELECT producer_epoch FROM mq.kafka_txn_init('app-k', 60000, 0, 0)), 3,
          'a new instance bumps: producer id 0, which mq never issues, is no pair (@platformatic/kafka sends it)');
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-k', 60000, (SELECT producer_id FROM k0), 2)$$,
                 'MQ012', NULL, 'after which the older instance''s retry is fenced, not the new instance');
SELECT is((SELECT producer_epoch FROM mq.kafka_txn_init('app-k2', 60000, 424242, 7)), 0,
          'a pair for an id never initialized starts it at epoch 0');

-- a cluster's InitProducerId: checked on the id's node, the epoch from the
-- coordinator, then adopted; another call may be adopted in between, so
-- the adopt checks the client's pair again and refuses an epoch passed
SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 0);
SELECT is((SELECT count(*) FROM mq.kafka_txn_init_check('app-r', 60000, 9001, 0) WHERE producer_id IS NULL)
          OPERATOR(pg_catalog.+)
          (SELECT count(*) FROM mq.kafka_txn_init_check('app-r', 60000, NULL, NULL) WHERE producer_id IS NULL),
          2::bigint, 'an instance with the id''s pair and a new instance both pass the check');
SELECT lives_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 2)$$,
                'the new instance adopts its epoch (2) first');
SELECT throws_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 1, 9001, 0)$$, 'MQ012', NULL,
                 'the other, whose pair it replaced, is fenced when it adopts epoch 1');
SELECT lives_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 4, 9001, 2)$$,
                'the id''s instance adopts epoch 4 first');
SELECT throws_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 3)$$, 'MQ056', NULL,
                 'a new instance''s epoch 3, given before it, is CONCURRENT_TRANSACTIONS: it asks again');
SELECT lives_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 5, 9001, 2)$$,
                'a retry of the call that got epoch 4 (the pair it replaced) adopts a newer epoch');
SELECT is((SELECT (producer_epoch, last_producer_epoch)::text FROM mq.kafka_txn WHERE transactional_id = 'app-r'),
          '(5,2)', 'which the id has, with the pair it replaced');
-- a timeout in a cluster fences the client with the coordinator's next
-- epoch (6 here), which the next InitProducerId then gets
UPDATE mq.kafka_txn SET producer_epoch = 6 WHERE transactional_id = 'app-r';
SELECT lives_ok($$SELECT mq.kafka_txn_adopt('app-r', 60000, 9001, 6)$$,
                'the epoch a timeout fenced the client with is adopted');

-- authorization: WRITE on the transactional id
CREATE ROLE ktx_app;
GRANT USAGE ON SCHEMA mq TO ktx_app;
SET LOCAL ROLE ktx_app;
SELECT throws_ok($$SELECT mq.kafka_txn_init('app-2', 60000)$$, '42501', NULL,
                 'a role without write on the transactional id is refused');
RESET ROLE;
SELECT mq.grant('write', 'transactional_id', 'app-*', 'ktx_app');
SET LOCAL ROLE ktx_app;
SELECT lives_ok($$SELECT mq.kafka_txn_init('app-2', 60000)$$, 'with a prefixed grant it may');
-- AddPartitionsToTxn all or none: a topic it may not write is refused
-- (42501, resource topic), the other partition not added
RESET ROLE;
SELECT mq.grant('write', 'topic', 'ktx-in', 'ktx_app');
SET LOCAL ROLE ktx_app;
SELECT results_eq($$SELECT a.topic, a.added, a.sqlstate, a.resource
                      FROM mq.kafka_txn_init('app-3', 60000) i,
                           mq.kafka_txn_add_partitions('app-3', i.producer_id, i.producer_epoch,
                                                       ARRAY['ktx-in', 'ktx-out'], ARRAY[0, 0]) a$$,
                  $$VALUES ('ktx-in', false, NULL, NULL), ('ktx-out', false, '42501', 'topic')$$,
                  'a topic the role may not write is refused, the other partition is not added');
RESET ROLE;
SELECT is((SELECT state FROM mq.kafka_txn WHERE transactional_id = 'app-3'), 'empty',
          'and no transaction is open');

SELECT * FROM finish();
ROLLBACK;
