-- Privileges: no way to the owner's rights through mq, and Kafka-style
-- authorization of topics and groups on PostgreSQL roles (issue 9).
-- Runs as a superuser in a database where mq is installed; creates its
-- roles inside the transaction and rolls everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(107);

CREATE ROLE mqp_attacker LOGIN;
CREATE ROLE mqp_alice LOGIN;
CREATE ROLE mqp_bob LOGIN;
CREATE ROLE mqp_readers NOLOGIN;
CREATE ROLE mqp_carol LOGIN IN ROLE mqp_readers;
CREATE ROLE mqp_noinherit LOGIN NOINHERIT IN ROLE mqp_readers;
GRANT CREATE ON DATABASE :"DBNAME" TO mqp_attacker;

SELECT mq.create_topic('orders', 2);
SELECT mq.create_topic('orders.eu', 1);
SELECT mq.create_topic('payments', 1) AS payments_id \gset
SELECT mq.send('orders', 'k'::bytea, 'v'::bytea, partition => 0);
SELECT mq.send('payments', 'k'::bytea, 'v'::bytea);

-------------------------------------------------------------------------------
-- 1. the caller's search_path: operators and functions planted ahead of
--    pg_catalog are never picked by mq's own queries
-------------------------------------------------------------------------------
SET ROLE mqp_attacker;
CREATE SCHEMA evil;
CREATE TABLE evil.ran (who name, what text);
GRANT INSERT ON evil.ran TO PUBLIC;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
CREATE FUNCTION evil.note(what text) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO evil.ran VALUES (current_user, what) $$;
-- look-alikes of the operators and functions mq's SQL uses; each records
-- who ran it, then answers as the real one would
CREATE FUNCTION evil.eq_text(a text, b text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT evil.note('text = text'); SELECT a OPERATOR(pg_catalog.=) b $$;
CREATE FUNCTION evil.eq_int4(a int4, b int4) RETURNS boolean LANGUAGE sql
    AS $$ SELECT evil.note('int4 = int4'); SELECT a OPERATOR(pg_catalog.=) b $$;
CREATE FUNCTION evil.eq_int8(a int8, b int8) RETURNS boolean LANGUAGE sql
    AS $$ SELECT evil.note('int8 = int8'); SELECT a OPERATOR(pg_catalog.=) b $$;
CREATE FUNCTION evil.lt_int8(a int8, b int8) RETURNS boolean LANGUAGE sql
    AS $$ SELECT evil.note('int8 < int8'); SELECT a OPERATOR(pg_catalog.<) b $$;
CREATE FUNCTION evil.concat(a text, b text) RETURNS text LANGUAGE sql
    AS $$ SELECT evil.note('text || text'); SELECT a OPERATOR(pg_catalog.||) b $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq_text);
CREATE OPERATOR evil.= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil.eq_int4);
CREATE OPERATOR evil.= (LEFTARG = int8, RIGHTARG = int8, FUNCTION = evil.eq_int8);
CREATE OPERATOR evil.< (LEFTARG = int8, RIGHTARG = int8, FUNCTION = evil.lt_int8);
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.concat);
CREATE FUNCTION evil.unnest(a anyarray) RETURNS SETOF anyelement LANGUAGE sql
    AS $$ SELECT evil.note('unnest'); SELECT pg_catalog.unnest(a) $$;
CREATE FUNCTION evil.array_length(a anyarray, d int) RETURNS int LANGUAGE sql
    AS $$ SELECT evil.note('array_length'); SELECT pg_catalog.array_length(a, d) $$;
