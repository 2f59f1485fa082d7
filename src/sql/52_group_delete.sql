-------------------------------------------------------------------------------
-- Deleting a consumer group (Kafka's DeleteGroups, mq-kafka's API 42):
-- its committed offsets (mq.consumer_offset, the one store that
-- mq.commit_offset and OffsetCommit write), what retention counted as
-- lost for it, and its SQL group state (mq.consumer_group, with its
-- assignment, and fenced member ids).  A group with live SQL members is
-- refused (MQ036), as Kafka refuses a non-empty group; an unknown one is
-- MQ035.  mq-kafka refuses a group with Kafka members itself, before it
-- calls this (the database does not know them).
--
-- Replicated partitions: committed offsets live with each partition and
-- only its leader takes changes, so a group with offsets on a partition
-- this node follows is refused (MQ020), and deleting offsets on a
-- partition this node leads bumps the partition's offsets version, so that
-- followers copy the deletion with their next fetch.
--
-- Locking: the group's consumer_group row (FOR UPDATE), as every change
-- to a group; joins wait on it.  Commits of offsets do not take it: a
-- commit racing the deletion may land after it and recreate one offset,
-- as in Kafka when a client commits with the group's generation -1.
-------------------------------------------------------------------------------

-- Bump the offsets version of the replicated partitions (led here, as
-- mq._delete_group_check made sure) where the group has committed offsets.
CREATE FUNCTION mq._delete_group_versions(p_group text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO mq.offset_version AS v (topic_id, partition, version)
    SELECT DISTINCT o.topic_id, o.partition, 1
      FROM mq.consumer_offset o
     WHERE o.group_id = p_group
       AND EXISTS (SELECT 1 FROM mq.replica_partition r
                    WHERE r.topic_id = o.topic_id AND r.partition = o.partition)
    ON CONFLICT (topic_id, partition) DO UPDATE SET version = v.version + 1
$$;

-- Raise MQ035, MQ036 or MQ020 when the group cannot be deleted here.
CREATE FUNCTION mq._delete_group_check(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_elsewhere record;
BEGIN
    PERFORM mq._expire_members(p_group);
    IF EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group) THEN
        RAISE EXCEPTION 'group "%" has live members', p_group
            USING ERRCODE = 'MQ036',
                  HINT = 'Stop its consumers (mq.leave_group) or wait for their session timeout.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mq.consumer_group g WHERE g.group_id = p_group)
       AND NOT EXISTS (SELECT 1 FROM mq.consumer_offset o WHERE o.group_id = p_group) THEN
        RAISE EXCEPTION 'group "%" does not exist', p_group USING ERRCODE = 'MQ035';
    END IF;
    SELECT t.topic_name, o.partition INTO v_elsewhere
      FROM mq.consumer_offset o
      JOIN mq.partition_state ps USING (topic_id, partition)
      JOIN mq.topic t USING (topic_id)
     WHERE o.group_id = p_group AND ps.role <> 'leader'
       AND EXISTS (SELECT 1 FROM mq.replica_partition r
                    WHERE r.topic_id = o.topic_id AND r.partition = o.partition)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'this node does not lead partition % of topic "%", where group "%" has offsets',
            v_elsewhere.partition, v_elsewhere.topic_name, p_group
            USING ERRCODE = 'MQ020',
                  HINT = 'Delete the group on a node that leads every partition it committed offsets for.';
    END IF;
END $$;

-- The public mq.delete_group is a C wrapper (src/owner.c) that calls this
-- as the owner with the caller's role last; deleting needs DELETE on the
-- group, as Kafka's DeleteGroups does.
CREATE FUNCTION mq_internal.delete_group(group_id text, p_caller oid) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text := delete_group.group_id;
    v_n integer;
BEGIN
    PERFORM mq._authorize(p_caller, 'group', v_group, 'delete');
    IF v_group IS NULL OR v_group = '' THEN
        RAISE EXCEPTION 'group_id must not be empty' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._delete_group_check(v_group);
    PERFORM mq._delete_group_versions(v_group);
    -- tombstones in __consumer_offsets (55_consumer_offsets.sql)
    PERFORM mq._consumer_offsets_append(v_group, t.topic_name, o.partition, NULL, NULL, NULL)
       FROM mq.consumer_offset o JOIN mq.topic t USING (topic_id)
      WHERE o.group_id = v_group ORDER BY t.topic_name, o.partition;
    DELETE FROM mq.consumer_offset o WHERE o.group_id = v_group;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mq.retention_loss l WHERE l.group_id = v_group;
    DELETE FROM mq.fenced_member f WHERE f.group_id = v_group;
    DELETE FROM mq.consumer_group g WHERE g.group_id = v_group;
    IF FOUND THEN
        PERFORM mq._note_sql_group(v_group);    -- its group metadata's tombstone
    END IF;
    RETURN v_n;
END $$;

CREATE FUNCTION mq.delete_group(group_id text) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
