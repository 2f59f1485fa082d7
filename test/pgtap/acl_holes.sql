-- Authorization holes found by attacking mq as an ordinary role (issue 24):
-- the filtered views leak nothing to a cheap function in the caller's
-- WHERE clause, mq.grants lists only grants on what the caller may
-- describe, an id tells nothing of a hidden topic, nobody asks about
-- another role's rights, grants made by a topic's owner go with the topic,
-- and no broker address keeps a password.  (A revoke in another session's
-- open transaction: test/isolation/specs/acl-revoke-produce.spec.)
-- Runs as a superuser; creates its roles inside the transaction and rolls
-- everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(43);

CREATE ROLE mqh_attacker LOGIN;
CREATE ROLE mqh_owner LOGIN;
CREATE ROLE mqh_admin LOGIN;
SELECT mq.grant('alter', 'cluster', 'kafka-cluster', 'mqh_admin');
SELECT mq.grant('create', 'cluster', 'kafka-cluster', 'mqh_owner');

SELECT mq.create_topic('visible', 1);
SELECT mq.create_topic('secret', 1) AS secret_id \gset
SELECT mq.create_topic('secret_c', 1, '{"cleanup.policy": "compact"}');
SELECT mq.send('secret', 'k'::bytea, 'v'::bytea);
SELECT mq.grant('read', 'topic', 'visible', 'mqh_attacker');
SELECT mq.grant('read', 'group', 'mine', 'mqh_attacker');
SELECT mq.grant('read', 'topic', 'secret', 'PUBLIC', permission => 'deny');
-- a PUBLIC grant naming a group the attacker may not describe
SELECT mq.grant('write', 'topic', 'secret_c', 'PUBLIC');
SELECT mq.revoke('write', 'topic', 'secret_c', 'PUBLIC');
SELECT mq.grant('describe', 'group', 'hidden_group', 'PUBLIC', permission => 'deny');
SELECT mq.join_group('hidden_group', ARRAY['secret']);
SELECT mq.join_group('mine', ARRAY['visible']);
SELECT mq.commit_offset('mine', 'visible', 0, 0);
SELECT mq.commit_offset('hidden_group', 'secret', 0, 0);
-- hidden rows for the other views too: a producer's state on the hidden
-- topic, a Kafka transaction with a batch staged for it, a SCRAM user
SELECT mq.send('secret', 'k'::bytea, 'v'::bytea, producer_id => p.producer_id,
               producer_epoch => p.producer_epoch, base_sequence => 0)
  FROM mq.init_producer() p;
SELECT mq.kafka_txn_stage('hidden-txn', t.producer_id, t.producer_epoch, 'secret', 0, 0,
                          ARRAY['k']::bytea[], ARRAY['v']::bytea[])
  FROM mq.kafka_txn_init('hidden-txn', 60000) t;
SELECT mq.set_scram_credential('hidden-user', 'SCRAM-SHA-256', 'pw-of-hidden-user');
SELECT is((SELECT count(*) FROM mq.producers WHERE topic = 'secret')
          + (SELECT count(*) FROM mq.kafka_transactions WHERE transactional_id = 'hidden-txn')
          + (SELECT count(*) FROM mq.scram_credentials WHERE user_name = 'hidden-user'), 3::bigint,
          'the views show the hidden rows to a superuser (what the probes below must not see)');

-------------------------------------------------------------------------------
-- 1. a cheap function in the caller's WHERE clause sees only the rows the
--    view shows (security_barrier): it records what it is given
-------------------------------------------------------------------------------
SET ROLE mqh_attacker;
CREATE FUNCTION pg_temp.leak(VARIADIC a text[]) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    PERFORM set_config('mqh.seen', current_setting('mqh.seen', true) || ',' || array_to_string(a, ','), false);
    RETURN true;
END $$;

CREATE FUNCTION pg_temp.leaked(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('mqh.seen', '', false);
    EXECUTE q;
    RETURN (SELECT string_agg(x, ',' ORDER BY x)
              FROM unnest(string_to_array(current_setting('mqh.seen'), ',')) x
             WHERE x LIKE 'secret%' OR x LIKE 'hidden%');
END $$;

SELECT is(pg_temp.leaked('SELECT * FROM mq.topics WHERE pg_temp.leak(topic)'), NULL,
          'mq.topics passes no hidden topic to a function in the caller''s WHERE');
SELECT ok(current_setting('mqh.seen') LIKE '%visible%', 'the probe itself sees what the view shows');
SELECT is(pg_temp.leaked('SELECT * FROM mq.partitions WHERE pg_temp.leak(topic)'), NULL,
          'mq.partitions: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.segments WHERE pg_temp.leak(topic)'), NULL,
          'mq.segments: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.replica_status WHERE pg_temp.leak(topic)'), NULL,
          'mq.replica_status: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.compaction WHERE pg_temp.leak(topic)'), NULL,
          'mq.compaction: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.group_members WHERE pg_temp.leak(group_id, topics[1])'), NULL,
          'mq.group_members: likewise');
