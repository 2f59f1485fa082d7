-------------------------------------------------------------------------------
-- Consume
-------------------------------------------------------------------------------

CREATE FUNCTION mq.fetch(topic text, partition integer, from_offset bigint,
                         max_records integer DEFAULT 1000)
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_fetch' LANGUAGE C STABLE ROWS 1000;

CREATE FUNCTION mq.commit_offset(group_id text, topic text, partition integer,
                                 next_offset bigint, metadata text DEFAULT NULL,
                                 producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'mq_commit_offset' LANGUAGE C VOLATILE;

CREATE FUNCTION mq.commit_polled(group_id text, topic text) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_commit_polled' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mq.commit_polled(text, text) IS
    'commits the positions this transaction''s polls of the group reached';

CREATE FUNCTION mq.committed_offset(group_id text, topic text, partition integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_committed_offset' LANGUAGE C STABLE;

CREATE FUNCTION mq.poll(group_id text, topic text, max_records integer DEFAULT 100,
                        auto_commit boolean DEFAULT false)
    RETURNS SETOF mq.record
    AS 'MODULE_PATHNAME', 'mq_poll' LANGUAGE C VOLATILE ROWS 100;

