-------------------------------------------------------------------------------
-- Replication: the data node's replica API (docs/replication.md).
--
-- The broker of each node calls these; every call names the caller's
-- leader epoch and is refused when it is not the node's (MQ024 when older,
-- MQ025 when newer).  Roles and epochs are set only by become_leader /
-- become_follower, under the partition's produce lock, so that an append
-- either finishes before a demotion or sees it.
--
-- Node-local state next to mq.partition_state (role, leader_epoch,
-- high_watermark):
--   mq.replica_partition   leader id and address, replicas, ISR (on the
--                          leader: the maximal ISR, see set_isr)
--   mq.leader_epoch_history  (epoch, start offset) pairs: KIP-101's
--                          leader epoch cache
--   mq.replica_progress    on the leader: each follower's log end offset
--                          and when it last caught up (Kafka's rule), and
--                          the committed-offsets version it applied
--   mq.offset_version      per partition: the version of its committed
--                          group offsets (mq.consumer_offset), bumped by
--                          every commit on the leader; followers copy the
--                          offsets with the version (docs/replication.md,
--                          "Committed offsets")
-------------------------------------------------------------------------------

CREATE TABLE mq.replica_partition (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    leader_id    integer,             -- broker id of the leader, NULL while unknown
    leader_name  text,                -- its node's address, for not_leader messages
    replicas     integer[] NOT NULL DEFAULT '{}',
    isr          integer[] NOT NULL DEFAULT '{}',
    -- false: this node holds no replica of the partition (its topic is
    -- replicated here only in part; src/sql/66_placement.sql)
    hosted       boolean NOT NULL DEFAULT true,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition) REFERENCES mq.partition_state ON DELETE CASCADE
);

CREATE TABLE mq.leader_epoch_history (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    leader_epoch integer NOT NULL,
    start_offset bigint NOT NULL,
    PRIMARY KEY (topic_id, partition, leader_epoch),
    FOREIGN KEY (topic_id, partition) REFERENCES mq.partition_state ON DELETE CASCADE
);

CREATE TABLE mq.replica_progress (
    topic_id              integer NOT NULL,
    partition             integer NOT NULL,
    replica_id            integer NOT NULL,
    leader_epoch          integer NOT NULL,
    log_end_offset        bigint NOT NULL,
    last_fetch_at         timestamptz NOT NULL,
    last_fetch_leader_leo bigint NOT NULL,
    caught_up_at          timestamptz,
    offsets_version       bigint,       -- the committed-offsets version the follower applied
    offsets_caught_up     boolean NOT NULL DEFAULT false,   -- it had what the ISR acknowledged
    PRIMARY KEY (topic_id, partition, replica_id),
    FOREIGN KEY (topic_id, partition) REFERENCES mq.partition_state ON DELETE CASCADE
);

-- Leader epoch E numbers its versions from E * 2^32 on, so versions of
-- different leaders never compare equal.
CREATE TABLE mq.offset_version (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    version      bigint NOT NULL,
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition) REFERENCES mq.partition_state ON DELETE CASCADE
);

SELECT pg_catalog.pg_extension_config_dump('mq.offset_version', '');
SELECT pg_catalog.pg_extension_config_dump('mq.replica_partition', '');
SELECT pg_catalog.pg_extension_config_dump('mq.leader_epoch_history', '');

