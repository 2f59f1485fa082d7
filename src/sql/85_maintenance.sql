-------------------------------------------------------------------------------
-- Maintenance: called by the background worker when the library is
-- preloaded, or by any scheduler otherwise.  Applies retention and
-- compaction, expires silent group members and producer ids, rebalances
-- groups whose topics gained partitions, samples lag, and rolls segments
-- by time and creates segments ahead.  Returns the number of segments
-- created.
--
-- A pass is batches of topics (mq._maintain_batch), then the rest
-- (mq._maintain_rest).  The worker commits after each batch
-- (mq.maintenance_batch_topics), so that a pass over many topics never
-- holds back the xmin horizon or its locks for long; mq.run_maintenance()
-- runs the same batches in its caller's transaction.
--
-- Locks: a pass never waits for a lock that producers could queue behind.
-- Retention drops a segment only if its locks are free at once
-- (mq._try_drop_segment: pg_dump's share locks postpone it), the rewrite
-- of compaction waits 200 ms at most, and the produce locks are taken
-- without waiting, at the end of each batch.
-------------------------------------------------------------------------------

-- One topic's share: apply retention, compact.  No produce lock is taken
-- here: what needs one comes last in a batch (mq._maintain_segments).
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

-- One partition's segments: roll by time, keep a segment ahead.  Both
-- need the partition's produce lock, which a batch takes without waiting
-- and holds until it commits, so this comes last in a batch: producers
-- wait for it only as long as the DDL itself, never for retention,
-- compaction or other batches.  A producer or a follower's append that
-- needs a segment makes it under the same lock: made without it, both
-- would create the same table (one failing on pg_type's key).  A
-- partition whose lock is busy gets its segment on the next pass.  Its
-- row in mq.last_segment_written goes under the same lock, once a
-- segment lies ahead: a producer noting a write holds that lock, so no
-- note is lost.
CREATE FUNCTION mq._maintain_segments(p_topic_id integer, p_partition integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer;
BEGIN
    PERFORM mq._roll_segment_by_time(p_topic_id, p_partition);
    IF (NOT mq._segment_ahead(p_topic_id, p_partition)
        OR EXISTS (SELECT 1 FROM mq.last_segment_written w
                    WHERE w.topic_id = p_topic_id AND w.partition = p_partition))
       AND mq._try_lock_partition(p_topic_id, p_partition) THEN
        v_created := mq._ensure_segments(p_topic_id, p_partition);
        DELETE FROM mq.last_segment_written w
         WHERE w.topic_id = p_topic_id AND w.partition = p_partition;
        RETURN v_created;
    END IF;
    RETURN 0;
END $$;

-- One batch of a pass: the next p_limit topics by id after p_after (NULL:
-- from the first); last_topic is the last of them, NULL when none is left.
-- Only topics whose config asks for retention, compaction or a roll by
-- time, and partitions in mq.last_segment_written, cost more than a row
-- of the queries below: a pass over topics that need nothing opens no log
-- table.  Maintenance keeps the last segment of every partition
-- unwritten, so producers never run DDL: once a record lands in it (the
-- one before is full), the produce path notes it and the next pass makes
-- another.
CREATE FUNCTION mq._maintain_batch(p_after integer, p_limit integer,
                                   OUT last_topic integer, OUT created integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_after integer := coalesce(p_after, -2147483648);
    r record;
BEGIN
    created := 0;
    SELECT max(b.topic_id) INTO last_topic
      FROM (SELECT t.topic_id FROM mq.topic t WHERE t.topic_id > v_after
             ORDER BY t.topic_id LIMIT p_limit) b;
    IF last_topic IS NULL THEN
        RETURN;
    END IF;
    -- one topic at a time: whatever fails for one topic (a bad config, a
    -- lock timeout, ...) is a WARNING and skips that topic, not the rest
    FOR r IN SELECT t.topic_id, t.topic_name FROM mq.topic t
              WHERE t.topic_id > v_after AND t.topic_id <= last_topic
                AND t.config ?| ARRAY['retention.ms', 'retention.bytes', 'cleanup.policy']
              ORDER BY t.topic_id LOOP
        BEGIN
            PERFORM mq._maintain_topic(r.topic_id, r.topic_name);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'mq maintenance skipped topic "%": %', r.topic_name, SQLERRM;
        END;
    END LOOP;
    -- last: what takes produce locks (see mq._maintain_segments).  Two
    -- ranges of indexes, not a join of the batch's partitions: the topics
    -- of the batch that roll by time, and the notes in the batch's range
    FOR r IN SELECT ps.topic_id, ps.partition, t.topic_name
               FROM mq.topic t JOIN mq.partition_state ps USING (topic_id)
              WHERE t.topic_id > v_after AND t.topic_id <= last_topic
                AND t.config ?| ARRAY['segment.ms', 'max.compaction.lag.ms']
             UNION
             SELECT w.topic_id, w.partition, t.topic_name
               FROM mq.last_segment_written w JOIN mq.topic t USING (topic_id)
              WHERE w.topic_id > v_after AND w.topic_id <= last_topic
              ORDER BY 1, 2 LOOP
        BEGIN
            created := created + mq._maintain_segments(r.topic_id, r.partition);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'mq maintenance could not make segments of topic "%": %', r.topic_name, SQLERRM;
        END;
    END LOOP;
END $$;

-- What a pass does once, after its batches: grants and owners of dropped
-- roles, group members, groups' metadata, lag, producer ids.
CREATE FUNCTION mq._maintain_rest() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_expiry interval := coalesce(nullif(current_setting('mq.producer_id_expiration_ms', true), ''), '86400000')::bigint
                         * interval '1 millisecond';
    v_idle bigint[];
BEGIN
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
    -- producer ids unused for mq.producer_id_expiration_ms expire, as in
    -- Kafka.  A send holds its producer's lock until it commits: the idle
    -- ids are locked first, skipping those a send holds, and deleted only
    -- if still idle as of the next statement's snapshot, so that a send
    -- that was open keeps its state (a retry of it is not written twice).
    -- Rows first, skipping those being written (init_producer updates its
    -- row, then waits for the producer's lock): nothing here waits for a
    -- lock a producer holds while it waits for one of ours
    WITH idle AS MATERIALIZED (
        SELECT p.producer_id FROM mq.producer p
         WHERE p.last_used < clock_timestamp() - v_expiry
           AND NOT EXISTS (SELECT 1 FROM mq.producer_state s
                            WHERE s.producer_id = p.producer_id AND s.updated_at >= clock_timestamp() - v_expiry)
           FOR UPDATE OF p SKIP LOCKED)
    SELECT array_agg(i.producer_id) INTO v_idle FROM idle i WHERE mq._try_lock_producer(i.producer_id);
    DELETE FROM mq.producer p
     WHERE p.producer_id = ANY (v_idle)
       AND NOT EXISTS (SELECT 1 FROM mq.producer_state s
                        WHERE s.producer_id = p.producer_id AND s.updated_at >= clock_timestamp() - v_expiry);
END $$;

-- A whole pass in the caller's transaction, for a scheduler: the same
-- batches as the worker's (src/maintenance.c), which commits after each.
CREATE FUNCTION mq.run_maintenance() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_created integer := 0;
    b record;
BEGIN
    b := mq._maintain_batch(NULL, 1000);
    WHILE b.last_topic IS NOT NULL LOOP
        v_created := v_created + b.created;
        b := mq._maintain_batch(b.last_topic, 1000);
    END LOOP;
    PERFORM mq._maintain_rest();
    RETURN v_created;
END $$;
REVOKE ALL ON FUNCTION mq.run_maintenance() FROM PUBLIC;
