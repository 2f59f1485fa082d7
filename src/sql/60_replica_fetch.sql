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

-- A fetch below the leader's log start (retention dropped the follower's
-- whole log here): no records, and a base at the log start, where
-- mq.replica_append restarts the follower's log (as Kafka's followers
-- truncate fully and start at the leader's log start).
CREATE FUNCTION mq._replica_fetch_below_start(p_id integer, p_partition integer, p_log_start bigint,
                                              p_leo bigint, p_hwm bigint)
    RETURNS mq.replica_batch
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    b mq.replica_batch;
BEGIN
    b.base_offset := p_log_start;
    b.log_start_offset := p_log_start;
    b.log_end_offset := p_leo;
    b.high_watermark := p_hwm;
    SELECT array_agg(h.leader_epoch ORDER BY h.start_offset), array_agg(h.start_offset ORDER BY h.start_offset)
      INTO b.epochs, b.epoch_starts
      FROM mq.leader_epoch_history h
     WHERE h.topic_id = p_id AND h.partition = p_partition
       AND h.start_offset >= (SELECT coalesce(max(e.start_offset), 0) FROM mq.leader_epoch_history e
                               WHERE e.topic_id = p_id AND e.partition = p_partition
                                 AND e.start_offset <= p_log_start);
    RETURN b;
END $$;

-- Records a follower's fetch: its log end (the fetch offset) and Kafka's
-- lastCaughtUpTime: now if the follower reached the log end; the time of
-- its previous fetch if it reached the log end as of then.  For committed
-- offsets, as for records against the high watermark: caught up when it
-- applied (in this epoch) what the ISR has acknowledged.  A new offsets
-- version wakes mq.await_commit's waiters (p_old_ov: the one recorded).
-- The partition's progress lock, first, serialises the followers' fetches
-- from here to their commit, so that the high watermark the caller then
-- computes (mq._replica_advance_hwm) sees every other follower's progress
-- (src/replica.c).
CREATE FUNCTION mq._replica_fetch_progress(p_id integer, p_partition integer, p_replica_id integer,
                                           p_leader_epoch integer, p_fetch_offset bigint, p_leo bigint,
                                           p_offsets_version bigint, p_old_ov bigint)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_now timestamptz;
BEGIN
    PERFORM mq._replica_progress_lock(p_id, p_partition);
    v_now := clock_timestamp();
    INSERT INTO mq.replica_progress AS r (topic_id, partition, replica_id, leader_epoch, log_end_offset,
                                          last_fetch_at, last_fetch_leader_leo, caught_up_at,
                                          offsets_version)
    VALUES (p_id, p_partition, p_replica_id, p_leader_epoch, p_fetch_offset, v_now, p_leo,
            CASE WHEN p_fetch_offset >= p_leo THEN v_now END, p_offsets_version)
    ON CONFLICT (topic_id, partition, replica_id) DO UPDATE SET
        caught_up_at = CASE WHEN p_fetch_offset >= p_leo THEN v_now
                            WHEN r.leader_epoch <> p_leader_epoch THEN NULL
                            WHEN p_fetch_offset >= r.last_fetch_leader_leo THEN r.last_fetch_at
                            ELSE r.caught_up_at END,
        offsets_caught_up = coalesce(r.leader_epoch = p_leader_epoch
                                     AND p_offsets_version >= p_leader_epoch::bigint << 32
                                     AND p_offsets_version >= mq._offsets_acked_version(p_id, p_partition,
                                                                                        p_leader_epoch),
                                     false),
        leader_epoch = p_leader_epoch, log_end_offset = p_fetch_offset,
        last_fetch_at = v_now, last_fetch_leader_leo = p_leo,
        offsets_version = p_offsets_version;
    IF p_offsets_version IS DISTINCT FROM p_old_ov THEN
        PERFORM mq._replica_notify(p_id, p_partition);      -- mq.await_commit waiters look again
    END IF;
END $$;

