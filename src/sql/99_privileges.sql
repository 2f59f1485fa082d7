-------------------------------------------------------------------------------
-- Privileges: administration is for the extension owner unless granted;
-- produce and consume are granted explicitly too (see docs/operations.md).
-------------------------------------------------------------------------------

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;
GRANT SELECT ON mq.topics, mq.partitions, mq.segments TO PUBLIC;
GRANT EXECUTE ON FUNCTION mq.validate_config(jsonb), mq.murmur2(bytea),
    mq.partition_for(text, bytea), mq.partition_for(text, text),
    mq._log_end_offset(integer, integer) TO PUBLIC;

-- monitoring: lag and statistics for pg_monitor (postgres_exporter's role)
GRANT SELECT ON mq.consumer_lag, mq.partition_stats, mq.group_members, mq.group_assignments TO pg_monitor;
GRANT EXECUTE ON FUNCTION mq._offset_time(integer, integer, bigint),
    mq._retention_headroom(integer, integer, bigint) TO pg_monitor;