CREATE FUNCTION evil.starts_with(a text, b text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT evil.note('starts_with'); SELECT pg_catalog.starts_with(a, b) $$;
RESET ROLE;

SELECT mq.grant('all', 'topic', 'orders', 'mqp_attacker');
SELECT mq.grant('read', 'group', 'evil-group', 'mqp_attacker');

-- every public entry point, called with the planted schema first
SET ROLE mqp_attacker;
SET search_path = evil, pg_catalog, public;
SELECT mq.partition_for('orders', 'k'::bytea);
SELECT count(*) FROM mq.partitions;
SELECT count(*) FROM mq.topics;
SELECT count(*) FROM mq.segments;
SELECT count(*) FROM mq.leader_epochs;
SELECT mq.send('orders', 'k'::bytea, 'v'::bytea);
SELECT mq.send_batch('orders', ARRAY['a'::bytea, 'b'::bytea], ARRAY['1'::bytea, '2'::bytea]);
SELECT count(*) FROM mq.fetch('orders', 0, 0);
SELECT count(*) FROM mq.poll('evil-group', 'orders', 10);
SELECT mq.commit_offset('evil-group', 'orders', 0, 1);
SELECT mq.committed_offset('evil-group', 'orders', 0);
SELECT mq.commit_polled('evil-group', 'orders');
SELECT count(*) FROM mq.join_group('evil-group', ARRAY['orders']);
SELECT mq.alter_topic('orders', '{"retention.ms": "7d"}');
SELECT count(*) FROM mq.grants;
SELECT mq.has_topic_privilege('orders', 'read');
RESET search_path;
RESET ROLE;
-- as a superuser now (so a planted operator would run as one), through the
-- paths that the maintenance worker and administrators take
SET search_path = evil, pg_catalog, public;
SELECT mq.run_maintenance();
SELECT count(*) FROM mq.consumer_lag;
SELECT mq.create_topic('evil.probe', 1);
SELECT mq.drop_topic('evil.probe');
RESET search_path;
SELECT is((SELECT count(*) FROM evil.ran), 0::bigint,
          'no planted operator or function ran inside mq (search_path pinned)');

-------------------------------------------------------------------------------
-- 3. regclass arguments: only mq's segments are read as the owner
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.noted(what text) RETURNS int LANGUAGE sql
    AS $$ SELECT evil.note(what); SELECT 1 $$;
CREATE TEMP VIEW trap AS SELECT now() AS created_at, 0::bigint AS msg_offset, pg_temp.noted('view') AS x;
SELECT throws_ok($$ SELECT mq._segment_last_time('trap'::regclass) $$, '42501', NULL,
                 'a relation that is not a segment is refused');
SET ROLE mqp_attacker;
SELECT throws_ok($$ SELECT mq._segment_last_time('pg_class'::regclass) $$, '42501', NULL,
                 '_segment_last_time is not executable by ordinary roles');
RESET ROLE;
SELECT is((SELECT count(*) FROM evil.ran WHERE what = 'view'), 0::bigint, 'the trap view never ran');

-------------------------------------------------------------------------------
-- 4. a schema mq created by someone else is refused by CREATE EXTENSION
-------------------------------------------------------------------------------
SAVEPOINT ext;
DROP EXTENSION mq CASCADE;
DROP SCHEMA mq;     -- CREATE EXTENSION made it (mq.control: schema = mq)
CREATE SCHEMA mq AUTHORIZATION mqp_attacker;
SELECT throws_ok($$ CREATE EXTENSION mq $$, '42501', 'schema "mq" exists and is owned by another role',
                 'CREATE EXTENSION refuses a schema mq owned by another role');
DROP SCHEMA mq;
CREATE SCHEMA mq;
CREATE FUNCTION mq.send(text) RETURNS void LANGUAGE sql AS '';
SELECT throws_ok($$ CREATE EXTENSION mq $$, '42501', 'schema "mq" exists and is not empty',
                 'CREATE EXTENSION refuses a schema mq that already holds objects');
DROP SCHEMA mq CASCADE;
SELECT lives_ok($$ CREATE EXTENSION mq $$, 'and installs into a schema of its own');
ROLLBACK TO SAVEPOINT ext;

-------------------------------------------------------------------------------
-- 5. no writes in read-only transactions (25006), nothing written
-------------------------------------------------------------------------------
SAVEPOINT ro;
SET LOCAL transaction_read_only = on;
SELECT throws_ok($$ SELECT mq.send('payments', 'k'::bytea, 'v'::bytea) $$, '25006', NULL,
                 'send refuses a read-only transaction');
ROLLBACK TO SAVEPOINT ro;
SAVEPOINT ro;
SET LOCAL transaction_read_only = on;
SELECT throws_ok($$ SELECT mq.send_batch('payments', ARRAY['k'::bytea], ARRAY['v'::bytea]) $$, '25006', NULL,
                 'send_batch refuses a read-only transaction');
ROLLBACK TO SAVEPOINT ro;
SAVEPOINT ro;
SET LOCAL transaction_read_only = on;
SELECT throws_ok($$ SELECT mq.commit_offset('g', 'payments', 0, 1) $$, '25006', NULL,
                 'commit_offset refuses a read-only transaction');
ROLLBACK TO SAVEPOINT ro;
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'payments'), 1::bigint,
          'nothing was written by the refused calls');

