-------------------------------------------------------------------------------
-- __consumer_offsets (docs/kafka.md, "__consumer_offsets"; src/consumer_offsets.c):
-- a compacted topic holding every offset commit in Kafka's own key/value
-- format, so that Kafka tools reading it (Burrow) see mq's groups.  It is
-- created on first need (mq-kafka's Metadata naming it, or this function
-- called by hand), with every committed offset known then; from then on
-- each commit appends its record in the committing transaction, when it
-- commits (its produce locks are the last any transaction takes).  Only the
-- commits write it: a produce, delete_records or add_partitions on it is
-- MQ070.  Its partitions are Kafka's choice for a group (abs of the Java
-- hash of the group id, modulo the count); the count cannot change.
-------------------------------------------------------------------------------
CREATE FUNCTION mq._consumer_offsets_append(group_id text, topic text, partition integer,
                                            next_offset bigint, metadata text, group_value bytea,
                                            committed_at timestamptz DEFAULT NULL)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_offsets_append' LANGUAGE C VOLATILE;
-- A transaction's records are appended when it commits (src/consumer_offsets.c,
-- "Lock order"); this appends them now, for a test that reads them back in
-- the same transaction.
CREATE FUNCTION mq._consumer_offsets_flush() RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_consumer_offsets_flush' LANGUAGE C VOLATILE;

CREATE FUNCTION mq._refuse_internal_topic(topic text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF topic OPERATOR(pg_catalog.=) '__consumer_offsets' THEN
        RAISE EXCEPTION 'cannot write to internal topic "%"', topic
            USING ERRCODE = 'MQ070',
                  HINT = 'Offset commits (mq.commit_offset, Kafka''s OffsetCommit) append to it.';
    END IF;
END $$;

-- Creates the topic if it does not exist (needs no right: Kafka creates it
-- for any client's group); returns its partition count.  Commits wait
-- while it is created (SHARE on mq.consumer_offset), so that each one is
-- either in the first records or appends its own.
CREATE FUNCTION mq_internal.ensure_consumer_offsets(partitions integer, p_caller oid)
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    SELECT t.partitions INTO v_n FROM mq.topic t
     WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets';
    IF v_n IS NOT NULL THEN
        RETURN v_n;
    END IF;
    IF ensure_consumer_offsets.partitions IS NULL OR ensure_consumer_offsets.partitions < 1
       OR ensure_consumer_offsets.partitions > 1000 THEN
        RAISE EXCEPTION 'invalid partition count %', coalesce(ensure_consumer_offsets.partitions::text, 'NULL')
            USING ERRCODE = 'MQ005', HINT = '__consumer_offsets has between 1 and 1000 partitions.';
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('mq.create_topic'));
    LOCK TABLE mq.consumer_offset IN SHARE MODE;
    SELECT t.partitions INTO v_n FROM mq.topic t
     WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets';
    IF v_n IS NOT NULL THEN
        RETURN v_n;
    END IF;
    PERFORM mq_internal.create_topic('__consumer_offsets', ensure_consumer_offsets.partitions,
                                     '{"cleanup.policy": "compact"}', NULL);
    PERFORM mq._consumer_offsets_append(o.group_id, t.topic_name, o.partition, o.next_offset,
                                        o.metadata, NULL, o.committed_at)
       FROM mq.consumer_offset o JOIN mq.topic t USING (topic_id)
      ORDER BY o.committed_at, o.group_id, t.topic_name, o.partition;
    RETURN ensure_consumer_offsets.partitions;
END $$;
CREATE FUNCTION mq.ensure_consumer_offsets(partitions integer DEFAULT 10) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
