-- One parameter naming rule for the SQL API (docs/design.md, "SQL API
-- conventions"): every input parameter of every public routine (schemas
-- mq and mq_coord, names not starting with an underscore) has a name, in
-- lower-case snake_case, without a prefix such as p_ or v_, and a concept
-- has one name and one type everywhere (topic text, group_id text, ...),
-- so that a named call taken from the docs works on every function.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(8);

CREATE TEMP VIEW api_input AS
SELECT p.oid::regprocedure::text AS routine, a.n AS position, a.name,
       (p.proallargtypes)[a.n] AS alltype, a.mode
  FROM pg_catalog.pg_proc p
 CROSS JOIN LATERAL (
       SELECT n, (p.proargnames)[n] AS name,
              coalesce((p.proargmodes)[n], 'i') AS mode
         FROM generate_series(1, coalesce(cardinality(p.proargmodes), p.pronargs)) AS n) a
 WHERE p.pronamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace)
   AND p.proname !~ '^_'
   AND a.mode IN ('i', 'b', 'v');

-- the type of each input: proallargtypes holds all (with OUT), proargtypes
-- only the inputs, in order
CREATE TEMP VIEW api_input_typed AS
SELECT i.routine, i.name,
       coalesce(i.alltype,
                (SELECT (p.proargtypes)[i.position - 1] FROM pg_catalog.pg_proc p
                  WHERE p.oid = i.routine::regprocedure))::regtype::text AS type
  FROM api_input i;

SELECT cmp_ok((SELECT count(DISTINCT routine)::int FROM api_input), '>=', 100,
              'at least 100 public routines with inputs are checked');

SELECT is_empty($$SELECT routine, position FROM api_input WHERE coalesce(name, '') = ''$$,
                'every input parameter of a public routine has a name');

SELECT is_empty($$SELECT routine, name FROM api_input
                   WHERE name !~ '^[a-z][a-z0-9]*(_[a-z0-9]+)*$'$$,
                'input parameter names are lower-case snake_case');

SELECT is_empty($$SELECT routine, name FROM api_input
                   WHERE name ~ '^(p|v|in|arg|i|a)_'$$,
                'no input parameter name carries a prefix (p_, v_, in_, ...)');

-- the names a concept must not go by: the left one is written as the right
SELECT is_empty($$SELECT i.routine, i.name, s.instead
                    FROM api_input i
                    JOIN (VALUES ('group', 'group_id'), ('grp', 'group_id'), ('group_name', 'group_id'),
                                 ('topic_name', 'topic'), ('partition_id', 'partition'),
                                 ('txn', 'txn_id'), ('broker', 'broker_id'), ('member', 'member_id'),
                                 ('node_id', 'broker_id'), ('wait_ms', 'max_wait_ms'),
                                 ('epoch_id', 'leader_epoch')) AS s(name, instead)
                      ON s.name = i.name$$,
                'a concept has one name: group_id, topic, partition, txn_id, broker_id, member_id');

SELECT is_empty($$SELECT i.routine, i.name, i.type, s.type AS expected
                    FROM api_input_typed i
                    JOIN (VALUES ('topic', 'text'), ('partition', 'integer'), ('group_id', 'text'),
                                 ('member_id', 'text'), ('generation_id', 'integer'),
                                 ('broker_id', 'integer'), ('leader_epoch', 'integer'),
                                 ('producer_id', 'bigint'), ('producer_epoch', 'integer'),
                                 ('base_sequence', 'integer'), ('transactional_id', 'text'),
                                 ('txn_id', 'text'), ('timeout_ms', 'integer'),
                                 ('max_wait_ms', 'integer'), ('max_records', 'integer'))
                         AS s(name, type)
                      ON s.name = i.name AND s.type <> i.type$$,
                'a concept has one type wherever it is a parameter');

-- named calls as the docs write them (docs/groups.md, docs/replication.md)
SELECT is_empty($$SELECT * FROM mq_coord.route(topic => 'no-such-topic')$$,
                'mq_coord.route(topic => ...) runs');
SELECT results_eq($$SELECT j.member_id FROM mq_coord.join_cluster_group(group_id => 'names', topics => '{t}',
                                                                      member_id => 'm1') j$$,
                  $$VALUES ('m1')$$,
                  'mq_coord.join_cluster_group(group_id => ..., topics => ..., member_id => ...) runs');

SELECT * FROM finish();
ROLLBACK;