-------------------------------------------------------------------------------
-- 6. numeric config bounded to what the code computes; one topic's
--    maintenance failure is a warning, not a stop
-------------------------------------------------------------------------------
-- Kafka's "no limit", the int8 maximum, is taken for times, and the code
-- computes with it as 1,000 years (mq._config_ms), without an overflow
SELECT lives_ok($$ SELECT mq.create_topic('huge', 1, '{"retention.ms": 9223372036854775807, "segment.ms": 9223372036854775807,
                                                      "cleanup.policy": "compact,delete", "delete.retention.ms": 9223372036854775807,
                                                      "min.compaction.lag.ms": 9223372036854775807}') $$,
                'time limits up to the int8 maximum are taken, as by Kafka');
SELECT mq.send('huge', 'k', 'v');
SELECT is((SELECT mq._retain_topic(topic_id, config) + mq._roll_segment_by_time(topic_id, 0)::int
                  + coalesce(mq._compact_partition(topic_id, 0, config), 0)::int
                  + (mq._retention_headroom(topic_id, 0, 0) IS NOT NULL)::int
             FROM mq.topic WHERE topic_name = 'huge'), 1,
          'retention, the roll by time, compaction and the lag''s headroom compute with them: nothing dropped, rolled or cleaned');
SELECT throws_ok($$ SELECT mq.create_topic('huge', 1, '{"replication.factor": 3000000000}') $$,
                 'MQ004', NULL, 'a count beyond int4 is refused');
SELECT throws_ok($$ SELECT mq.alter_topic('payments', '{"retention.ms": "300000000000d"}') $$,
                 'MQ004', NULL, 'alter_topic is bounded the same way');
SAVEPOINT monitor;
SELECT count(*) AS all_topics FROM mq.topic \gset
GRANT pg_monitor TO mqp_bob;
SET ROLE mqp_bob;
SELECT ok((SELECT count(*) FROM mq.consumer_lag WHERE group_id = 'g') >= 0
          AND (SELECT count(*) FROM mq.topics) = :all_topics,
          'pg_monitor members see every topic and the lag');
RESET ROLE;
ROLLBACK TO SAVEPOINT monitor;
SELECT lives_ok($$ SELECT mq.create_topic('long-lived', 1, '{"retention.ms": "1000d", "segment.ms": "1000d"}') $$,
                'long but computable times are accepted');
SAVEPOINT maint;
-- a topic whose config could not be computed with (as a bad upgrade or a
-- hand edit might leave it)
UPDATE mq.topic SET config = '{"segment.ms": "forever"}' WHERE topic_name = 'orders.eu';
SELECT lives_ok($$ SELECT mq.run_maintenance() $$, 'maintenance survives one broken topic');
ROLLBACK TO SAVEPOINT maint;

-------------------------------------------------------------------------------
-- 10. out-of-range integers get mq's SQLSTATEs, not 22003
-------------------------------------------------------------------------------
SELECT throws_ok($$ SELECT mq.add_partitions('payments', 2147483647) $$, 'MQ005', NULL,
                 'add_partitions with a huge count: MQ005, not an integer overflow');
SELECT throws_ok($$ SELECT mq.create_topic('x', 2147483647) $$, 'MQ005', NULL,
                 'create_topic with a huge partition count: MQ005');
