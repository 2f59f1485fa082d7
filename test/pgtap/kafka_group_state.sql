-- mq-kafka's group membership kept across its restarts
-- (src/sql/54_kafka_group_state.sql): saving needs READ on the group, a
-- later save wins whatever order saves arrive in, a NULL state forgets,
-- and a role reads back only the groups it may read, saved recently.
-- Runs as a superuser; creates its roles inside the transaction and rolls
-- everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(19);

CREATE ROLE mqg_app LOGIN;
CREATE ROLE mqg_other LOGIN;
SELECT mq.grant('read', 'group', 'app', 'mqg_app');
SELECT mq.grant('read', 'group', 'other', 'mqg_other');

SET LOCAL ROLE mqg_app;
SELECT lives_ok($$SELECT mq.kafka_group_save('app', 10, '\x0102')$$,
    'a role with read on the group saves its state');
SELECT throws_ok($$SELECT mq.kafka_group_save('other', 10, '\x01')$$, '42501', NULL,
    'a role without read on the group cannot save it');
SELECT mq.kafka_group_save('app', 5, '\x09');
RESET ROLE;
SELECT is((SELECT state FROM mq.kafka_group_state WHERE group_id = 'app'), '\x0102'::bytea,
    'an earlier save arriving later does not replace a later one');
SELECT is((SELECT count(*)::int FROM mq.kafka_group_state WHERE group_id = 'other'), 0,
    'the refused save left nothing');

SET LOCAL ROLE mqg_other;
SELECT mq.kafka_group_save('other', 1, '\x03');
SELECT is((SELECT array_agg(group_id) FROM mq.kafka_group_states('1 hour')), ARRAY['other'],
    'a role reads back only the groups it may read');
RESET ROLE;
SELECT is((SELECT array_agg(group_id ORDER BY group_id) FROM mq.kafka_group_states('1 hour')),
    ARRAY['app', 'other'], 'a superuser reads back every group');
UPDATE mq.kafka_group_state SET saved_at = now() - interval '2 hours' WHERE group_id = 'other';
SELECT is((SELECT array_agg(group_id) FROM mq.kafka_group_states('1 hour')), ARRAY['app'],
    'a group saved longer ago than max_age is not taken up');

SET LOCAL ROLE mqg_app;
SELECT mq.kafka_group_save('app', 9, NULL);
SELECT is((SELECT count(*)::int FROM mq.kafka_group_states('1 hour')), 1,
    'forgetting with an older stamp than the saved state does nothing');
SELECT mq.kafka_group_save('app', 11, NULL);
SELECT is((SELECT count(*)::int FROM mq.kafka_group_states('1 hour')), 0,
    'forgetting with a later stamp forgets the group');
RESET ROLE;

-- in a replicated cluster mq-kafka appends only the group's Kafka metadata
-- (mq.kafka_group_metadata); here: to the group's partition on one node
SELECT mq.ensure_consumer_offsets();
-- an Empty group in Kafka's GroupMetadataValue version 3, as mq-kafka writes it
CREATE TEMP TABLE empty_group AS
SELECT int2send(3::smallint) || mq._kafka_string('consumer') || int4send(4) || '\xffffffff'::bytea
       || int8send(1700000000000) || int4send(0) AS v;
GRANT SELECT ON empty_group TO mqg_app;
SET LOCAL ROLE mqg_app;
SELECT throws_ok($$SELECT mq.kafka_group_metadata('other', (SELECT v FROM empty_group))$$, '42501', NULL,
    'a role without read on the group cannot append its metadata');
SELECT lives_ok($$SELECT mq.kafka_group_metadata('app', (SELECT v FROM empty_group))$$,
    'a role with read on the group appends its metadata');
-- only mq writes __consumer_offsets: what Kafka tools decode there is Kafka's
SELECT throws_ok($$SELECT mq.kafka_group_metadata('app', '\xdeadbeef')$$, 'MQ010', NULL,
    'bytes that are no GroupMetadataValue are refused');
SELECT throws_ok($$SELECT mq.kafka_group_metadata('app', (SELECT v || '\x00'::bytea FROM empty_group))$$, 'MQ010',
    NULL, 'so is a value with a byte left over');
SELECT throws_ok($$SELECT mq.kafka_group_metadata('app', NULL)$$, 'MQ010', NULL,
    'and a null value, a tombstone (mq''s to write when the group goes)');
SELECT throws_ok($$SELECT mq.kafka_group_save('app', 12, '\x01', '\x0003')$$, 'MQ010', NULL,
    'a save''s metadata is checked the same way, and nothing is saved');
SELECT throws_ok($$SELECT mq.kafka_group_save(repeat('g', 256), 12, '\x01')$$, 'MQ010', NULL,
    'a group id longer than 255 bytes is refused, as by every group function');
RESET ROLE;
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT array_agg(f.value ORDER BY f.msg_offset)
             FROM generate_series(0, 9) p, LATERAL mq.fetch('__consumer_offsets', p, 0) f
            WHERE f.key = '\x0002'::bytea || mq._kafka_string('app')),
          ARRAY[(SELECT v FROM empty_group)],
    'the metadata is a group record of __consumer_offsets (GroupMetadataKey version 2), nothing saved');

-- the cleanup of mq-kafka's Empty groups (group_cleanup.c): the groups
-- the database holds nothing of, among those the caller may read
SELECT mq.create_topic('kgs_t', 1);
SELECT mq.commit_offset('with-offset', 'kgs_t', 0, 0);
SELECT mq.join_group('with-sql', ARRAY['kgs_t']);
SELECT mq.kafka_group_save('with-members', 1, '\x01');
SELECT results_eq($$SELECT * FROM mq.kafka_groups_unused(ARRAY['unused', 'with-offset', 'with-sql', 'with-members',
                                                                'unused'])$$,
                  $$VALUES ('unused')$$,
                  'unused: not a group with a committed offset, an SQL group or a saved membership, once each');
SET LOCAL ROLE mqg_app;
SELECT is_empty($$SELECT * FROM mq.kafka_groups_unused(ARRAY['unused'])$$,
                'a group the caller may not read is not named (it is kept)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
