-------------------------------------------------------------------------------
-- Consume
-------------------------------------------------------------------------------

-- Long polling: with max_wait_ms > 0, a call that found fewer than
-- min_records waits for commits to the topic (READ COMMITTED only).
CREATE FUNCTION mq.fetch(topic text, partition integer, from_offset bigint,
                         max_records integer DEFAULT 1000,
                         max_wait_ms integer DEFAULT 0, min_records integer DEFAULT 1)
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_fetch' LANGUAGE C VOLATILE ROWS 1000;

CREATE FUNCTION mq.commit_offset(group_id text, topic text, partition integer,
                                 next_offset bigint, metadata text DEFAULT NULL,
                                 producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                                 member_id text DEFAULT NULL, generation_id integer DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'mq_commit_offset' LANGUAGE C VOLATILE;

CREATE FUNCTION mq.commit_polled(group_id text, topic text) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_commit_polled' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mq.commit_polled(text, text) IS
    'commits the positions this transaction''s polls of the group reached';

CREATE FUNCTION mq.committed_offset(group_id text, topic text, partition integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_committed_offset' LANGUAGE C STABLE;

-- member_id restricts the poll to the partitions the group member owns;
-- auto_offset_reset (earliest, latest, none) says where to start without
-- a committed offset or below the log start.
CREATE FUNCTION mq.poll(group_id text, topic text, max_records integer DEFAULT 100,
                        auto_commit boolean DEFAULT false,
                        max_wait_ms integer DEFAULT 0, min_records integer DEFAULT 1,
                        member_id text DEFAULT NULL, auto_offset_reset text DEFAULT 'earliest')
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_poll' LANGUAGE C VOLATILE ROWS 100;