SELECT throws_ok($$ SELECT * FROM mq.fetch('payments', 2147483647, 0) $$, 'MQ006', NULL,
                 'fetch from a huge partition number: MQ006');
SELECT throws_ok($$ SELECT * FROM mq.send('payments', 'k'::bytea, 'v'::bytea, partition => -2147483648) $$,
                 'MQ006', NULL, 'send to the smallest partition number: MQ006');
SELECT throws_ok($$ SELECT * FROM mq.fetch('payments', 0, 9223372036854775807) $$, 'MQ007', NULL,
                 'fetch from the largest offset: MQ007');

-------------------------------------------------------------------------------
-- Authorization matrix: role x operation x resource -> allowed or 42501
-------------------------------------------------------------------------------
-- nothing granted: everything is refused, even for existing resources
SET ROLE mqp_alice;
SELECT throws_ok($$ SELECT mq.send('orders', 'k'::bytea, 'v'::bytea) $$, '42501', NULL,
                 'alice without grants: produce refused');
SELECT throws_ok($$ SELECT * FROM mq.fetch('orders', 0, 0) $$, '42501', NULL,
                 'alice without grants: fetch refused');
SELECT throws_ok($$ SELECT * FROM mq.fetch('no-such-topic', 0, 0) $$, '42501', NULL,
                 'a topic alice may not describe is refused before it is looked up (no existence leak)');
SELECT throws_ok($$ SELECT mq.create_topic('alice-1') $$, '42501', NULL,
                 'alice without grants: create_topic refused');
SELECT throws_ok($$ SELECT mq.drop_topic('payments') $$, '42501', NULL,
                 'alice without grants: drop_topic refused');
SELECT throws_ok($$ SELECT mq.alter_topic('payments', '{}') $$, '42501', NULL,
                 'alice without grants: alter_topic refused');
SELECT throws_ok($$ SELECT mq.add_partitions('payments', 1) $$, '42501', NULL,
                 'alice without grants: add_partitions refused');
SELECT throws_ok($$ SELECT mq.partition_for('payments', 'k'::bytea) $$, '42501', NULL,
                 'alice without grants: partition_for refused');
