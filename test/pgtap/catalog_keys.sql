-- mq's catalog tables must restore with pg_restore -j (docs/operations.md,
-- "Backups and restore"): no foreign key between two tables whose rows
-- pg_dump dumps (pg_extension_config_dump), since a parallel restore loads
-- them in no order; deleting a parent still deletes its children
-- (mq._cascade_delete); the identity sequences are dumped; and nothing is
-- unlogged, so base backups and PITR keep it all.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(7);

CREATE TEMP VIEW config_tables AS
SELECT unnest(extconfig) AS relid FROM pg_catalog.pg_extension WHERE extname = 'mq';

SELECT is_empty($$SELECT conrelid::regclass || ' -> ' || confrelid::regclass
                    FROM pg_catalog.pg_constraint
                   WHERE contype = 'f'
                     AND conrelid IN (SELECT relid FROM config_tables)
                     AND confrelid IN (SELECT relid FROM config_tables)$$,
                'no foreign key between two dumped catalog tables');

SELECT set_has($$SELECT relid::regclass::text FROM config_tables$$,
               $$VALUES ('mq.topic_topic_id_seq'), ('mq.producer_producer_id_seq'),
                        ('mq_coord.partition_lock_id_seq'), ('mq_coord.event_event_id_seq')$$,
               'the identity sequences are dumped');

SELECT is_empty($$SELECT c.oid::regclass::text FROM pg_catalog.pg_class c
                   WHERE c.relnamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace, 'mq_log'::regnamespace)
                     AND c.relpersistence <> 'p'$$,
                'no unlogged table in mq, mq_coord or mq_log');

-- the cascades: dropping a topic deletes its partitions, segments,
-- committed offsets, producer state and assignments
SELECT mq.create_topic('ck', 2);
SELECT mq.send('ck', 'k', 'v', partition => 0);
SELECT mq.commit_offset('ck-group', 'ck', 0, 1);
SELECT * FROM mq.init_producer() \gset
SELECT mq.send('ck', 'k', 'v', partition => 1, producer_id => :producer_id, producer_epoch => 0, base_sequence => 0);
SELECT isnt((SELECT count(*) FROM mq.segment s JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'ck'),
            0::bigint, 'the topic has segments');
CREATE TEMP TABLE ck AS SELECT topic_id FROM mq.topic WHERE topic_name = 'ck';
SELECT mq.drop_topic('ck');
SELECT is((SELECT count(*) FROM mq.partition_state WHERE topic_id = (SELECT topic_id FROM ck))
         + (SELECT count(*) FROM mq.segment WHERE topic_id = (SELECT topic_id FROM ck))
         + (SELECT count(*) FROM mq.consumer_offset WHERE topic_id = (SELECT topic_id FROM ck))
         + (SELECT count(*) FROM mq.producer_state WHERE topic_id = (SELECT topic_id FROM ck)),
          0::bigint, 'drop_topic deletes partitions, segments, offsets and producer state');
-- a producer's state goes with the producer
SELECT mq.create_topic('ck2', 1);
SELECT mq.send('ck2', 'k', 'v', producer_id => :producer_id, producer_epoch => 0, base_sequence => 0);
DELETE FROM mq.producer WHERE producer_id = :producer_id;
SELECT is((SELECT count(*) FROM mq.producer_state WHERE producer_id = :producer_id), 0::bigint,
          'deleting a producer deletes its state');
-- a group's members go with the group
SELECT mq.join_group('ck-members', ARRAY['ck2']);
DELETE FROM mq.consumer_group WHERE group_id = 'ck-members';
SELECT is((SELECT count(*) FROM mq.group_member WHERE group_id = 'ck-members')
         + (SELECT count(*) FROM mq.group_assignment WHERE group_id = 'ck-members'), 0::bigint,
          'deleting a group deletes its members and assignments');

SELECT * FROM finish();
ROLLBACK;
