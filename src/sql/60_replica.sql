-------------------------------------------------------------------------------
-- Replication: the data node's replica API (docs/replication.md).  This
-- file: its tables and types, the broker's attachment, the epoch fence and
-- the high watermark; then 60_replica_roles.sql (leader and follower by
-- epoch, the ISR), 60_replica_offsets.sql (committed offsets),
-- 60_replica_fetch.sql (the leader's side of a fetch),
-- 60_replica_follower.sql (the follower's side, truncation) and
-- 60_replica_status.sql (what the produce contract and routing read).
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
    PRIMARY KEY (topic_id, partition)
);
CREATE TRIGGER cascade_to_replica_partition AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.replica_partition', 'topic_id', 'partition');

CREATE TABLE mq.leader_epoch_history (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    leader_epoch integer NOT NULL,
    start_offset bigint NOT NULL,
    PRIMARY KEY (topic_id, partition, leader_epoch)
);
CREATE TRIGGER cascade_to_leader_epoch_history AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.leader_epoch_history', 'topic_id', 'partition');

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
    PRIMARY KEY (topic_id, partition)
);
CREATE TRIGGER cascade_to_offset_version AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.offset_version', 'topic_id', 'partition');

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
CREATE FUNCTION mq.replica_attach_broker(broker_id integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
BEGIN
    IF p_broker_id IS NULL THEN
        RAISE EXCEPTION 'broker_id must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._replica_attach_broker();
    INSERT INTO mq.replica_broker (broker_id) VALUES (p_broker_id)
    ON CONFLICT (singleton) DO UPDATE SET broker_id = EXCLUDED.broker_id, attached_at = now(),
                                          lease_until = NULL;
END $$;

-- Called by the attached broker every tick: its node leads for p_lease_ms
-- more.  The commit is not flushed (a lease lost in a crash is renewed at
-- the next tick; the node's restart ends the broker's session anyway).
CREATE FUNCTION mq.replica_renew_lease(lease_ms integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_lease_ms ALIAS FOR $1;
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
CREATE FUNCTION mq._replica_progress_lock(topic_id integer, partition integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_progress_lock' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_progress_lock(integer, integer) IS
    'internal: one follower''s fetch of the partition at a time, from recording its progress to commit';
CREATE FUNCTION mq._replica_notify(topic_id integer, partition integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_notify' LANGUAGE C STRICT;
CREATE FUNCTION mq._notify_state(topic_id integer, partition integer, OUT slot integer, OUT changes bigint)
    AS 'MODULE_PATHNAME', 'mq_notify_state' LANGUAGE C;
COMMENT ON FUNCTION mq._notify_state(integer, integer) IS
    'internal: the wake-up slot of a partition (or, partition NULL, its topic) and its change counter, for tests';
CREATE FUNCTION mq._replica_wait_records(topic_id integer, partition integer,
                                         fetch_offset bigint, wait_ms integer,
                                         known_offsets_version bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_replica_wait_records' LANGUAGE C STRICT;
CREATE FUNCTION mq._replica_wait_any(topic_ids integer[], partitions integer[], fetch_offsets bigint[],
                                     wait_ms integer, known_offsets_versions bigint[], counters bigint[])
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_replica_wait_any' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_wait_any(integer[], integer[], bigint[], integer, bigint[], bigint[]) IS
    'internal (replication): records or offsets news on any of many partitions, for replica_fetch_many''s long poll';
CREATE FUNCTION mq._replica_fetch_recall(replica_id integer, topics text[], partitions integer[],
                                         leader_epochs integer[], fetch_offsets bigint[],
                                         offsets_versions bigint[], OUT ids integer[], OUT counters bigint[],
                                         OUT known boolean[], OUT ov bigint[],
                                         OUT recorded_at timestamptz[])
    AS 'MODULE_PATHNAME', 'mq_replica_fetch_recall' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_fetch_recall(integer, text[], integer[], integer[], bigint[], bigint[]) IS
    'internal (replication): the partitions a fetch session''s backend knows idle since its last look (replica_fetch_cache.c)';
CREATE FUNCTION mq._replica_fetch_remember(replica_id integer, topic_ids integer[], partitions integer[],
                                           leader_epochs integer[], fetch_offsets bigint[],
                                           asked_versions bigint[], counters bigint[], idle boolean[],
                                           ov bigint[], recorded_at timestamptz[]) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_fetch_remember' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_fetch_remember(integer, integer[], integer[], integer[], bigint[], bigint[], bigint[], boolean[], bigint[], timestamptz[]) IS
    'internal (replication): what a fetch session''s looks found idle, with the counters read before them (replica_fetch_cache.c)';
CREATE FUNCTION mq._replica_fetch_restamp(replica_id integer, topic_ids integer[], partitions integer[],
                                          recorded_at timestamptz) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_fetch_restamp' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_fetch_restamp(integer, integer[], integer[], timestamptz) IS
    'internal (replication): the remembered partitions whose progress a fetch recorded at recorded_at (replica_fetch_cache.c)';
CREATE FUNCTION mq._replica_fetch_forget(replica_id integer, topic_ids integer[], partitions integer[])
    RETURNS void
    AS 'MODULE_PATHNAME', 'mq_replica_fetch_forget' LANGUAGE C STRICT;
COMMENT ON FUNCTION mq._replica_fetch_forget(integer, integer[], integer[]) IS
    'internal (replication): partitions a fetch session''s backend looks at again at the next fetch (replica_fetch_cache.c)';
CREATE FUNCTION mq._replica_durable_log_end(topic_id integer, partition integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_replica_durable_log_end' LANGUAGE C STRICT;
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
-- The topic's name is read only for an error's message: every follower
-- fetch calls this, and a partition's row goes with its topic's
-- (mq._cascade_delete).
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
    IF st.topic_id IS NULL THEN
        RAISE EXCEPTION 'partition % of topic id % does not exist', p_partition, p_topic_id
            USING ERRCODE = 'MQ006';
    END IF;
    IF p_epoch = st.leader_epoch AND st.role = p_want_role THEN
        RETURN st;
    END IF;
    SELECT topic_name INTO v_topic FROM mq.topic WHERE topic_id = p_topic_id;
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
-- PL/pgSQL, not SQL: a SQL function with a SET clause is planned again at
-- every call, and every follower fetch calls this (and the two offsets
-- functions of 60_replica_offsets.sql): 1.5 ms of the fetch's 9.6 ms in
-- test/bench's profile (docs/design.md, "acks=all: where a record's time
-- goes").
CREATE FUNCTION mq._replica_isr_min(p_topic_id integer, p_partition integer, p_leader_epoch integer,
                                    p_rp mq.replica_partition, p_leo bigint) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- the log end every ISR member holds in this epoch; the leader's own
    -- when the ISR is the leader alone
    RETURN (SELECT coalesce(least(p_leo, min(CASE WHEN g.leader_epoch = p_leader_epoch
                                                  THEN g.log_end_offset ELSE -1 END)), p_leo)
              FROM unnest(p_rp.isr) AS i(replica_id)
              LEFT JOIN mq.replica_progress g
                ON g.topic_id = p_topic_id AND g.partition = p_partition
               AND g.replica_id = i.replica_id
             WHERE i.replica_id IS DISTINCT FROM p_rp.leader_id);
END $$;

-- Move the high watermark to what every ISR member holds, the leader's
-- records counting once flushed on the leader.  It never moves
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
    v_leo bigint;
    v_new bigint;
BEGIN
    SELECT * INTO st FROM mq.partition_state WHERE topic_id = p_topic_id AND partition = p_partition;
    SELECT * INTO rp FROM mq.replica_partition WHERE topic_id = p_topic_id AND partition = p_partition;
    IF st.role <> 'leader' OR rp.topic_id IS NULL THEN
        RETURN st.high_watermark;
    END IF;
    v_leo := mq._log_end_offset(p_topic_id, p_partition);
    v_new := mq._replica_isr_min(p_topic_id, p_partition, st.leader_epoch, rp, v_leo);
    IF v_new <= coalesce(st.high_watermark, -1) THEN
        RETURN st.high_watermark;
    END IF;
    SELECT * INTO rp FROM mq.replica_partition
     WHERE topic_id = p_topic_id AND partition = p_partition FOR SHARE;
    -- it would move: the leader's log end counts once its WAL is flushed
    -- (acks=all commits without that flush, so that the followers fetch
    -- meanwhile).  Only here: a fetch that brings records to a follower
    -- does not move the high watermark, so it never waits for the flush.
    v_leo := mq._replica_durable_log_end(p_topic_id, p_partition);
    v_new := mq._replica_isr_min(p_topic_id, p_partition, st.leader_epoch, rp, v_leo);
    UPDATE mq.partition_state SET high_watermark = v_new
     WHERE topic_id = p_topic_id AND partition = p_partition
       AND coalesce(high_watermark, -1) < v_new;
    IF FOUND THEN
        PERFORM mq._replica_notify(p_topic_id, p_partition);
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
