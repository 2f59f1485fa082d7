-- Producer ids in a cluster (docs/replication.md, "Producer ids"): the
-- coordinator's blocks (mq_coord.allocate_producer_ids), a brokered node
-- issuing ids only from the blocks its broker added (MQ027 when none is
-- left), and a brokered node accepting ids issued elsewhere at sequence 0.
-- Runs in a fresh database where pgtap and mq are installed; this one
-- database plays both the coordinator and a data node.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(49);

-------------------------------------------------------------------------------
-- Coordinator: blocks from one counter, never overlapping
-------------------------------------------------------------------------------
SELECT throws_ok($$ SELECT * FROM mq_coord.allocate_producer_ids(7) $$, 'MQ010', NULL,
                 'a broker that does not hold its liveness lock gets no block');
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 7);
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 8);
SELECT throws_ok($$ SELECT * FROM mq_coord.allocate_producer_ids(7, 0) $$, 'MQ010', NULL,
                 'a block holds at least one id');
SELECT throws_ok($$ SELECT * FROM mq_coord.allocate_producer_ids(7, 1000001) $$, 'MQ010', NULL,
                 'a block holds at most 1000000 ids');
SET LOCAL synchronous_commit = off;
SELECT results_eq($$ SELECT first_id, last_id FROM mq_coord.allocate_producer_ids(7) $$,
                  $$ VALUES (1::bigint, 1000::bigint) $$, 'the first block is ids 1 .. 1000 (1000 by default)');
SELECT is(current_setting('synchronous_commit'), 'on',
          'a transaction that allocated a block commits durably, whatever the session set');
SELECT results_eq($$ SELECT first_id, last_id FROM mq_coord.allocate_producer_ids(8, 10) $$,
                  $$ VALUES (1001::bigint, 1010::bigint) $$, 'the next block starts after it, for any broker');
SELECT count(*) FROM generate_series(1, 40) AS g,
       LATERAL mq_coord.allocate_producer_ids(7 + g % 2, 1 + (g * 37) % 500) AS a;
SELECT is((SELECT count(*) FROM mq_coord.producer_id_block a JOIN mq_coord.producer_id_block b
             ON a.first_id < b.first_id AND b.first_id <= a.last_id), 0::bigint,
          'no two of 42 blocks overlap');
SELECT is((SELECT count(*) FROM mq_coord.producer_id_block), 42::bigint, 'every block is recorded');
SELECT is((SELECT sum(last_id - first_id + 1) FROM mq_coord.producer_id_block),
          (SELECT max(last_id) FROM mq_coord.producer_id_block)::numeric,
          'the blocks leave no gap: ids 1 .. the last one handed out');
SELECT is((SELECT next_id FROM mq_coord.producer_id_counter),
          (SELECT max(last_id) + 1 FROM mq_coord.producer_id_block), 'the counter is past the last block');
SELECT ok((SELECT bool_and(broker_id IN (7, 8)) FROM mq_coord.producer_id_block),
          'each block names the broker it went to');
-- a counter with ids in use (as a restore from a dump has it) goes on from there
UPDATE mq_coord.producer_id_counter SET next_id = 5000000;
SELECT results_eq($$ SELECT first_id FROM mq_coord.allocate_producer_ids(7, 5) $$,
                  $$ VALUES (5000000::bigint) $$, 'blocks are cut from the counter');

-------------------------------------------------------------------------------
-- A node without a broker: today's local ids
-------------------------------------------------------------------------------
SELECT mq.create_topic('pid', 2);
CREATE TEMP TABLE local_p AS SELECT * FROM mq.init_producer();
SELECT ok((SELECT producer_id FROM local_p) IS NOT NULL, 'a brokerless node issues ids of its own');
SELECT mq.create_topic('pid-local', 1);
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid-local', NULL, ARRAY['\x00']::bytea[], partition => 0,
                      producer_id => 800001, producer_epoch => 0, base_sequence => 3) $$,
                  ARRAY[0::bigint], 'a brokerless node takes an id it did not issue, at any sequence, as Kafka takes any producer (one from before a restore)');