-- Where a fetch from p_fetch_offset of at most p_max_records records
-- ends.  Below the last gap compaction left (p_gaps) it counts records
-- rather than offsets: from the first record there, up to the record after
-- the limit's (or the log end).  Never inside a producer batch (Kafka's
-- followers fetch whole batches): a follower holding part of one would
-- record no batch for it, and once elected would take the producer's retry
-- for a new batch.  A fetch ends before the batch the limit cuts, or after
-- it when that batch is the first (KIP-74: at least one whole batch; a gap
-- that compaction left before it does not count).
CREATE FUNCTION mq._replica_fetch_end(p_id integer, p_partition integer, p_relid regclass,
                                      p_fetch_offset bigint, p_max_records integer, p_leo bigint,
                                      p_gaps bigint)
    RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_first bigint := p_fetch_offset;
    v_end bigint := least(p_leo, p_fetch_offset + greatest(p_max_records, 1));
    v_next bigint;
    v_cut bigint;
BEGIN
    IF p_fetch_offset < p_gaps THEN
        EXECUTE format('SELECT (SELECT msg_offset FROM %1$s WHERE msg_offset >= $1
                                 ORDER BY msg_offset LIMIT 1),
                               (SELECT msg_offset FROM %1$s WHERE msg_offset >= $1
                                 ORDER BY msg_offset OFFSET $2 LIMIT 1)', p_relid)
           INTO v_first, v_next USING p_fetch_offset, greatest(p_max_records, 1)::bigint;
        v_first := least(coalesce(v_first, p_leo), p_leo);
        v_end := least(coalesce(v_next, p_leo), p_leo);
    END IF;
    IF v_end < p_leo THEN
        SELECT CASE WHEN x.o > v_first THEN x.o
                    ELSE least(p_leo, x.o + mq._batch_length(x.f, x.l)) END
          INTO v_cut
          FROM mq.producer_state s
         CROSS JOIN LATERAL unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)
         WHERE s.topic_id = p_id AND s.partition = p_partition
           AND x.o < v_end AND x.o + mq._batch_length(x.f, x.l) > v_end;
        v_end := coalesce(v_cut, v_end);
    END IF;
    RETURN v_end;
END $$;

-- Fills b with the records of [p_fetch_offset, p_end) and the producer
-- batches whose last record lies there.  The batch lists each record's
-- offset when they are not consecutive from the fetch offset (compaction's
-- gaps).  In C (src/replica_fetch.c): the read is planned once per
-- partition table, and its rows become the batch's arrays there.
CREATE FUNCTION mq._replica_fetch_records(b mq.replica_batch, p_id integer, p_partition integer,
                                          p_relid regclass, p_fetch_offset bigint, p_end bigint)
    RETURNS mq.replica_batch
    AS 'MODULE_PATHNAME', 'mq_replica_fetch_records' LANGUAGE C;

-- What a follower's fetch finds before it reads: the partition's state
-- (the epoch check: this node leads in it), its log end, the follower's
-- recorded progress, the committed offsets' version, and whether the
-- follower is idle: it holds the log end, its progress there is recorded
-- in this epoch, and it has the offsets' version, so that a long poll may
-- wait for news.  A fetch offset beyond the log end is MQ007.  Reads
-- only (mq.replica_fetch_many looks at every partition first).
-- recorded: the fetch found news (not idle: records, committed offsets)
-- at the offset where the follower's progress is recorded already, in
-- this epoch and offsets version, within the last p_wait_ms.  Such a fetch
-- has nothing to record, and the high watermark cannot move without new
-- progress (mq._replica_advance_hwm): it is the long poll of one partition
-- that the news woke (its progress was recorded when it went idle), or a
-- partition of a session that had news while it sat idle.  Recording it
-- again took the partition's progress lock, so the two followers' fetches
-- of each new record ran one after the other.  Progress older than a wait
-- is recorded again, as a session's idle partitions' is when due, and so
-- is every fetch that finds nothing (an idle follower stays caught up).
CREATE FUNCTION mq._replica_fetch_look(p_topic text, p_id integer, p_partition integer,
                                       p_leader_epoch integer, p_replica_id integer,
                                       p_fetch_offset bigint, p_offsets_version bigint, p_wait_ms integer,
                                       OUT st mq.partition_state, OUT leo bigint,
                                       OUT g mq.replica_progress, OUT ov bigint, OUT idle boolean,
                                       OUT recorded boolean)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_at boolean;   -- the follower's progress is recorded at this fetch
