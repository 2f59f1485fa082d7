-------------------------------------------------------------------------------
-- Retention: whole segments are dropped, oldest first, never the one being
-- written; the log start offset moves to the next segment's base.  What a
-- group had not consumed when its segment went is counted as lost.  A
-- segment is dropped only when its locks are free at once
-- (mq._try_drop_segment); otherwise it and the ones after it wait for the
-- next pass.  With cleanup.policy compact,delete a segment's age is what
-- Kafka's is: the largest timestamp of the records compaction left in
-- it, or, once it left none, its last modification; compaction itself
-- never moves the log start (72_compaction.sql).
-------------------------------------------------------------------------------

CREATE TABLE mq.retention_loss (
    group_id     text NOT NULL,
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    records_lost bigint NOT NULL,
    last_loss_at timestamptz NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition)
);
CREATE TRIGGER cascade_to_retention_loss AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.retention_loss', 'topic_id', 'partition');
SELECT pg_catalog.pg_extension_config_dump('mq.retention_loss', '');

-- A segment's table as a qualified name to put in a query, or NULL when
-- the table is gone: another maintenance pass (the worker's beside an
-- mq.run_maintenance() call, or two calls) dropped it after the caller
-- listed the segment from its snapshot, often while the caller waited
-- for its lock.  A dropped relation's regclass prints as a bare OID,
-- which spliced into a query was "syntax error at or near 17363".
-- pg_relation_size looks the table up by OID after taking its lock, so
-- it sees a drop that committed meanwhile; the name comes from the
-- caller's snapshot, so it is never an OID (a drop committing between
-- the two is "relation ... does not exist", not a query of a number).
CREATE FUNCTION mq._segment_table(p_rel regclass) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) p_rel AND pg_catalog.pg_relation_size(p_rel) IS NOT NULL;
$$;

