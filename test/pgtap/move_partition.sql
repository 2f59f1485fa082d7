-- Moving a partition to a tablespace (src/sql/73_move_partition.sql),
-- what can be checked without making a tablespace (test/kafka/
-- log_dirs_alter.sh moves partitions to one and back): a move to where
-- the segments are moves none; an unknown tablespace is MQ064, an unknown
-- topic MQ001, an unknown partition MQ006; a role without ALTER on the
-- topic is refused, one with it but without CREATE on the tablespace too;
-- a refused move changes nothing.  Runs as a superuser; rolls back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(9);

CREATE ROLE mqm_reader LOGIN;
CREATE ROLE mqm_admin LOGIN;
SELECT mq.create_topic('mqm_t', 2);
SELECT mq.send('mqm_t', NULL::text, 'v');
SELECT mq.grant('read, describe', 'topic', 'mqm_t', 'mqm_reader');
SELECT mq.grant('alter, describe', 'topic', 'mqm_t', 'mqm_admin');
CREATE FUNCTION pg_temp.spaces() RETURNS text LANGUAGE sql AS $$
SELECT string_agg(DISTINCT c.reltablespace::text, ',') FROM mq.segment s JOIN mq.topic t USING (topic_id)
  JOIN pg_class c ON c.oid = s.relid WHERE t.topic_name = 'mqm_t' $$;

SELECT is(mq.move_partition('mqm_t', 0, (SELECT spcname FROM pg_tablespace t JOIN pg_database d
                                            ON d.dattablespace = t.oid WHERE d.datname = current_database())),
          0, 'a move to the tablespace the segments are in moves none');
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', 0, 'mqm_no_such_space')$$, 'MQ064', NULL,
                 'an unknown tablespace is MQ064');
SELECT throws_ok($$SELECT mq.move_partition('mqm_none', 0, 'pg_default')$$, 'MQ001', NULL,
                 'an unknown topic is MQ001');
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', 2, 'pg_default')$$, 'MQ006', NULL,
                 'an unknown partition is MQ006');
SET LOCAL ROLE mqm_reader;
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', 0, 'pg_default')$$, '42501', NULL,
                 'a role without alter on the topic is refused');
RESET ROLE;
SET LOCAL ROLE mqm_admin;
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', 0, 'pg_global')$$, '42501', NULL,
                 'a role with alter on the topic but without CREATE on the tablespace is refused');
RESET ROLE;
SELECT is(pg_temp.spaces(), '0', 'nothing moved');
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', NULL, 'pg_default')$$, 'MQ010', 'partition must not be null',
                 'a null partition is MQ010, not an unknown partition');
SELECT throws_ok($$SELECT mq.move_partition('mqm_t', 0, NULL)$$, 'MQ010', 'tablespace must not be null',
                 'a null tablespace is MQ010, not an unknown tablespace');

SELECT * FROM finish();
ROLLBACK;