BEGIN
    st := mq._replica_fence(p_id, p_partition, p_leader_epoch, 'leader');
    leo := mq._log_end_offset(p_id, p_partition);
    IF leo IS NULL THEN   -- its topic dropped since the fence read its state
        RAISE EXCEPTION 'partition % of topic id % does not exist', p_partition, p_id USING ERRCODE = 'MQ006';
    END IF;
    IF p_fetch_offset > leo THEN
        RAISE EXCEPTION 'fetch offset % of replica % is outside the leader''s log [%, %) of "%" partition %',
            p_fetch_offset, p_replica_id, st.log_start_offset, leo, p_topic, p_partition
            USING ERRCODE = 'MQ007', HINT = 'The follower must truncate by leader epoch first.';
    END IF;
    SELECT * INTO g FROM mq.replica_progress r
     WHERE r.topic_id = p_id AND r.partition = p_partition AND r.replica_id = p_replica_id;
    ov := mq._offsets_version(p_id, p_partition);
    v_at := p_offsets_version IS NOT NULL
            AND g.leader_epoch IS NOT DISTINCT FROM p_leader_epoch
            AND g.log_end_offset IS NOT DISTINCT FROM p_fetch_offset
            AND g.offsets_version IS NOT DISTINCT FROM p_offsets_version;
    idle := v_at AND p_fetch_offset = leo AND p_fetch_offset >= st.log_start_offset
            AND p_offsets_version IS NOT DISTINCT FROM ov;
    recorded := v_at AND NOT idle
                AND g.last_fetch_at > clock_timestamp() - make_interval(secs => p_wait_ms / 1000.0);
END $$;

-- mq.replica_fetch's body, and mq.replica_fetch_many's per partition it
-- fetches (without a wait).  p_record: whether to record the follower's
-- progress and advance the high watermark (mq.replica_fetch_many holds the
-- progress locks of those it records); NULL: unless its look says it is
-- recorded already (mq._replica_fetch_look, recorded).
CREATE FUNCTION mq._replica_fetch(p_topic text, p_partition integer, p_leader_epoch integer,
                                  p_replica_id integer, p_fetch_offset bigint, p_max_records integer,
                                  p_wait_ms integer, p_offsets_version bigint, p_record boolean)
    RETURNS mq.replica_batch
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer := mq._topic_id(p_topic);
    l record;
    st mq.partition_state;
    g mq.replica_progress;
    v_leo bigint;
    v_end bigint;
    v_ov bigint;
    v_gaps bigint;
    b mq.replica_batch;
BEGIN
    l := mq._replica_fetch_look(p_topic, v_id, p_partition, p_leader_epoch, p_replica_id,
                                p_fetch_offset, p_offsets_version, p_wait_ms);
    IF l.idle AND p_wait_ms > 0 THEN
        -- until new records or a new offset commit (a new high watermark
        -- comes with the next records, or when the wait runs out)
        PERFORM mq._replica_wait_records(v_id, p_partition, p_fetch_offset, p_wait_ms, l.ov);
        l := mq._replica_fetch_look(p_topic, v_id, p_partition, p_leader_epoch, p_replica_id,
                                    p_fetch_offset, p_offsets_version, p_wait_ms);
    END IF;
    st := l.st;
    g := l.g;
    v_leo := l.leo;
    v_ov := l.ov;
    IF p_fetch_offset < st.log_start_offset THEN
        RETURN mq._replica_fetch_below_start(v_id, p_partition, st.log_start_offset, v_leo, st.high_watermark);
    END IF;
    -- offsets below this may be missing (src/sql/72_compaction.sql)
    SELECT max(c.clean_end) INTO v_gaps FROM mq.cleaner_pass c
     WHERE c.topic_id = v_id AND c.partition = p_partition;

    -- The committed offsets, when the follower's version is not the
    -- leader's: all of them, read with their version in one snapshot.
    IF p_offsets_version IS DISTINCT FROM v_ov THEN
        SELECT s.version, s.groups, s.next, s.metadata, s.committed_at
          INTO v_ov, b.offset_groups, b.offset_next, b.offset_metadata, b.offset_committed_at
          FROM mq._offsets_snapshot(v_id, p_partition) s;
    END IF;
    b.offsets_version := v_ov;

    IF coalesce(p_record, NOT l.recorded) THEN
        PERFORM mq._replica_fetch_progress(v_id, p_partition, p_replica_id, p_leader_epoch, p_fetch_offset,
                                           v_leo, p_offsets_version, g.offsets_version);
        b.high_watermark := mq._replica_advance_hwm(v_id, p_partition);
    ELSE
        b.high_watermark := st.high_watermark;
    END IF;

    v_end := mq._replica_fetch_end(v_id, p_partition, st.relid, p_fetch_offset, p_max_records, v_leo, v_gaps);
    b.base_offset := p_fetch_offset;
    b.log_end_offset := v_leo;
    b.log_start_offset := st.log_start_offset;
    IF v_end > p_fetch_offset THEN
        b := mq._replica_fetch_records(b, v_id, p_partition, st.relid, p_fetch_offset, v_end);
    END IF;
    SELECT array_agg(h.leader_epoch ORDER BY h.start_offset), array_agg(h.start_offset ORDER BY h.start_offset)
      INTO b.epochs, b.epoch_starts
      FROM mq.leader_epoch_history h
     WHERE h.topic_id = v_id AND h.partition = p_partition AND h.start_offset >= p_fetch_offset;
    RETURN b;