-- What a follower fetches: records from base_offset on (at consecutive
-- offsets, or at the offsets listed in offsets where compaction left
-- gaps), with the producer batches that end among them, and the leader's
-- epoch history from base_offset on.  Also the leader's log end and high
-- watermark, and its committed-offsets version with (when the follower's
-- differs) all the partition's committed group offsets.  The broker reads the first four
-- fields (broker/mq-broker/batch.c).
CREATE TYPE mq.replica_batch AS (
    base_offset      bigint,
    log_end_offset   bigint,
    high_watermark   bigint,
    offsets_version  bigint,
    log_start_offset bigint,
    created_at       timestamptz[],
    keys             bytea[],
    vals             bytea[],
    headers          jsonb[],
    producer_ids     bigint[],
    producer_epochs  integer[],
    sequences        integer[],
    batch_producer   bigint[],
    batch_epoch      integer[],
    batch_first      integer[],
    batch_last       integer[],
    batch_offset     bigint[],
    epochs           integer[],
    epoch_starts     bigint[],
    -- Kafka timestamps, per record: NULL for a LogAppendTime record
    timestamps       timestamptz[],
    -- the committed offsets of every group, when shipped (NULL: unchanged)
    offset_groups    text[],
    offset_next      bigint[],
    offset_metadata  text[],
    offset_committed_at timestamptz[],
    -- each record's offset, only when they are not base_offset,
    -- base_offset + 1, ...: the range has gaps that compaction left
    -- (NULL otherwise, so gapless batches carry nothing more)
    offsets          bigint[]
);

-- The broker attached to this node (one row once a broker has attached).
-- While the attaching session lives it holds an advisory lock; a node that
-- has a row here and whose broker's session is gone no longer leads
-- (leadership.c, mq_replica_check_broker).  Nor does it once the broker's
-- lease has run out: the broker renews it every tick (for
-- session.timeout.ms), so a broker that is paused or stuck while its
-- session lives stops its node leading by the time another broker can be
-- elected.  Delete the row to run a node without its broker again.
CREATE TABLE mq.replica_broker (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    broker_id   integer NOT NULL,
    attached_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz             -- NULL: no lease taken yet
);

CREATE FUNCTION mq._replica_attach_broker() RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_attach_broker' LANGUAGE C;