SELECT setval(pg_get_serial_sequence('mq.producer', 'producer_id'), 800000);
SELECT is((SELECT producer_id FROM mq.init_producer()), 800002::bigint,
          'init_producer skips the id the batch registered');
SELECT throws_ok($$ SELECT mq.commit_offset('g', 'pid-local', 0, 1, NULL, 800005, 0) $$,
                 'MQ013', NULL, 'a fenced offset commit must name a producer the node knows');

-------------------------------------------------------------------------------
-- A node whose broker attached: ids only from blocks
-------------------------------------------------------------------------------
INSERT INTO mq.replica_broker (broker_id) VALUES (7);
SELECT is(mq.replica_producer_ids_left(), 0::bigint, 'no ids before the broker adds a block');
SELECT throws_ok($$ SELECT * FROM mq.init_producer() $$, 'MQ027', NULL,
                 'without a block init_producer refuses (retriable), with no fallback to local ids');
SELECT throws_ok($$ SELECT * FROM mq.init_producer('tx-new') $$, 'MQ027', NULL,
                 'so does a transactional id''s first init_producer');
SELECT is(mq.replica_add_producer_ids(2001, 2003), 3::bigint, 'the broker adds a block: 3 ids left');
SET LOCAL synchronous_commit = off;
CREATE TEMP TABLE p1 AS SELECT * FROM mq.init_producer();
SELECT is(current_setting('synchronous_commit'), 'local',
          'a transaction that issued an id commits with a local flush, whatever the session set');
SELECT is((SELECT producer_id FROM p1), 2001::bigint, 'the first id of the block');
CREATE TEMP TABLE tx1 AS SELECT * FROM mq.init_producer('tx-a');
SELECT results_eq($$ SELECT producer_id, producer_epoch FROM tx1 $$, $$ VALUES (2002::bigint, 0) $$,
                  'a transactional id''s first init_producer draws the next id');
SELECT results_eq($$ SELECT producer_id, producer_epoch FROM mq.init_producer('tx-a') $$,
                  $$ VALUES (2002::bigint, 1) $$, 'again: the same id in the next epoch');
SELECT is(mq.replica_producer_ids_left(), 1::bigint, 'and that drew no id');
SELECT is((SELECT producer_id FROM mq.init_producer()), 2003::bigint, 'the last id of the block');
SELECT throws_ok($$ SELECT * FROM mq.init_producer() $$, 'MQ027', NULL, 'the block is used up: refused');
SELECT results_eq($$ SELECT first_id, last_id, next_id FROM mq.producer_id_block $$,
                  $$ VALUES (2001::bigint, 2003::bigint, 2004::bigint) $$,
                  'a used-up block stays, so that it cannot be added again');
SELECT throws_ok($$ SELECT mq.replica_add_producer_ids(2001, 2003) $$, 'MQ010', NULL,
                 'a block the node had is refused');
SELECT throws_ok($$ SELECT mq.replica_add_producer_ids(1990, 2001) $$, 'MQ010', NULL,
                 'so is one overlapping it');
SELECT throws_ok($$ SELECT mq.replica_add_producer_ids(10, 9) $$, 'MQ010', NULL, 'and an empty one');
-- ids the node issued itself before its broker attached are skipped
SELECT is(mq.replica_add_producer_ids((SELECT producer_id FROM local_p), (SELECT producer_id FROM local_p) + 1),
          2::bigint, 'a block holding an id issued locally before');
SELECT is((SELECT producer_id FROM mq.init_producer()), (SELECT producer_id + 1 FROM local_p),
          'init_producer skips the id the node issued itself');

-------------------------------------------------------------------------------
-- Ids issued elsewhere, on a brokered node
-------------------------------------------------------------------------------
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid', NULL, ARRAY['\x00','\x01']::bytea[], partition => 0,
                      producer_id => 900001, producer_epoch => 0, base_sequence => 0) $$,
                  ARRAY[0::bigint, 1], 'an unknown id at sequence 0 is taken (issued by another node)');
