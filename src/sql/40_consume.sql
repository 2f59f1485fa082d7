-------------------------------------------------------------------------------
-- Consume
-------------------------------------------------------------------------------

-- Long polling: with max_wait_ms > 0, a call that found fewer than
-- min_records waits for commits to the topic (READ COMMITTED only).
CREATE FUNCTION mq.fetch(topic text, partition integer, from_offset bigint,
                         max_records integer DEFAULT 1000,
                         max_wait_ms integer DEFAULT 0, min_records integer DEFAULT 1,
                         max_bytes bigint DEFAULT NULL)
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_fetch' LANGUAGE C VOLATILE ROWS 1000;

-- Kafka's Fetch, encoded here: each partition's records as Kafka record
-- batches (v2), read as mq.fetch reads them, within each partition's
-- limits and the call's response_max_bytes (src/kafka_fetch.c); a row
-- per element whose topic is not null.  mq-kafka copies the bytes.
CREATE FUNCTION mq.kafka_fetch(topics text[], partitions integer[], from_offsets bigint[],
                               partition_max_records integer[], partition_max_bytes integer[],
                               response_max_bytes integer DEFAULT NULL)
    RETURNS TABLE (item integer, next_offset bigint, records integer, bytes bigint, batches bytea)
    AS 'MODULE_PATHNAME', 'mq_kafka_fetch' LANGUAGE C VOLATILE ROWS 10;

-- mq-kafka's parked fetches wait on this (src/topic_watch.c): the high
-- watermarks of partitions as soon as one is not what the caller saw last.
CREATE FUNCTION mq._await_partitions(topics text[], partitions integer[], seen bigint[],
                                     max_wait_ms integer)
    RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'mq_await_partitions' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION mq.commit_offset(group_id text, topic text, partition integer,
                                 next_offset bigint, metadata text DEFAULT NULL,
                                 producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                                 member_id text DEFAULT NULL, generation_id integer DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'mq_commit_offset' LANGUAGE C VOLATILE;

-- an offset commit's metadata: at most 4096 bytes (MQ038), as Kafka's
-- offset.metadata.max.bytes; commit_offset and kafka_txn_offset check it
CREATE FUNCTION mq._check_offset_metadata(metadata text) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_check_offset_metadata_sql' LANGUAGE C IMMUTABLE;

CREATE FUNCTION mq.commit_polled(group_id text, topic text) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_commit_polled' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mq.commit_polled(text, text) IS
    'commits the positions this transaction''s polls of the group reached';

CREATE FUNCTION mq.committed_offset(group_id text, topic text, partition integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_committed_offset' LANGUAGE C STABLE;

-- The same with the offset's metadata, read together (both null when
-- none): mq-kafka's OffsetFetch of a partition (src/offsets.c).
CREATE FUNCTION mq._committed_position(group_id text, topic text, partition integer,
                                       OUT next_offset bigint, OUT metadata text)
    RETURNS record AS 'MODULE_PATHNAME', 'mq_committed_position' LANGUAGE C STABLE;

-- member_id restricts the poll to the partitions the group member owns,
-- partitions to those it names (a client of a replicated cluster names
-- what the node leads); auto_offset_reset (earliest, latest, none) says
-- where to start without a committed offset or below the log start.
CREATE FUNCTION mq.poll(group_id text, topic text, max_records integer DEFAULT 100,
                        auto_commit boolean DEFAULT false,
                        max_wait_ms integer DEFAULT 0, min_records integer DEFAULT 1,
                        member_id text DEFAULT NULL, auto_offset_reset text DEFAULT 'earliest',
                        partitions integer[] DEFAULT NULL)
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_poll' LANGUAGE C VOLATILE ROWS 100;

-- Kafka's ListOffsets by timestamp: the earliest offset whose timestamp is
-- at least ts, or the log end offset when there is none (src/timeindex.c).
CREATE FUNCTION mq.offsets_for_times(topic text, partition integer, ts timestamptz)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_offsets_for_times' LANGUAGE C STABLE;

-- Commit, for every partition of the topic, the group's position at the
-- first record at or after to_timestamp (kafka-consumer-groups
-- --reset-offsets --to-datetime).  The caller's rights: commit_offset
-- checks READ on the group and the topic.  As Kafka's reset, which needs
-- an inactive group, live members (through mq.join_group) subscribed to
-- the topic refuse it (MQ037, as mq.delete_offsets): mq.group_members
-- shows them, SQL's and Kafka's, to whoever may read the group.
CREATE FUNCTION mq.reset_offsets(group_id text, topic text, to_timestamp timestamptz)
    RETURNS TABLE (partition integer, next_offset bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF reset_offsets.group_id IS NULL OR reset_offsets.topic IS NULL OR reset_offsets.to_timestamp IS NULL THEN
        RAISE EXCEPTION '% must not be null',
            CASE WHEN reset_offsets.group_id IS NULL THEN 'group_id'
                 WHEN reset_offsets.topic IS NULL THEN 'topic' ELSE 'to_timestamp' END
            USING ERRCODE = 'MQ010';
    END IF;
    IF EXISTS (SELECT 1 FROM mq.group_members m
                WHERE m.group_id OPERATOR(pg_catalog.=) reset_offsets.group_id AND m.active
                  AND reset_offsets.topic OPERATOR(pg_catalog.=) ANY (m.topics)) THEN
        RAISE EXCEPTION 'group "%" has live members subscribed to topic "%"', reset_offsets.group_id,
            reset_offsets.topic
            USING ERRCODE = 'MQ037',
                  HINT = 'Stop the consumers that read the topic (mq.leave_group for SQL members), or wait for their session timeout.';
    END IF;
    -- mq.partitions shows the topics the caller may DESCRIBE
    FOR partition IN SELECT ps.partition FROM mq.partitions ps
                      WHERE ps.topic = reset_offsets.topic ORDER BY ps.partition LOOP
        next_offset := mq.offsets_for_times(reset_offsets.topic, partition, reset_offsets.to_timestamp);
        PERFORM mq.commit_offset(reset_offsets.group_id, reset_offsets.topic, partition, next_offset);
        RETURN NEXT;
    END LOOP;
    IF NOT FOUND THEN
        -- no such topic, or not one the caller may see: its error
        PERFORM mq.offsets_for_times(reset_offsets.topic, 0, reset_offsets.to_timestamp);
    END IF;
END $$;

-- Headers: Kafka's list from any headers jsonb, and the jsonb form of a
-- list (src/headers.c; docs/sql.md#headers).
CREATE FUNCTION mq.header_list(headers jsonb) RETURNS mq.header[]
    AS 'MODULE_PATHNAME', 'mq_header_list_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION mq.headers_jsonb(header_list mq.header[]) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'mq_headers_jsonb_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