-- (mq.produce, a procedure that commits, runs it outside a transaction
-- block; inside this test's it is MQ052: produce_contract.sql)
SELECT throws_ok($$ SELECT * FROM mq.produce_records('payments', NULL, ARRAY['x']::bytea[], partition => 0, acks => 'all') $$,
                 '42501', NULL, 'alice without grants: mq.produce_records (the write of mq.produce) refused');
SELECT throws_ok($$ SELECT * FROM mq.produce_records('no-such-topic', NULL, ARRAY['x']::bytea[], partition => 0, acks => 'all') $$,
                 '42501', NULL, 'and for a topic that does not exist, the same answer');
SELECT is((SELECT count(*) FROM mq.topics), 0::bigint, 'alice sees no topics');
SELECT is((SELECT count(*) FROM mq.partitions), 0::bigint, 'alice sees no partitions');
SELECT is((SELECT count(*) FROM mq.segments), 0::bigint, 'no segments');
SELECT is((SELECT count(*) FROM mq.leader_epochs), 0::bigint, 'no leader epochs');
SELECT is((SELECT count(*) FROM mq.replica_status), 0::bigint, 'no replica status');
SELECT is(mq._log_end_offset(:payments_id, 0), NULL,
          'no log end offset of a topic she may not describe');
SELECT throws_ok($$ SELECT mq.produce_await('payments', 0, 1, 0, 1, 0) $$, '42501', NULL,
                 'no acks=all wait on a topic she may not write');
SELECT is((SELECT count(*) FROM mq.consumer_lag) + (SELECT count(*) FROM mq.partition_stats), 0::bigint,
          'no lag or statistics of topics and groups she may not describe');
SELECT is(mq._offset_time(:payments_id, 0, 0), NULL,
          'no append time of a topic she may not describe');
SELECT is(mq._retention_headroom(:payments_id, 0, 0), NULL,
          'no retention headroom of one');
SELECT is((SELECT count(*) FROM mq.group_members) + (SELECT count(*) FROM mq.group_assignments), 0::bigint,
          'no group members or assignments');
SELECT throws_ok($$ SELECT mq.grant('read', 'topic', 'payments', 'mqp_alice') $$, '42501', NULL,
                 'alice cannot grant herself rights');
SELECT throws_ok($$ SELECT mq_internal.create_topic('x', 1, '{}', 10) $$, '42501', NULL,
                 'the implementations behind the checks are out of reach');
SELECT throws_ok($$ INSERT INTO mq.acl VALUES ('topic', 'literal', '*', NULL, 'all') $$, '42501', NULL,
                 'mq.acl is not writable by ordinary roles');
RESET ROLE;

-- literal WRITE: produce to that topic only; DESCRIBE comes with it
SELECT is(mq.grant('write', 'topic', 'orders', 'mqp_alice'), 1, 'grant returns the number of grants made');
SET ROLE mqp_alice;
SELECT lives_ok($$ SELECT mq.send('orders', 'k'::bytea, 'v'::bytea) $$, 'alice with WRITE on orders: produce');
SELECT lives_ok($$ SELECT mq.send_batch('orders', ARRAY['k'::bytea], ARRAY['v'::bytea]) $$,
                'alice with WRITE on orders: batch produce');
SELECT throws_ok($$ SELECT mq.send('orders.eu', 'k'::bytea, 'v'::bytea) $$, '42501', NULL,
                 'a literal grant covers that name only');
SELECT throws_ok($$ SELECT * FROM mq.fetch('orders', 0, 0) $$, '42501', NULL,
                 'WRITE does not give READ');
SELECT is((SELECT array_agg(topic ORDER BY topic) FROM mq.topics), ARRAY['orders'],
          'WRITE implies DESCRIBE: alice sees orders in mq.topics');
SELECT ok(mq.has_topic_privilege('orders', 'describe'), 'has_topic_privilege agrees');
SELECT is(mq.validate_config('{"retention.ms": "1h", "unclean.leader.election.enable": "true"}'),
          '{"retention.ms": 3600000, "unclean.leader.election.enable": true}'::jsonb,
          'any role checks a topic config with validate_config (and the helpers it calls)');
SELECT is(mq.validate_config('{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.3}'),
          '{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.3}'::jsonb,
          'compaction keys too (docs/sql.md: validate_config is callable on its own)');
RESET ROLE;

-- prefixed READ for bob, group rights separately
SELECT mq.grant('read', 'topic', 'orders.*', 'mqp_bob');
SET ROLE mqp_bob;
SELECT lives_ok($$ SELECT * FROM mq.fetch('orders.eu', 0, 0) $$, 'bob with READ on orders.*: fetch orders.eu');
SELECT throws_ok($$ SELECT * FROM mq.fetch('orders', 0, 0) $$, '42501', NULL,
                 'the prefix "orders." does not cover "orders"');
SELECT throws_ok($$ SELECT mq.send('orders.eu', 'k'::bytea, 'v'::bytea) $$, '42501', NULL,
                 'READ does not give WRITE');
SELECT throws_ok($$ SELECT * FROM mq.poll('bob-group', 'orders.eu', 10) $$, '42501', NULL,
                 'poll needs READ on the group as well');
SELECT throws_ok($$ SELECT * FROM mq.join_group('bob-group', ARRAY['orders.eu']) $$, '42501', NULL,
                 'join_group needs READ on the group');
RESET ROLE;
SELECT mq.grant('read', 'group', 'bob-group', 'mqp_bob');
SET ROLE mqp_bob;
SELECT lives_ok($$ SELECT * FROM mq.poll('bob-group', 'orders.eu', 10) $$, 'bob with READ on the group: poll');
SELECT lives_ok($$ SELECT mq.commit_offset('bob-group', 'orders.eu', 0, 0) $$, 'bob: commit_offset for his group');
SELECT is(mq.committed_offset('bob-group', 'orders.eu', 0), 0::bigint, 'bob: committed_offset for his group');
SELECT throws_ok($$ SELECT mq.commit_offset('alice-group', 'orders.eu', 0, 0) $$, '42501', NULL,
                 'bob cannot commit offsets for another group');
SELECT throws_ok($$ SELECT mq.committed_offset('alice-group', 'orders.eu', 0) $$, '42501', NULL,
                 'nor read another group''s offsets');
SELECT lives_ok($$ SELECT * FROM mq.join_group('bob-group', ARRAY['orders.eu']) $$, 'bob: join_group');
SELECT is((SELECT count(*) FROM mq.heartbeat('bob-group',
                (SELECT member_id FROM mq.group_members WHERE group_id = 'bob-group' LIMIT 1))), 1::bigint,
          'bob: heartbeat, and he sees his own group''s members');
SELECT throws_ok($$ SELECT * FROM mq.heartbeat('alice-group', 'm') $$, '42501', NULL,
                 'heartbeat for another group is refused');
SELECT throws_ok($$ SELECT mq.leave_group('alice-group', 'm') $$, '42501', NULL,
                 'leave_group for another group is refused');
SELECT throws_ok($$ SELECT mq.delete_group('bob-group') $$, '42501', NULL,
                 'delete_group needs DELETE on the group: READ is not enough');
SELECT is((SELECT array_agg(topic ORDER BY topic) FROM mq.topics), ARRAY['orders.eu'],
          'bob sees only orders.eu');
RESET ROLE;

-- role membership: grants to a group role reach its (inheriting) members
SELECT mq.grant('read, describe', 'topic', 'payments', 'mqp_readers');
SELECT mq.grant('read', 'group', 'pay-*', 'mqp_readers');
SET ROLE mqp_carol;
SELECT lives_ok($$ SELECT * FROM mq.fetch('payments', 0, 0) $$, 'carol reads payments through mqp_readers');
SELECT lives_ok($$ SELECT * FROM mq.poll('pay-1', 'payments', 10) $$, 'and polls as group pay-1 (prefixed group grant)');
SELECT throws_ok($$ SELECT * FROM mq.poll('other', 'payments', 10) $$, '42501', NULL,
                 'but not as a group outside the prefix');
RESET ROLE;
SET ROLE mqp_noinherit;
SELECT throws_ok($$ SELECT * FROM mq.fetch('payments', 0, 0) $$, '42501', NULL,
                 'a NOINHERIT member does not get the group role''s grants');
RESET ROLE;
REVOKE mqp_readers FROM mqp_carol;
SET ROLE mqp_carol;
SELECT throws_ok($$ SELECT * FROM mq.fetch('payments', 0, 0) $$, '42501', NULL,
                 'leaving the role takes the grants away at once');
RESET ROLE;
SELECT ok(mq.has_topic_privilege('mqp_noinherit', 'payments', 'read') = false
          AND mq.has_topic_privilege('mqp_bob', 'orders.eu', 'read'),
          'has_topic_privilege(role, topic, op) answers for other roles');

-- PUBLIC and DENY: deny wins over allow
SELECT mq.grant('read', 'topic', '*', 'PUBLIC');
SELECT mq.grant('read', 'topic', 'payments', 'mqp_alice', permission => 'deny');
SET ROLE mqp_alice;
SELECT lives_ok($$ SELECT * FROM mq.fetch('orders', 0, 0) $$, 'a PUBLIC grant on * reaches alice');
SELECT throws_ok($$ SELECT * FROM mq.fetch('payments', 0, 0) $$, '42501', NULL,
                 'an explicit deny beats the PUBLIC allow');
RESET ROLE;
SELECT is(mq.revoke('read', 'topic', '*', 'PUBLIC'), 1, 'revoke returns the number of grants removed');
SET ROLE mqp_alice;
SELECT throws_ok($$ SELECT * FROM mq.fetch('orders', 0, 0) $$, '42501', NULL,
                 'a revoke takes effect in the same session at once');
RESET ROLE;

-- CREATE by prefix; the creator owns the topic and may grant on it
SELECT mq.grant('create', 'topic', 'alice-*', 'mqp_alice');
SET ROLE mqp_alice;
SELECT throws_ok($$ SELECT mq.create_topic('bob-1') $$, '42501', NULL, 'CREATE on alice-* does not cover bob-1');
SELECT lives_ok($$ SELECT mq.create_topic('alice-1', 1) $$, 'alice creates alice-1');
SELECT lives_ok($$ SELECT mq.send('alice-1', 'k'::bytea, 'v'::bytea) $$, 'the owner may produce');
SELECT lives_ok($$ SELECT * FROM mq.fetch('alice-1', 0, 0) $$, 'and consume');
SELECT lives_ok($$ SELECT mq.alter_topic('alice-1', '{"retention.ms": "1d"}') $$, 'and alter');
SELECT lives_ok($$ SELECT mq.add_partitions('alice-1', 1) $$, 'and add partitions');
SELECT lives_ok($$ SELECT mq.grant('read', 'topic', 'alice-1', 'mqp_bob') $$, 'and grant READ on it to bob');
SELECT throws_ok($$ SELECT mq.grant('read', 'topic', 'orders', 'mqp_bob') $$, '42501', NULL,
                 'but not on a topic she does not own');
SELECT throws_ok($$ SELECT mq.grant('read', 'topic', 'alice-*', 'mqp_bob') $$, '42501', NULL,
                 'nor by prefix');
RESET ROLE;
SET ROLE mqp_bob;
SELECT lives_ok($$ SELECT * FROM mq.fetch('alice-1', 0, 0) $$, 'bob reads alice-1 as alice granted');
SELECT throws_ok($$ SELECT mq.drop_topic('alice-1') $$, '42501', NULL, 'bob cannot drop alice''s topic');
RESET ROLE;
SET ROLE mqp_alice;
SELECT lives_ok($$ SELECT mq.drop_topic('alice-1') $$, 'alice drops her topic');
RESET ROLE;

-- administrators: ALTER on the cluster manages grants
SELECT mq.grant('alter, describe', 'cluster', NULL, 'mqp_bob');
SET ROLE mqp_bob;
SELECT lives_ok($$ SELECT mq.grant('write', 'topic', 'payments', 'mqp_carol') $$,
                'a cluster administrator grants on any topic');
SELECT ok((SELECT count(*) FROM mq.grants) > 5, 'and sees every grant');
RESET ROLE;
SET ROLE mqp_carol;
SELECT is((SELECT array_agg(DISTINCT grantee) FROM mq.grants), ARRAY['mqp_carol'],
          'a role sees the grants that apply to it');
SELECT is((SELECT array_agg(DISTINCT operation || ' ' || resource_name) FROM mq.effective_grants
            WHERE role = 'mqp_carol'), ARRAY['write payments'], 'effective_grants lists what carol has');
RESET ROLE;

-- a dropped role's grants and topics are forgotten by maintenance, so a
-- new role that happens to get the same OID inherits nothing
SAVEPOINT dropped;
CREATE ROLE mqp_gone;
SELECT mq.grant('read', 'topic', 'orders', 'mqp_gone');
DROP ROLE mqp_gone;
SELECT mq.run_maintenance();
SELECT is((SELECT count(*) FROM mq.acl a WHERE NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.oid = a.grantee)
                                          AND a.grantee IS NOT NULL), 0::bigint,
          'grants of a dropped role are removed by maintenance');
