-------------------------------------------------------------------------------
-- Replication, data node side: a partition's role on this node (leader,
-- follower) by epoch, resigning, the leader's ISR and its view of each
-- follower's progress (the tables and the epoch fence: 60_replica.sql).
-------------------------------------------------------------------------------

-- Make this node the leader of a partition in a new epoch (the broker won
-- the election on the coordinator).  Waits for in-flight produces, records
-- the epoch's start offset, forgets follower progress of older epochs.
-- Returns the log end offset.
CREATE FUNCTION mq.replica_become_leader(topic text, partition integer, leader_epoch integer,
                                         broker_id integer, replicas integer[], isr integer[],
                                         leader_name text DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_broker_id ALIAS FOR $4;
    p_replicas ALIAS FOR $5;
    p_isr ALIAS FOR $6;
    p_leader_name ALIAS FOR $7;
    v_id integer := mq._topic_id(p_topic);
    st mq.partition_state;
    v_leo bigint;
BEGIN
    PERFORM mq._replica_lock(v_id, p_partition);
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = v_id AND partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', p_partition, p_topic USING ERRCODE = 'MQ006';
    END IF;
    IF p_leader_epoch < st.leader_epoch OR (p_leader_epoch = st.leader_epoch AND st.role = 'follower') THEN
        RAISE EXCEPTION 'fenced leader epoch % for "%" partition %: this node is at epoch % as %',
            p_leader_epoch, p_topic, p_partition, st.leader_epoch, st.role
            USING ERRCODE = 'MQ024', HINT = 'Every election must bump the leader epoch.';
    END IF;
    v_leo := mq._log_end_offset(v_id, p_partition);
    UPDATE mq.partition_state
       SET role = 'leader', leader_epoch = p_leader_epoch,
           high_watermark = coalesce(high_watermark, 0)
     WHERE topic_id = v_id AND partition = p_partition;
    -- KIP-101: the new epoch starts at the log end
    INSERT INTO mq.leader_epoch_history (topic_id, partition, leader_epoch, start_offset)
    VALUES (v_id, p_partition, p_leader_epoch, v_leo) ON CONFLICT DO NOTHING;
    PERFORM mq._replica_set_info(v_id, p_partition, p_broker_id, p_leader_name, p_replicas, p_isr);
    IF p_leader_epoch <> st.leader_epoch THEN
        DELETE FROM mq.replica_progress WHERE topic_id = v_id AND partition = p_partition;
    END IF;
    -- this epoch's committed-offsets versions: followers copy them afresh
    INSERT INTO mq.offset_version AS v (topic_id, partition, version)
    VALUES (v_id, p_partition, p_leader_epoch::bigint << 32)
    ON CONFLICT (topic_id, partition) DO UPDATE SET version = EXCLUDED.version
     WHERE v.version < EXCLUDED.version;
    IF st.high_watermark IS NULL THEN
        PERFORM mq._invalidate(st.relid);   -- cached "replicated" flag changes
    END IF;
    PERFORM mq._replica_advance_hwm(v_id, p_partition);
    PERFORM mq._replica_notify(v_id, p_partition);
    RETURN v_leo;
END $$;

-- Make this node a follower in an epoch (the same epoch resigns a
-- leadership: produce is refused from then on, and acks=all waiters of
-- the epoch fail).  The broker then truncates (KIP-101) and fetches.
-- Returns the log end offset.
CREATE FUNCTION mq.replica_become_follower(topic text, partition integer, leader_epoch integer,
                                           leader_id integer, leader_name text DEFAULT NULL,
                                           replicas integer[] DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_leader_id ALIAS FOR $4;
    p_leader_name ALIAS FOR $5;
    p_replicas ALIAS FOR $6;
    v_id integer := mq._topic_id(p_topic);
    st mq.partition_state;
BEGIN
    PERFORM mq._replica_lock(v_id, p_partition);
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = v_id AND partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', p_partition, p_topic USING ERRCODE = 'MQ006';
    END IF;
    IF p_leader_epoch < st.leader_epoch THEN
        RAISE EXCEPTION 'fenced leader epoch % for "%" partition %: this node is at epoch %',
            p_leader_epoch, p_topic, p_partition, st.leader_epoch USING ERRCODE = 'MQ024';
    END IF;
    UPDATE mq.partition_state
       SET role = 'follower', leader_epoch = p_leader_epoch,
           high_watermark = coalesce(high_watermark, 0)
     WHERE topic_id = v_id AND partition = p_partition;
    PERFORM mq._replica_set_info(v_id, p_partition, p_leader_id, p_leader_name, p_replicas, NULL);
    DELETE FROM mq.replica_progress WHERE topic_id = v_id AND partition = p_partition;
    IF st.high_watermark IS NULL THEN
        PERFORM mq._invalidate(st.relid);
    END IF;
    PERFORM mq._replica_notify(v_id, p_partition);
    RETURN mq._log_end_offset(v_id, p_partition);
END $$;

-- Give up every leadership on this node at once, keeping the epochs: what
-- a broker does when it starts, and when it loses its coordinator session.
-- Returns how many partitions it resigned.
CREATE FUNCTION mq.replica_resign_all() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    FOR r IN SELECT p.topic_id, p.partition, p.leader_epoch, t.topic_name
               FROM mq.partition_state p JOIN mq.topic t USING (topic_id)
              WHERE p.role = 'leader' ORDER BY 1, 2 LOOP
        PERFORM mq.replica_become_follower(r.topic_name, r.partition, r.leader_epoch, NULL, NULL);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

-- On the leader: the local ISR.  A shrink is applied here after the
-- coordinator accepted it, an expansion before (so this is the maximal
-- ISR, which the high watermark is computed over).
CREATE FUNCTION mq.replica_set_isr(topic text, partition integer, leader_epoch integer,
                                   isr integer[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_isr ALIAS FOR $4;
    v_id integer := mq._topic_id(p_topic);
    rp mq.replica_partition;
    v_behind integer[];
BEGIN
    PERFORM mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
    -- Waits for fetches moving the high watermark with the old ISR
    -- (mq._replica_advance_hwm); any fetch after this commits computes
    -- it with the new members, so it cannot pass their log end.
    SELECT * INTO rp FROM mq.replica_partition
     WHERE topic_id = v_id AND partition = p_partition FOR UPDATE;
    -- A replica joins the node's ISR (the maximal ISR the high watermark is
    -- computed over) only once it reached the log end in this epoch and
    -- holds the group offsets the ISR acknowledged.  It may still be below
    -- the high watermark, which then waits for it; the broker adds it to
    -- the coordinator's ISR, which elections use, only once a later read
    -- shows it in this ISR holding the high watermark.
    SELECT array_agg(i.id ORDER BY i.id) INTO v_behind
      FROM unnest(p_isr) AS i(id)
     WHERE NOT i.id = ANY (rp.isr) AND i.id IS DISTINCT FROM rp.leader_id
       AND NOT EXISTS (SELECT 1 FROM mq.replica_progress g
                        WHERE g.topic_id = v_id AND g.partition = p_partition AND g.replica_id = i.id
                          AND g.leader_epoch = p_leader_epoch AND g.offsets_caught_up
                          AND g.caught_up_at IS NOT NULL);
    IF v_behind IS NOT NULL THEN
        RAISE EXCEPTION 'replicas % of topic "%" partition % have not caught up in leader epoch %',
            v_behind, p_topic, p_partition, p_leader_epoch
            USING ERRCODE = 'MQ028', HINT = 'The broker adds them once their fetches reach the log end.';
    END IF;
    UPDATE mq.replica_partition SET isr = p_isr, updated_at = now()
     WHERE topic_id = v_id AND partition = p_partition;
    PERFORM mq._replica_notify(v_id, p_partition);     -- acks=all waiters re-check the ISR size
    RETURN mq._replica_advance_hwm(v_id, p_partition);
END $$;

-- A leader's report of each follower of a partition, the one source of
-- the rows of mq.replica_leader_state and mq.replica_leader_states, given
-- the partition's high watermark, log end, epoch start and replica row.
-- lag_ms is the time since the follower last caught up (since the replica
-- row last changed, the election or an ISR change, when it never did);
-- caught_up says it did in this
-- epoch, with the group offsets the ISR acknowledged, as
-- mq.replica_set_isr requires of a joining replica.  A follower outside
-- the ISR whose committed offsets have not caught up is reported below the
-- high watermark, so that its broker does not add it yet: every ISR
-- member must hold what mq.await_commit acknowledged.  SQL without a SET
-- clause or SECURITY DEFINER and not volatile, so that it is inlined into
-- its callers (both pin search_path; every name here is qualified).
CREATE FUNCTION mq._replica_follower_rows(p_topic_id integer, p_partition integer, p_epoch integer,
                                          p_hwm bigint, p_leo bigint, p_start bigint, p_isr integer[],
                                          p_replicas integer[], p_leader integer, p_updated timestamptz)
    RETURNS TABLE (replica_id integer, in_isr boolean, log_end_offset bigint, lag_ms bigint,
                   leader_log_end_offset bigint, high_watermark bigint, epoch_start_offset bigint,
                   caught_up boolean)
LANGUAGE sql STABLE AS $$
    SELECT r.id, r.id OPERATOR(pg_catalog.=) ANY (p_isr),
           CASE WHEN r.id OPERATOR(pg_catalog.=) ANY (p_isr) OR g.offsets_caught_up THEN g.log_end_offset
                ELSE least(g.log_end_offset, p_hwm OPERATOR(pg_catalog.-) 1) END,
           (extract(epoch FROM pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) coalesce(g.caught_up_at, p_updated))
              OPERATOR(pg_catalog.*) 1000)::bigint,
           p_leo, p_hwm, p_start,
           coalesce(g.leader_epoch OPERATOR(pg_catalog.=) p_epoch AND g.caught_up_at IS NOT NULL
                    AND g.offsets_caught_up, false)
      FROM pg_catalog.unnest(p_replicas) AS r(id)
      LEFT JOIN mq.replica_progress g
        ON g.topic_id OPERATOR(pg_catalog.=) p_topic_id AND g.partition OPERATOR(pg_catalog.=) p_partition
       AND g.replica_id OPERATOR(pg_catalog.=) r.id AND g.leader_epoch OPERATOR(pg_catalog.=) p_epoch
     WHERE r.id IS DISTINCT FROM p_leader;
$$;

-- On the leader, for its broker's ISR decisions: each follower's progress
-- (mq._replica_follower_rows).  Also advances the high watermark, which
-- matters when the ISR is the leader alone.
CREATE FUNCTION mq.replica_leader_state(topic text, partition integer, leader_epoch integer)
    RETURNS TABLE (replica_id integer, in_isr boolean, log_end_offset bigint, lag_ms bigint,
                   leader_log_end_offset bigint, high_watermark bigint, epoch_start_offset bigint,
                   caught_up boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    v_id integer := mq._topic_id(p_topic);
    rp mq.replica_partition;
    v_hwm bigint;
    v_leo bigint;
    v_start bigint;
BEGIN
    PERFORM mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
    v_hwm := mq._replica_advance_hwm(v_id, p_partition);
    v_leo := mq._log_end_offset(v_id, p_partition);
    SELECT * INTO rp FROM mq.replica_partition r WHERE r.topic_id = v_id AND r.partition = p_partition;
    SELECT h.start_offset INTO v_start FROM mq.leader_epoch_history h
     WHERE h.topic_id = v_id AND h.partition = p_partition AND h.leader_epoch = p_leader_epoch;
    RETURN QUERY
    SELECT * FROM mq._replica_follower_rows(v_id, p_partition, p_leader_epoch, v_hwm, v_leo, v_start,
                                            rp.isr, rp.replicas, rp.leader_id, rp.updated_at);
END $$;

-- The same for every partition a broker leads on this node, in one
-- statement per tick (docs/design.md, "One leader-state read per tick").
-- A partition is quiet when this node leads it in the given epoch and
-- its high watermark would not move (the unlocked look with which
-- mq._replica_advance_hwm starts): its rows are those
-- mq.replica_leader_state would return, or one row with replica_id NULL
-- when it has no followers.  Any other partition gets one row with quiet
-- false, and the caller calls mq.replica_leader_state for it, which
-- advances the high watermark or refuses the epoch in its own
-- transaction.  It only reads, so it holds no lock that a follower's
-- fetch could wait for.
CREATE FUNCTION mq.replica_leader_states(topics text[], partitions integer[], leader_epochs integer[])
    RETURNS TABLE (i integer, quiet boolean, replica_id integer, in_isr boolean, log_end_offset bigint,
                   lag_ms bigint, leader_log_end_offset bigint, high_watermark bigint,
                   epoch_start_offset bigint, caught_up boolean)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH req AS (
        SELECT a.i::integer AS i, t.topic_id, a.partition, a.epoch
          FROM unnest($1, $2, $3) WITH ORDINALITY AS a(topic, partition, epoch, i)
          LEFT JOIN mq.topic t ON t.topic_name OPERATOR(pg_catalog.=) a.topic),
    led AS MATERIALIZED (       -- each log end read once: quiet uses it thrice
        SELECT q.i, q.topic_id, q.partition, q.epoch, st.high_watermark AS hwm, rp.isr, rp.replicas,
               rp.leader_id, rp.updated_at, mq._log_end_offset(q.topic_id, q.partition) AS leo
          FROM req q
          JOIN mq.partition_state st
            ON st.topic_id OPERATOR(pg_catalog.=) q.topic_id AND st.partition OPERATOR(pg_catalog.=) q.partition
          JOIN mq.replica_partition rp
            ON rp.topic_id OPERATOR(pg_catalog.=) q.topic_id AND rp.partition OPERATOR(pg_catalog.=) q.partition
         WHERE st.role OPERATOR(pg_catalog.=) 'leader' AND st.leader_epoch OPERATOR(pg_catalog.=) q.epoch),
    quiet AS (      -- mq._replica_isr_min's minimum, set-based
        SELECT l.* FROM led l
         WHERE (SELECT coalesce(least(l.leo, min(CASE WHEN g.leader_epoch OPERATOR(pg_catalog.=) l.epoch
                                                      THEN g.log_end_offset ELSE -1 END)), l.leo)
                  FROM unnest(l.isr) AS m(id)
                  LEFT JOIN mq.replica_progress g
                    ON g.topic_id OPERATOR(pg_catalog.=) l.topic_id
                   AND g.partition OPERATOR(pg_catalog.=) l.partition
                   AND g.replica_id OPERATOR(pg_catalog.=) m.id
                 WHERE m.id IS DISTINCT FROM l.leader_id) OPERATOR(pg_catalog.<=) coalesce(l.hwm, -1))
    -- the partition's own columns from q: a partition without followers
    -- still reports its log end and high watermark
    SELECT q.i, true, f.replica_id, f.in_isr, f.log_end_offset, f.lag_ms, q.leo, q.hwm, h.start_offset,
           f.caught_up
      FROM quiet q
      LEFT JOIN mq.leader_epoch_history h
        ON h.topic_id OPERATOR(pg_catalog.=) q.topic_id AND h.partition OPERATOR(pg_catalog.=) q.partition
       AND h.leader_epoch OPERATOR(pg_catalog.=) q.epoch
      LEFT JOIN LATERAL mq._replica_follower_rows(q.topic_id, q.partition, q.epoch, q.hwm, q.leo, h.start_offset,
                                                  q.isr, q.replicas, q.leader_id, q.updated_at) f ON true
    UNION ALL
    SELECT q.i, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM req q WHERE NOT EXISTS (SELECT 1 FROM quiet w WHERE w.i OPERATOR(pg_catalog.=) q.i)
     ORDER BY 1, 3;
$$;
