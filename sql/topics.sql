--
-- topics: create_topic, drop_topic, alter_topic, add_partitions, the views
-- mq.topics / mq.partitions / mq.segments, the topic-name rule and topic
-- config validation.
--
-- Only stable columns are shown (no timestamps, oids, topic ids or storage
-- table names, which contain ids).
--
\set SHOW_CONTEXT never
-- err(statement): 'SQLSTATE: message' of the error the statement raises,
-- or 'no error'.
CREATE FUNCTION pg_temp.err(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- contiguous(topic): per partition, do the segments cover one gapless
-- range starting at the log start offset?
CREATE FUNCTION pg_temp.contiguous(p_topic text) RETURNS boolean LANGUAGE sql AS $$
    SELECT coalesce(bool_and(ok), false) FROM (
        SELECT s.base_offset = coalesce(lag(s.end_offset) OVER w, p.log_start_offset)
               AND s.end_offset > s.base_offset AS ok
          FROM mq.segments s
          JOIN mq.partitions p ON p.topic = s.topic AND p.partition = s.partition
         WHERE s.topic = p_topic
        WINDOW w AS (PARTITION BY s.partition ORDER BY s.base_offset)) x
$$;
--
-- create_topic with defaults: one partition, empty config
--
SELECT mq.create_topic('orders') AS orders_id \gset
SELECT :orders_id > 0 AS id_positive;
SELECT topic_id = :orders_id AS same_id, topic, partitions, config
  FROM mq.topics WHERE topic = 'orders';
SELECT topic, partition, log_start_offset, log_end_offset, high_watermark, leader_epoch, role
  FROM mq.partitions WHERE topic = 'orders';
-- the active segment starts at 0 and the next one already exists
SELECT partition, count(*) >= 2 AS next_segment_ready, min(base_offset) AS first_base,
       pg_temp.contiguous('orders') AS contiguous
  FROM mq.segments WHERE topic = 'orders' GROUP BY partition;
-- positional and named arguments
SELECT mq.create_topic('events', 3, '{"retention.ms": 3600000}') > 0 AS created;
SELECT mq.create_topic(topic => 'audit', partitions => 2) > 0 AS created;
SELECT mq.create_topic(config => '{"segment.records": 100}', topic => 'metrics') > 0 AS created;
SELECT topic, partitions, config FROM mq.topics
 WHERE topic IN ('orders', 'events', 'audit', 'metrics') ORDER BY topic;
SELECT topic, partition, log_start_offset, log_end_offset, high_watermark
  FROM mq.partitions WHERE topic IN ('events', 'audit') ORDER BY topic, partition;
SELECT topic, partition, count(*) >= 2 AS next_segment_ready, min(base_offset) AS first_base
  FROM mq.segments WHERE topic IN ('events', 'audit') GROUP BY topic, partition ORDER BY 1, 2;
SELECT pg_temp.contiguous('events') AS events_contiguous, pg_temp.contiguous('audit') AS audit_contiguous;
-- segment.records decides the span of each segment
SELECT partition, base_offset, end_offset FROM mq.segments
 WHERE topic = 'metrics' AND base_offset < 200 ORDER BY base_offset;
-- a null config is the empty config
SELECT mq.create_topic('nullconfig', 1, NULL) > 0 AS created;
SELECT config FROM mq.topics WHERE topic = 'nullconfig';
-- a topic that exists already
SELECT pg_temp.err($$SELECT mq.create_topic('orders')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('orders', 4, '{"retention.ms": 1}')$$);
SELECT partitions, config FROM mq.topics WHERE topic = 'orders';
-- partition counts: 1 to 10000
SELECT pg_temp.err($$SELECT mq.create_topic('badparts', 0)$$);
SELECT pg_temp.err($$SELECT mq.create_topic('badparts', -1)$$);
SELECT pg_temp.err($$SELECT mq.create_topic('badparts', 10001)$$);
SELECT pg_temp.err($$SELECT mq.create_topic('badparts', NULL)$$);
SELECT count(*) AS badparts_topics FROM mq.topics WHERE topic = 'badparts';
--
-- topic names: 1 to 249 characters of [A-Za-z0-9._-], not "." or ".."
--
SELECT mq.create_topic(repeat('n', 249)) > 0 AS created_249;
SELECT length(topic) FROM mq.topics WHERE topic LIKE 'nnn%';
SELECT pg_temp.err(format('SELECT mq.create_topic(%L)', repeat('n', 250))) = 'MQ003: invalid topic name "' || repeat('n', 250) || '"' AS rejected_250;
SELECT mq.create_topic('...') > 0 AS three_dots, mq.create_topic('.a') > 0 AS dot_a,
       mq.create_topic('a..') > 0 AS a_dot_dot,
       mq.create_topic('Az09._-') > 0 AS all_classes, mq.create_topic('-') > 0 AS dash,
       mq.create_topic('_') > 0 AS underscore, mq.create_topic('x') > 0 AS one_char;
SELECT pg_temp.err($$SELECT mq.create_topic('.')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('..')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('')$$);
SELECT pg_temp.err($$SELECT mq.create_topic(NULL)$$);
SELECT pg_temp.err($$SELECT mq.create_topic('a b')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('a/b')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('a:b')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('topic$')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('café')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('a*b')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('a"b')$$);
-- the error carries a hint
\set VERBOSITY default
SELECT mq.create_topic('no spaces');
SELECT mq.create_topic('orders');
SELECT mq.create_topic('zero', 0);
\set VERBOSITY terse
SELECT count(*) AS topics_with_bad_names FROM mq.topics
 WHERE topic IN ('.', '..', '', 'a b', 'a/b', 'a:b', 'topic$', 'café', 'a"b', 'a*b', 'no spaces', 'zero')
    OR length(topic) > 249;
-- two long names that share their first 248 characters are two topics with
-- their own storage (storage tables are named from ids, not names)
SELECT mq.create_topic(repeat('L', 248) || '1') > 0 AS long1,
       mq.create_topic(repeat('L', 248) || '2', 2) > 0 AS long2;
SELECT count(*) AS records FROM mq.send(repeat('L', 248) || '1', NULL::bytea, '\x01'::bytea);
SELECT right(topic, 1) AS suffix, partition, log_end_offset
  FROM mq.partitions WHERE topic LIKE 'LLLL%' ORDER BY 1, 2;
SELECT count(DISTINCT relid) AS distinct_partition_tables
  FROM mq.partitions WHERE topic LIKE 'LLLL%';
--
-- topic config: Kafka's keys, values as numbers or strings with units
--
-- units are resolved to plain numbers, booleans to booleans
SELECT mq.create_topic('units', 1, '{
    "retention.ms": "7d", "segment.ms": "2h", "retention.bytes": "1GB",
    "segment.bytes": "512MB", "max.message.bytes": "1kB",
    "min.insync.replicas": 2, "replication.factor": "3",
    "unclean.leader.election.enable": "false", "cleanup.policy": "delete",
    "segment.records": 1000}') > 0 AS created;
SELECT jsonb_pretty(config) FROM mq.topics WHERE topic = 'units';
SELECT mq.validate_config('{"retention.ms": "250ms"}') AS ms,
       mq.validate_config('{"retention.ms": "90s"}') AS s,
       mq.validate_config('{"retention.ms": "5min"}') AS min,
       mq.validate_config('{"retention.ms": "1.5h"}') AS h;
SELECT mq.validate_config('{"retention.ms": "1d"}') AS d,
       mq.validate_config('{"retention.ms": " 2 d "}') AS spaces,
       mq.validate_config('{"retention.ms": -1}') AS unlimited,
       mq.validate_config('{"retention.ms": "-1"}') AS unlimited_str;
SELECT mq.validate_config('{"retention.bytes": "100B"}') AS b,
       mq.validate_config('{"retention.bytes": "2kB"}') AS kb,
       mq.validate_config('{"retention.bytes": "3MB"}') AS mb;
SELECT mq.validate_config('{"retention.bytes": "4GB"}') AS gb,
       mq.validate_config('{"retention.bytes": "1TB"}') AS tb,
       mq.validate_config('{"segment.bytes": 1024}') AS min_segment;
SELECT mq.validate_config('{"unclean.leader.election.enable": true}') AS bool,
       mq.validate_config('{"unclean.leader.election.enable": "TRUE"}') AS bool_str,
       mq.validate_config('{"segment.records": 1e3}') AS exponent;
SELECT mq.validate_config('{}') AS empty;
-- unknown keys
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.mss": 1}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"compression.codec": "lz4"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"compression.type": "brotli"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": 1, "foo": 1}')$$);
-- not an object
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '[]')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '"7d"')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, 'null')$$);
-- bad values
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": "abc"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": true}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": null}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": [1]}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": "1.5ms"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.records": 2.5}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.bytes": 99999999999999999999}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.bytes": "9000000TB"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"unclean.leader.election.enable": "yes"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"unclean.leader.election.enable": 1}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"cleanup.policy": "compact,retain"}')$$);
-- below the minimum of the key
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": -2}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.bytes": "-5"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.bytes": 13}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.bytes": "13B"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.ms": 0}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.records": 0}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"min.insync.replicas": 0}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"replication.factor": 0}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"max.message.bytes": -1}')$$);
-- bad units: unknown, wrong case, or a unit on a plain count
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": "10 years"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": "5MB"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"retention.ms": "1H"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.bytes": "1kb"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.bytes": "10d"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"segment.records": "10k"}')$$);
SELECT pg_temp.err($$SELECT mq.create_topic('cfg', 1, '{"min.insync.replicas": "2ms"}')$$);
-- min.insync.replicas larger than replication.factor is taken, as by
-- Kafka: acks=all is then refused (MQ021, test/pgtap/produce_contract.sql)
SELECT mq.validate_config('{"min.insync.replicas": "3", "replication.factor": "2"}');
SELECT mq.create_topic('isr_equal', 1, '{"min.insync.replicas": 2, "replication.factor": 2}') > 0 AS created;
-- hints name what is valid
\set VERBOSITY default
SELECT mq.create_topic('cfg', 1, '{"retention.mss": 1}');
SELECT mq.create_topic('cfg', 1, '{"retention.ms": "10 years"}');
SELECT mq.create_topic('cfg', 1, '{"segment.bytes": "1kb"}');
SELECT mq.create_topic('cfg', 1, '{"compression.type": "brotli"}');
\set VERBOSITY terse
-- nothing was created by the failed calls
SELECT count(*) AS cfg_topics FROM mq.topics WHERE topic = 'cfg';
--
-- alter_topic: merges keys, resolves units, null resets a key
--
SELECT mq.alter_topic('events', '{"retention.ms": "2d", "segment.bytes": "64MB"}');
SELECT config FROM mq.topics WHERE topic = 'events';
SELECT mq.alter_topic('events', '{"retention.ms": "12h"}');
-- reset with null
SELECT mq.alter_topic('events', '{"retention.ms": null}');
SELECT mq.alter_topic('events', '{"segment.bytes": null, "cleanup.policy": "delete"}');
SELECT config FROM mq.topics WHERE topic = 'events';
-- resetting a key that is not set and an empty change change nothing; a
-- null change and resetting an unknown key are refused (MQ010, MQ004)
SELECT mq.alter_topic('events', '{"retention.bytes": null}');
SELECT mq.alter_topic('events', '{}');
SELECT pg_temp.err($$SELECT mq.alter_topic('events', NULL)$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"bogus": null}')$$);
SELECT config FROM mq.topics WHERE topic = 'events';
-- invalid changes are refused and leave the config as it was
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"nope": 1}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"retention.ms": "soon"}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"retention.ms": "1y"}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"segment.bytes": 10}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"retention.ms": 5, "nope": 1}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '[1, 2]')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('nosuchtopic', '{"retention.ms": 5}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic(NULL, '{"retention.ms": 5}')$$);
SELECT config FROM mq.topics WHERE topic = 'events';
-- replication.factor cannot change: not to another value, not by adding
-- it, not by resetting it; setting the same value again is no change
SELECT pg_temp.err($$SELECT mq.alter_topic('units', '{"replication.factor": 5}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('units', '{"replication.factor": null}')$$);
SELECT pg_temp.err($$SELECT mq.alter_topic('events', '{"replication.factor": 2}')$$);
SELECT mq.alter_topic('units', '{"replication.factor": 3}') -> 'replication.factor' AS same_factor;
SELECT config -> 'replication.factor' AS units_factor FROM mq.topics WHERE topic = 'units';
SELECT config ? 'replication.factor' AS events_has_factor FROM mq.topics WHERE topic = 'events';
-- min.insync.replicas can change, above replication.factor too (as in Kafka)
SELECT mq.alter_topic('units', '{"min.insync.replicas": 3}') -> 'min.insync.replicas' AS isr;
SELECT pg_temp.err($$SELECT mq.alter_topic('isr_equal', '{"min.insync.replicas": 3}')$$);
SELECT topic, config -> 'min.insync.replicas' AS isr, config -> 'replication.factor' AS factor
  FROM mq.topics WHERE topic IN ('units', 'isr_equal') ORDER BY topic;
--
-- add_partitions
--
SELECT mq.add_partitions('audit', 3) AS partitions;
SELECT topic, partitions FROM mq.topics WHERE topic = 'audit';
SELECT partition, log_start_offset, log_end_offset, high_watermark
  FROM mq.partitions WHERE topic = 'audit' ORDER BY partition;
SELECT partition, count(*) >= 2 AS next_segment_ready, min(base_offset) AS first_base
  FROM mq.segments WHERE topic = 'audit' GROUP BY partition ORDER BY partition;
SELECT pg_temp.contiguous('audit') AS contiguous;
-- the new partitions take records, and the partitioner counts them
SELECT partition, msg_offset FROM mq.send('audit', NULL::bytea, 'new'::bytea, NULL, 4);
SELECT mq.partition_for('audit', 'abc') AS abc_of_5;
SELECT mq.add_partitions(topic => 'audit', count => 2) AS partitions;
SELECT mq.partition_for('audit', 'abc') AS abc_of_7;
SELECT pg_temp.err($$SELECT mq.add_partitions('audit', 0)$$);
SELECT pg_temp.err($$SELECT mq.add_partitions('audit', -2)$$);
SELECT pg_temp.err($$SELECT mq.add_partitions('audit', NULL)$$);
SELECT pg_temp.err($$SELECT mq.add_partitions('audit', 9994)$$);
SELECT pg_temp.err($$SELECT mq.add_partitions('nosuchtopic', 1)$$);
SELECT pg_temp.err($$SELECT mq.add_partitions(NULL, 1)$$);
SELECT partitions FROM mq.topics WHERE topic = 'audit';
SELECT count(*) AS audit_partitions FROM mq.partitions WHERE topic = 'audit';
SELECT partition, log_end_offset FROM mq.partitions WHERE topic = 'audit' ORDER BY partition;
--
-- drop_topic
--
SELECT relid::text AS events_p0 FROM mq.partitions WHERE topic = 'events' AND partition = 0 \gset
SELECT relid::text AS events_seg FROM mq.segments WHERE topic = 'events' ORDER BY partition, base_offset LIMIT 1 \gset
SELECT to_regclass(:'events_p0') IS NOT NULL AS p0_exists, to_regclass(:'events_seg') IS NOT NULL AS seg_exists;
SELECT count(*) FROM mq.send('events', 'k', 'v');
SELECT mq.drop_topic('events');
SELECT (SELECT count(*) FROM mq.topics WHERE topic = 'events') AS topics,
       (SELECT count(*) FROM mq.partitions WHERE topic = 'events') AS partitions,
       (SELECT count(*) FROM mq.segments WHERE topic = 'events') AS segments;
SELECT to_regclass(:'events_p0') IS NULL AS p0_dropped, to_regclass(:'events_seg') IS NULL AS seg_dropped;
SELECT pg_temp.err($$SELECT mq.drop_topic('events')$$);
SELECT pg_temp.err($$SELECT mq.drop_topic('nosuchtopic')$$);
SELECT pg_temp.err($$SELECT mq.drop_topic(NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('events', 'k', 'v')$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('events', 0, 0)$$);
-- a topic created again under the same name starts empty
SELECT mq.create_topic('events', 2) > 0 AS recreated;
SELECT partition, log_start_offset, log_end_offset FROM mq.partitions WHERE topic = 'events' ORDER BY partition;
SELECT partition, msg_offset FROM mq.send('events', NULL::bytea, 'again'::bytea, NULL, 1);
SELECT partitions, config FROM mq.topics WHERE topic = 'events';
-- dropping one topic leaves the others alone
SELECT mq.drop_topic(topic => 'orders');
SELECT topic FROM mq.topics WHERE topic IN ('orders', 'events', 'audit', 'metrics') ORDER BY topic;
-- clean up: every topic of this file
SELECT count(*) > 0 AS dropped FROM (SELECT mq.drop_topic(topic) FROM mq.topics) d;
SELECT (SELECT count(*) FROM mq.topics) AS topics, (SELECT count(*) FROM mq.partitions) AS partitions,
       (SELECT count(*) FROM mq.segments) AS segments,
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'mq_log'::regnamespace) AS storage_relations;