END $$;

-- The leader side of a follower's fetch: record the follower's progress
-- (its fetch offset is its log end; unless recorded already,
-- mq._replica_fetch_look), advance the high watermark, and return
-- records from fetch_offset on.  Below the last gap compaction left (this
-- node's cleaner passes, or the gaps it copied from a leader) the batch
-- lists each record's offset when they are not consecutive, and
-- p_max_records counts records rather than offsets, so that every fetch
-- of a cleaned range holds records.  When the follower is idle
-- (mq._replica_fetch_look), wait up to wait_ms for new records or a new
-- offset commit first (long polling; notify.c wakes the wait).
CREATE FUNCTION mq.replica_fetch(topic text, partition integer, leader_epoch integer,
                                 replica_id integer, fetch_offset bigint,
                                 max_records integer DEFAULT 1000, max_wait_ms integer DEFAULT 500,
                                 offsets_version bigint DEFAULT NULL)
    RETURNS mq.replica_batch
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL, not SQL, for its cached plan (mq._replica_isr_min says why)
    RETURN mq._replica_fetch(topic, partition, leader_epoch, replica_id, fetch_offset, max_records,
                             max_wait_ms, offsets_version, NULL);
END $$;

-- mq.replica_fetch_many's look at every partition (mq._replica_fetch_look,
-- reads only), or what the backend remembers of one found idle whose
-- change counter has not moved since (replica_fetch_cache.c): element k
-- of each array out is partition k's; a partition
-- the look refuses has its error in err_state and err_message, and is not
-- idle.
-- recorded_at: when the partition's progress was last recorded (its last
-- fetch); it is due again a wait later, so that an idle follower's
-- progress is recorded as often as a single long poll records it.
-- counters: each partition's
-- change counter read before it was looked at (or remembered), for the
-- wait (mq._replica_wait_any) to look only at those that moved since.
-- recorded: the partition has news at progress recorded already
-- (mq._replica_fetch_look), so its fetch records none.
-- Every array out has one element per partition, from 1: a fetch of
-- many partitions walks them side by side (unnest), not by subscript.
CREATE FUNCTION mq._replica_fetch_looks(p_replica_id integer, p_topics text[], p_partitions integer[],
                                        p_epochs integer[], p_offsets bigint[], p_ovs bigint[],
                                        p_wait_ms integer,
                                        OUT ids integer[], OUT idle boolean[], OUT recorded_at timestamptz[],
                                        OUT ov bigint[], OUT err_state text[],
                                        OUT err_message text[], OUT counters bigint[],
                                        OUT recorded boolean[])
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer := cardinality(p_topics);
    v_ovs bigint[] := coalesce(p_ovs, array_fill(NULL::bigint, ARRAY[v_n]));
    r record := mq._replica_fetch_recall(p_replica_id, p_topics, p_partitions, p_epochs, p_offsets, v_ovs);
    l record;
    k integer;
    v_state text;
    v_msg text;