-- the views over a UNION ALL: planned as an append of their branches, they
-- lost their barrier (the member id and the topic name leaked)
SELECT is(pg_temp.leaked('SELECT * FROM mq.group_members WHERE pg_temp.leak(group_id, member_id)'), NULL,
          'mq.group_members passes no hidden group''s member to it');
SELECT is(pg_temp.leaked('SELECT * FROM mq.leader_epochs WHERE pg_temp.leak(topic)'), NULL,
          'mq.leader_epochs: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.group_assignments WHERE pg_temp.leak(group_id, topic)'), NULL,
          'mq.group_assignments: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.grants WHERE pg_temp.leak(resource_name)'), NULL,
          'mq.grants: likewise');
SELECT is(pg_temp.leaked('SELECT * FROM mq.effective_grants WHERE pg_temp.leak(resource_name)'), NULL,
          'mq.effective_grants: likewise');
-- and every view of mq the role may read, given each of its columns alone
-- (views added later included; a qual over columns of several tables is
-- only evaluated where they meet, above the filters)
SELECT is((SELECT string_agg(c.relname || '.' || a.attname, ', ' ORDER BY c.relname, a.attnum)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE n.nspname = 'mq' AND c.relkind = 'v' AND has_table_privilege(c.oid, 'SELECT')
              AND pg_temp.leaked(format('SELECT * FROM mq.%I WHERE pg_temp.leak(%I::text)', c.relname, a.attname))
                  IS NOT NULL),
          NULL, 'no view of mq passes a hidden topic or group to it');

-------------------------------------------------------------------------------
-- 2. mq.grants lists the PUBLIC grants only on what the caller may describe
-------------------------------------------------------------------------------
SELECT is((SELECT count(*) FROM mq.grants WHERE resource_name IN ('secret', 'hidden_group')), 0::bigint,
          'mq.grants shows no PUBLIC grant naming a topic or group the role may not describe');
SELECT is((SELECT count(*) FROM mq.grants WHERE resource_name IN ('visible', 'mine')), 2::bigint,
          'mq.grants shows the role''s own grants');
SELECT is((SELECT string_agg(group_id || '/' || topic, ',') FROM mq.consumer_lag), 'mine/visible',
          'mq.consumer_lag shows the lag of its group on its topic, nothing of the hidden ones');
SELECT is((SELECT string_agg(topic, ',' ORDER BY topic) FROM mq.partition_stats), 'visible',
          'mq.partition_stats shows its topic only');
SELECT is(mq._offset_time(:secret_id, 0, 0), NULL, '_offset_time of a hidden topic: NULL');

-------------------------------------------------------------------------------
-- 3. an id tells a hidden topic from a missing one in no way, and neither
--    does a group subscription (a join used to take a hidden topic, and
--    the heartbeat's assignment named its partitions)
-------------------------------------------------------------------------------
SELECT is(mq._log_end_offset(:secret_id, 0), NULL, '_log_end_offset of a hidden topic: NULL');
SELECT is(mq._log_end_offset(999999, 0), NULL, '_log_end_offset of an id no topic has: NULL too');
SELECT throws_ok($$SELECT mq.join_group('mine', ARRAY['visible', 'secret'])$$, '42501',
                 'permission denied: describe on topic "secret" for role "mqh_attacker"',
                 'joining its own group with a hidden topic is refused');
SELECT throws_ok($$SELECT mq.join_group('mine', ARRAY['visible', 'secret_nosuch'])$$, '42501',
                 'permission denied: describe on topic "secret_nosuch" for role "mqh_attacker"',
                 'as it is with a topic that does not exist');

-------------------------------------------------------------------------------
-- 4. a role asks only about its own rights (or those of roles it has)
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT mq._has_privilege('mqh_owner'::regrole::oid, 'topic', 'secret', 'read')$$,
                 '42501', NULL, 'asking about another role''s rights is refused');
SELECT throws_ok($$SELECT mq.has_topic_privilege('mqh_owner', 'secret', 'read')$$,
                 '42501', NULL, 'mq.has_topic_privilege(role, ...) likewise');
SELECT is(mq.has_topic_privilege('mqh_attacker', 'visible', 'read'), true,
          'asking about oneself by name works');
RESET ROLE;
SELECT is(mq.has_topic_privilege('mqh_attacker', 'visible', 'read'), true,
          'an administrator asks about anyone');