SELECT results_eq($$ SELECT producer_epoch FROM mq.producer WHERE producer_id = 900001 $$,
                  ARRAY[0], 'and registered with its epoch');
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid', NULL, ARRAY['\x00','\x01']::bytea[], partition => 0,
                      producer_id => 900001, producer_epoch => 0, base_sequence => 0) $$,
                  ARRAY[0::bigint, 1], 'its retry returns the original offsets');
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid', NULL, ARRAY['\x02']::bytea[], partition => 1,
                      producer_id => 900001, producer_epoch => 0, base_sequence => 0) $$,
                  ARRAY[0::bigint], 'the same id starts on another partition at sequence 0');
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid', NULL, ARRAY['\x05']::bytea[], partition => 1,
                      producer_id => 900002, producer_epoch => 0, base_sequence => 5) $$,
                  ARRAY[1::bigint], 'an unknown id at any sequence is taken, as on Kafka (its state may have expired)');
SELECT lives_ok($$ SELECT mq.commit_offset('g', 'pid', 0, 1, NULL, 900003, 0) $$,
                'a fenced offset commit registers an unknown id, as a first batch does (a transactional consumer commits where it never produced)');
SELECT results_eq($$ SELECT msg_offset FROM mq.send_batch('pid', NULL, ARRAY['\x03']::bytea[], partition => 0,
                      producer_id => 900001, producer_epoch => 2, base_sequence => 0) $$,
                  ARRAY[2::bigint], 'a newer epoch of a foreign id at sequence 0 starts that epoch here');
SELECT results_eq($$ SELECT producer_epoch FROM mq.producer WHERE producer_id = 900001 $$,
                  ARRAY[2], 'the node knows the new epoch');
SELECT throws_ok($$ SELECT * FROM mq.send_batch('pid', NULL, ARRAY['\x04']::bytea[], partition => 1,
                     producer_id => 900001, producer_epoch => 0, base_sequence => 1) $$,
                 'MQ012', NULL, 'the older epoch is fenced on every partition of the node');
SELECT throws_ok($$ SELECT * FROM mq.send_batch('pid', NULL, ARRAY['\x04']::bytea[], partition => 0,
                     producer_id => 900001, producer_epoch => 3, base_sequence => 4) $$,
                 'MQ011', NULL, 'a newer epoch not at sequence 0 is out of order');
SELECT throws_ok($$ SELECT * FROM mq.send_batch('pid', NULL, ARRAY['\x04']::bytea[], partition => 0,
                     producer_id => 2002, producer_epoch => 5, base_sequence => 0) $$,
                 'MQ014', NULL, 'the epochs of a transactional id issued here are this node''s own');
-- an empty batch writes nothing but checks and registers the epoch
-- (mqctl pipeline registers its epoch so, before its first prepared step)
SELECT is((SELECT count(*) FROM mq.send_batch('pid', '{}'::bytea[], '{}'::bytea[], NULL, 0, 900001, 4, 0)), 0::bigint,
          'an empty batch at sequence 0 of a newer epoch writes nothing');
SELECT results_eq($$ SELECT producer_epoch FROM mq.producer WHERE producer_id = 900001 $$,
                  ARRAY[4], 'but registers the epoch on the node');
SELECT throws_ok($$ SELECT * FROM mq.send_batch('pid', '{}'::bytea[], '{}'::bytea[], NULL, 0, 900001, 2, 0) $$,
                 'MQ012', NULL, 'an empty batch of a fenced epoch is refused');
SELECT throws_ok($$ SELECT * FROM mq.send_batch('pid', '{}'::bytea[], '{}'::bytea[], NULL, 0, 900001, 5, 3) $$,
                 'MQ011', NULL, 'and one of a newer epoch not at sequence 0');

-- without its broker row the node is brokerless again
DELETE FROM mq.replica_broker;
SELECT throws_ok($$ SELECT mq.commit_offset('g', 'pid', 0, 1, NULL, 900006, 0) $$,
                 'MQ013', NULL, 'a brokerless node takes no fenced offset commit of an unknown id');

SELECT * FROM finish();
ROLLBACK;