-- Called by the broker on its node session, after it resigned whatever
-- the node led: the node's leaderships are trusted while this session
-- lives.  Refused while another broker's session is attached.
CREATE FUNCTION mq.replica_attach_broker(p_broker_id integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._replica_attach_broker();
    INSERT INTO mq.replica_broker (broker_id) VALUES (p_broker_id)
    ON CONFLICT (singleton) DO UPDATE SET broker_id = EXCLUDED.broker_id, attached_at = now(),
                                          lease_until = NULL;
END $$;

-- Called by the attached broker every tick: its node leads for p_lease_ms
-- more.  The commit is not flushed (a lease lost in a crash is renewed at
-- the next tick; the node's restart ends the broker's session anyway).
CREATE FUNCTION mq.replica_renew_lease(p_lease_ms integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
        RAISE EXCEPTION 'lease_ms must be positive, not %', p_lease_ms USING ERRCODE = 'MQ010';
    END IF;
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE mq.replica_broker
       SET lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond';
END $$;

CREATE FUNCTION mq._replica_lock(topic_id integer, partition integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_lock' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_notify(topic_id integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_notify' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_wait_records(topic_id integer, partition integer,
                                         fetch_offset bigint, wait_ms integer,
                                         known_hwm bigint, known_offsets_version bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_replica_wait_records' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_await_hwm(topic text, partition integer, target bigint,
                                      leader_epoch integer, min_isr integer, timeout_ms integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_replica_await_hwm' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_append_records(topic text, partition integer, batch mq.replica_batch)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_replica_append_records' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_truncate_records(topic_id integer, partition integer, from_offset bigint)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_replica_truncate_records' LANGUAGE C STRICT;

-- The epoch check of every replica-side call.  want_role is the role the
-- caller expects this node to have ('leader' for fetches from followers,
-- 'follower' for appends and truncation).  Returns the partition's row.
CREATE FUNCTION mq._replica_fence(p_topic_id integer, p_partition integer,
                                  p_epoch integer, p_want_role text)
    RETURNS mq.partition_state
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
    v_topic text;
    v_leader text;
BEGIN
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = p_topic_id AND partition = p_partition;
    SELECT topic_name INTO v_topic FROM mq.topic WHERE topic_id = p_topic_id;
    IF NOT FOUND OR st.topic_id IS NULL THEN
        RAISE EXCEPTION 'partition % of topic id % does not exist', p_partition, p_topic_id
            USING ERRCODE = 'MQ006';
    END IF;
    IF p_epoch < st.leader_epoch THEN
        RAISE EXCEPTION 'fenced leader epoch % for "%" partition %: this node is at epoch %',
            p_epoch, v_topic, p_partition, st.leader_epoch
            USING ERRCODE = 'MQ024',
                  HINT = 'The caller acts on an old election: refresh the partition state from the coordinator.';
    END IF;
    IF p_epoch > st.leader_epoch THEN
        RAISE EXCEPTION 'unknown leader epoch % for "%" partition %: this node is still at epoch %',
            p_epoch, v_topic, p_partition, st.leader_epoch
            USING ERRCODE = 'MQ025',
                  HINT = 'The node''s broker has not applied the election yet: retry shortly.';
    END IF;
    IF st.role <> p_want_role THEN
        IF p_want_role = 'leader' THEN
            SELECT format('broker %s (%s)', r.leader_id, coalesce(r.leader_name, 'address unknown'))
              INTO v_leader FROM mq.replica_partition r
             WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.leader_id IS NOT NULL;
            RAISE EXCEPTION 'this node is not the leader of "%" partition % in epoch %: %',
                v_topic, p_partition, p_epoch, coalesce(v_leader, 'the leader is not known')
                USING ERRCODE = 'MQ020';
        END IF;
        RAISE EXCEPTION 'this node is the % of "%" partition % in epoch %, not a %',
            st.role, v_topic, p_partition, p_epoch, p_want_role
            USING ERRCODE = 'MQ024',
                  HINT = 'A replica that led an epoch cannot follow in the same epoch: a new election is needed.';
    END IF;
    RETURN st;
END $$;

-- High watermark = minimum log end offset over the (maximal) ISR, leader
-- included; it only moves forward.  Followers count with what they fetched
-- in the current epoch only.  Returns the high watermark.
CREATE FUNCTION mq._replica_isr_min(p_topic_id integer, p_partition integer, p_leader_epoch integer,
                                    p_rp mq.replica_partition, p_leo bigint) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- the log end every ISR member holds in this epoch; the leader's own
    -- when the ISR is the leader alone
    SELECT coalesce(least(p_leo, min(CASE WHEN g.leader_epoch = p_leader_epoch
                                          THEN g.log_end_offset ELSE -1 END)), p_leo)
      FROM unnest(p_rp.isr) AS i(replica_id)
      LEFT JOIN mq.replica_progress g
        ON g.topic_id = p_topic_id AND g.partition = p_partition
       AND g.replica_id = i.replica_id
     WHERE i.replica_id IS DISTINCT FROM p_rp.leader_id;
$$;

-- Move the high watermark to what every ISR member holds.  It never moves
-- back (concurrent fetches may compute it in either order), and it is
-- written only under a share lock on the partition's replica row, taken
-- after a first unlocked look says it would move: mq.replica_set_isr
-- locks that row for update before it checks that a joining replica holds
-- the high watermark, so an ISR read before a member joined can never
-- raise the high watermark past that member after its check.
CREATE FUNCTION mq._replica_advance_hwm(p_topic_id integer, p_partition integer)
    RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
    rp mq.replica_partition;
    v_leo bigint := mq._log_end_offset(p_topic_id, p_partition);
    v_new bigint;
BEGIN
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = p_topic_id AND partition = p_partition;
    SELECT * INTO rp FROM mq.replica_partition WHERE topic_id = p_topic_id AND partition = p_partition;
    IF st.role <> 'leader' OR rp.topic_id IS NULL THEN
        RETURN st.high_watermark;
    END IF;
    v_new := mq._replica_isr_min(p_topic_id, p_partition, st.leader_epoch, rp, v_leo);
    IF v_new <= coalesce(st.high_watermark, -1) THEN
        RETURN st.high_watermark;
    END IF;
    SELECT * INTO rp FROM mq.replica_partition
     WHERE topic_id = p_topic_id AND partition = p_partition FOR SHARE;
    v_new := mq._replica_isr_min(p_topic_id, p_partition, st.leader_epoch, rp, v_leo);
    UPDATE mq.partition_state SET high_watermark = v_new
     WHERE topic_id = p_topic_id AND partition = p_partition
       AND coalesce(high_watermark, -1) < v_new;
    IF FOUND THEN
        PERFORM mq._replica_notify(p_topic_id);
        RETURN v_new;
    END IF;
    RETURN (SELECT high_watermark FROM mq.partition_state
             WHERE topic_id = p_topic_id AND partition = p_partition);
END $$;

CREATE FUNCTION mq._replica_set_info(p_topic_id integer, p_partition integer, p_leader integer,
                                     p_leader_name text, p_replicas integer[], p_isr integer[])
    RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO mq.replica_partition AS r (topic_id, partition, leader_id, leader_name, replicas, isr)
    VALUES (p_topic_id, p_partition, p_leader, p_leader_name,
            coalesce(p_replicas, '{}'), coalesce(p_isr, '{}'))
    ON CONFLICT (topic_id, partition) DO UPDATE
       SET leader_id = EXCLUDED.leader_id, leader_name = EXCLUDED.leader_name,
           replicas = CASE WHEN p_replicas IS NULL THEN r.replicas ELSE EXCLUDED.replicas END,
           isr = CASE WHEN p_isr IS NULL THEN r.isr ELSE EXCLUDED.isr END,
           hosted = true, updated_at = now();
$$;

-- Make this node the leader of a partition in a new epoch (the broker won
-- the election on the coordinator).  Waits for in-flight produces, records
-- the epoch's start offset, forgets follower progress of older epochs.
-- Returns the log end offset.
CREATE FUNCTION mq.replica_become_leader(p_topic text, p_partition integer, p_leader_epoch integer,
                                         p_broker_id integer, p_replicas integer[], p_isr integer[],
                                         p_leader_name text DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
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
    PERFORM mq._replica_notify(v_id);
    RETURN v_leo;
END $$;

-- Make this node a follower in an epoch (the same epoch resigns a
-- leadership: produce is refused from then on, and acks=all waiters of
-- the epoch fail).  The broker then truncates (KIP-101) and fetches.
-- Returns the log end offset.
CREATE FUNCTION mq.replica_become_follower(p_topic text, p_partition integer, p_leader_epoch integer,
                                           p_leader_id integer, p_leader_name text DEFAULT NULL,
                                           p_replicas integer[] DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
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
    PERFORM mq._replica_notify(v_id);
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
CREATE FUNCTION mq.replica_set_isr(p_topic text, p_partition integer, p_leader_epoch integer,
                                   p_isr integer[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
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
    PERFORM mq._replica_notify(v_id);     -- acks=all waiters re-check the ISR size
    RETURN mq._replica_advance_hwm(v_id, p_partition);
END $$;

-- On the leader, for its broker's ISR decisions: each follower's progress.
-- lag_ms is the time since the follower last caught up (since the epoch's
-- first fetch when it never did); caught_up says it did in this epoch,
-- with the group offsets the ISR acknowledged, as mq.replica_set_isr
-- requires of a joining replica.  Also advances the high watermark, which
-- matters when the ISR is the leader alone.
CREATE FUNCTION mq.replica_leader_state(p_topic text, p_partition integer, p_leader_epoch integer)
    RETURNS TABLE (replica_id integer, in_isr boolean, log_end_offset bigint, lag_ms bigint,
                   leader_log_end_offset bigint, high_watermark bigint, epoch_start_offset bigint,
                   caught_up boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
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
    -- A follower outside the ISR whose committed offsets have not caught
    -- up is reported below the high watermark, so its broker does not add
    -- it yet: every ISR member must hold what mq.await_commit acknowledged.
    RETURN QUERY
    SELECT r.id, r.id = ANY (rp.isr),
           CASE WHEN r.id = ANY (rp.isr) OR g.offsets_caught_up THEN g.log_end_offset
                ELSE least(g.log_end_offset, v_hwm - 1) END,
           (extract(epoch FROM clock_timestamp() - coalesce(g.caught_up_at, st.updated))* 1000)::bigint,
           v_leo, v_hwm, v_start,
           coalesce(g.leader_epoch = p_leader_epoch AND g.caught_up_at IS NOT NULL
                    AND g.offsets_caught_up, false)
      FROM unnest(rp.replicas) AS r(id)
      CROSS JOIN (SELECT rp.updated_at AS updated) st
      LEFT JOIN mq.replica_progress g
        ON g.topic_id = v_id AND g.partition = p_partition AND g.replica_id = r.id
       AND g.leader_epoch = p_leader_epoch
     WHERE r.id IS DISTINCT FROM rp.leader_id;
END $$;

-- Committed offsets on replicated partitions.  The version of a
-- partition's offsets (0 before it was ever led).
CREATE FUNCTION mq._offsets_version(p_topic_id integer, p_partition integer) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT v.version FROM mq.offset_version v
                      WHERE v.topic_id = p_topic_id AND v.partition = p_partition), 0)
$$;

-- All committed offsets of a partition with their version, in one snapshot.
CREATE FUNCTION mq._offsets_snapshot(p_topic_id integer, p_partition integer,
                                     OUT version bigint, OUT groups text[], OUT next bigint[],
                                     OUT metadata text[], OUT committed_at timestamptz[])
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT mq._offsets_version(p_topic_id, p_partition),
           coalesce(array_agg(o.group_id ORDER BY o.group_id), '{}'),
           coalesce(array_agg(o.next_offset ORDER BY o.group_id), '{}'),
           coalesce(array_agg(o.metadata ORDER BY o.group_id), '{}'),
           coalesce(array_agg(o.committed_at ORDER BY o.group_id), '{}')
      FROM mq.consumer_offset o
     WHERE o.topic_id = p_topic_id AND o.partition = p_partition
$$;

-- A follower takes the leader's committed offsets and version, when the
-- batch carries them (the leader ships all of them when versions differ).
CREATE FUNCTION mq._offsets_apply(p_topic_id integer, p_partition integer, p_batch mq.replica_batch)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_batch.offset_groups IS NOT NULL THEN
        DELETE FROM mq.consumer_offset WHERE topic_id = p_topic_id AND partition = p_partition;
        INSERT INTO mq.consumer_offset (group_id, topic_id, partition, next_offset, metadata, committed_at)
        SELECT g, p_topic_id, p_partition, n, m, c
          FROM unnest(p_batch.offset_groups, p_batch.offset_next, p_batch.offset_metadata,
                      p_batch.offset_committed_at) AS u(g, n, m, c);
    END IF;
    INSERT INTO mq.offset_version AS v (topic_id, partition, version)
    VALUES (p_topic_id, p_partition, p_batch.offsets_version)
    ON CONFLICT (topic_id, partition) DO UPDATE SET version = EXCLUDED.version
     WHERE v.version IS DISTINCT FROM EXCLUDED.version;
END $$;

-- On the leader: the committed-offsets version every ISR member has
-- applied in this epoch (the leader's own when the ISR is the leader
-- alone); mq.await_commit waits for it to reach a commit's version.
CREATE FUNCTION mq._offsets_acked_version(p_topic_id integer, p_partition integer, p_leader_epoch integer)
    RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(min(CASE WHEN g.leader_epoch = p_leader_epoch
                             THEN coalesce(g.offsets_version, -1) ELSE -1 END),
                    mq._offsets_version(p_topic_id, p_partition))
      FROM mq.replica_partition rp
     CROSS JOIN LATERAL unnest(rp.isr) AS i(replica_id)
      LEFT JOIN mq.replica_progress g
        ON g.topic_id = p_topic_id AND g.partition = p_partition AND g.replica_id = i.replica_id
     WHERE rp.topic_id = p_topic_id AND rp.partition = p_partition
       AND i.replica_id IS DISTINCT FROM rp.leader_id
$$;

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
CREATE FUNCTION mq.replica_append(p_topic text, p_partition integer, p_leader_epoch integer,
                                  p_batch mq.replica_batch) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer := mq._topic_id(p_topic);
    st mq.partition_state;
    v_end bigint;
    v_max bigint;
BEGIN
    PERFORM mq._replica_lock(v_id, p_partition);
    st := mq._replica_fence(v_id, p_partition, p_leader_epoch, 'follower');
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
        PERFORM mq._replica_notify(v_id);
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
CREATE FUNCTION mq.replica_truncate(p_topic text, p_partition integer, p_leader_epoch integer,
                                    p_from_offset bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
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

-- Asked of the leader by a follower (fenced by the caller's epoch).
CREATE FUNCTION mq.replica_epoch_end_offset(p_topic text, p_partition integer, p_leader_epoch integer,
                                            p_requested_epoch integer,
                                            OUT leader_epoch integer, OUT end_offset bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer := mq._topic_id(p_topic);
BEGIN
    PERFORM mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
    SELECT e.leader_epoch, e.end_offset INTO leader_epoch, end_offset
      FROM mq._replica_epoch_end(v_id, p_partition, p_requested_epoch) e;
END $$;

-- A broker's view of its own replica: its latest epoch in the history,
-- its log end, its high watermark and where a requested epoch ends.
CREATE FUNCTION mq.replica_log_state(p_topic text, p_partition integer, p_requested_epoch integer DEFAULT NULL)
    RETURNS TABLE (role text, leader_epoch integer, latest_epoch integer, log_end_offset bigint,
                   high_watermark bigint, requested_epoch integer, requested_end_offset bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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

-- After a transaction that sent records to or committed offsets of
-- replicated partitions: wait until all of it is on every in-sync replica
-- (src/commit_wait.c).  Returns the number of partitions waited for.
CREATE FUNCTION mq.await_commit(timeout_ms integer DEFAULT 30000) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_await_commit' LANGUAGE C VOLATILE;

-------------------------------------------------------------------------------
-- The produce contract (src/sql/31_produce_acks.sql) reads this for acks=all.
-------------------------------------------------------------------------------

-- What mq.produce_records needs to know of a partition for acks=all.  The
-- caller may not read mq's catalog and the contract runs with its rights,
-- so this runs as the owner behind src/owner.c, for producers of the topic.
CREATE FUNCTION mq_internal._produce_state(topic text, partition integer, p_caller oid,
                                           OUT leader_epoch integer, OUT role text, OUT min_isr integer,
                                           OUT isr integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'write');
    v_id := mq._topic_id(topic);
    SELECT p.leader_epoch, p.role, coalesce((t.config->>'min.insync.replicas')::integer, 1),
           cardinality(r.isr)
      INTO leader_epoch, role, min_isr, isr
      FROM mq.partition_state p JOIN mq.topic t USING (topic_id)
      LEFT JOIN mq.replica_partition r USING (topic_id, partition)
     WHERE p.topic_id = v_id AND p.partition = _produce_state.partition;
END $$;
CREATE FUNCTION mq._produce_state(topic text, partition integer,
                                  OUT leader_epoch integer, OUT role text, OUT min_isr integer,
                                  OUT isr integer)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;

-------------------------------------------------------------------------------
-- Routing: what this node knows about every partition's leader.
-------------------------------------------------------------------------------

CREATE VIEW mq.replica_status WITH (security_barrier) AS
SELECT t.topic_name AS topic, p.partition, p.role, p.leader_epoch, r.leader_id, r.leader_name,
       r.replicas, r.isr, e.log_end_offset,
       coalesce(p.high_watermark, e.log_end_offset) AS high_watermark,
       coalesce(r.hosted, true) AS hosted
  FROM mq.partition_state p
  JOIN mq.topic t USING (topic_id)
  LEFT JOIN mq.replica_partition r USING (topic_id, partition)
  CROSS JOIN LATERAL (SELECT mq._log_end_offset(p.topic_id, p.partition) AS log_end_offset) e
 WHERE mq._describable('topic', t.topic_name);

-- Produce and read the routing view like mq.send and mq.partitions; the
-- replica API itself is for the broker's role (docs/replication.md lists
-- the grants it needs).
GRANT SELECT ON mq.replica_status TO PUBLIC;
