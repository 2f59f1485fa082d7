-- Every function, procedure, view, table and composite type of schemas mq
-- and mq_coord carries a description (src/sql/95_comments.sql), so that
-- \df+ mq.* explains itself.  A new object without COMMENT ON fails here.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(7);

CREATE TEMP VIEW undocumented AS
SELECT 'function ' || p.oid::regprocedure::text AS object
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace)
   AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL
UNION ALL
SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' ELSE 'table ' END
       || c.oid::regclass::text
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace)
   AND c.relkind IN ('r', 'p', 'v', 'm')
   AND pg_catalog.obj_description(c.oid, 'pg_class') IS NULL
UNION ALL
SELECT 'type ' || t.oid::regtype::text
  FROM pg_catalog.pg_type t
  LEFT JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
 WHERE t.typnamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace)
   AND (t.typtype IN ('e', 'd', 'r') OR c.relkind = 'c')
   AND pg_catalog.obj_description(t.oid, 'pg_type') IS NULL;

SELECT is_empty('SELECT object FROM undocumented ORDER BY 1',
                'every function, view, table and type of mq and mq_coord has a comment');

-- not vacuous: the extension's objects are there and the comments are read
SELECT cmp_ok((SELECT count(*)::int FROM pg_catalog.pg_proc
                WHERE pronamespace IN ('mq'::regnamespace, 'mq_coord'::regnamespace)
                  AND pg_catalog.obj_description(oid, 'pg_proc') IS NOT NULL),
              '>=', 80, 'at least 80 functions of mq and mq_coord are described');
SELECT isnt(pg_catalog.obj_description('mq.poll(text, text, integer, boolean, integer, integer, text, text, integer[])'::regprocedure,
                                       'pg_proc'), NULL, 'mq.poll is described');
SELECT isnt(pg_catalog.obj_description('mq.consumer_lag'::regclass, 'pg_class'), NULL,
            'mq.consumer_lag is described');

-- and the check catches what it is for: new objects without a comment
-- (they go with the transaction's ROLLBACK)
CREATE FUNCTION mq.undocumented_example(integer) RETURNS integer LANGUAGE sql AS 'SELECT $1';
CREATE VIEW mq_coord.undocumented_example AS SELECT 1 AS one;
CREATE TYPE mq.undocumented_example_type AS (a integer);
SELECT set_eq('SELECT object FROM undocumented',
              ARRAY['function mq.undocumented_example(integer)', 'view mq_coord.undocumented_example',
                    'type mq.undocumented_example_type'],
              'an undocumented function, view and type are reported');
COMMENT ON FUNCTION mq.undocumented_example(integer) IS 'documented now';
SELECT set_eq('SELECT object FROM undocumented',
              ARRAY['view mq_coord.undocumented_example', 'type mq.undocumented_example_type'],
              'a comment takes a function off the list');
-- another overload of a documented name needs its own comment
CREATE FUNCTION mq.partition_for(text, integer) RETURNS integer LANGUAGE sql AS 'SELECT 0';
SELECT ok('function mq.partition_for(text,integer)' IN (SELECT object FROM undocumented),
          'every overload needs its own comment');

SELECT * FROM finish();
ROLLBACK;