ROLLBACK TO SAVEPOINT dropped;

-- input errors of grant(): their own SQLSTATE, nothing granted
SELECT throws_ok($$ SELECT mq.grant('fly', 'topic', 'x', 'mqp_bob') $$, 'MQ010', NULL, 'unknown operation');
SELECT throws_ok($$ SELECT mq.grant('read', 'queue', 'x', 'mqp_bob') $$, 'MQ010', NULL, 'unknown resource type');
SELECT throws_ok($$ SELECT mq.grant('read', 'topic', 'x', 'no_such_role_mqp') $$, '42704', NULL, 'unknown role');

-------------------------------------------------------------------------------
-- The privilege surface, from the catalog: what PUBLIC may execute is a
-- reviewed list (each checks its caller's rights itself, or reveals
-- nothing), the implementations are out of reach, and every SECURITY
-- DEFINER function pins its search_path.  (The SCRAM credential functions
-- check the caller's rights themselves: 91_scram.sql.)
-------------------------------------------------------------------------------
SELECT is((SELECT array_agg(DISTINCT p.proname::text ORDER BY p.proname::text)
             FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
            WHERE p.pronamespace = 'mq'::regnamespace AND a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
          ARRAY['_await_partitions', '_committed_position', '_config_incremental', '_config_key', '_config_ms', '_config_number', '_config_replace', '_config_shown', '_config_text',
                -- pure encoders of Kafka's consumer protocol (mq-kafka's DescribeGroups as the client's role)
                '_consumer_assignment', '_consumer_subscription',
                '_describable', '_grant_shown', '_has_privilege', '_kafka_group_members', '_kafka_string',
                -- pure: a topic's Kafka id (mq-kafka's Metadata and Fetch)
                '_kafka_topic_id', '_log_end_offset', '_offset_time', '_produce_answer', '_produce_outside_block', '_produce_state', '_replica_await_hwm', '_retention_headroom',
                -- pure: Kafka's topic name rule (mq-kafka's Metadata)
                '_topic_name_valid', '_validate_compaction_config',
                'add_partitions', 'alter_topic', 'await_commit', 'commit_offset', 'commit_polled',
                'committed_offset', 'committed_offsets', 'config_defaults', 'create_topic', 'delete_group', 'delete_offsets', 'delete_records', 'drop_scram_credential', 'drop_topic', 'ensure_consumer_offsets', 'fetch', 'grant', 'has_group_privilege',
                'has_topic_privilege', 'header_list', 'headers_jsonb', 'heartbeat', 'join_group',
                'kafka_fetch', 'kafka_group_metadata', 'kafka_group_save', 'kafka_group_states', 'kafka_group_touch', 'kafka_groups_unused', 'kafka_init_producer', 'kafka_offsets_unstable',
                'kafka_txn_add_offsets', 'kafka_txn_add_partitions', 'kafka_txn_adopt', 'kafka_txn_collect',
                'kafka_txn_end', 'kafka_txn_finish', 'kafka_txn_init', 'kafka_txn_init_check', 'kafka_txn_offset', 'kafka_txn_stage',
                'leave_group', 'list_client_quotas', 'list_scram_credentials', 'move_partition', 'murmur2', 'offsets_for_times', 'partition_for', 'poll', 'produce', 'produce_await', 'produce_check', 'produce_records',
                'record_size', 'reset_offsets', 'revoke', 'send', 'send_batch', 'set_client_quota', 'set_scram_credential', 'set_scram_credential_salted', 'set_scram_keys',
                'validate_config'],
          'PUBLIC executes exactly the reviewed functions of schema mq');
SELECT is((SELECT array_agg(p.oid::regprocedure::text)
             FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
            WHERE p.pronamespace = 'mq_coord'::regnamespace AND a.grantee = 0),
          NULL, 'PUBLIC executes nothing of mq_coord (the broker''s role is granted what it needs)');
SELECT is((SELECT count(*) FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
            WHERE p.pronamespace = 'mq_internal'::regnamespace AND a.grantee <> p.proowner),
          0::bigint, 'nobody but the owner may execute the implementations in mq_internal');
SELECT ok(NOT has_schema_privilege('public', 'mq_internal', 'USAGE'), 'schema mq_internal is closed to PUBLIC');
SELECT is((SELECT array_agg(p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace, 'mq_internal'::regnamespace)
              AND p.prosecdef
              AND NOT coalesce(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false)),
          NULL, 'every SECURITY DEFINER function pins search_path to pg_catalog, pg_temp');

SELECT * FROM finish();
ROLLBACK;
