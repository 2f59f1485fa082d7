-------------------------------------------------------------------------------
-- Maintenance: called by the background worker when the library is
-- preloaded, or by any scheduler otherwise.  Creates segments ahead,
-- applies retention, expires silent group members and producer ids, and
-- samples lag.  Returns the number of segments created.
-------------------------------------------------------------------------------

CREATE FUNCTION mq.run_maintenance() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer := 0;
    v_expiry interval := coalesce(nullif(current_setting('mq.producer_id_expiration_ms', true), ''), '86400000')::bigint
                         * interval '1 millisecond';
    r record;
BEGIN
    FOR r IN SELECT topic_id, partition FROM mq.partition_state ORDER BY topic_id, partition LOOP
        PERFORM mq._roll_segment_by_time(r.topic_id, r.partition);
        v_created := v_created + mq._ensure_segments(r.topic_id, r.partition);
    END LOOP;
    PERFORM mq.apply_retention();
    PERFORM mq._expire_members();
    PERFORM mq.sample_lag();
    -- producer ids unused for mq.producer_id_expiration_ms expire, as in Kafka
    DELETE FROM mq.producer p
     WHERE p.last_used < clock_timestamp() - v_expiry
       AND NOT EXISTS (SELECT 1 FROM mq.producer_state s
                        WHERE s.producer_id = p.producer_id AND s.updated_at >= clock_timestamp() - v_expiry);
    RETURN v_created;
END $$;
REVOKE ALL ON FUNCTION mq.run_maintenance() FROM PUBLIC;

