-------------------------------------------------------------------------------
-- Log compaction (cleanup.policy = compact): Kafka's log cleaner.  For the
-- closed segments of a partition below the high watermark, keep only the
-- latest record of each key; tombstones (null value) go delete.retention.ms
-- after the pass that first cleaned them.  Offsets are never rewritten: a
-- compacted partition has gaps below its cleaner point (docs/compaction.md).
--
-- What is cleanable: segments wholly below the first uncleanable offset,
-- the least of the base of the segment holding the last record (never the
-- segment being written), the high watermark, and the base of the first
-- segment with a record younger than min.compaction.lag.ms.  A leader does
-- not wait for its followers: a fetch of a cleaned range carries each
-- record's offset (mq.replica_fetch), so a follower copies the gaps.
--
-- Replicas: each node compacts its own copy (its maintenance worker).  A
-- follower that copied a range with gaps from its leader records that
-- (a cleaner_pass row with copied = true, clean_end its log end then):
-- its readers step over those gaps as over its own, but its own passes
-- still count the range dirty (records below a copied range may be
-- superseded by records in it), so its cleaner point is its own passes'.
-- A partition is cleaned when its dirty part (cleanable, above the cleaner
-- point) is at least min.cleanable.dirty.ratio of its cleanable bytes, or
-- when its oldest dirty record waited max.compaction.lag.ms (KIP-354; the
-- segment being written is closed by then, mq._segment_roll_ms).
--
-- Locking: a pass removes records with one DELETE (compact.c) under the
-- maintenance transaction's snapshot; producers and readers never wait for
-- it.  Passes of one partition take turns (mq._lock_compaction): the
-- worker's and an mq.compact() call's would otherwise both record the
-- same pass, and the second would fail on cleaner_pass's key.  A later
-- pass (in another transaction, once the removal committed)
-- rewrites the segments that lost records with CLUSTER to give the space
-- back, once no transaction older than the pass remains in the database
-- (CLUSTER keeps what an open snapshot may still see): that takes ACCESS EXCLUSIVE on one closed segment for the length
-- of its copy, tried with a short lock_timeout so that a long reader of
-- that segment postpones the rewrite instead of queueing others behind it.
-------------------------------------------------------------------------------

-- One row per cleaning pass still needed: the cleaner point is the highest
-- clean_end; the tombstone horizon is the highest clean_end of a pass older
-- than delete.retention.ms.  Older passes are pruned.  Readers step over a
-- missing offset below the highest clean_end of all rows, copied included
-- (src/topic.c); the cleaner point and the horizon count passes only.
CREATE TABLE mq.cleaner_pass (
    topic_id   integer NOT NULL,
    partition  integer NOT NULL,
    clean_end  bigint NOT NULL,
    cleaned_at timestamptz NOT NULL,
    removed    bigint NOT NULL,
    -- not a pass of this node: records copied from a leader with the gaps
    -- its compaction left lie below clean_end (at most one such row)
    copied     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (topic_id, partition, clean_end)
);
CREATE TRIGGER cascade_to_cleaner_pass AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.cleaner_pass', 'topic_id', 'partition');