BEGIN
    -- the known ones (idle at the last look, nothing changed since) as
    -- remembered, set-based; only the others are looked at, so a session
    -- of 256 partitions with news on one costs one look, not a loop of
    -- 256.  A refused look leaves its partition as recalled: not idle, no
    -- offsets version, no time recorded.
    ids := r.ids;
    counters := r.counters;
    idle := r.known;
    ov := r.ov;
    recorded_at := r.recorded_at;
    recorded := array_fill(false, ARRAY[v_n]);
    err_state := array_fill(NULL::text, ARRAY[v_n]);
    err_message := err_state;
    FOREACH k IN ARRAY array_positions(r.known, false) LOOP
        BEGIN
            ids[k] := coalesce(ids[k], mq._topic_id(p_topics[k]));
            l := mq._replica_fetch_look(p_topics[k], ids[k], p_partitions[k], p_epochs[k], p_replica_id,
                                        p_offsets[k], p_ovs[k], p_wait_ms);
            idle[k] := l.idle;
            recorded_at[k] := (l.g).last_fetch_at;
            ov[k] := l.ov;
            recorded[k] := l.recorded;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            err_state[k] := v_state;
            err_message[k] := v_msg;
        END;
    END LOOP;
    PERFORM mq._replica_fetch_remember(p_replica_id, ids, p_partitions, p_epochs, p_offsets, v_ovs,
                                       r.counters, idle, ov, recorded_at);
END $$;

-- The answers of idle partitions whose progress is due (p_ks, indexes
-- into the other arrays, as mq.replica_fetch_many has them), in one
-- statement: each follower's progress row is stamped (fetched now, caught
-- up now, at the same log end) and its answer is the partition's header
-- alone, which a follower that holds it appends nothing for
-- (broker/mq-broker/follower.c, brings_nothing).  It is what
-- mq.replica_fetch would record and answer for such a partition without
-- its work per partition: no records to read, no offsets to ship, and a
-- high watermark that cannot move (it is at the follower's log end
-- already).  A partition that stopped being so since it was looked at (a
-- record, another epoch, retention past its offset, a high watermark
-- behind the log end, another progress) has no row: the caller fetches it
-- as usual.  The caller holds the partitions' progress locks, and tells
-- the backend's memory of looks when their progress was recorded
-- (stamped_at: mq._replica_fetch_restamp).
CREATE FUNCTION mq._replica_fetch_refresh(p_replica_id integer, p_ids integer[], p_partitions integer[],
                                          p_epochs integer[], p_offsets bigint[], p_ovs bigint[],
                                          p_ks integer[])
    RETURNS TABLE (k integer, batch mq.replica_batch, stamped_at timestamptz)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    x record;
BEGIN
    FOR x IN
        WITH c AS (
            SELECT q.k AS ck, st.topic_id, st.partition, st.leader_epoch, st.high_watermark,
                   st.log_start_offset, p_offsets[q.k] AS o, p_ovs[q.k] AS ov
              FROM unnest(p_ks) AS q(k)
              JOIN mq.partition_state st
                ON st.topic_id OPERATOR(pg_catalog.=) p_ids[q.k]
               AND st.partition OPERATOR(pg_catalog.=) p_partitions[q.k]
             WHERE st.role OPERATOR(pg_catalog.=) 'leader'
               AND st.leader_epoch OPERATOR(pg_catalog.=) p_epochs[q.k]
               AND st.high_watermark OPERATOR(pg_catalog.=) p_offsets[q.k]
               AND st.log_start_offset OPERATOR(pg_catalog.<=) p_offsets[q.k]
               AND mq._log_end_offset(st.topic_id, st.partition) OPERATOR(pg_catalog.=) p_offsets[q.k]
        ), t AS (SELECT clock_timestamp() AS now)
        UPDATE mq.replica_progress r
           SET last_fetch_at = t.now, caught_up_at = t.now, last_fetch_leader_leo = c.o
          FROM c, t
         WHERE r.topic_id OPERATOR(pg_catalog.=) c.topic_id
           AND r.partition OPERATOR(pg_catalog.=) c.partition
           AND r.replica_id OPERATOR(pg_catalog.=) p_replica_id
           AND r.leader_epoch OPERATOR(pg_catalog.=) c.leader_epoch
           AND r.log_end_offset OPERATOR(pg_catalog.=) c.o
           AND r.offsets_version IS NOT DISTINCT FROM c.ov
        RETURNING c.ck, c.o, c.high_watermark, c.ov, c.log_start_offset, t.now
    LOOP
        k := x.ck;
        stamped_at := x.now;
        batch := NULL;
        batch.base_offset := x.o;
        batch.log_end_offset := x.o;
        batch.high_watermark := x.high_watermark;
        batch.offsets_version := x.ov;
        batch.log_start_offset := x.log_start_offset;
        RETURN NEXT;
    END LOOP;
