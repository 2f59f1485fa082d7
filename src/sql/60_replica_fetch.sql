-------------------------------------------------------------------------------
-- Replication, data node side: the leader's half of a follower's fetch.
-------------------------------------------------------------------------------

-- Records in a producer batch of sequences first..last (sequences wrap to
-- 0 after 2^31 - 1, as in Kafka).
CREATE FUNCTION mq._batch_length(first integer, last integer) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN last >= first THEN last::bigint - first + 1
                ELSE last::bigint - first + 2147483649 END
$$;

-- The leader side of a follower's fetch: record the follower's progress
-- (its fetch offset is its log end), advance the high watermark, and
-- return records from fetch_offset on.  Below the last gap compaction left
-- (this node's cleaner passes, or the gaps it copied from a leader) the
-- batch lists each record's offset when they are not consecutive, and
-- p_max_records counts records rather than offsets, so that every fetch
-- of a cleaned range holds records.  When the follower is caught up and
-- its progress is already recorded, wait up to wait_ms for new records or
-- a change of the high watermark first (long polling; notify.c wakes the
-- wait).
CREATE FUNCTION mq.replica_fetch(p_topic text, p_partition integer, p_leader_epoch integer,
                                 p_replica_id integer, p_fetch_offset bigint,
                                 p_max_records integer DEFAULT 1000, p_wait_ms integer DEFAULT 500,
                                 p_offsets_version bigint DEFAULT NULL)
    RETURNS mq.replica_batch
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer := mq._topic_id(p_topic);
    st mq.partition_state;
    g mq.replica_progress;
    v_leo bigint;
    v_end bigint;
    v_cut bigint;
    v_ov bigint;
    v_now timestamptz;
    v_gaps bigint;
    v_first bigint;
    v_next bigint;
    v_count bigint;
    v_lo bigint;
    v_hi bigint;
    v_listed boolean;
    b mq.replica_batch;
BEGIN
    st := mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
    v_leo := mq._log_end_offset(v_id, p_partition);
    IF p_fetch_offset > v_leo THEN
        RAISE EXCEPTION 'fetch offset % of replica % is outside the leader''s log [%, %) of "%" partition %',
            p_fetch_offset, p_replica_id, st.log_start_offset, v_leo, p_topic, p_partition
            USING ERRCODE = 'MQ007', HINT = 'The follower must truncate by leader epoch first.';
    END IF;
    IF p_fetch_offset < st.log_start_offset THEN
        -- the follower's whole log lies below ours (retention dropped it
        -- here): no records, and a base at our log start, where
        -- mq.replica_append restarts the follower's log (as Kafka's
        -- followers truncate fully and start at the leader's log start)
        b.base_offset := st.log_start_offset;
        b.log_start_offset := st.log_start_offset;
        b.log_end_offset := v_leo;
        b.high_watermark := st.high_watermark;
        SELECT array_agg(h.leader_epoch ORDER BY h.start_offset), array_agg(h.start_offset ORDER BY h.start_offset)
          INTO b.epochs, b.epoch_starts
          FROM mq.leader_epoch_history h
         WHERE h.topic_id = v_id AND h.partition = p_partition
           AND h.start_offset >= (SELECT coalesce(max(e.start_offset), 0) FROM mq.leader_epoch_history e
                                   WHERE e.topic_id = v_id AND e.partition = p_partition
                                     AND e.start_offset <= st.log_start_offset);
        RETURN b;
    END IF;
    -- offsets below this may be missing (src/sql/72_compaction.sql)
    SELECT max(c.clean_end) INTO v_gaps FROM mq.cleaner_pass c
     WHERE c.topic_id = v_id AND c.partition = p_partition;
    SELECT * INTO g FROM mq.replica_progress
     WHERE topic_id = v_id AND partition = p_partition AND replica_id = p_replica_id;
    v_ov := mq._offsets_version(v_id, p_partition);
    IF p_fetch_offset = v_leo AND g.leader_epoch = p_leader_epoch
       AND g.log_end_offset = p_fetch_offset AND p_wait_ms > 0
       AND p_offsets_version = v_ov AND g.offsets_version = p_offsets_version THEN
        -- until new records, a new high watermark for the follower to hear
        -- of, or a new offset commit
        PERFORM mq._replica_wait_records(v_id, p_partition, p_fetch_offset, p_wait_ms,
                                         coalesce(st.high_watermark, 0), v_ov);
        st := mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
        v_leo := mq._log_end_offset(v_id, p_partition);
        v_ov := mq._offsets_version(v_id, p_partition);
    END IF;

    -- The committed offsets, when the follower's version is not the
    -- leader's: all of them, read with their version in one snapshot.
    IF p_offsets_version IS DISTINCT FROM v_ov THEN
        SELECT s.version, s.groups, s.next, s.metadata, s.committed_at
          INTO v_ov, b.offset_groups, b.offset_next, b.offset_metadata, b.offset_committed_at
          FROM mq._offsets_snapshot(v_id, p_partition) s;
    END IF;
    b.offsets_version := v_ov;

    -- Kafka's lastCaughtUpTime: now if the follower reached the log end; the
    -- time of its previous fetch if it reached the log end as of then.  For
    -- committed offsets, as for records against the high watermark: caught
    -- up when it applied (in this epoch) what the ISR has acknowledged.
    v_now := clock_timestamp();
    INSERT INTO mq.replica_progress AS r (topic_id, partition, replica_id, leader_epoch, log_end_offset,
                                          last_fetch_at, last_fetch_leader_leo, caught_up_at,
                                          offsets_version)
    VALUES (v_id, p_partition, p_replica_id, p_leader_epoch, p_fetch_offset, v_now, v_leo,
            CASE WHEN p_fetch_offset >= v_leo THEN v_now END, p_offsets_version)
    ON CONFLICT (topic_id, partition, replica_id) DO UPDATE SET
        caught_up_at = CASE WHEN p_fetch_offset >= v_leo THEN v_now
                            WHEN r.leader_epoch <> p_leader_epoch THEN NULL
                            WHEN p_fetch_offset >= r.last_fetch_leader_leo THEN r.last_fetch_at
                            ELSE r.caught_up_at END,
        offsets_caught_up = coalesce(r.leader_epoch = p_leader_epoch
                                     AND p_offsets_version >= p_leader_epoch::bigint << 32
                                     AND p_offsets_version >= mq._offsets_acked_version(v_id, p_partition,
                                                                                        p_leader_epoch),
                                     false),
        leader_epoch = p_leader_epoch, log_end_offset = p_fetch_offset,
        last_fetch_at = v_now, last_fetch_leader_leo = v_leo,
        offsets_version = p_offsets_version;
    IF p_offsets_version IS DISTINCT FROM g.offsets_version THEN
        PERFORM mq._replica_notify(v_id);      -- mq.await_commit waiters look again
    END IF;
    b.high_watermark := mq._replica_advance_hwm(v_id, p_partition);

    v_first := p_fetch_offset;
    v_end := least(v_leo, p_fetch_offset + greatest(p_max_records, 1));
    IF p_fetch_offset < v_gaps THEN
        -- a cleaned range: from the first record there, up to the record
        -- after the limit's (or the log end)
        EXECUTE format('SELECT (SELECT msg_offset FROM %1$s WHERE msg_offset >= $1
                                 ORDER BY msg_offset LIMIT 1),
                               (SELECT msg_offset FROM %1$s WHERE msg_offset >= $1
                                 ORDER BY msg_offset OFFSET $2 LIMIT 1)', st.relid)
           INTO v_first, v_next USING p_fetch_offset, greatest(p_max_records, 1)::bigint;
        v_first := least(coalesce(v_first, v_leo), v_leo);
        v_end := least(coalesce(v_next, v_leo), v_leo);
    END IF;
    -- Never end inside a producer batch (Kafka's followers fetch whole
    -- batches): a follower holding part of one would record no batch for
    -- it, and once elected would take the producer's retry for a new batch.
    -- A fetch ends before the batch the limit cuts, or after it when that
    -- batch is the first (KIP-74: at least one whole batch; a gap that
    -- compaction left before it does not count).
    IF v_end < v_leo THEN
        SELECT CASE WHEN x.o > v_first THEN x.o
                    ELSE least(v_leo, x.o + mq._batch_length(x.f, x.l)) END
          INTO v_cut
          FROM mq.producer_state s
         CROSS JOIN LATERAL unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)
         WHERE s.topic_id = v_id AND s.partition = p_partition
           AND x.o < v_end AND x.o + mq._batch_length(x.f, x.l) > v_end;
        v_end := coalesce(v_cut, v_end);
    END IF;
    b.base_offset := p_fetch_offset;
    b.log_end_offset := v_leo;
    b.log_start_offset := st.log_start_offset;
    IF v_end > p_fetch_offset THEN
        v_listed := p_fetch_offset < v_gaps;
        LOOP
            EXECUTE format('SELECT array_agg(created_at ORDER BY msg_offset), array_agg(key ORDER BY msg_offset),
                                   array_agg(value ORDER BY msg_offset), array_agg(headers ORDER BY msg_offset),
                                   array_agg(producer_id ORDER BY msg_offset), array_agg(producer_epoch ORDER BY msg_offset),
                                   array_agg(sequence ORDER BY msg_offset), array_agg("timestamp" ORDER BY msg_offset),
                                   %s, count(*), min(msg_offset), max(msg_offset)
                              FROM %s WHERE msg_offset >= $1 AND msg_offset < $2',
                           CASE WHEN v_listed THEN 'array_agg(msg_offset ORDER BY msg_offset)'
                                ELSE 'NULL::bigint[]' END, st.relid)
               INTO b.created_at, b.keys, b.vals, b.headers, b.producer_ids, b.producer_epochs, b.sequences,
                    b.timestamps, b.offsets, v_count, v_lo, v_hi
              USING p_fetch_offset, v_end;
            -- consecutive from the fetch offset: no offsets to ship
            IF v_count = 0 OR (v_lo = p_fetch_offset AND v_hi = p_fetch_offset + v_count - 1) THEN
                b.offsets := NULL;
                EXIT;
            END IF;
            -- gaps: with their offsets (read again if a pass removed
            -- records since the look at the cleaner passes above)
            EXIT WHEN v_listed;
            v_listed := true;
        END LOOP;
        -- producer batches whose last record lies in the range
        SELECT array_agg(s.producer_id ORDER BY x.o), array_agg(s.producer_epoch ORDER BY x.o),
               array_agg(x.f ORDER BY x.o), array_agg(x.l ORDER BY x.o), array_agg(x.o ORDER BY x.o)
          INTO b.batch_producer, b.batch_epoch, b.batch_first, b.batch_last, b.batch_offset
          FROM mq.producer_state s
         CROSS JOIN LATERAL unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)
         WHERE s.topic_id = v_id AND s.partition = p_partition
           AND x.o + mq._batch_length(x.f, x.l) - 1 BETWEEN p_fetch_offset AND v_end - 1;
    END IF;
    SELECT array_agg(h.leader_epoch ORDER BY h.start_offset), array_agg(h.start_offset ORDER BY h.start_offset)
      INTO b.epochs, b.epoch_starts
      FROM mq.leader_epoch_history h
     WHERE h.topic_id = v_id AND h.partition = p_partition AND h.start_offset >= p_fetch_offset;
    RETURN b;
END $$;
