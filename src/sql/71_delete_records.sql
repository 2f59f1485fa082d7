-------------------------------------------------------------------------------
-- Deleting records (Kafka's DeleteRecords, mq-kafka's API 21): the log
-- start offset of a partition moves up to a given offset, at most the
-- high watermark.  Records below it are no longer readable (mq.fetch,
-- Fetch and ListOffsets earliest start there; a committed offset below it
-- resets as after retention, and what a group had not read is counted in
-- mq.retention_loss); the segments entirely below it are dropped at once,
-- the rest of the segment holding it is dropped by retention later.
--
-- Replicated partitions: only the leader takes it (MQ020 elsewhere).
-- Followers follow the leader's log start with their next fetch
-- (mq._replica_follow_log_start, or mq._replica_restart_log for one whose
-- log ends below it).
--
-- Locking: the partition's produce lock (mq._lock_partition), so that the
-- high watermark and log end do not move meanwhile, and its
-- partition_state row.
-------------------------------------------------------------------------------

-- The partition's state, locked, when this node may delete its records.
CREATE FUNCTION mq._delete_records_lock(p_topic text, p_topic_id integer, p_partition integer)
RETURNS mq.partition_state LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
BEGIN
    SELECT * INTO st FROM mq.partition_state ps
     WHERE ps.topic_id = p_topic_id AND ps.partition = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', p_partition, p_topic USING ERRCODE = 'MQ006';
    END IF;
    PERFORM mq._lock_partition(p_topic_id, p_partition);
    SELECT * INTO st FROM mq.partition_state ps
     WHERE ps.topic_id = p_topic_id AND ps.partition = p_partition FOR UPDATE;
    IF st.role <> 'leader' AND EXISTS (SELECT 1 FROM mq.replica_partition r
                                        WHERE r.topic_id = p_topic_id AND r.partition = p_partition) THEN
        RAISE EXCEPTION 'this node does not lead partition % of topic "%"', p_partition, p_topic
            USING ERRCODE = 'MQ020', HINT = 'Delete records on the partition''s leader.';
    END IF;
    RETURN st;
END $$;

-- The public mq.delete_records is a C wrapper (src/owner.c) that calls
-- this as the owner with the caller's role last; it needs DELETE on the
-- topic, as Kafka's DeleteRecords does.  Returns the new log start.
CREATE FUNCTION mq_internal.delete_records(topic text, partition integer, before_offset bigint,
                                           p_caller oid) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    st mq.partition_state;
    v_hwm bigint;
    v_to bigint := delete_records.before_offset;
    s record;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'delete');
    v_id := mq._topic_id(topic);
    PERFORM mq._refuse_internal_topic(topic);
    IF partition IS NULL OR v_to IS NULL THEN
        RAISE EXCEPTION 'partition and before_offset must not be null' USING ERRCODE = 'MQ010';
    END IF;
    st := mq._delete_records_lock(topic, v_id, partition);
    v_hwm := coalesce(st.high_watermark, mq._log_end_offset(v_id, partition));
    IF v_to = -1 THEN
        v_to := v_hwm;
    ELSIF v_to < 0 OR v_to > v_hwm THEN
        RAISE EXCEPTION 'offset % is outside topic "%" partition %: records can be deleted up to the high watermark %',
            v_to, topic, partition, v_hwm
            USING ERRCODE = 'MQ007', HINT = 'Give an offset at most the high watermark, or -1 for the high watermark.';
    END IF;
    IF v_to <= st.log_start_offset THEN
        RETURN st.log_start_offset;
    END IF;
    INSERT INTO mq.retention_loss AS l (group_id, topic_id, partition, records_lost, last_loss_at)
    SELECT o.group_id, o.topic_id, o.partition, v_to - greatest(o.next_offset, st.log_start_offset), now()
      FROM mq.consumer_offset o
     WHERE o.topic_id = v_id AND o.partition = delete_records.partition AND o.next_offset < v_to
    ON CONFLICT ON CONSTRAINT retention_loss_pkey DO UPDATE
       SET records_lost = l.records_lost + EXCLUDED.records_lost, last_loss_at = now();
    FOR s IN SELECT sg.base_offset FROM mq.segment sg
              WHERE sg.topic_id = v_id AND sg.partition = delete_records.partition AND sg.end_offset <= v_to LOOP
        PERFORM mq._drop_segment(v_id, delete_records.partition, s.base_offset);
    END LOOP;
    UPDATE mq.partition_state ps SET log_start_offset = v_to
     WHERE ps.topic_id = v_id AND ps.partition = delete_records.partition;
    PERFORM mq._invalidate(st.relid);
    RETURN v_to;
END $$;

CREATE FUNCTION mq.delete_records(topic text, partition integer, before_offset bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
