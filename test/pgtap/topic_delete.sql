-- Deleting a replicated topic (src/sql/66_topic_delete.sql;
-- docs/replication.md, "Deleting a topic"): on the coordinator, the topic
-- and its partitions go in one transaction and a tombstone of its
-- incarnation stays; a topic created again under the name has another
-- incarnation.  On a node, the copy of a deleted incarnation is dropped
-- (its tables, committed offsets, roles), one of another incarnation is
-- left alone, and placing a topic whose incarnation changed drops the
-- old copy and starts empty.  Plays both the coordinator (a broker
-- registered by hand, this session holding its liveness lock) and a
-- data node, as placement.sql does.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(27);

INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name) VALUES (1, 'host=a', 'a');
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 1);
SELECT mq_coord.create_topic('gone', 2);
SELECT incarnation AS first_incarnation FROM mq_coord.topic WHERE topic = 'gone' \gset
SELECT isnt(:'first_incarnation'::uuid, NULL, 'a topic gets an incarnation when created');
SELECT is((SELECT count(*)::int FROM mq_coord.assignments(1) WHERE topic = 'gone' AND incarnation = :'first_incarnation'),
          2, 'the brokers read it with their assignments');

-- the coordinator's side
SELECT throws_ok($$ SELECT mq_coord.delete_topic('nope') $$, 'MQ001',
                 'topic "nope" is not known to the coordinator', 'an unknown topic is refused');
SELECT throws_ok($$ SELECT mq_coord.delete_topic(NULL) $$, 'MQ010', NULL, 'a null name is refused');
UPDATE mq_coord.partition SET leader = 1, leader_epoch = 7 WHERE topic = 'gone' AND partition = 1;
SELECT lives_ok($$ SELECT mq_coord.delete_topic('gone') $$, 'a replicated topic is deleted');
SELECT is((SELECT count(*)::int FROM mq_coord.partition WHERE topic = 'gone'), 0, 'its partitions are gone');
SELECT is((SELECT count(*)::int FROM mq_coord.assignments(1) WHERE topic = 'gone'), 0, 'nothing assigns them');
SELECT is((SELECT topic FROM mq_coord.deleted_topic WHERE incarnation = :'first_incarnation'), 'gone',
          'a tombstone of its incarnation stays');
SELECT is((SELECT count(*)::int FROM mq_coord.event WHERE topic = 'gone' AND kind = 'topic_deleted'), 1,
          'an event records it');
SELECT throws_ok($$ SELECT mq_coord.delete_topic('gone') $$, 'MQ001', NULL, 'deleting it again is refused');
SELECT mq_coord.create_topic('gone', 1);
SELECT incarnation AS second_incarnation FROM mq_coord.topic WHERE topic = 'gone' \gset
CREATE TEMP TABLE inc (first uuid, second uuid);
INSERT INTO inc VALUES (:'first_incarnation', :'second_incarnation');
SELECT isnt(:'second_incarnation'::uuid, :'first_incarnation'::uuid, 'created again, it has another incarnation');
SELECT is((SELECT leader_epoch FROM mq_coord.partition WHERE topic = 'gone'), 7,
          'and its leader epochs start where the old incarnation''s ended, so old copies are fenced');
SELECT results_eq($$ SELECT d.* FROM inc, mq_coord.deleted_topics(ARRAY['gone', 'gone', 'other'],
                                                                    ARRAY[inc.first, inc.second, NULL]) d $$,
                  $$ SELECT 'gone'::text, first FROM inc $$,
                  'of a node''s copies, only the deleted incarnation is deleted');
SELECT mq_coord.delete_topic('gone');
SELECT results_eq($$ SELECT topic FROM mq_coord.deleted_topics(ARRAY['gone'], ARRAY[NULL]::uuid[]) $$,
                  $$ VALUES ('gone'::text) $$,
                  'a copy placed without an incarnation is deleted once no topic has its name');

-- the node's side: a copy placed in the first incarnation, with records and an offset
SELECT mq.replica_place_topic('n', 2, '{}', '{0,1}', :'first_incarnation');
SELECT mq.replica_become_leader('n', 0, 1, 1, '{1}', '{1}');
SELECT mq.send('n', NULL::text, 'old', partition => 0);
SELECT mq.commit_offset('g', 'n', 0, 1);
SELECT results_eq($$ SELECT * FROM mq.replica_topics() WHERE topic = 'n' $$,
                  $$ SELECT 'n'::text, first FROM inc $$, 'the node lists the copy and its incarnation');
SELECT is(mq.replica_drop_topic('n', :'second_incarnation'), false, 'another incarnation''s drop leaves it');
SELECT mq.create_topic('local', 1);
SELECT is(mq.replica_drop_topic('local', NULL), false, 'a topic replication never touched is never dropped');
SELECT is(mq.replica_place_topic('n', 1, '{}', '{0}', :'second_incarnation'), 0,
          'placing the second incarnation drops the first and creates it afresh');
SELECT results_eq($$ SELECT partition, log_end_offset FROM mq.partitions WHERE topic = 'n' $$,
                  $$ VALUES (0, 0::bigint) $$, 'the new copy starts empty, with the new partition count');
SELECT is((SELECT count(*)::int FROM mq.consumer_offset c JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'n'),
          0, 'the old copy''s committed offsets went with it');
-- a client cannot drop or grow one node's copy (that would break its
-- partitions): the coordinator changes it, and the broker carries it out
SELECT throws_ok($$ SELECT mq.drop_topic('n') $$, 'MQ039', 'topic "n" is replicated: delete it on the cluster''s coordinator',
                 'mq.drop_topic of a replicated topic on a node is refused');
SELECT throws_ok($$ SELECT mq.add_partitions('n', 1) $$, 'MQ039', NULL,
                 'and so is mq.add_partitions');
SELECT is(mq.replica_place_topic('n', 2, '{}', '{0,1}', :'second_incarnation'), 0,
          'the broker grows the copy to the coordinator''s count');
SELECT results_eq($$ SELECT count(*)::int FROM mq.partitions WHERE topic = 'n' $$, $$ VALUES (2) $$,
                  'to two partitions');
SELECT is(mq.replica_drop_topic('n', :'second_incarnation'), true, 'the deleted incarnation''s copy is dropped');
SELECT is((SELECT count(*)::int FROM mq.topic WHERE topic_name = 'n'), 0, 'the topic is gone from the node');
SELECT is((SELECT count(*)::int FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
            WHERE s.nspname = 'mq_log' AND obj_description(c.oid, 'pg_class') = 'mq topic n'), 0,
          'and its log tables');

SELECT pg_advisory_unlock(mq_coord.broker_lock_class(), 1);
ROLLBACK;
