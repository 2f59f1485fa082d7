-------------------------------------------------------------------------------
-- Maintenance: called by the background worker when the library is
-- preloaded, or by any scheduler otherwise.  Applies retention and
-- compaction, expires silent group members and producer ids, rebalances
-- groups whose topics gained partitions, samples lag, and last rolls
-- segments by time and creates segments ahead.  Returns the number of
-- segments created.
--
-- Locks: a pass never waits for a lock that producers could queue behind.
-- Retention drops a segment only if its locks are free at once
-- (mq._try_drop_segment: pg_dump's share locks postpone it), the rewrite
-- of compaction waits 200 ms at most, and the produce locks are taken
-- without waiting, at the end of the pass.
-------------------------------------------------------------------------------

-- One topic's share: apply retention, compact.  No produce lock is taken
-- here: what needs one comes last in a pass (mq._maintain_segments).
-- Returns the number of segments retention dropped.
CREATE FUNCTION mq._maintain_topic(p_topic_id integer, p_topic text) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_config jsonb := (SELECT t.config FROM mq.topic t WHERE t.topic_id = p_topic_id);
    v_dropped integer;
BEGIN
    v_dropped := mq._retain_topic(p_topic_id, v_config);
    -- a failed pass (src/sql/72_compaction.sql) must not undo the rest
    BEGIN
        PERFORM mq._compact_topic(p_topic_id, v_config);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'mq maintenance could not compact topic "%": %', p_topic, SQLERRM;
    END;
    RETURN v_dropped;
END $$;

-- One topic's segments: roll by time, keep a segment ahead.  Both need the
-- partition's produce lock, which a pass takes without waiting and holds
-- until it commits, so this comes last in a pass: producers wait for it
-- only as long as the DDL itself, never for retention, compaction or
-- other topics.  A producer or a follower's append that needs a segment
-- makes it under the same lock: made without it, both would create the
-- same table (one failing on pg_type's key).  A partition whose lock is
-- busy gets its segment on the next pass.
CREATE FUNCTION mq._maintain_segments(p_topic_id integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer := 0;
    v_partition integer;
BEGIN
    FOR v_partition IN SELECT ps.partition FROM mq.partition_state ps
                        WHERE ps.topic_id = p_topic_id ORDER BY ps.partition LOOP
        PERFORM mq._roll_segment_by_time(p_topic_id, v_partition);
        IF NOT mq._segment_ahead(p_topic_id, v_partition)
           AND mq._try_lock_partition(p_topic_id, v_partition) THEN
            v_created := v_created + mq._ensure_segments(p_topic_id, v_partition);
        END IF;
    END LOOP;
    RETURN v_created;
END $$;

CREATE FUNCTION mq.run_maintenance() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer := 0;
    v_expiry interval := coalesce(nullif(current_setting('mq.producer_id_expiration_ms', true), ''), '86400000')::bigint
                         * interval '1 millisecond';
    r record;
BEGIN
    -- one topic at a time: whatever fails for one topic (a bad config, a
    -- lock timeout, ...) is a WARNING and skips that topic, not the rest
    FOR r IN SELECT t.topic_id, t.topic_name FROM mq.topic t ORDER BY t.topic_id LOOP
        BEGIN
            PERFORM mq._maintain_topic(r.topic_id, r.topic_name);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'mq maintenance skipped topic "%": %', r.topic_name, SQLERRM;
        END;
    END LOOP;
    -- a dropped role's grants and topic ownership go, so that a new role
    -- that gets the same OID inherits nothing (roles have no dependency
    -- records on mq's rows)
    DELETE FROM mq.acl a
     WHERE a.grantee IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_roles ro WHERE ro.oid = a.grantee);
    UPDATE mq.topic t SET owner = NULL
     WHERE t.owner IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_roles ro WHERE ro.oid = t.owner);
    BEGIN
        PERFORM mq._expire_members();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'mq maintenance could not expire group members: %', SQLERRM;
    END;
    BEGIN
        PERFORM mq._refresh_metadata();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'mq maintenance could not rebalance groups onto new partitions: %', SQLERRM;
    END;
    BEGIN
        PERFORM mq.sample_lag();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'mq maintenance could not sample lag: %', SQLERRM;
    END;
    BEGIN
        PERFORM mq._kafka_txn_expire();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'mq maintenance could not abort timed-out Kafka transactions: %', SQLERRM;
    END;
    -- producer ids unused for mq.producer_id_expiration_ms expire, as in Kafka
    DELETE FROM mq.producer p
     WHERE p.last_used < clock_timestamp() - v_expiry
       AND NOT EXISTS (SELECT 1 FROM mq.producer_state s
                        WHERE s.producer_id = p.producer_id AND s.updated_at >= clock_timestamp() - v_expiry);
    -- last: what takes produce locks (see mq._maintain_segments)
    FOR r IN SELECT t.topic_id, t.topic_name FROM mq.topic t ORDER BY t.topic_id LOOP
        BEGIN
            v_created := v_created + mq._maintain_segments(r.topic_id);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'mq maintenance could not make segments of topic "%": %', r.topic_name, SQLERRM;
        END;
    END LOOP;
    RETURN v_created;
END $$;
REVOKE ALL ON FUNCTION mq.run_maintenance() FROM PUBLIC;

