-- Lookups through the security-barrier views by index (docs/design.md,
-- "Views joined by their keys"): a topic's Kafka id is mq._kafka_topic_id,
-- the MD5 of its name, a leakproof function that mq.topic indexes, so a
-- qual on it passes the barrier of mq.topics and probes the index (as
-- mq-kafka's Fetch v13+ and Metadata by id do); and a partition asked for
-- in a LATERAL subquery kept apart by OFFSET 0 is read by its keys, where
-- a plain join of mq.partitions reads every partition.  Sequential scans
-- are disabled for the plans, so a qual the barrier keeps out shows as a
-- scan of the whole table anyway.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(7);

SELECT mq.create_topic('vl_' || i, 2) FROM generate_series(1, 5) i;

SELECT is(mq._kafka_topic_id('vl_1'), md5('vl_1'), 'a topic''s id is the MD5 of its name in hex');
SELECT ok(p.proleakproof AND p.provolatile = 'i', 'mq._kafka_topic_id is leakproof and immutable')
  FROM pg_catalog.pg_proc p WHERE p.oid = 'mq._kafka_topic_id(text)'::regprocedure;

CREATE FUNCTION pg_temp.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    j json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) ' || q INTO j;
    RETURN j::text;
END $$;

SET LOCAL enable_seqscan = off;
SELECT matches(pg_temp.plan_of($$SELECT t.topic FROM mq.topics t WHERE mq._kafka_topic_id(t.topic) = md5('vl_3')$$),
               '"Index Name": "topic_kafka_id"',
               'a lookup by id through mq.topics probes the index on ids');
SELECT is((SELECT t.topic FROM mq.topics t WHERE mq._kafka_topic_id(t.topic) = md5('vl_3')), 'vl_3',
          'and finds the topic');

SELECT matches(pg_temp.plan_of($$SELECT s.log_end_offset FROM unnest(ARRAY['vl_2'], ARRAY[1]) u(t, p)
                                  LEFT JOIN LATERAL (SELECT s.log_end_offset FROM mq.partitions s
                                                      WHERE s.topic = u.t AND s.partition = u.p OFFSET 0) s ON true$$),
               '"Index Cond": "[^"]*partition = u\.p',
               'a partition asked for in a LATERAL subquery is read by its key');
SELECT doesnt_match(pg_temp.plan_of($$SELECT s.log_end_offset FROM unnest(ARRAY['vl_2'], ARRAY[1]) u(t, p)
                                       LEFT JOIN mq.partitions s ON s.topic = u.t AND s.partition = u.p$$),
                    '"Index Cond": "[^"]*partition = u\.p',
                    '(joined plainly, every partition is read: the barrier keeps the join''s quals out)');

-- a role that may not describe a topic does not find it by id either
CREATE ROLE vl_reader;
GRANT USAGE ON SCHEMA mq TO vl_reader;
GRANT SELECT ON mq.topics TO vl_reader;
SET LOCAL ROLE vl_reader;
SELECT is((SELECT count(*) FROM mq.topics t WHERE mq._kafka_topic_id(t.topic) = md5('vl_3')), 0::bigint,
          'a topic the role may not describe is not found by its id');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
