-------------------------------------------------------------------------------
-- Replication, data node side: the follower's half (appending fetched
-- batches, following the leader's log start, KIP-101 truncation) and the
-- epoch lookups both sides ask of a log.
-------------------------------------------------------------------------------

-- The follower side of a fetch below the leader's log start: every record
-- this node holds lies below it (gone on the leader too), so the log
-- restarts empty there: its segments go, one is made from that offset,
-- and the producer batches and leader epochs it recorded for those
-- records go with them (the fetch brings the epoch in force there).
-- The caller holds the replica lock (mq._replica_lock).
CREATE FUNCTION mq._replica_restart_log(p_topic_id integer, p_partition integer, p_offset bigint)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
BEGIN
    IF mq._log_end_offset(p_topic_id, p_partition) > p_offset THEN
        RAISE EXCEPTION 'the log of topic id % partition % ends above %: it cannot restart there',
            p_topic_id, p_partition, p_offset USING ERRCODE = 'MQ007';
    END IF;
    FOR s IN SELECT sg.base_offset FROM mq.segment sg
              WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition LOOP
        PERFORM mq._drop_segment(p_topic_id, p_partition, s.base_offset);
    END LOOP;
    UPDATE mq.partition_state SET log_start_offset = p_offset
     WHERE topic_id = p_topic_id AND partition = p_partition;
    DELETE FROM mq.producer_state WHERE topic_id = p_topic_id AND partition = p_partition;
    DELETE FROM mq.leader_epoch_history WHERE topic_id = p_topic_id AND partition = p_partition;
    PERFORM mq._create_segment(p_topic_id, p_partition, p_offset,
                               p_offset + mq._segment_span(p_topic_id, p_partition));
    PERFORM mq._ensure_segments(p_topic_id, p_partition);
    PERFORM mq._invalidate((SELECT relid FROM mq.partition_state
                             WHERE topic_id = p_topic_id AND partition = p_partition));
END $$;

-- A follower's log start follows the leader's (moved by retention or
-- mq.delete_records), as Kafka's followers do, up to the follower's high
-- watermark: records deleted on the leader are not served again by a
-- follower that it elects.  The segments entirely below go at once.  The
-- caller holds the replica lock (mq._replica_lock) and calls this only
-- when the leader's log start is above its own.
CREATE FUNCTION mq._replica_follow_log_start(p_topic_id integer, p_partition integer,
                                             p_leader_log_start bigint) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
    v_to bigint;
    s record;
BEGIN
    SELECT * INTO st FROM mq.partition_state
     WHERE topic_id = p_topic_id AND partition = p_partition;
    v_to := least(p_leader_log_start, st.high_watermark);
    IF v_to IS NULL OR v_to <= st.log_start_offset THEN
        RETURN;
    END IF;
    UPDATE mq.partition_state SET log_start_offset = v_to
     WHERE topic_id = p_topic_id AND partition = p_partition AND log_start_offset < v_to;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    FOR s IN SELECT sg.base_offset FROM mq.segment sg
              WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.end_offset <= v_to LOOP
        PERFORM mq._drop_segment(p_topic_id, p_partition, s.base_offset);
    END LOOP;
    PERFORM mq._invalidate(st.relid);
END $$;

-- The follower side: append a fetched batch at the leader's offsets, with
-- the producers and producer batches it carries and the epochs that start
-- in it; follow the leader's high watermark and log start.  A batch with
-- its records' offsets (a range of the leader's with compaction gaps)
-- leaves the same gaps here, and readers step over them as they do over
-- this node's own compaction gaps.  Returns the new log end (the last
-- record's offset + 1).
CREATE FUNCTION mq.replica_append(topic text, partition integer, leader_epoch integer,
                                  batch mq.replica_batch) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_batch ALIAS FOR $4;
    v_id integer := mq._topic_id(p_topic);
    st mq.partition_state;
    v_end bigint;
    v_max bigint;
