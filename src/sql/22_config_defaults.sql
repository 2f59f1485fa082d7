-------------------------------------------------------------------------------
-- The value each topic config key has while a topic does not set it: what
-- mq does then (the coalesce of each key's reader: retention in
-- 70_retention.sql, compaction in 72_compaction.sql, the topic cache and
-- record size in src/topic.c and src/record_size.c, replication in
-- 60_replica*.sql and 61_coordinator.sql).  mq-kafka's DescribeConfigs
-- lists them as Kafka's defaults (DEFAULT_CONFIG), so that tools show a
-- full config.  Keys without a fixed default are left out: segment.ms
-- (no roll by time), segment.records (from segment.bytes and the record
-- size) and replication.factor (not a Kafka config).  Where mq's default
-- differs from Kafka's it is mq's: retention.ms is -1 (keep everything),
-- not seven days.  The keys mq keeps without acting on them (10_helpers.sql)
-- have Kafka 3.9's defaults.
-------------------------------------------------------------------------------

CREATE FUNCTION mq.config_defaults() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT jsonb_build_object(
        'cleanup.policy', 'delete',
        'delete.retention.ms', 86400000,
        -- the server-wide mq.message_max_bytes (Kafka's message.max.bytes)
        'max.message.bytes', coalesce((SELECT s.setting::bigint FROM pg_settings s
                                        WHERE s.name = 'mq.message_max_bytes'), 1048588),
        'max.compaction.lag.ms', 9223372036854775807,
        'message.timestamp.after.max.ms', 9223372036854775807,
        'message.timestamp.before.max.ms', 9223372036854775807,
        'message.timestamp.difference.max.ms', 9223372036854775807,
        'message.timestamp.type', 'CreateTime',
        'min.cleanable.dirty.ratio', 0.5,
        'min.compaction.lag.ms', 0,
        'min.insync.replicas', 1,
        'retention.bytes', -1,
        'retention.ms', -1,
        'segment.bytes', 1073741824,
        'unclean.leader.election.enable', false)
    || jsonb_build_object(
        'compression.type', 'producer',
        'compression.gzip.level', -1,
        'compression.lz4.level', 9,
        'compression.zstd.level', 3,
        'file.delete.delay.ms', 60000,
        'flush.messages', 9223372036854775807,
        'flush.ms', 9223372036854775807,
        'follower.replication.throttled.replicas', '',
        'index.interval.bytes', 4096,
        'leader.replication.throttled.replicas', '',
        'local.retention.bytes', -2,
        'local.retention.ms', -2,
        'message.downconversion.enable', true,
        'message.format.version', '3.0-IV1',
        'preallocate', false,
        'remote.log.copy.disable', false,
        'remote.log.delete.on.disable', false,
        'remote.storage.enable', false,
        'segment.index.bytes', 10485760,
        'segment.jitter.ms', 0)
$$;
