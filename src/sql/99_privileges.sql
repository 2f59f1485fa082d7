-------------------------------------------------------------------------------
-- Privileges: administration is for the extension owner unless granted;
-- produce and consume are granted explicitly too (see docs/security.md).
-------------------------------------------------------------------------------

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;
GRANT SELECT ON mq.topics, mq.partitions, mq.segments TO PUBLIC;
GRANT EXECUTE ON FUNCTION mq.validate_config(jsonb), mq.murmur2(bytea),
    mq.partition_for(text, bytea), mq.partition_for(text, text),
    mq._log_end_offset(integer, integer) TO PUBLIC;

