-- Kafka's members as SQL sees them (src/sql/56_group_views.sql): the
-- members mq-kafka saved with a group (mq.kafka_group_save's Kafka
-- metadata) show in mq.groups, mq.group_members and mq.group_assignments,
-- live for their session timeout after mq-kafka's last save or touch, and
-- while live they refuse what Kafka refuses for a group with members:
-- resetting or deleting the offsets of a topic they subscribe to, and
-- deleting the group.  Runs as a superuser; rolls everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(31);

SELECT mq.create_topic('kgm1', 3);
SELECT mq.create_topic('kgm2', 1);
SELECT mq.create_topic('kgm3', 1);
CREATE ROLE kgm_stranger LOGIN;
CREATE ROLE kgm_reader LOGIN;
SELECT mq.grant('read', 'group', 'kg', 'kgm_reader');

-- a Stable group of two consumers, in Kafka's GroupMetadataValue version
-- 3 as mq-kafka writes it: m1 (static, instance i1) subscribes to kgm1
-- and kgm2 and owns kgm1-0, kgm1-1 and kgm2-0; m2 subscribes to kgm1 and
-- owns kgm1-2; sessions of 6 s
CREATE TEMP TABLE kv AS
SELECT int2send(3::smallint) || mq._kafka_string('consumer') || int4send(7)
       || mq._kafka_string('range') || mq._kafka_string('m1') || int8send(1700000000000) || int4send(2)
       || mq._kafka_string('m1') || mq._kafka_string('i1') || mq._kafka_string('rdkafka')
       || mq._kafka_string('/10.0.0.1') || int4send(300000) || int4send(6000)
       || mq._kafka_bytes(mq._consumer_subscription(ARRAY['kgm1', 'kgm2']))
       || mq._kafka_bytes(mq._consumer_assignment(ARRAY['kgm1', 'kgm1', 'kgm2'], ARRAY[0, 1, 0]))
       || mq._kafka_string('m2') || '\xffff'::bytea || mq._kafka_string('kafkajs')
       || mq._kafka_string('/10.0.0.2') || int4send(300000) || int4send(6000)
       || mq._kafka_bytes(mq._consumer_subscription(ARRAY['kgm1']))
       || mq._kafka_bytes(mq._consumer_assignment(ARRAY['kgm1'], ARRAY[2])) AS v;
SELECT lives_ok($$SELECT mq.kafka_group_save('kg', 1, '\x01', (SELECT v FROM kv))$$,
    'mq-kafka saves a Stable group with its Kafka metadata');

SELECT is((SELECT row(state, members, generation, assignor, sql_group)::text FROM mq.groups WHERE group_id = 'kg'),
    '(Stable,2,7,range,f)', 'mq.groups: a Kafka group with live members is Stable, with its generation and protocol');
SELECT is((SELECT array_agg(row(member_id, instance_id, client_id, client_host, topics, partitions,
                               session_timeout_ms, active, kafka)::text ORDER BY member_id)
             FROM mq.group_members WHERE group_id = 'kg'),
    ARRAY['(m1,i1,rdkafka,/10.0.0.1,"{kgm1,kgm2}",3,6000,t,t)', '(m2,,kafkajs,/10.0.0.2,{kgm1},1,6000,t,t)'],
    'mq.group_members: each Kafka member with its instance, client, host, subscription and partitions');
SELECT is((SELECT array_agg(row(topic, partition, owner, state)::text ORDER BY topic, partition)
             FROM mq.group_assignments WHERE group_id = 'kg'),
    ARRAY['(kgm1,0,m1,owned)', '(kgm1,1,m1,owned)', '(kgm1,2,m2,owned)', '(kgm2,0,m1,owned)'],
    'mq.group_assignments: the partitions its members were assigned');

-- what Kafka refuses for a group with members
SELECT throws_ok($$SELECT * FROM mq.reset_offsets('kg', 'kgm1', now())$$, 'MQ037', NULL,
    'resetting the offsets of a topic live Kafka members read is refused');
SELECT is((SELECT count(*)::int FROM mq.consumer_offset WHERE group_id = 'kg'), 0, 'and nothing was committed');
SELECT lives_ok($$SELECT * FROM mq.reset_offsets('kg', 'kgm3', now())$$,
    'a topic they do not subscribe to is reset');
SELECT throws_ok($$SELECT mq.delete_offsets('kg', 'kgm1')$$, 'MQ037', NULL,
    'deleting the offsets of a subscribed topic is refused (GROUP_SUBSCRIBED_TO_TOPIC)');
SELECT is(mq.delete_offsets('kg', 'kgm3'), 1, 'another topic''s offsets are deleted');
SELECT throws_ok($$SELECT mq.delete_group('kg')$$, 'MQ036', NULL,
    'deleting the group is refused (NON_EMPTY_GROUP)');
SELECT throws_ok($$SELECT mq.join_group('kg', ARRAY['kgm1'])$$, 'MQ032', NULL,
    'an SQL consumer cannot join it (INCONSISTENT_GROUP_PROTOCOL)');