-------------------------------------------------------------------------------
-- 5. grants planted by a topic's owner go with the topic; an
--    administrator's stay (as Kafka keeps ACLs of deleted topics)
-------------------------------------------------------------------------------
SET ROLE mqh_owner;
SELECT mq.create_topic('planted', 1);
SELECT mq.grant('read', 'topic', 'planted', 'PUBLIC');
RESET ROLE;
SET ROLE mqh_admin;
SELECT mq.grant('describe', 'topic', 'planted', 'mqh_attacker');
RESET ROLE;
SET ROLE mqh_owner;
SELECT is((SELECT array_agg(grantee || ':' || operation ORDER BY grantee) FROM mq.grants WHERE resource_name = 'planted'),
          ARRAY['PUBLIC:read', 'mqh_attacker:describe'],
          'a topic''s owner sees the literal grants on its topic, which it may revoke (Kafka''s DeleteAcls matches them)');
RESET ROLE;
SELECT mq.drop_topic('planted');
SELECT is((SELECT array_agg(grantee || ':' || operation) FROM mq.grants WHERE resource_name = 'planted'),
          ARRAY['mqh_attacker:describe'],
          'drop_topic removes the owner''s grants on it, keeps the administrator''s');
SELECT mq.create_topic('planted', 1);
SET ROLE mqh_attacker;
SELECT is(mq.has_topic_privilege('planted', 'read'), false,
          'the re-created topic carries no read planted by the old owner');
RESET ROLE;

-------------------------------------------------------------------------------
-- 6. a broker's node address never keeps a password, in a URI either
-------------------------------------------------------------------------------
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 77);
SELECT throws_ok($$SELECT mq_coord.register_broker(77, 'postgresql://u:secret@localhost/db', 'n77')$$,
                 'MQ010', NULL, 'a URI with a password in its user part is refused');
SELECT lives_ok($$SELECT mq_coord.register_broker(77, 'postgresql://u@localhost:5432/db', 'n77')$$,
                'a URI with a user and a port is accepted');

-------------------------------------------------------------------------------
-- 7. a refusal names the kind of resource refused in its table field, which
--    mq-kafka maps to Kafka's code (kerr.c), never by the message's text
-------------------------------------------------------------------------------
CREATE FUNCTION public.mqh_refused(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    v_schema text;
    v_table text;
BEGIN
    EXECUTE q;
    RETURN 'not refused';
EXCEPTION WHEN insufficient_privilege THEN
    GET STACKED DIAGNOSTICS v_schema = SCHEMA_NAME, v_table = TABLE_NAME;
    RETURN v_schema || '.' || v_table;
END $f$;
SET ROLE mqh_attacker;
SELECT is(public.mqh_refused($$SELECT mq.send('secret', 'k'::bytea, 'v'::bytea)$$), 'mq.topic',
          'a refused send names a topic');
SELECT is(public.mqh_refused($$SELECT * FROM mq.produce_records('visible', ARRAY['k'::bytea], ARRAY['v'::bytea])$$),
          'mq.topic', 'a refused produce (mq-kafka''s path) names a topic');
SELECT is(public.mqh_refused($$SELECT * FROM mq.poll('hidden_group', 'visible', 1)$$), 'mq.group',
          'a refused poll in a group names a group');
SELECT is(public.mqh_refused($$SELECT mq.grant('read', 'topic', 'visible', 'PUBLIC')$$), 'mq.cluster',
          'a refused grant names the cluster');
SELECT is(public.mqh_refused($$SELECT mq.has_topic_privilege('mqh_owner', 'visible', 'read')$$), 'mq.cluster',
          'a refused question about another role names the cluster');
RESET ROLE;

-------------------------------------------------------------------------------
-- 8. bad arguments of grant (an audit): MQ010, naming what is wrong, and
--    no grant made
-------------------------------------------------------------------------------
SELECT count(*) AS acl_before FROM mq.acl \gset
SELECT throws_ok($$SELECT mq.grant(NULL, 'topic', 'visible', 'mqh_attacker')$$, 'MQ010',
                 'operations must not be null', 'null operations are MQ010, said as null');
SELECT throws_ok($$SELECT mq.grant('read', 'topic', 'visible', '')$$, 'MQ010', 'invalid role name ""',
                 'an empty role name is MQ010, not invalid name syntax');
SELECT throws_ok($$SELECT mq.grant('read', 'cluster', 'x', 'mqh_attacker')$$, 'MQ010',
                 'invalid cluster resource name "x"', 'the cluster has one name, kafka-cluster (as Kafka)');
SELECT throws_ok($$SELECT mq.revoke('alter', 'cluster', 'other', 'mqh_admin')$$, 'MQ010', NULL,
                 'revoke refuses another cluster name too');
SELECT is((SELECT count(*) FROM mq.acl), :acl_before::bigint, 'nothing was granted or revoked');
SELECT is(mq.grant('describe', 'cluster', 'kafka-cluster', 'mqh_attacker'), 1, 'kafka-cluster is the cluster''s name');

SELECT * FROM finish();
ROLLBACK;