-- Segments that lost records in a committed pass and wait to be rewritten.
CREATE TABLE mq.cleaner_rewrite (
    topic_id    integer NOT NULL,
    partition   integer NOT NULL,
    base_offset bigint NOT NULL,
    removed     bigint NOT NULL,
    pass_xid    xid8 NOT NULL,
    passed_at   timestamptz NOT NULL,
    PRIMARY KEY (topic_id, partition, base_offset)
);
CREATE TRIGGER cascade_to_cleaner_rewrite AFTER DELETE ON mq.segment
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.cleaner_rewrite', 'topic_id', 'partition', 'base_offset');
SELECT pg_catalog.pg_extension_config_dump('mq.cleaner_pass', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cleaner_rewrite', '');

CREATE FUNCTION mq._compact_delete(p_part regclass, p_log_start bigint, p_cleaner_point bigint,
                                   p_clean_end bigint, p_tomb_end bigint) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'mq_compact_delete' LANGUAGE C STRICT;

-- Does a (normalised) topic config compact?  Does it delete by retention?
CREATE FUNCTION mq._policy_compacts(p_config jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(p_config->>'cleanup.policy', 'delete') IN ('compact', 'compact,delete')
$$;
CREATE FUNCTION mq._policy_deletes(p_config jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(p_config->>'cleanup.policy', 'delete') IN ('delete', 'compact,delete')
$$;

-- The partition's cleaner point: where the last pass ended (the log start
-- before any pass, or when retention dropped past it).
CREATE FUNCTION mq._cleaner_point(p_topic_id integer, p_partition integer) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT greatest(ps.log_start_offset,
                    (SELECT max(c.clean_end) FROM mq.cleaner_pass c
                      WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND NOT c.copied))
      FROM mq.partition_state ps
     WHERE ps.topic_id = p_topic_id AND ps.partition = p_partition
$$;

-- The first offset a pass may not touch (see the file header).
CREATE FUNCTION mq._first_uncleanable(p_topic_id integer, p_partition integer, p_lag_ms bigint)
    RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
    v_end bigint := mq._log_end_offset(p_topic_id, p_partition);
    v_bound bigint;
    s record;
BEGIN
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = p_topic_id AND partition = p_partition;
    -- the segment holding the last record is never cleaned: the log end is
    -- read from it, so it must keep that record
    SELECT coalesce(max(sg.base_offset), 0) INTO v_bound FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset <= v_end - 1;
    v_bound := least(v_bound, coalesce(st.high_watermark, v_end));
    IF p_lag_ms > 0 THEN
        FOR s IN SELECT sg.base_offset, sg.relid FROM mq.segment sg
                  WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
                    AND sg.base_offset >= mq._cleaner_point(p_topic_id, p_partition)
                    AND sg.end_offset <= v_bound
                  ORDER BY sg.base_offset LOOP
            IF mq._segment_last_time(s.relid) > clock_timestamp() - p_lag_ms * interval '1 millisecond' THEN
                RETURN s.base_offset;
            END IF;
        END LOOP;
    END IF;
    RETURN v_bound;
END $$;

-- Has the oldest dirty record waited longer than max.compaction.lag.ms?
-- Kafka (LogCleanerManager) takes the first batch timestamp of the dirty
-- segments: here the first record of the first dirty segment, by its
-- Kafka timestamp.  Never with the default (no limit).
CREATE FUNCTION mq._compaction_overdue(p_topic_id integer, p_partition integer, p_cp bigint, p_ce bigint,
                                       p_config jsonb) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_max bigint := (p_config->>'max.compaction.lag.ms')::bigint;
    v_rel regclass;
    v_first timestamptz;
BEGIN
    IF v_max IS NULL OR v_max > 31557600000000 THEN
        RETURN false;
    END IF;
    SELECT sg.relid INTO v_rel FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
       AND sg.end_offset > p_cp AND sg.base_offset < p_ce
     ORDER BY sg.base_offset LIMIT 1;
    IF v_rel IS NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT coalesce("timestamp", created_at) FROM %s
                     WHERE msg_offset OPERATOR(pg_catalog.>=) $1 ORDER BY msg_offset LIMIT 1', v_rel)
       INTO v_first USING p_cp;
    RETURN v_first < clock_timestamp() - v_max * interval '1 millisecond';
END $$;

-- Rewrite the segments that lost records in earlier (committed) passes, so
-- that their space is given back.  Returns how many were rewritten.
CREATE FUNCTION mq._compact_rewrite(p_topic_id integer, p_partition integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    v_done integer := 0;
    v_timeout text := current_setting('lock_timeout');
BEGIN
    FOR r IN SELECT w.base_offset, sg.relid,
                    (SELECT i.indexrelid::regclass FROM pg_index i
                      WHERE i.indrelid = sg.relid AND i.indisunique
                      ORDER BY i.indexrelid LIMIT 1) AS idx
               FROM mq.cleaner_rewrite w
               JOIN mq.segment sg USING (topic_id, partition, base_offset)
              WHERE w.topic_id = p_topic_id AND w.partition = p_partition
                AND w.pass_xid <> pg_current_xact_id()
                -- no snapshot here may still see the removed records: CLUSTER
                -- would keep them, and the space would never come back
                AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                                 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                                   AND a.backend_xmin IS NOT NULL AND a.xact_start <= w.passed_at)
              ORDER BY w.base_offset LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            EXECUTE format('CLUSTER %s USING %I', r.relid, (SELECT c.relname FROM pg_class c WHERE c.oid = r.idx));
            PERFORM set_config('lock_timeout', v_timeout, true);
            DELETE FROM mq.cleaner_rewrite w
             WHERE w.topic_id = p_topic_id AND w.partition = p_partition AND w.base_offset = r.base_offset;
            v_done := v_done + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;               -- a reader holds the segment: next round
        END;
    END LOOP;
    RETURN v_done;
END $$;

-- The partition's compaction lock until the transaction ends (compact.c).
CREATE FUNCTION mq._lock_compaction(topic_id integer, partition integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_lock_compaction' LANGUAGE C STRICT;

-- One cleaning pass over a partition if its dirty ratio calls for one.
-- Returns the number of records removed (NULL when no pass ran).
CREATE FUNCTION mq._compact_partition(p_topic_id integer, p_partition integer, p_config jsonb)
    RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
    v_ratio numeric := coalesce((p_config->>'min.cleanable.dirty.ratio')::numeric, 0.5);
    v_lag bigint := coalesce(mq._config_ms(p_config, 'min.compaction.lag.ms'), 0);
    v_dr bigint := coalesce(mq._config_ms(p_config, 'delete.retention.ms'), 86400000);
    v_cp bigint;
    v_ce bigint;
    v_tomb bigint;
    v_clean numeric;
    v_dirty numeric;
    v_removed jsonb;
    v_now timestamptz;
BEGIN
    -- one pass of a partition at a time (compact.c); what follows reads
    -- what a pass that held the lock before committed
    PERFORM mq._lock_compaction(p_topic_id, p_partition);
    v_now := clock_timestamp();
    PERFORM mq._compact_rewrite(p_topic_id, p_partition);
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = p_topic_id AND partition = p_partition;
    v_cp := mq._cleaner_point(p_topic_id, p_partition);
    SELECT max(sg.end_offset) INTO v_ce FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
       AND sg.end_offset <= mq._first_uncleanable(p_topic_id, p_partition, v_lag);
    IF v_ce IS NULL OR v_ce <= v_cp THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(sum(pg_relation_size(sg.relid)) FILTER (WHERE sg.base_offset < v_cp), 0),
           coalesce(sum(pg_relation_size(sg.relid)) FILTER (WHERE sg.base_offset >= v_cp), 0)
      INTO v_clean, v_dirty
      FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
       AND sg.base_offset >= st.log_start_offset AND sg.end_offset <= v_ce;
    -- below the ratio, a pass still runs once a dirty record waited
    -- max.compaction.lag.ms (KIP-354)
    IF v_dirty = 0 OR (v_dirty / (v_clean + v_dirty) < v_ratio
                       AND NOT mq._compaction_overdue(p_topic_id, p_partition, v_cp, v_ce, p_config)) THEN
        RETURN NULL;
    END IF;
    -- tombstones first cleaned by a pass older than delete.retention.ms go
    SELECT coalesce(max(c.clean_end), st.log_start_offset) INTO v_tomb FROM mq.cleaner_pass c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND NOT c.copied
       AND c.cleaned_at <= v_now - v_dr * interval '1 millisecond';
    v_removed := mq._compact_delete(st.relid, st.log_start_offset, v_cp, v_ce, v_tomb);
    -- a segment's age for retention.ms once compaction emptied it: the
    -- latest append of what it held (Kafka keeps a cleaned segment's file
    -- modification time); never the log start, which compaction leaves
    -- (and its size and age as retention recorded them are no longer true)
    UPDATE mq.segment sg
       SET last_modified = greatest(sg.last_modified, (r.value->>'modified')::timestamptz),
           closed_bytes = NULL, closed_last_time = NULL
      FROM jsonb_each(v_removed) r
     WHERE sg.relid = r.key::regclass;
    INSERT INTO mq.cleaner_rewrite (topic_id, partition, base_offset, removed, pass_xid, passed_at)
    SELECT p_topic_id, p_partition, sg.base_offset, (r.value->>'removed')::bigint, pg_current_xact_id(), v_now
      FROM jsonb_each(v_removed) r
      JOIN mq.segment sg ON sg.relid = r.key::regclass
    ON CONFLICT (topic_id, partition, base_offset) DO UPDATE
       SET removed = mq.cleaner_rewrite.removed + EXCLUDED.removed, pass_xid = EXCLUDED.pass_xid,
           passed_at = EXCLUDED.passed_at;
    PERFORM mq._invalidate(st.relid);   -- readers cache the cleaner point (topic.c)
    -- gaps copied from a leader below the pass's end: the pass's row covers them
    DELETE FROM mq.cleaner_pass c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.copied AND c.clean_end <= v_ce;
    INSERT INTO mq.cleaner_pass (topic_id, partition, clean_end, cleaned_at, removed)
    SELECT p_topic_id, p_partition, v_ce, v_now, coalesce(sum((r.value->>'removed')::bigint), 0)
      FROM jsonb_each(v_removed) r;
    -- keep the passes that still define the cleaner point or a horizon
    DELETE FROM mq.cleaner_pass c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition
       AND c.clean_end < v_tomb;
    RETURN (SELECT coalesce(sum((r.value->>'removed')::bigint), 0) FROM jsonb_each(v_removed) r);
END $$;

-- Compact one topic's partitions whose dirty ratio calls for it, by id
-- (maintenance calls this once per topic: see mq._retain_topic).  Returns
-- the number of records removed.
CREATE FUNCTION mq._compact_topic(p_topic_id integer, p_config jsonb) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_partition integer;
    v_total bigint := 0;
BEGIN
    IF NOT mq._policy_compacts(p_config) THEN
        RETURN 0;
    END IF;
    FOR v_partition IN SELECT ps.partition FROM mq.partition_state ps
                        WHERE ps.topic_id = p_topic_id ORDER BY ps.partition LOOP
        v_total := v_total + coalesce(mq._compact_partition(p_topic_id, v_partition, p_config), 0);
    END LOOP;
    RETURN v_total;
END $$;

-- Compact every compacted topic's partitions (or one topic's) whose dirty
-- ratio calls for it.  Returns the number of records removed.
CREATE FUNCTION mq.compact(topic text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    v_total bigint := 0;
BEGIN
    IF compact.topic IS NOT NULL THEN
        PERFORM mq._topic_id(compact.topic);             -- MQ001 for a topic that does not exist
    END IF;
    FOR t IN SELECT tp.topic_id, tp.config FROM mq.topic tp
              WHERE compact.topic IS NULL OR tp.topic_name = compact.topic
              ORDER BY tp.topic_id LOOP
        v_total := v_total + mq._compact_topic(t.topic_id, t.config);
    END LOOP;
    RETURN v_total;
END $$;

-- A follower copied records of a range with compaction gaps from its
-- leader (mq.replica_append), or cut its log (mq.replica_truncate): its
-- readers step over missing offsets below p_end, its log end then, and
-- no further.  One copied row per partition; readers' caches hear of it.
CREATE FUNCTION mq._cleaner_copied(p_topic_id integer, p_partition integer, p_end bigint)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM mq.cleaner_pass c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.copied;
    INSERT INTO mq.cleaner_pass (topic_id, partition, clean_end, cleaned_at, removed, copied)
    VALUES (p_topic_id, p_partition, p_end, clock_timestamp(), 0, true)
    ON CONFLICT (topic_id, partition, clean_end) DO NOTHING;     -- a pass of ours ends there
    PERFORM mq._invalidate((SELECT relid FROM mq.partition_state
                             WHERE topic_id = p_topic_id AND partition = p_partition));
END $$;

-- table reads only (as the view's owner), so that any role may select
CREATE VIEW mq.compaction WITH (security_barrier) AS
SELECT t.topic_name AS topic, ps.partition, t.config->>'cleanup.policy' AS cleanup_policy,
       greatest(ps.log_start_offset, c.clean_end) AS cleaner_point,
       c.cleaned_at AS last_cleaned_at,
       (SELECT coalesce(sum(w.removed), 0) FROM mq.cleaner_rewrite w
         WHERE w.topic_id = ps.topic_id AND w.partition = ps.partition) AS removed_awaiting_rewrite
  FROM mq.partition_state ps
  JOIN mq.topic t USING (topic_id)
  LEFT JOIN LATERAL (SELECT max(x.clean_end) AS clean_end, max(x.cleaned_at) AS cleaned_at
                       FROM mq.cleaner_pass x
                      WHERE x.topic_id = ps.topic_id AND x.partition = ps.partition AND NOT x.copied) c ON true
 WHERE coalesce(t.config->>'cleanup.policy', 'delete') <> 'delete'
   AND mq._describable('topic', t.topic_name);
GRANT SELECT ON mq.compaction TO PUBLIC;

COMMENT ON TABLE mq.cleaner_pass IS
    'log compaction passes per partition: the cleaner point is the highest clean_end';
COMMENT ON TABLE mq.cleaner_rewrite IS
    'segments that lost records to compaction and wait to be rewritten (CLUSTER) to give space back';
COMMENT ON FUNCTION mq._compact_delete(regclass, bigint, bigint, bigint, bigint) IS
    'removes the records a compaction pass makes obsolete (past the append-only trigger)';
COMMENT ON FUNCTION mq._policy_compacts(jsonb) IS 'true when cleanup.policy includes compact';
COMMENT ON FUNCTION mq._policy_deletes(jsonb) IS 'true when cleanup.policy includes delete';
COMMENT ON FUNCTION mq._cleaner_point(integer, integer) IS
    'the offset below which a partition has been compacted';
COMMENT ON FUNCTION mq._first_uncleanable(integer, integer, bigint) IS
    'the first offset a compaction pass may not touch';
COMMENT ON FUNCTION mq._compaction_overdue(integer, integer, bigint, bigint, jsonb) IS
    'whether a partition''s oldest dirty record waited longer than max.compaction.lag.ms';
COMMENT ON FUNCTION mq._compact_rewrite(integer, integer) IS
    'rewrites segments compacted by earlier passes to give their space back';
COMMENT ON FUNCTION mq._lock_compaction(integer, integer) IS
    'internal: the partition''s compaction lock until the transaction ends, so that passes take turns';
COMMENT ON FUNCTION mq._compact_partition(integer, integer, jsonb) IS
    'one compaction pass over a partition when its dirty ratio calls for one';
COMMENT ON FUNCTION mq._compact_topic(integer, jsonb) IS
    'internal (maintenance): compacts one topic''s partitions, found by topic id; returns records removed';
COMMENT ON FUNCTION mq.compact(text) IS
    'compacts the partitions of compacted topics whose dirty ratio calls for it; returns records removed';
COMMENT ON FUNCTION mq._cleaner_copied(integer, integer, bigint) IS
    'internal (replication): records that a follower''s log has gaps copied from its leader below an offset';
COMMENT ON VIEW mq.compaction IS 'compacted partitions: cleaner point, last pass, records awaiting rewrite';
