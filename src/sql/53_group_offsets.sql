-------------------------------------------------------------------------------
-- A group's committed offsets with their metadata, for Kafka's OffsetFetch:
-- mq-kafka runs a client's statements as the client's role (SASL), which
-- may not read mq.consumer_offset itself.  Needs describe on the group, as
-- OffsetFetch does in Kafka, and lists the topics the caller may describe.
-------------------------------------------------------------------------------
CREATE FUNCTION mq_internal.committed_offsets(group_id text, p_caller oid,
                                              OUT topic text, OUT partition integer,
                                              OUT next_offset bigint, OUT metadata text)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- refused as mq.committed_offset refuses them, not an empty list; an
    -- id too long to be stored has none
    IF NOT mq._check_group(committed_offsets.group_id, reading => true) THEN
        RETURN;
    END IF;
    PERFORM mq._authorize(p_caller, 'group', committed_offsets.group_id, 'describe');
    RETURN QUERY
    SELECT t.topic_name, c.partition, c.next_offset, c.metadata
      FROM mq.consumer_offset c JOIN mq.topic t USING (topic_id)
     WHERE c.group_id = committed_offsets.group_id
       AND mq._has_privilege(p_caller, 'topic', t.topic_name, 'describe')
     ORDER BY 1, 2;
END $$;
CREATE FUNCTION mq.committed_offsets(group_id text, OUT topic text, OUT partition integer,
                                     OUT next_offset bigint, OUT metadata text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
COMMENT ON FUNCTION mq.committed_offsets(text) IS
    'a group''s committed positions with their metadata, in the topics the caller may describe';
