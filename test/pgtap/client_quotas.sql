-- Kafka client quotas (src/sql/93_client_quotas.sql): set, replace and
-- remove per entity (a user, a client id, both, and their defaults); who
-- may set, list and look them up; bad input gets MQ063 and changes
-- nothing.  Runs as a superuser; creates its roles inside the transaction
-- and rolls everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(22);

CREATE ROLE mqq_admin LOGIN;
CREATE ROLE mqq_viewer LOGIN;
CREATE ROLE mqq_app LOGIN;
CREATE ROLE mqq_daemon LOGIN;
SELECT mq.grant('alter, describe', 'cluster', 'kafka-cluster', 'mqq_admin');
SELECT mq.grant('describe', 'cluster', 'kafka-cluster', 'mqq_viewer');
GRANT EXECUTE ON FUNCTION mq.client_quota_lookup() TO mqq_daemon;

-- one line per quota: user/client=key:value, <default> for a default, - for absent
CREATE FUNCTION pg_temp.quotas() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(string_agg(CASE WHEN default_user THEN '<default>' ELSE coalesce(user_name, '-') END || '/' ||
                           CASE WHEN default_client THEN '<default>' ELSE coalesce(client_id, '-') END || '=' ||
                           quota_key || ':' || quota_value, ' '
                           ORDER BY user_name NULLS FIRST, default_user, client_id NULLS FIRST, default_client, quota_key), '')
  FROM mq.list_client_quotas() $$;

-------------------------------------------------------------------------------
-- 1. an administrator sets, replaces and removes quotas of each entity kind
-------------------------------------------------------------------------------
SET LOCAL ROLE mqq_admin;
SELECT mq.set_client_quota('producer_byte_rate', 1048576, user_name => 'alice');
SELECT mq.set_client_quota('consumer_byte_rate', 2048, user_name => 'alice', client_id => 'app-1');
SELECT mq.set_client_quota('producer_byte_rate', 12, client_id => 'app-1');
SELECT mq.set_client_quota('producer_byte_rate', 4096, default_user => true);
SELECT mq.set_client_quota('producer_byte_rate', 8192, user_name => 'alice', default_client => true);
SELECT mq.set_client_quota('consumer_byte_rate', 100, default_client => true);
SELECT is(pg_temp.quotas(),
          '-/<default>=consumer_byte_rate:100 -/app-1=producer_byte_rate:12 '
          '<default>/-=producer_byte_rate:4096 alice/-=producer_byte_rate:1048576 '
          'alice/<default>=producer_byte_rate:8192 alice/app-1=consumer_byte_rate:2048',
          'each kind of entity keeps its own quotas');
SELECT mq.set_client_quota('producer_byte_rate', 2000000, user_name => 'alice');
SELECT is((SELECT quota_value FROM mq.list_client_quotas() WHERE user_name = 'alice' AND client_id IS NULL
             AND NOT default_client), 2000000::float8, 'setting a key again replaces its value');
SELECT mq.set_client_quota('producer_byte_rate', NULL, default_user => true);
SELECT mq.set_client_quota('consumer_byte_rate', NULL, default_client => true);
SELECT is((SELECT count(*) FROM mq.list_client_quotas()), 4::bigint, 'a NULL value removes the quota');
SELECT lives_ok($$SELECT mq.set_client_quota('consumer_byte_rate', NULL, user_name => 'nobody')$$,
                'removing a quota that is not set is no error (Kafka''s remove)');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 10, client_id => '')$$, 'MQ063', NULL,
                 'an empty client id is refused, as Kafka refuses it (the default is default_client)');

-------------------------------------------------------------------------------
-- 2. bad input: MQ063, nothing changed
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 10)$$, 'MQ063', NULL,
                 'an entity with neither a user nor a client id');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 10, user_name => 'a', default_user => true)$$,
                 'MQ063', NULL, 'a user and the default user at once');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 10, client_id => 'c', default_client => true)$$,
                 'MQ063', NULL, 'a client id and the default client id at once');
SELECT throws_ok($$SELECT mq.set_client_quota('controller_mutation_rate', 10, user_name => 'a')$$,
                 'MQ063', NULL, 'a key mq-kafka does not enforce');
SELECT lives_ok($$SELECT mq.set_client_quota('request_percentage', 12.5, user_name => 'a')$$,
                 'request_percentage is a percentage: a fraction is fine');
SELECT mq.set_client_quota('request_percentage', NULL, user_name => 'a');
SELECT throws_ok($$SELECT mq.set_client_quota('connection_creation_rate', 10, user_name => 'a')$$,
                 'MQ063', NULL, 'an ip quota key');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 0, user_name => 'a')$$,
                 'MQ063', NULL, 'a zero rate');
SELECT throws_ok($$SELECT mq.set_client_quota('consumer_byte_rate', -1, user_name => 'a')$$,
                 'MQ063', NULL, 'a negative rate');
SELECT throws_ok($$SELECT mq.set_client_quota('consumer_byte_rate', 'Infinity', user_name => 'a')$$,
                 'MQ063', NULL, 'an infinite rate');
SELECT throws_ok($$SELECT mq.set_client_quota('consumer_byte_rate', 'NaN', user_name => 'a')$$,
                 'MQ063', NULL, 'NaN');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 10.5, user_name => 'a')$$,
                 'MQ063', NULL, 'a byte rate that is not a whole number');
SELECT is((SELECT count(*) FROM mq.list_client_quotas()), 4::bigint, 'none of them changed anything');
RESET ROLE;

-------------------------------------------------------------------------------
-- 3. who may set, list and look up
-------------------------------------------------------------------------------
SET LOCAL ROLE mqq_viewer;
SELECT is((SELECT count(*) FROM mq.list_client_quotas()), 4::bigint, 'describe on the cluster lists them');
SELECT throws_ok($$SELECT mq.set_client_quota('producer_byte_rate', 1, user_name => 'x')$$, '42501', NULL,
                 'but may not set one');
RESET ROLE;
SET LOCAL ROLE mqq_app;
SELECT throws_ok($$SELECT * FROM mq.list_client_quotas()$$, '42501', NULL,
                 'a role without describe on the cluster may not list them');
SELECT throws_ok($$SELECT * FROM mq.client_quota_lookup()$$, '42501', NULL,
                 'nor call mq-kafka''s lookup');
RESET ROLE;
SET LOCAL ROLE mqq_daemon;
SELECT is((SELECT count(*) FROM mq.client_quota_lookup()), 4::bigint,
          'the role mq-kafka connects as reads every quota through the lookup it was granted');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
