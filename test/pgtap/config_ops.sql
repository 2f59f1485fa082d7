-- Kafka's AlterConfigs and IncrementalAlterConfigs as mq.alter_topic
-- changes (issue 14): mq._config_replace makes the given keys the whole
-- config, mq._config_incremental applies SET, DELETE, APPEND and
-- SUBTRACT; bad operations get MQ010, bad values MQ004 from
-- mq.alter_topic, and neither changes the topic.  mq.config_defaults,
-- which DescribeConfigs lists, are valid values of known keys.  Kafka's
-- topic configs mq does not act on are kept and checked as Kafka checks
-- them.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(35);

SELECT mq.create_topic('co', 1, '{"retention.ms": "1d", "segment.records": 100}');
CREATE TEMP VIEW cfg AS SELECT config FROM mq.topics WHERE topic = 'co';

-- replace
SELECT is(mq._config_replace('{"retention.ms": 1, "segment.records": 2}', ARRAY['max.message.bytes'], ARRAY['1000']),
          '{"retention.ms": null, "segment.records": null, "max.message.bytes": "1000"}',
          'replace: the other keys return to their defaults');
SELECT is(mq._config_replace('{"replication.factor": 3, "retention.ms": 1}', ARRAY['replication.factor'], ARRAY['3']),
          '{"retention.ms": null}', 'replace: replication.factor is kept, and ignored when given unchanged');
SELECT is(mq.alter_topic('co', mq._config_replace((SELECT config FROM cfg), ARRAY['retention.ms'], ARRAY['2h'])),
          '{"retention.ms": 7200000}', 'through mq.alter_topic: only the given keys remain');

-- incremental
SELECT is(mq._config_incremental('{"retention.ms": 1}', ARRAY['segment.records', 'retention.ms'], ARRAY[0, 1], ARRAY['5', NULL]),
          '{"retention.ms": null, "segment.records": "5"}', 'SET and DELETE');
SELECT is(mq._config_incremental('{}', ARRAY['cleanup.policy'], ARRAY[2], ARRAY['compact']),
          '{"cleanup.policy": "delete,compact"}', 'APPEND to cleanup.policy adds to its default, delete, at the end (mq.validate_config then stores it sorted)');
SELECT is(mq._config_incremental('{"cleanup.policy": "compact,delete"}', ARRAY['cleanup.policy'], ARRAY[3], ARRAY['delete']),
          '{"cleanup.policy": "compact"}', 'SUBTRACT from cleanup.policy');
SELECT throws_ok($$SELECT mq._config_incremental('{}', ARRAY['retention.ms'], ARRAY[2], ARRAY['1'])$$, 'MQ004', NULL,
                 'APPEND to a key that is not a list is MQ004 (Kafka''s INVALID_CONFIG)');
SELECT is(mq._config_incremental('{"leader.replication.throttled.replicas": "1:1,0:1"}',
                                 ARRAY['leader.replication.throttled.replicas'], ARRAY[2], ARRAY['0:1,2:1']),
          '{"leader.replication.throttled.replicas": "1:1,0:1,2:1"}',
          'the throttled replica lists are lists too: APPEND adds what is new at the end, in order, as Kafka');
SELECT throws_ok($$SELECT mq._config_incremental('{}', ARRAY['retention.ms'], ARRAY[7], ARRAY['1'])$$, 'MQ010', NULL,
                 'an unknown operation is MQ010');
SELECT is(mq.alter_topic('co', mq._config_incremental((SELECT config FROM cfg), ARRAY['segment.records', 'retention.ms'],
                                                      ARRAY[0, 1], ARRAY['50', NULL])),
          '{"segment.records": 50}', 'through mq.alter_topic: set one key, delete another');

-- bad values are mq.alter_topic's: MQ004, nothing changed
SELECT throws_ok($$SELECT mq.alter_topic('co', mq._config_replace((SELECT config FROM cfg), ARRAY['retention.ms'], ARRAY['soon']))$$,
                 'MQ004', NULL, 'an invalid value is MQ004');
SELECT throws_ok($$SELECT mq.alter_topic('co', mq._config_incremental((SELECT config FROM cfg), ARRAY['cleanup.policy'], ARRAY[3], ARRAY['delete']))$$,
                 'MQ004', NULL, 'subtracting the last policy is MQ004');
SELECT throws_ok($$SELECT mq.alter_topic('co', mq._config_replace((SELECT config FROM cfg), ARRAY['no.such.key'], ARRAY['1']))$$,
                 'MQ004', NULL, 'an unknown key is MQ004');
SELECT is((SELECT config FROM cfg), '{"segment.records": 50}', 'the refused changes left the config');

-- defaults: every one a valid, normalised value of a key mq knows
SELECT is(mq.validate_config(mq.config_defaults()), mq.config_defaults(),
          'mq.config_defaults passes validate_config unchanged: describe, then alter, round-trips');
SELECT ok(NOT mq.config_defaults() ?| ARRAY['segment.ms', 'segment.records', 'replication.factor'],
          'keys without a fixed default are left out');