BEGIN
    PERFORM mq._replica_lock(v_id, p_partition);
    st := mq._replica_fence(v_id, p_partition, p_leader_epoch, 'follower');
    -- No records and no new committed offsets: only the high watermark or
    -- the log start moves, which acknowledge nothing to the leader and
    -- which the leader's next answer brings again if a crash takes them
    -- back (a lower high watermark is always safe).  So no WAL flush for
    -- them: on the acks=all path that flush queued on the disk the
    -- records' flushes share (docs/design.md, "acks=all: where a record's
    -- time goes").  Records and offsets stay flushed before the next fetch
    -- reports them (the broker's session commits with at least 'local').
    IF p_batch.created_at IS NULL AND p_batch.offset_groups IS NULL
       AND p_batch.offsets_version IS NOT DISTINCT FROM mq._offsets_version(v_id, p_partition) THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_batch.base_offset > mq._log_end_offset(v_id, p_partition)
       AND p_batch.base_offset = p_batch.log_start_offset THEN
        PERFORM mq._replica_restart_log(v_id, p_partition, p_batch.log_start_offset);
    END IF;
    -- producer ids come from the leader: make them known here, and keep this
    -- node's own id sequence beyond them for when it leads
    IF p_batch.producer_ids IS NOT NULL THEN
        INSERT INTO mq.producer AS p (producer_id, producer_epoch)
        SELECT i, max(e) FROM unnest(p_batch.producer_ids, p_batch.producer_epochs) AS u(i, e)
         WHERE i IS NOT NULL GROUP BY i
        ON CONFLICT (producer_id) DO UPDATE
           SET producer_epoch = greatest(p.producer_epoch, EXCLUDED.producer_epoch), last_used = now();
        SELECT max(i) INTO v_max FROM unnest(p_batch.producer_ids) AS u(i);
        IF v_max IS NOT NULL THEN
            PERFORM setval(pg_get_serial_sequence('mq.producer', 'producer_id'), v_max);
        END IF;
    END IF;
    v_end := mq._replica_append_records(p_topic, p_partition, p_batch);
    IF p_batch.offsets IS NOT NULL THEN     -- seldom: a cleaned range of the leader's
        PERFORM mq._cleaner_copied(v_id, p_partition, v_end);
    END IF;
    IF p_batch.offsets_version IS NOT NULL THEN
        PERFORM mq._offsets_apply(v_id, p_partition, p_batch);
    END IF;
    INSERT INTO mq.leader_epoch_history (topic_id, partition, leader_epoch, start_offset)
    SELECT v_id, p_partition, e, s FROM unnest(p_batch.epochs, p_batch.epoch_starts) AS u(e, s)
     WHERE s < v_end
    ON CONFLICT (topic_id, partition, leader_epoch) DO NOTHING;
    UPDATE mq.partition_state
       SET high_watermark = greatest(coalesce(high_watermark, 0), least(p_batch.high_watermark, v_end))
     WHERE topic_id = v_id AND partition = p_partition
       AND coalesce(high_watermark, 0) < least(p_batch.high_watermark, v_end);
    IF FOUND THEN
        PERFORM mq._replica_notify(v_id, p_partition);
    END IF;
    IF p_batch.log_start_offset > st.log_start_offset THEN     -- seldom: no query otherwise
        PERFORM mq._replica_follow_log_start(v_id, p_partition, p_batch.log_start_offset);
    END IF;
    RETURN v_end;
END $$;

-- The follower side of KIP-101: remove records at and above from_offset,
-- the epochs that start there, and the producer batches that end there;
-- gaps copied from a leader now end there too.  Returns the number of
-- records removed.
CREATE FUNCTION mq.replica_truncate(topic text, partition integer, leader_epoch integer,
                                    from_offset bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_from_offset ALIAS FOR $4;
    v_id integer := mq._topic_id(p_topic);
    v_removed bigint;
    v_to bigint;
BEGIN
    PERFORM mq._replica_lock(v_id, p_partition);
    PERFORM mq._replica_fence(v_id, p_partition, p_leader_epoch, 'follower');
    v_removed := mq._replica_truncate_records(v_id, p_partition, p_from_offset);
    v_to := least(p_from_offset, mq._log_end_offset(v_id, p_partition));
    IF EXISTS (SELECT 1 FROM mq.cleaner_pass c WHERE c.topic_id = v_id AND c.partition = p_partition
                  AND c.copied AND c.clean_end > v_to) THEN
        PERFORM mq._cleaner_copied(v_id, p_partition, v_to);
    END IF;
    DELETE FROM mq.leader_epoch_history
     WHERE topic_id = v_id AND partition = p_partition AND start_offset >= p_from_offset;
    -- segments the cut reaches are open again: retention records them anew
    UPDATE mq.segment sg SET closed_bytes = NULL, closed_last_time = NULL
     WHERE sg.topic_id = v_id AND sg.partition = p_partition AND sg.end_offset > p_from_offset
       AND sg.closed_bytes IS NOT NULL;
    -- keep the producer batches that end below the cut
    UPDATE mq.producer_state s
       SET batch_first = k.f, batch_last = k.l, batch_offset = k.o
      FROM (SELECT s2.producer_id,
                   array_agg(x.f ORDER BY x.o) AS f, array_agg(x.l ORDER BY x.o) AS l,
                   array_agg(x.o ORDER BY x.o) AS o
              FROM mq.producer_state s2
             CROSS JOIN LATERAL unnest(s2.batch_first, s2.batch_last, s2.batch_offset) AS x(f, l, o)
             WHERE s2.topic_id = v_id AND s2.partition = p_partition
               AND x.o + mq._batch_length(x.f, x.l) <= p_from_offset
             GROUP BY s2.producer_id) k
     WHERE s.topic_id = v_id AND s.partition = p_partition AND s.producer_id = k.producer_id;
    DELETE FROM mq.producer_state s
     WHERE s.topic_id = v_id AND s.partition = p_partition
       AND NOT EXISTS (SELECT 1 FROM unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)
                        WHERE x.o + mq._batch_length(x.f, x.l) <= p_from_offset);
    UPDATE mq.partition_state SET high_watermark = least(high_watermark, p_from_offset)
     WHERE topic_id = v_id AND partition = p_partition;
    RETURN v_removed;
END $$;

-- KIP-101/KIP-279 OffsetsForLeaderEpoch on this node's log: the largest
-- epoch <= requested_epoch it has, and where that epoch ends (the start of
-- the next epoch, or the log end).  (-1, -1) when it has none.
CREATE FUNCTION mq._replica_epoch_end(p_topic_id integer, p_partition integer, p_requested integer,
                                      OUT leader_epoch integer, OUT end_offset bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SELECT h.leader_epoch INTO leader_epoch FROM mq.leader_epoch_history h
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition AND h.leader_epoch <= p_requested
     ORDER BY h.leader_epoch DESC LIMIT 1;
    IF leader_epoch IS NULL THEN
        leader_epoch := -1;
        end_offset := -1;
        RETURN;
    END IF;
    SELECT min(h.start_offset) INTO end_offset FROM mq.leader_epoch_history h
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
       AND h.leader_epoch > _replica_epoch_end.leader_epoch;
    end_offset := coalesce(end_offset, mq._log_end_offset(p_topic_id, p_partition));
END $$;

-- Asked of the leader by a follower (fenced by the caller's epoch).  SQL,
-- not PL/pgSQL: its input leader_epoch and its output leader_epoch share
-- a name, which PL/pgSQL refuses (docs/design.md, "SQL API conventions").
CREATE FUNCTION mq.replica_epoch_end_offset(topic text, partition integer, leader_epoch integer,
                                            requested_epoch integer,
                                            OUT leader_epoch integer, OUT end_offset bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT mq._replica_fence(mq._topic_id($1), $2, $3, 'leader');
    SELECT e.leader_epoch, e.end_offset FROM mq._replica_epoch_end(mq._topic_id($1), $2, $4) e;
$$;

-- A broker's view of its own replica: its latest epoch in the history,
-- its log end, its high watermark and where a requested epoch ends.  The
-- public mq.replica_log_state below calls it (its input requested_epoch
-- is also an output column, which PL/pgSQL refuses).
CREATE FUNCTION mq._replica_log_state(p_topic text, p_partition integer, p_requested_epoch integer)
    RETURNS TABLE (role text, leader_epoch integer, latest_epoch integer, log_end_offset bigint,
                   high_watermark bigint, requested_epoch integer, requested_end_offset bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer := mq._topic_id(p_topic);
BEGIN
    RETURN QUERY
    SELECT p.role, p.leader_epoch,
           coalesce((SELECT max(h.leader_epoch) FROM mq.leader_epoch_history h
                      WHERE h.topic_id = v_id AND h.partition = p_partition), -1),
           mq._log_end_offset(v_id, p_partition), p.high_watermark,
           e.leader_epoch, e.end_offset
      FROM mq.partition_state p
      LEFT JOIN LATERAL mq._replica_epoch_end(v_id, p_partition, p_requested_epoch) e
        ON p_requested_epoch IS NOT NULL
     WHERE p.topic_id = v_id AND p.partition = p_partition;
END $$;

CREATE FUNCTION mq.replica_log_state(topic text, partition integer, requested_epoch integer DEFAULT NULL)
    RETURNS TABLE (role text, leader_epoch integer, latest_epoch integer, log_end_offset bigint,
                   high_watermark bigint, requested_epoch integer, requested_end_offset bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM mq._replica_log_state($1, $2, $3);
$$;

-- After a transaction that sent records to or committed offsets of
-- replicated partitions: wait until all of it is on every in-sync replica
-- (src/commit_wait.c).  Returns the number of partitions waited for.
CREATE FUNCTION mq.await_commit(timeout_ms integer DEFAULT 30000) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_await_commit' LANGUAGE C VOLATILE;