SELECT is((SELECT count(*)::int FROM mq.consumer_group WHERE group_id = 'kg'), 0, 'and nothing changed');

-- each role sees the groups it may describe
SET LOCAL ROLE kgm_stranger;
SELECT is((SELECT count(*)::int FROM mq.group_members WHERE group_id = 'kg')
          + (SELECT count(*)::int FROM mq.groups WHERE group_id = 'kg')
          + (SELECT count(*)::int FROM mq.group_assignments WHERE group_id = 'kg'), 0,
    'a role that may not describe the group sees none of it');
SELECT is(mq.kafka_group_touch(ARRAY['kg']), 0, 'nor can it touch the group');
RESET ROLE;
SET LOCAL ROLE kgm_reader;
SELECT is((SELECT members FROM mq.groups WHERE group_id = 'kg'), 2::bigint,
    'a role that may read the group sees its members');
RESET ROLE;

-- live for the session timeout after mq-kafka's last word
UPDATE mq.kafka_group_state SET saved_at = now() - interval '7 seconds' WHERE group_id = 'kg';
SELECT is((SELECT row(state, members, generation, assignor)::text FROM mq.groups WHERE group_id = 'kg'),
    '(Empty,0,,)', 'a session timeout after mq-kafka last saved or touched it, the group is Empty');
SELECT is((SELECT bool_or(active) FROM mq.group_members WHERE group_id = 'kg'), false,
    'its members are listed, not active');
SELECT is((SELECT count(*)::int FROM mq.group_assignments WHERE group_id = 'kg'), 0,
    'and own no partitions');
SELECT lives_ok($$SELECT * FROM mq.reset_offsets('kg', 'kgm1', now())$$,
    'its offsets can be reset');
SELECT is((SELECT count(*)::int FROM mq.kafka_group_states('30 minutes') WHERE group_id = 'kg'), 0,
    'and a restarted mq-kafka does not take the group up (its old generation would commit over the reset)');
SET LOCAL ROLE kgm_reader;
SELECT is(mq.kafka_group_touch(ARRAY['kg', 'nobody']), 1, 'a role that may read the group touches it');
RESET ROLE;
SELECT is((SELECT row(state, members)::text FROM mq.groups WHERE group_id = 'kg'), '(Stable,2)',
    'and its members are live again');
SELECT is((SELECT count(*)::int FROM mq.kafka_group_states('30 minutes') WHERE group_id = 'kg'), 1,
    'a group whose members are live is taken up after a restart');
SELECT throws_ok($$SELECT mq.kafka_group_touch(NULL)$$, 'MQ010', NULL, 'touching NULL is refused');

-- gone: deleted with its saved membership
UPDATE mq.kafka_group_state SET saved_at = now() - interval '7 seconds' WHERE group_id = 'kg';
SELECT lives_ok($$SELECT mq.delete_group('kg')$$, 'a group whose Kafka members timed out is deleted');
SELECT is((SELECT count(*)::int FROM mq.kafka_group_state WHERE group_id = 'kg')
          + (SELECT count(*)::int FROM mq.groups WHERE group_id = 'kg'), 0,
    'with mq-kafka''s saved membership');

-- a group mq-kafka saved without Kafka metadata (an older mq-kafka) or
-- with another protocol type
SELECT mq.kafka_group_save('kg-old', 1, '\x01');
SELECT is((SELECT row(state, members)::text FROM mq.groups WHERE group_id = 'kg-old'), '(Empty,0)',
    'a group saved without Kafka metadata is known, without members');
SELECT lives_ok($$SELECT mq.delete_group('kg-old')$$, 'and can be deleted (it exists)');
SELECT mq.kafka_group_save('kg-connect', 1, '\x01',
    int2send(3::smallint) || mq._kafka_string('connect') || int4send(2) || mq._kafka_string('sessioned')
    || mq._kafka_string('w1') || int8send(1700000000000) || int4send(1)
    || mq._kafka_string('w1') || '\xffff'::bytea || mq._kafka_string('connect-1') || mq._kafka_string('/10.0.0.3')
    || int4send(60000) || int4send(10000) || mq._kafka_bytes('\x0001'::bytea) || mq._kafka_bytes('\x0002'::bytea));
SELECT is((SELECT row(member_id, topics, partitions, active)::text FROM mq.group_members WHERE group_id = 'kg-connect'),
    '(w1,{},0,t)', 'a member of another protocol type is shown without topics or partitions');
SELECT is((SELECT count(*)::int FROM mq._kafka_group_members('\x00030001'::bytea)), 0,
    'bytes that do not decode have no members');
SELECT is((SELECT array_agg(member_id) FROM mq._kafka_group_members((SELECT v FROM kv))), ARRAY['m1', 'm2'],
    'the decoder reads the members in order');

SELECT * FROM finish();
ROLLBACK;