-- A segment's age, which retention.ms compares with now as Kafka does
-- (LogSegment.largestTimestamp): the largest timestamp of the records it
-- holds, the last record's running maximum (src/timeindex.c; compaction
-- recomputes it from the records that remain, src/compact.c), its
-- CreateTime or its append time; in a segment that compaction emptied,
-- its last modification, the latest append of what it held
-- (mq.segment.last_modified).  Only mq's own segments: this reads as the
-- owner, so a relation named by a caller that is not a segment (a view
-- calling the caller's function, say) is refused.  NULL for a segment
-- whose table another transaction dropped since the caller listed it
-- (mq._segment_table).
CREATE FUNCTION mq._segment_last_time(p_rel regclass) RETURNS timestamptz
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_time timestamptz;
    v_seg mq.segment;
    v_table text;
BEGIN
    SELECT * INTO v_seg FROM mq.segment s WHERE s.relid = p_rel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation % is not a segment of an mq topic', p_rel
            USING ERRCODE = '42501';
    END IF;
    v_table := mq._segment_table(p_rel);
    IF v_table IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT coalesce(max_timestamp, "timestamp", created_at) FROM %s
                     ORDER BY msg_offset DESC LIMIT 1', v_table) INTO v_time;
    RETURN coalesce(v_time, v_seg.last_modified, v_seg.created_at);
END $$;

-- The records a segment still holds from an offset on: what a group that
-- had not read them loses when the segment goes.  Offsets compaction
-- removed are not records anybody loses.  0 once its table is gone: the
-- pass that dropped it counted them.
CREATE FUNCTION mq._segment_records_from(p_rel regclass, p_from bigint) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n bigint;
    v_table text := mq._segment_table(p_rel);
BEGIN
    IF v_table IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format('SELECT count(*) FROM %s WHERE msg_offset OPERATOR(pg_catalog.>=) $1', v_table)
       INTO v_n USING p_from;
    RETURN v_n;
END $$;

-- Drop one segment of a partition: its row and its table.  Retention and
-- mq.delete_records move the log start past it.
CREATE FUNCTION mq._drop_segment(p_topic_id integer, p_partition integer, p_base_offset bigint)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_rel regclass;
BEGIN
    DELETE FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset = p_base_offset
    RETURNING sg.relid INTO v_rel;
    EXECUTE format('DROP TABLE %s', v_rel);
END $$;

-- Retention's drop: the same, only if the locks DROP TABLE takes are free
-- now -- ACCESS EXCLUSIVE on the segment and on the partition's table,
-- whose partition bounds change.  pg_dump holds ACCESS SHARE on every
-- table it dumps until it ends: a DROP waiting for it held the produce
-- locks maintenance had taken and queued every later reader of those
-- tables behind it, so producers stalled for the length of the dump.  A
-- segment that cannot be dropped now is dropped by a later pass; one
-- that another pass dropped since this one listed it is false too.
CREATE FUNCTION mq._try_drop_segment(p_topic_id integer, p_partition integer, p_base_offset bigint)
RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_rel text;
    v_part regclass;
BEGIN
    SELECT mq._segment_table(sg.relid), ps.relid INTO v_rel, v_part
      FROM mq.segment sg JOIN mq.partition_state ps USING (topic_id, partition)
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset = p_base_offset;
    IF v_rel IS NULL THEN
        RETURN false;
    END IF;
    BEGIN
        EXECUTE format('LOCK TABLE ONLY %s, ONLY %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_part, v_rel);
    EXCEPTION WHEN lock_not_available OR undefined_table THEN
        RETURN false;
    END;
    PERFORM mq._drop_segment(p_topic_id, p_partition, p_base_offset);
    RETURN true;
END $$;

-- Record the size and age of every segment of a partition that closed
-- (the log end reached its end) since the last pass: a closed segment
-- takes no more records, so they change only when compaction removes
-- records from it or a follower's truncation reopens it, which clear
-- them (72_compaction.sql, 60_replica_follower.sql).  VACUUM is not
-- followed: the visibility map and free space map it adds to a closed
-- segment (a few pages) are not counted, nor the trailing pages it gives
-- back after compaction removed records once the size was recorded again.
CREATE FUNCTION mq._record_closed_segments(p_topic_id integer, p_partition integer, p_end bigint)
RETURNS void LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    UPDATE mq.segment sg
       SET closed_bytes = pg_catalog.pg_total_relation_size(sg.relid),
           closed_last_time = mq._segment_last_time(sg.relid)
     WHERE sg.topic_id OPERATOR(pg_catalog.=) p_topic_id
       AND sg.partition OPERATOR(pg_catalog.=) p_partition
       AND sg.end_offset OPERATOR(pg_catalog.<=) p_end AND sg.closed_bytes IS NULL;
$$;
COMMENT ON FUNCTION mq._record_closed_segments(integer, integer, bigint) IS
    'internal (retention): records the size and age of a partition''s segments that closed since the last pass';

-- Apply retention.ms and retention.bytes to one topic's partitions, by
-- id: maintenance calls this once per topic, so it must find them by an
-- index (a "name IS NULL OR name = $1" filter plans as a scan of every
-- topic, which made a maintenance pass quadratic in topics).  Closed
-- segments are weighed by what mq.segment recorded of them (above): only
-- the open one and the ones ahead are sized from their files, so a pass
-- costs a few rows per closed segment, not its files and last row.
-- Returns the number of segments dropped.
CREATE FUNCTION mq._retain_topic(p_topic_id integer, p_config jsonb) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p record;
    s record;
    v_end bigint;
    v_total bigint;
    v_lost jsonb;
    v_ms bigint := coalesce(mq._config_ms(p_config, 'retention.ms'), -1);
    v_bytes bigint := coalesce((p_config->>'retention.bytes')::bigint, -1);
    v_dropped integer := 0;
BEGIN
    -- compact only: no retention; and nothing to do without a limit
    IF coalesce(p_config->>'cleanup.policy', 'delete') = 'compact' OR (v_ms < 0 AND v_bytes < 0) THEN
        RETURN 0;
    END IF;
    FOR p IN
        SELECT ps.topic_id, ps.partition
          FROM mq.partition_state ps
         WHERE ps.topic_id = p_topic_id
         ORDER BY ps.partition
    LOOP
        v_end := mq._log_end_offset(p.topic_id, p.partition);
        PERFORM mq._record_closed_segments(p.topic_id, p.partition, v_end);
        SELECT sum(coalesce(sg.closed_bytes, pg_total_relation_size(sg.relid))) INTO v_total
          FROM mq.segment sg WHERE sg.topic_id = p.topic_id AND sg.partition = p.partition;
        -- closed segments only: the one holding the log end is still written
        FOR s IN
            SELECT sg.base_offset, sg.end_offset, sg.relid, sg.closed_bytes, sg.closed_last_time
              FROM mq.segment sg
             WHERE sg.topic_id = p.topic_id AND sg.partition = p.partition AND sg.end_offset <= v_end
             ORDER BY sg.base_offset
        LOOP
            EXIT WHEN NOT (
                (v_ms >= 0 AND s.closed_last_time < clock_timestamp() - v_ms * interval '1 millisecond')
                OR (v_bytes >= 0 AND v_total - s.closed_bytes >= v_bytes));
            -- a reader holds its table or the partition's (pg_dump): next pass
            -- what each lagging group loses, counted while the table exists
            SELECT jsonb_object_agg(o.group_id,
                       CASE WHEN mq._policy_compacts(p_config)
                            THEN mq._segment_records_from(s.relid, greatest(o.next_offset, s.base_offset))
                            ELSE s.end_offset - greatest(o.next_offset, s.base_offset) END)
              INTO v_lost
              FROM mq.consumer_offset o
             WHERE o.topic_id = p.topic_id AND o.partition = p.partition AND o.next_offset < s.end_offset;
            EXIT WHEN NOT mq._try_drop_segment(p.topic_id, p.partition, s.base_offset);
            INSERT INTO mq.retention_loss AS l (group_id, topic_id, partition, records_lost, last_loss_at)
            SELECT x.key, p.topic_id, p.partition, x.value::bigint, now()
              FROM jsonb_each_text(coalesce(v_lost, '{}')) x
            ON CONFLICT ON CONSTRAINT retention_loss_pkey DO UPDATE
               SET records_lost = l.records_lost + EXCLUDED.records_lost, last_loss_at = now();
            UPDATE mq.partition_state ps SET log_start_offset = s.end_offset
             WHERE ps.topic_id = p.topic_id AND ps.partition = p.partition;
            v_total := v_total - s.closed_bytes;
            v_dropped := v_dropped + 1;
        END LOOP;
    END LOOP;
    RETURN v_dropped;
END $$;

-- Apply retention.ms and retention.bytes to every partition (or one
-- topic's).  Returns the number of segments dropped.
CREATE FUNCTION mq.apply_retention(topic text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    v_dropped integer := 0;
BEGIN
    IF apply_retention.topic IS NOT NULL THEN
        PERFORM mq._topic_id(apply_retention.topic);     -- MQ001 for a topic that does not exist
    END IF;
    FOR t IN SELECT tp.topic_id, tp.config FROM mq.topic tp
              WHERE apply_retention.topic IS NULL OR tp.topic_name = apply_retention.topic
              ORDER BY tp.topic_id LOOP
        v_dropped := v_dropped + mq._retain_topic(t.topic_id, t.config);
    END LOOP;
    RETURN v_dropped;
END $$;