SET LOCAL mq.message_max_bytes = 5000;
SELECT is(mq.config_defaults()->>'max.message.bytes', '5000', 'max.message.bytes follows mq.message_max_bytes');
RESET mq.message_max_bytes;
SELECT is(mq.config_defaults()->>'retention.ms', '-1', 'retention.ms: mq keeps everything by default');

-- Kafka's other topic configs: kept as given (units resolved), reported,
-- checked as Kafka checks them; tiered storage cannot be turned on
SELECT is(mq.validate_config('{"compression.type": "zstd", "compression.zstd.level": -5, "preallocate": "true",
                               "segment.jitter.ms": "1h", "flush.messages": 9223372036854775807,
                               "message.format.version": "2.8-IV1", "remote.storage.enable": "false",
                               "leader.replication.throttled.replicas": "0:1,1:2",
                               "follower.replication.throttled.replicas": "*"}'),
          '{"compression.type": "zstd", "compression.zstd.level": -5, "preallocate": true, "segment.jitter.ms": 3600000,
            "flush.messages": 9223372036854775807, "message.format.version": "2.8-IV1", "remote.storage.enable": false,
            "leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*"}'::jsonb,
          'Kafka''s topic configs that mq does not act on are kept, normalised');
SELECT throws_ok($$SELECT mq.validate_config('{"compression.type": "brotli"}')$$, 'MQ004',
                 'invalid value "brotli" for "compression.type"', 'an unknown codec is refused');
SELECT throws_ok($$SELECT mq.validate_config('{"compression.lz4.level": 18}')$$, 'MQ004', NULL,
                 'a compression level out of Kafka''s range is refused');
SELECT throws_ok($$SELECT mq.validate_config('{"remote.storage.enable": true}')$$, 'MQ004',
                 'tiered storage is not supported: "remote.storage.enable" must be false', 'tiered storage is refused');
SELECT throws_ok($$SELECT mq.validate_config('{"leader.replication.throttled.replicas": "0-1"}')$$, 'MQ004', NULL,
                 'a throttled replica list that is not partition:broker pairs is refused');
SELECT is((SELECT count(*) FROM jsonb_each(mq.config_defaults()) d WHERE mq.validate_config(jsonb_build_object(d.key, d.value)) IS NULL),
          0::bigint, 'every default DescribeConfigs lists is a valid value of its key');
SELECT is(mq.config_defaults()->>'compression.type', 'producer', 'compression.type defaults to Kafka''s producer');

-- bad input (an audit): the right SQLSTATE, a message that names the
-- argument, and nothing changed
CREATE FUNCTION pg_temp.hint(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text;
BEGIN
    EXECUTE q;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v = PG_EXCEPTION_HINT;
    RETURN v;
END $$;
SELECT mq.alter_topic('co', mq._config_replace((SELECT config FROM cfg), ARRAY['retention.ms'], ARRAY['1h']));
SELECT throws_ok($$SELECT mq.alter_topic('co', '{"bogus": null}')$$, 'MQ004', 'unknown topic config key "bogus"',
                 'an unknown key is refused also when its value is null');
SELECT throws_ok($$SELECT mq.alter_topic('co', NULL)$$, 'MQ010', 'config must not be null',
                 'alter_topic with a null config is MQ010');
SELECT is((SELECT config FROM cfg), '{"retention.ms": 3600000}'::jsonb, 'neither changed the topic');
SELECT throws_ok($$SELECT mq.create_topic(NULL)$$, 'MQ010', 'topic must not be null',
                 'create_topic with a null name is MQ010, as drop_topic and alter_topic');
SELECT mq.create_topic('co_null_config', 1, NULL);
SELECT is((SELECT config FROM mq.topics WHERE topic = 'co_null_config'), '{}'::jsonb,
          'create_topic with a null config: a topic without config');
SELECT is(pg_temp.hint($$SELECT mq.validate_config('{"compression.gzip.level": 99}')$$),
          'Use 1 to 9, or -1 for gzip''s default level.', 'compression.gzip.level: -1 is the default level, not "no limit"');
SELECT throws_ok($$SELECT mq.validate_config('{"compression.gzip.level": 0}')$$, 'MQ004', NULL,
                 'compression.gzip.level 0 is refused, as by Kafka ([1,...,9] or -1)');
SELECT lives_ok($$SELECT mq.validate_config('{"compression.gzip.level": -1}')$$, 'and -1 taken');
SELECT is(pg_temp.hint($$SELECT mq.validate_config('{"retention.ms": -2}')$$), 'Use -1 for no limit.',
          'retention.ms: -1 is no limit');
SELECT throws_ok($$SELECT mq.validate_config('{"segment.bytes": 1e400}')$$, 'MQ004',
                 'invalid value 1000000000000000000000000000000000000000... for "segment.bytes": not a whole number in range',
                 'a huge value is quoted by its first 40 characters');

SELECT * FROM finish();
ROLLBACK;
