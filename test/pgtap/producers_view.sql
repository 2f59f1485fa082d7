-- mq.producers (src/sql/80_views.sql): the producers each partition
-- remembers for idempotence, with the last sequence it took, for the
-- topics the caller may read, as Kafka's DescribeProducers requires
-- (mq-kafka answers it from here; test/kafka/authz.sh).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(6);

SELECT mq.create_topic('pv', 2);
CREATE TEMP TABLE p AS SELECT * FROM mq.init_producer();
SELECT count(*) FROM p, mq.send_batch('pv', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 1,
                                      producer_id => p.producer_id, producer_epoch => p.producer_epoch,
                                      base_sequence => 0);
SELECT is((SELECT count(*)::int FROM mq.producers WHERE topic = 'pv'), 1, 'one producer, on the partition it wrote to');
SELECT results_eq($$ SELECT v.partition, v.producer_id, v.producer_epoch, v.last_sequence
                       FROM mq.producers v WHERE v.topic = 'pv' $$,
                  $$ SELECT 1, producer_id, producer_epoch, 2 FROM p $$,
                  'its id, epoch and the last sequence of its batch (0 .. 2)');
SELECT count(*) FROM p, mq.send_batch('pv', NULL, ARRAY['d', 'e']::bytea[], partition => 1,
                                      producer_id => p.producer_id, producer_epoch => p.producer_epoch,
                                      base_sequence => 3);
SELECT is((SELECT last_sequence FROM mq.producers WHERE topic = 'pv'), 4, 'the next batch moves it (3 .. 4)');

CREATE ROLE mq_pv_reader;
SET ROLE mq_pv_reader;
SELECT is((SELECT count(*)::int FROM mq.producers), 0, 'a role without rights on the topic sees none');
RESET ROLE;
SELECT mq.grant('describe', 'topic', 'pv', 'mq_pv_reader'), mq.grant('write', 'topic', 'pv', 'mq_pv_reader');
SET ROLE mq_pv_reader;
SELECT is((SELECT count(*)::int FROM mq.producers), 0, 'nor one that may describe and write it');
RESET ROLE;
SELECT mq.grant('read', 'topic', 'pv', 'mq_pv_reader');
SET ROLE mq_pv_reader;
SELECT is((SELECT count(*)::int FROM mq.producers WHERE topic = 'pv'), 1, 'with read it sees it');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
