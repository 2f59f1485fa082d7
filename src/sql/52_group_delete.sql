-------------------------------------------------------------------------------
-- Deleting a consumer group (Kafka's DeleteGroups, mq-kafka's API 42):
-- its committed offsets (mq.consumer_offset, the one store that
-- mq.commit_offset and OffsetCommit write), what retention counted as
-- lost for it, and its SQL group state (mq.consumer_group, with its
-- assignment, fenced member ids, and mq-kafka's saved membership).  A
-- group with live members is refused (MQ036), as Kafka refuses a
-- non-empty group; an unknown one is MQ035.  Live members are SQL's and
-- those mq-kafka saved on this node (mq.kafka_group_member); mq-kafka
-- refuses a group with members in its memory itself, before it calls
-- this, and answers a LeaveGroup only once the group's save has landed,
-- so that a DeleteGroups after the last member left finds it empty here
-- too.
--
-- Replicated partitions: committed offsets live with each partition and
-- only its leader takes changes, so a group with offsets on a partition
-- this node follows is refused (MQ020), and deleting offsets on a
-- partition this node leads bumps the partition's offsets version, so that
-- followers copy the deletion with their next fetch.
--
-- mq.delete_offsets deletes a group's offsets of one topic only (Kafka's
-- OffsetDelete, mq-kafka's API 47), under the same rules, except that
-- live members are refused only when they subscribe to the topic
-- (MQ037, Kafka's GROUP_SUBSCRIBED_TO_TOPIC).
--
-- Locking: the group's consumer_group row (FOR UPDATE), as every change
-- to a group; joins wait on it.  Commits of offsets do not take it: a
-- commit racing the deletion may land after it and recreate one offset,
-- as in Kafka when a client commits with the group's generation -1.
-------------------------------------------------------------------------------

-- Raise MQ035, MQ036 or MQ020 when the group cannot be deleted here.
CREATE FUNCTION mq._delete_group_check(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_elsewhere record;
BEGIN
    PERFORM mq._expire_members(p_group);
    IF EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group)
       OR EXISTS (SELECT 1 FROM mq.kafka_group_member k WHERE k.group_id = p_group AND k.active) THEN
        RAISE EXCEPTION 'group "%" has live members', p_group
            USING ERRCODE = 'MQ036',
                  HINT = 'Stop its consumers (mq.leave_group for SQL members) or wait for their session timeout.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mq.consumer_group g WHERE g.group_id = p_group)
       AND NOT EXISTS (SELECT 1 FROM mq.consumer_offset o WHERE o.group_id = p_group)
       AND NOT EXISTS (SELECT 1 FROM mq.kafka_group_state s WHERE s.group_id = p_group) THEN
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
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'delete');
    PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._delete_group_check(v_group);
    v_n := mq._delete_offsets_of(v_group, NULL, NULL);
    DELETE FROM mq.fenced_member f WHERE f.group_id = v_group;
    DELETE FROM mq.kafka_group_state s WHERE s.group_id = v_group;     -- members gone
    DELETE FROM mq.consumer_group g WHERE g.group_id = v_group;
    IF FOUND THEN
        PERFORM mq._note_sql_group(v_group);    -- its group metadata's tombstone
    END IF;
    RETURN v_n;
END $$;

CREATE FUNCTION mq.delete_group(group_id text) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

-- Group p_group's committed offsets of topic p_id on partitions p_parts
-- (every partition when NULL; every topic when p_id is NULL).
CREATE FUNCTION mq._group_topic_offsets(p_group text, p_id integer, p_parts integer[])
    RETURNS SETOF mq.consumer_offset
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM mq.consumer_offset o
     WHERE o.group_id = p_group AND (p_id IS NULL OR o.topic_id = p_id)
       AND (p_parts IS NULL OR o.partition = ANY (p_parts))
$$;

-- What mq.delete_group and mq.delete_offsets delete, once checked: those
-- offsets (mq._group_topic_offsets), with a tombstone each in
-- __consumer_offsets (55_consumer_offsets.sql) and the offsets version of
-- the replicated partitions (led here) bumped, so that followers copy the
-- deletion; and what retention counted as lost for them.  Returns how
-- many offsets went.
CREATE FUNCTION mq._delete_offsets_of(p_group text, p_id integer, p_parts integer[]) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    INSERT INTO mq.offset_version AS v (topic_id, partition, version)
    SELECT o.topic_id, o.partition, 1 FROM mq._group_topic_offsets(p_group, p_id, p_parts) o
     WHERE EXISTS (SELECT 1 FROM mq.replica_partition r
                    WHERE r.topic_id = o.topic_id AND r.partition = o.partition)
    ON CONFLICT (topic_id, partition) DO UPDATE SET version = v.version + 1;
    PERFORM mq._consumer_offsets_append(p_group, t.topic_name, o.partition, NULL, NULL, NULL)
       FROM mq._group_topic_offsets(p_group, p_id, p_parts) o JOIN mq.topic t USING (topic_id)
      ORDER BY t.topic_name, o.partition;
    DELETE FROM mq.consumer_offset o
     WHERE o.group_id = p_group AND (p_id IS NULL OR o.topic_id = p_id)
       AND (p_parts IS NULL OR o.partition = ANY (p_parts));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mq.retention_loss l
     WHERE l.group_id = p_group AND (p_id IS NULL OR l.topic_id = p_id)
       AND (p_parts IS NULL OR l.partition = ANY (p_parts));
    RETURN v_n;
END $$;

-- Raise MQ006, MQ035, MQ037 or MQ020 when the offsets cannot be deleted
-- here (a partition outside the topic; an unknown group; live members
-- subscribed to the topic; an offset on a replicated partition this node
-- follows).
CREATE FUNCTION mq._delete_offsets_check(p_group text, p_topic text, p_id integer, p_parts integer[])
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_part integer;
BEGIN
    SELECT u.p INTO v_part FROM unnest(p_parts) AS u(p)
     WHERE NOT EXISTS (SELECT 1 FROM mq.partition_state s WHERE s.topic_id = p_id AND s.partition = u.p)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', v_part, p_topic
            USING ERRCODE = 'MQ006';
    END IF;
    PERFORM mq._expire_members(p_group);
    IF NOT EXISTS (SELECT 1 FROM mq.consumer_group g WHERE g.group_id = p_group)
       AND NOT EXISTS (SELECT 1 FROM mq.consumer_offset o WHERE o.group_id = p_group) THEN
        RAISE EXCEPTION 'group "%" does not exist', p_group USING ERRCODE = 'MQ035';
    END IF;
    IF EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group AND p_topic = ANY (m.topics))
       OR EXISTS (SELECT 1 FROM mq.kafka_group_member k
                   WHERE k.group_id = p_group AND k.active AND p_topic = ANY (k.topics)) THEN
        RAISE EXCEPTION 'group "%" has live members subscribed to topic "%"', p_group, p_topic
            USING ERRCODE = 'MQ037',
                  HINT = 'Stop the consumers that read the topic (mq.leave_group for SQL members), or wait for their session timeout.';
    END IF;
    SELECT o.partition INTO v_part
      FROM mq._group_topic_offsets(p_group, p_id, p_parts) o
      JOIN mq.partition_state ps USING (topic_id, partition)
     WHERE ps.role <> 'leader'
       AND EXISTS (SELECT 1 FROM mq.replica_partition r
                    WHERE r.topic_id = o.topic_id AND r.partition = o.partition)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'this node does not lead partition % of topic "%", where group "%" has an offset',
            v_part, p_topic, p_group
            USING ERRCODE = 'MQ020', HINT = 'Delete the offset on the node that leads the partition.';
    END IF;
END $$;

-- The public mq.delete_offsets is a C wrapper (src/owner.c), as
-- mq.delete_group; it needs DELETE on the group and READ on the topic, as
-- Kafka's OffsetDelete does.
CREATE FUNCTION mq_internal.delete_offsets(group_id text, topic text, partitions integer[], p_caller oid)
    RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text := delete_offsets.group_id;
    v_topic text := delete_offsets.topic;
    v_parts integer[] := delete_offsets.partitions;
    v_id integer;
BEGIN
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'delete');
    PERFORM mq._authorize(p_caller, 'topic', v_topic, 'read');
    v_id := mq._topic_id(v_topic);
    IF array_position(v_parts, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'partitions must not contain null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._delete_offsets_check(v_group, v_topic, v_id, v_parts);
    RETURN mq._delete_offsets_of(v_group, v_id, v_parts);
END $$;

CREATE FUNCTION mq.delete_offsets(group_id text, topic text, partitions integer[] DEFAULT NULL) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
