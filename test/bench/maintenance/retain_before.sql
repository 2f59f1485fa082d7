-- test/bench/maintenance.sh --compare retention: mq._retain_topic as it was
-- before closed segments' sizes and ages were recorded in mq.segment
-- (every pass summed pg_total_relation_size over every segment of each
-- partition and read the last row of each closed segment it weighed).
-- The script puts it in place for the "old" passes only, and the
-- installed definition back after them.
CREATE OR REPLACE FUNCTION mq._retain_topic(p_topic_id integer, p_config jsonb) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p record;
    s record;
    v_end bigint;
    v_total bigint;
    v_size bigint;
    v_lost jsonb;
    v_ms bigint := coalesce((p_config->>'retention.ms')::bigint, -1);
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
        SELECT sum(pg_total_relation_size(sg.relid)) INTO v_total
          FROM mq.segment sg WHERE sg.topic_id = p.topic_id AND sg.partition = p.partition;
        -- closed segments only: the one holding the log end is still written
        FOR s IN
            SELECT sg.base_offset, sg.end_offset, sg.relid
              FROM mq.segment sg
             WHERE sg.topic_id = p.topic_id AND sg.partition = p.partition AND sg.end_offset <= v_end
             ORDER BY sg.base_offset
        LOOP
            v_size := pg_total_relation_size(s.relid);
            EXIT WHEN NOT (
                (v_ms >= 0 AND mq._segment_last_time(s.relid) < clock_timestamp() - v_ms * interval '1 millisecond')
                OR (v_bytes >= 0 AND v_total - v_size >= v_bytes));
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
            v_total := v_total - v_size;
            v_dropped := v_dropped + 1;
        END LOOP;
    END LOOP;
    RETURN v_dropped;
END $$;