END $$;

-- The idle partitions p_ks (as mq._replica_fetch_refresh has them) that
-- it did not answer, looked at again (mq._replica_fetch_look): each was
-- remembered idle, and has changed since, or its topic was dropped, which
-- its look refuses (MQ006); a row per one refused, as
-- mq._replica_fetch_looks keeps it.  A look that passes holds the
-- partition's segment tables, so its topic stays until the fetch commits.
CREATE FUNCTION mq._replica_fetch_relook(p_replica_id integer, p_topics text[], p_ids integer[],
                                         p_partitions integer[], p_epochs integer[], p_offsets bigint[],
                                         p_ovs bigint[], p_wait_ms integer, p_ks integer[])
    RETURNS TABLE (k integer, err_state text, err_message text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    FOREACH k IN ARRAY p_ks LOOP
        BEGIN
            PERFORM mq._replica_fetch_look(p_topics[k], p_ids[k], p_partitions[k], p_epochs[k], p_replica_id,
                                           p_offsets[k], p_ovs[k], p_wait_ms);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_message = MESSAGE_TEXT;
            RETURN NEXT;
        END;
    END LOOP;
END $$;

-- The leader side of a follower's fetch of many partitions at once: one
-- statement, and one connection, per leader's node and follower, as
-- Kafka's replica fetcher (broker/mq-broker/fetch_session.c).  Element k
-- of the arrays are mq.replica_fetch's arguments for partition k.  When
-- max_wait_ms is positive and every partition is idle
-- (mq._replica_fetch_look), it waits until any of them has records or
-- committed offsets to ship (mq._replica_wait_any) or the earliest one's
-- progress is due, and looks again.  A new high watermark alone does not
-- end the wait: the follower hears of it with its next records or its
-- progress, as Kafka's leader answers followers when no replica selector
-- lets consumers read from them (KIP-392).  Then it fetches, without a
-- wait, each partition that is not idle or whose progress is due (when
-- every one is idle, due within half a wait, so that a session's idle
-- partitions fall into step, and one statement records them all, as each
-- Kafka fetch records every partition of its session; a fetch with news
-- takes only those due, or under load each idle partition's progress was
-- recorded twice a wait), or each one when max_wait_ms is 0, in the
-- order given, until the batches hold 10 x max_records records (the
-- others wait for the next call, whose order the caller rotates); the
-- idle ones among them are answered together
-- (mq._replica_fetch_refresh).  A partition with news at progress
-- recorded already records none (mq._replica_fetch_look, as a
-- single partition's long poll that news woke).  The progress locks of the
-- partitions whose progress it records are taken first, in one order
-- (topic id, partition): two followers' fetches of the same partitions in
-- different orders would otherwise deadlock.  A row per partition fetched
-- (k, its batch), and per partition the look refused (k, its SQLSTATE and
-- message); no row for the others.
CREATE FUNCTION mq.replica_fetch_many(replica_id integer, topics text[], partitions integer[],
                                      leader_epochs integer[], fetch_offsets bigint[],
                                      offsets_versions bigint[], max_records integer DEFAULT 1000,
                                      max_wait_ms integer DEFAULT 500)
    RETURNS TABLE (i integer, batch mq.replica_batch, sqlstate text, message text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n integer := coalesce(cardinality(topics), 0);
    s record;
    v_wait_iv interval := make_interval(secs => max_wait_ms / 1000.0);
    v_wait double precision;
    v_rows integer[];
    v_take integer[];
    v_idle integer[];
    v_fresh mq.replica_batch[];
    v_stamped timestamptz;
    r record;
    v_k integer;
    v_records bigint := 0;
    v_ahead interval := interval '0';
    v_cut timestamptz;
BEGIN
    IF n > 10000 OR coalesce(cardinality(partitions), 0) <> n OR coalesce(cardinality(leader_epochs), 0) <> n
       OR coalesce(cardinality(fetch_offsets), 0) <> n
       OR coalesce(cardinality(offsets_versions), n) <> n
       OR replica_id IS NULL OR array_position(topics, NULL) IS NOT NULL
       OR array_position(partitions, NULL) IS NOT NULL
       OR array_position(leader_epochs, NULL) IS NOT NULL OR array_position(fetch_offsets, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'replica_fetch_many needs a replica and arrays of one length without nulls, at most 10000 partitions'
            USING ERRCODE = 'MQ010';
    END IF;
    s := mq._replica_fetch_looks(replica_id, topics, partitions, leader_epochs, fetch_offsets,
                                 offsets_versions, max_wait_ms);
    IF max_wait_ms > 0 AND n > 0 AND false <> ALL (s.idle) THEN
        SELECT least(max_wait_ms, 1000 * extract(epoch FROM min(a) + v_wait_iv - clock_timestamp()))
          INTO v_wait FROM unnest(s.recorded_at) a;
        IF v_wait > 0 THEN
            PERFORM mq._replica_wait_any(s.ids, partitions, fetch_offsets, v_wait::integer, s.ov, s.counters);
        END IF;
        s := mq._replica_fetch_looks(replica_id, topics, partitions, leader_epochs, fetch_offsets,
                                     offsets_versions, max_wait_ms);
    END IF;
    -- what to fetch: not idle, or due, its progress recorded a wait ago
    -- (within half a wait when every one is idle; every one without a
    -- wait); v_rows adds the refused ones, each a row of the answer
    IF n > 0 AND false <> ALL (s.idle) THEN
        v_ahead := make_interval(secs => max_wait_ms / 2000.0);
    END IF;
    v_cut := clock_timestamp() + v_ahead - v_wait_iv;
    v_rows := ARRAY(SELECT t.k FROM unnest(s.err_state, s.idle, s.recorded_at) WITH ORDINALITY AS t(e, idle, at, k)
                     WHERE t.e IS NOT NULL OR NOT (max_wait_ms > 0 AND t.idle AND t.at > v_cut)
                     ORDER BY t.k);
    v_take := ARRAY(SELECT k FROM unnest(v_rows) k WHERE s.err_state[k] IS NULL);
    -- the progress locks of those whose progress it records, in one order
    -- first, as another follower's fetch of the same partitions takes
    -- them (each is held to the end)
    PERFORM mq._replica_progress_lock(s.ids[k], partitions[k])
       FROM unnest(v_take) k WHERE NOT s.recorded[k] ORDER BY s.ids[k], partitions[k];
    v_idle := ARRAY(SELECT k FROM unnest(v_take) k WHERE s.idle[k]);
    IF cardinality(v_idle) > 0 THEN
        FOR r IN SELECT * FROM mq._replica_fetch_refresh(replica_id, s.ids, partitions, leader_epochs,
                                                         fetch_offsets, offsets_versions, v_idle) LOOP
            v_fresh[r.k] := r.batch;
            v_stamped := r.stamped_at;
        END LOOP;
        IF v_stamped IS NOT NULL THEN
            PERFORM mq._replica_fetch_restamp(replica_id,
                                              ARRAY(SELECT s.ids[k] FROM unnest(v_idle) k WHERE (v_fresh[k]).base_offset IS NOT NULL),
                                              ARRAY(SELECT partitions[k] FROM unnest(v_idle) k WHERE (v_fresh[k]).base_offset IS NOT NULL),
                                              v_stamped);
        END IF;
        -- remembered idle ones the refresh did not answer are looked at
        -- again (refused alone if their topic was dropped since), fetched
        -- in full below, and looked at again next time
        v_idle := ARRAY(SELECT k FROM unnest(v_idle) k WHERE (v_fresh[k]).base_offset IS NULL);
        PERFORM mq._replica_fetch_forget(replica_id, ARRAY(SELECT s.ids[k] FROM unnest(v_idle) k),
                                         ARRAY(SELECT partitions[k] FROM unnest(v_idle) k));
        FOR r IN SELECT * FROM mq._replica_fetch_relook(replica_id, topics, s.ids, partitions, leader_epochs,
                                                        fetch_offsets, offsets_versions, max_wait_ms, v_idle) LOOP
            s.err_state[r.k] := r.err_state;
            s.err_message[r.k] := r.err_message;
        END LOOP;
    END IF;
    -- a row for each partition taken or refused, in the order given; none
    -- for the others (nothing to tell, nor their progress to record)
    FOREACH v_k IN ARRAY v_rows LOOP
        i := v_k;
        batch := v_fresh[v_k];
        sqlstate := s.err_state[v_k];
        message := s.err_message[v_k];
        IF sqlstate IS NULL AND batch IS NULL THEN
            CONTINUE WHEN v_records >= 10::bigint * max_records;
            batch := mq._replica_fetch(topics[v_k], partitions[v_k], leader_epochs[v_k], replica_id,
                                       fetch_offsets[v_k], max_records, 0, offsets_versions[v_k],
                                       NOT s.recorded[v_k]);
            v_records := v_records + coalesce(cardinality(batch.vals), 0);
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- A follower broker's fetch as it sends it (broker/mq-broker/fetch_session.c):
-- mq.replica_fetch for one partition, mq.replica_fetch_many for more, its
-- answer returned as arrays after a COMMIT (element k of each: the
-- partition's index into the arguments, its batch, its SQLSTATE and
-- message).  A procedure because a statement's rows go out before its
-- commit: the fetch holds its partitions' progress locks, and the high
-- watermark's row once it moves it, to its commit, so a follower that
-- stopped reading (paused, or behind a slow link) an answer larger than
-- its socket's buffer held them, and every other follower's fetch of those
-- partitions waited behind it: the high watermark stood still and acks=all
-- with it, where Kafka only drops such a follower from the ISR.  Call it
-- outside a transaction block.
CREATE PROCEDURE mq.replica_fetch_commit(replica_id integer, topics text[], partitions integer[],
                                         leader_epochs integer[], fetch_offsets bigint[],
                                         offsets_versions bigint[], max_records integer, max_wait_ms integer,
                                         INOUT ks integer[] DEFAULT NULL,
                                         INOUT batches mq.replica_batch[] DEFAULT NULL,
                                         INOUT sqlstates text[] DEFAULT NULL, INOUT messages text[] DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_catalog.cardinality(topics) OPERATOR(pg_catalog.=) 1 THEN
        ks := ARRAY[1];
        batches := ARRAY[mq.replica_fetch(topics[1], partitions[1], leader_epochs[1], replica_id,
                                          fetch_offsets[1], max_records, max_wait_ms, offsets_versions[1])];
    ELSE
        SELECT pg_catalog.array_agg(f.i), pg_catalog.array_agg(f.batch),
               pg_catalog.array_agg(f.sqlstate), pg_catalog.array_agg(f.message)
          INTO ks, batches, sqlstates, messages
          FROM mq.replica_fetch_many(replica_id, topics, partitions, leader_epochs, fetch_offsets,
                                     offsets_versions, max_records, max_wait_ms) f;
    END IF;
    COMMIT;
END $$;

COMMENT ON FUNCTION mq._replica_fetch_look(text, integer, integer, integer, integer, bigint, bigint, integer) IS
    'internal (replication): what a follower''s fetch finds before it reads (epoch check, log end, progress, idle, progress recorded)';
COMMENT ON FUNCTION mq._replica_fetch_looks(integer, text[], integer[], integer[], bigint[], bigint[], integer) IS
    'internal (replication): replica_fetch_many''s look at each partition, errors kept per partition';
COMMENT ON FUNCTION mq._replica_fetch_relook(integer, text[], integer[], integer[], integer[], bigint[], bigint[], integer, integer[]) IS
    'internal (replication): replica_fetch_many''s look again at idle partitions its refresh did not answer';
COMMENT ON FUNCTION mq._replica_fetch_refresh(integer, integer[], integer[], integer[], bigint[], bigint[], integer[]) IS
    'internal (replication): replica_fetch_many''s answers of idle partitions whose progress is due, in one statement';
COMMENT ON FUNCTION mq.replica_fetch_many(integer, text[], integer[], integer[], bigint[], bigint[], integer, integer) IS
    'broker API: a follower''s fetch of many partitions from this leader''s node at once (one long poll)';
COMMENT ON PROCEDURE mq.replica_fetch_commit(integer, text[], integer[], integer[], bigint[], bigint[], integer, integer, integer[], mq.replica_batch[], text[], text[]) IS
    'broker API, on the leader: a follower''s fetch (replica_fetch, replica_fetch_many) committed before its answer is sent';
