-------------------------------------------------------------------------------
-- Replication: the coordinator's schema, mq_coord (docs/replication.md).
--
-- It is part of the extension so that any mq database can be the
-- coordinator (one of the data nodes, or a database of its own); it stays
-- empty everywhere else.  It holds cluster metadata only:
--   mq_coord.broker     registered brokers: id, their node's address
--   mq_coord.topic      replicated topics and their config
--   mq_coord.partition  per partition: replicas (placement, preferred
--                       leader first), leader, leader epoch, ISR,
--                       partition epoch (bumped by every change)
--   mq_coord.event      what happened, for people and tests
--
-- Liveness and leadership are session advisory locks held by each broker's
-- coordinator connection: (MQ_COORD_BROKER_LOCK, broker id) and
-- (MQ_COORD_PARTITION_LOCK, partition lock id).  Locks are not leases, so
-- every election bumps the leader epoch and the data nodes fence by it.
-------------------------------------------------------------------------------

CREATE SCHEMA mq_coord;
COMMENT ON SCHEMA mq_coord IS 'mq cluster metadata (brokers, placement, leaders, ISR), used by mq-broker';
REVOKE ALL ON SCHEMA mq_coord FROM PUBLIC;

CREATE TABLE mq_coord.broker (
    broker_id     integer PRIMARY KEY CHECK (broker_id >= 0),
    node_conninfo text NOT NULL,      -- how other brokers reach its node: no password here
    node_name     text NOT NULL,      -- host:port, for messages
    backend_pid   integer,            -- its coordinator session, for fencing a paused broker
    heartbeat_at  timestamptz,
    registered_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mq_coord.topic (
    topic      text PRIMARY KEY,
    partitions integer NOT NULL CHECK (partitions > 0),
    config     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX topic_collision_key ON mq_coord.topic (mq._topic_collision_key(topic));

CREATE TABLE mq_coord.partition (
    topic           text NOT NULL,
    partition       integer NOT NULL,
    lock_id         integer GENERATED ALWAYS AS IDENTITY UNIQUE,
    replicas        integer[] NOT NULL,
    leader          integer,
    leader_epoch    integer NOT NULL DEFAULT 0,
    isr             integer[] NOT NULL,
    partition_epoch integer NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, partition)
);
CREATE TRIGGER cascade_to_partition AFTER DELETE ON mq_coord.topic
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.partition', 'topic');

CREATE TABLE mq_coord.event (
    event_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    topic     text,
    partition integer,
    kind      text NOT NULL,
    broker_id integer,
    detail    jsonb
);

SELECT pg_catalog.pg_extension_config_dump('mq_coord.broker', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.topic', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.partition', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.event', '');
-- their identity sequences too, or a restored coordinator reuses ids
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq_coord.partition', 'lock_id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq_coord.event', 'event_id'), '');

-- Lock classes (first key of pg_advisory_lock(int, int)): "MQB" and "MQP".
CREATE FUNCTION mq_coord.broker_lock_class() RETURNS integer
    LANGUAGE sql IMMUTABLE AS 'SELECT 5067074';     -- 0x4D5142
CREATE FUNCTION mq_coord.partition_lock_class() RETURNS integer
    LANGUAGE sql IMMUTABLE AS 'SELECT 5067088';     -- 0x4D5150

-- Does this session hold advisory lock (class, id)?
CREATE FUNCTION mq_coord._holds(p_class integer, p_id integer) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM pg_locks
                    WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                      AND classid = p_class::oid AND objid = p_id::oid AND objsubid = 2
                      AND mode = 'ExclusiveLock');
$$;

-- A broker registers after taking its liveness lock.  Returns nothing; the
-- lock check makes two brokers with one id impossible.
CREATE FUNCTION mq_coord.register_broker(broker_id integer, node_conninfo text, node_name text)
    RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_node_conninfo ALIAS FOR $2;
    p_node_name ALIAS FOR $3;
BEGIN
    IF NOT mq_coord._holds(mq_coord.broker_lock_class(), p_broker_id) THEN
        RAISE EXCEPTION 'broker % must hold its liveness lock to register', p_broker_id
            USING ERRCODE = 'MQ010', HINT = 'SELECT pg_try_advisory_lock(mq_coord.broker_lock_class(), id) first.';
    END IF;
    IF p_node_conninfo ~* 'password' OR p_node_conninfo ~* '^postgres(ql)?://[^/?#@]*:[^/?#@]*@' THEN
        RAISE EXCEPTION 'the node address of broker % must not contain a password', p_broker_id
            USING ERRCODE = 'MQ010', HINT = 'Other brokers use their own ~/.pgpass or service file.';
    END IF;
    INSERT INTO mq_coord.broker AS b (broker_id, node_conninfo, node_name, backend_pid, heartbeat_at)
    VALUES (p_broker_id, p_node_conninfo, p_node_name, pg_backend_pid(), clock_timestamp())
    ON CONFLICT (broker_id) DO UPDATE
       SET node_conninfo = EXCLUDED.node_conninfo, node_name = EXCLUDED.node_name,
           backend_pid = EXCLUDED.backend_pid, heartbeat_at = EXCLUDED.heartbeat_at;
    INSERT INTO mq_coord.event (kind, broker_id, detail)
    VALUES ('broker_registered', p_broker_id, jsonb_build_object('node', p_node_name));
END $$;

CREATE FUNCTION mq_coord.heartbeat(broker_id integer) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE mq_coord.broker SET heartbeat_at = clock_timestamp()
     WHERE broker_id = heartbeat.broker_id AND backend_pid = pg_backend_pid();
$$;

-- Is the broker alive: does some session hold its liveness lock, and has
-- it heartbeaten within timeout_ms?
CREATE FUNCTION mq_coord.broker_alive(broker_id integer, timeout_ms integer) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN mq_coord.broker b ON b.backend_pid = l.pid
                    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                      AND l.classid = mq_coord.broker_lock_class()::oid AND l.objid = broker_alive.broker_id::oid
                      AND b.broker_id = broker_alive.broker_id
                      AND b.heartbeat_at > clock_timestamp() - broker_alive.timeout_ms * interval '1 ms');
$$;

-- A paused broker keeps its locks (they are not leases): when its
-- heartbeat is older than p_timeout_ms, end its coordinator session so
-- that its locks go and an election can run.  The data nodes fence it by
-- epoch if it wakes up.  Returns true when a session was ended.
CREATE FUNCTION mq_coord.fence_broker(broker_id integer, timeout_ms integer, fenced_by integer)
    RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_timeout_ms ALIAS FOR $2;
    p_by ALIAS FOR $3;
    b mq_coord.broker;
BEGIN
    SELECT * INTO b FROM mq_coord.broker WHERE broker_id = p_broker_id FOR UPDATE;
    IF NOT FOUND OR b.backend_pid IS NULL OR b.backend_pid = pg_backend_pid()
       OR b.heartbeat_at > clock_timestamp() - p_timeout_ms * interval '1 ms' THEN
        RETURN false;
    END IF;
    INSERT INTO mq_coord.event (kind, broker_id, detail)
    VALUES ('broker_fenced', p_broker_id,
            jsonb_build_object('by', p_by, 'heartbeat_age_ms',
                               (extract(epoch FROM clock_timestamp() - b.heartbeat_at) * 1000)::bigint));
    UPDATE mq_coord.broker SET backend_pid = NULL WHERE broker_id = p_broker_id;
    RETURN pg_terminate_backend(b.backend_pid);
END $$;

-- Create a replicated topic: replication.factor replicas of each partition
-- on the live brokers first, then on registered brokers that are down
-- (mq_coord._place_partitions, 66_placement.sql).
-- The brokers create the partitions on their nodes when they see them.
CREATE FUNCTION mq_coord.create_topic(topic text, partitions integer DEFAULT 1,
                                      config jsonb DEFAULT '{}') RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partitions ALIAS FOR $2;
    p_config ALIAS FOR $3;
    v_config jsonb;
BEGIN
    PERFORM mq._check_topic_name(p_topic);
    IF p_partitions IS NULL OR p_partitions < 1 OR p_partitions > 10000 THEN
        RAISE EXCEPTION 'invalid partition count %', coalesce(p_partitions::text, 'NULL') USING ERRCODE = 'MQ005';
    END IF;
    v_config := mq.validate_config(coalesce(p_config, '{}'));
    -- one creation at a time, so that the collision check sees every name
    PERFORM pg_advisory_xact_lock(hashtext('mq_coord.create_topic'));
    IF EXISTS (SELECT 1 FROM mq_coord.topic t WHERE t.topic = p_topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', p_topic USING ERRCODE = 'MQ002';
    END IF;
    PERFORM mq._refuse_topic_collision(p_topic,
        (SELECT t.topic FROM mq_coord.topic t
          WHERE mq._topic_collision_key(t.topic) = mq._topic_collision_key(p_topic)
            AND t.topic <> p_topic LIMIT 1));
    INSERT INTO mq_coord.topic (topic, partitions, config) VALUES (p_topic, p_partitions, v_config);
    PERFORM mq_coord._place_partitions(p_topic, 0, p_partitions,
                                       coalesce((v_config->>'replication.factor')::integer, 1));
    INSERT INTO mq_coord.event (topic, kind, detail)
    VALUES (p_topic, 'topic_created', jsonb_build_object('partitions', p_partitions, 'config', v_config));
    RETURN p_partitions;
END $$;

-- An election.  The candidate holds the partition's lock in this session;
-- in one transaction it checks that it is a replica and in the ISR (any
-- replica when unclean.leader.election.enable), bumps the leader epoch and
-- records itself.  With p_session_timeout_ms, ISR members whose brokers are
-- not alive (broker_alive) leave the ISR in the same step, as Kafka's
-- controller does when a broker dies: the new leader's high watermark can
-- then move as soon as the live followers fetch, instead of waiting for its
-- first ISR shrink.  Returns the new epoch, or NULL when not eligible.
CREATE FUNCTION mq_coord.elect(topic text, partition integer, candidate integer,
                               session_timeout_ms integer DEFAULT NULL)
    RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_candidate ALIAS FOR $3;
    p_session_timeout_ms ALIAS FOR $4;
    pt mq_coord.partition;
    v_unclean boolean;
    v_isr integer[];
BEGIN
    SELECT * INTO pt FROM mq_coord.partition WHERE topic = p_topic AND partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" is not known to the coordinator', p_partition, p_topic
            USING ERRCODE = 'MQ006';
    END IF;
    IF NOT mq_coord._holds(mq_coord.partition_lock_class(), pt.lock_id) THEN
        RAISE EXCEPTION 'broker % must hold the leadership lock of "%" partition % to be elected',
            p_candidate, p_topic, p_partition USING ERRCODE = 'MQ010';
    END IF;
    IF NOT p_candidate = ANY (pt.replicas) THEN
        RETURN NULL;
    END IF;
    SELECT coalesce((config->>'unclean.leader.election.enable')::boolean, false) INTO v_unclean
      FROM mq_coord.topic WHERE topic = p_topic;
    v_isr := pt.isr;
    IF NOT p_candidate = ANY (pt.isr) THEN
        IF NOT v_unclean THEN
            RETURN NULL;
        END IF;
        v_isr := ARRAY[p_candidate];    -- unclean: the others must truncate to it
    END IF;
    IF p_session_timeout_ms IS NOT NULL THEN
        v_isr := ARRAY(SELECT i FROM unnest(v_isr) WITH ORDINALITY AS u(i, n)
                        WHERE i = p_candidate OR mq_coord.broker_alive(i, p_session_timeout_ms)
                        ORDER BY n);
    END IF;
    UPDATE mq_coord.partition
       SET leader = p_candidate, leader_epoch = leader_epoch + 1, isr = v_isr,
           partition_epoch = partition_epoch + 1, updated_at = clock_timestamp(),
           preferred_election_until = CASE WHEN p_candidate = pt.replicas[1] THEN NULL
                                           ELSE pt.preferred_election_until END
     WHERE topic = p_topic AND partition = p_partition;
    INSERT INTO mq_coord.event (topic, partition, kind, broker_id, detail)
    VALUES (p_topic, p_partition, 'leader_elected', p_candidate,
            jsonb_build_object('leader_epoch', pt.leader_epoch + 1, 'previous', pt.leader,
                               'isr', v_isr, 'unclean', NOT p_candidate = ANY (pt.isr)));
    RETURN pt.leader_epoch + 1;
END $$;

-- The leader changes the ISR, conditional on still leading in its epoch.
-- Returns the new partition epoch, or NULL when the leader was deposed.
CREATE FUNCTION mq_coord.alter_isr(topic text, partition integer, leader integer,
                                   leader_epoch integer, isr integer[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader ALIAS FOR $3;
    p_leader_epoch ALIAS FOR $4;
    p_isr ALIAS FOR $5;
    pt mq_coord.partition;
BEGIN
    SELECT * INTO pt FROM mq_coord.partition WHERE topic = p_topic AND partition = p_partition FOR UPDATE;
    IF NOT FOUND OR pt.leader IS DISTINCT FROM p_leader OR pt.leader_epoch <> p_leader_epoch THEN
        RETURN NULL;
    END IF;
    IF NOT p_leader = ANY (p_isr) OR NOT p_isr <@ pt.replicas THEN
        RAISE EXCEPTION 'invalid ISR % for "%" partition %', p_isr, p_topic, p_partition USING ERRCODE = 'MQ010';
    END IF;
    UPDATE mq_coord.partition
       SET isr = p_isr, partition_epoch = partition_epoch + 1, updated_at = clock_timestamp()
     WHERE topic = p_topic AND partition = p_partition;
    INSERT INTO mq_coord.event (topic, partition, kind, broker_id, detail)
    VALUES (p_topic, p_partition, CASE WHEN cardinality(p_isr) < cardinality(pt.isr) THEN 'isr_shrink' ELSE 'isr_expand' END,
            p_leader, jsonb_build_object('leader_epoch', p_leader_epoch, 'from', pt.isr, 'to', p_isr));
    RETURN pt.partition_epoch + 1;
END $$;

-- Routing for clients that ask the coordinator.
CREATE VIEW mq_coord.metadata AS
SELECT p.topic, p.partition, p.leader, b.node_name AS leader_node, p.leader_epoch,
       p.isr, p.replicas, p.partition_epoch, p.updated_at
  FROM mq_coord.partition p
  LEFT JOIN mq_coord.broker b ON b.broker_id = p.leader;

-- Producer ids, cluster-wide (KIP-730): the coordinator hands each broker
-- blocks of ids from one counter, and the broker's node issues ids only
-- from the blocks it was given (src/sql/63_producer_ids.sql), so no two
-- producers anywhere share an id.  The counter is one row, advanced under
-- its row lock and committed with synchronous_commit on: a block handed
-- out is never handed out again, also after the coordinator restarts.
-- Every block is recorded per broker for operators.
CREATE TABLE mq_coord.producer_id_counter (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    next_id   bigint NOT NULL CHECK (next_id > 0)     -- the first id of the next block
);

CREATE TABLE mq_coord.producer_id_block (
    broker_id    integer NOT NULL,
    first_id     bigint NOT NULL,
    last_id      bigint NOT NULL CHECK (last_id >= first_id),
    allocated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (first_id)
);
CREATE INDEX ON mq_coord.producer_id_block (broker_id, allocated_at);

SELECT pg_catalog.pg_extension_config_dump('mq_coord.producer_id_counter', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.producer_id_block', '');

-- A block of p_count producer ids for a live broker (one that holds its
-- liveness lock in this session).  Ids start at 1.
CREATE FUNCTION mq_coord.allocate_producer_ids(broker_id integer, count integer DEFAULT 1000)
    RETURNS TABLE (first_id bigint, last_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_count ALIAS FOR $2;
    v_next bigint;
BEGIN
    IF p_count IS NULL OR p_count < 1 OR p_count > 1000000 THEN
        RAISE EXCEPTION 'a block of producer ids holds 1 to 1000000 ids, not %', p_count
            USING ERRCODE = 'MQ010';
    END IF;
    IF NOT mq_coord._holds(mq_coord.broker_lock_class(), p_broker_id) THEN
        RAISE EXCEPTION 'broker % must hold its liveness lock to get producer ids', p_broker_id
            USING ERRCODE = 'MQ010', HINT = 'SELECT pg_try_advisory_lock(mq_coord.broker_lock_class(), id) first.';
    END IF;
    -- the block must survive a crash of the coordinator once returned: this
    -- transaction commits with a flush whatever the session's setting
    -- (a setting made here outlives the function: it is not in its SET list)
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    INSERT INTO mq_coord.producer_id_counter AS c (singleton, next_id) VALUES (true, 1 + p_count)
    ON CONFLICT (singleton) DO UPDATE SET next_id = c.next_id + p_count
    RETURNING c.next_id INTO v_next;
    first_id := v_next - p_count;
    last_id := v_next - 1;
    INSERT INTO mq_coord.producer_id_block (broker_id, first_id, last_id)
    VALUES (p_broker_id, allocate_producer_ids.first_id, allocate_producer_ids.last_id);
    RETURN NEXT;
END $$;

-- Transactional ids, cluster-wide (Kafka's transaction coordinator does
-- InitProducerId): one producer id per transactional id, from the same
-- counter as the blocks, and an epoch bumped by every call.  A producer
-- that got (id, epoch) here writes to every partition leader, which
-- registers that epoch with its first batch (or fenced offset commit) and
-- fences older ones from then on (src/idempotence.c).  Committed durably,
-- like the blocks: an epoch handed out is never handed out again.
CREATE TABLE mq_coord.transactional_producer (
    transactional_id text PRIMARY KEY CHECK (transactional_id <> ''),
    producer_id      bigint NOT NULL UNIQUE,
    producer_epoch   integer NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
SELECT pg_catalog.pg_extension_config_dump('mq_coord.transactional_producer', '');

-- The next producer id of a transactional id (the coordinator's counter).
CREATE FUNCTION mq_coord._next_transactional_id() RETURNS bigint
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO mq_coord.producer_id_counter AS c (singleton, next_id) VALUES (true, 2)
    ON CONFLICT (singleton) DO UPDATE SET next_id = c.next_id OPERATOR(pg_catalog.+) 1
    RETURNING c.next_id OPERATOR(pg_catalog.-) 1;
$$;

CREATE FUNCTION mq_coord.init_producer(transactional_id text,
                                       OUT producer_id bigint, OUT producer_epoch integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_transactional_id ALIAS FOR $1;
    v_next bigint;
    v_open text;
BEGIN
    IF p_transactional_id IS NULL OR p_transactional_id = '' THEN
        RAISE EXCEPTION 'a transactional id must not be empty' USING ERRCODE = 'MQ010',
            HINT = 'An idempotent producer without a transactional id calls mq.init_producer() on a node.';
    END IF;
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- as Kafka's InitProducerId, complete a pending transaction first: a
    -- pipeline step of this id decided to commit and not complete would be
    -- fenced by the new epoch where it is sent again (64_twophase_redo.sql).
    -- The row lock orders this against txn_decide's check of the epoch, and
    -- the next statement sees a decision that committed meanwhile.
    PERFORM 1 FROM mq_coord.transactional_producer t
     WHERE t.transactional_id = p_transactional_id FOR UPDATE;
    SELECT t.txn_id INTO v_open FROM mq_coord.txn t
     WHERE t.owner = p_transactional_id AND t.state IN ('commit', 'outputs_durable')
     ORDER BY t.decided_at LIMIT 1;
    IF v_open IS NOT NULL THEN
        RAISE EXCEPTION 'transactional id "%" has a step decided and not yet complete: %',
            p_transactional_id, v_open USING ERRCODE = 'MQ056',
            DETAIL = 'A new epoch would fence the step''s completion.',
            HINT = 'Retry shortly: the previous run or the brokers'' recovery completes the step.';
    END IF;
    -- the new epoch fences the open Kafka transaction: its offsets can
    -- no longer commit (68_kafka_txn_cluster.sql)
    PERFORM mq_coord._kafka_txn_forget_offsets(p_transactional_id);
    -- Kafka's epoch is an int16: from 32766 on, a new producer id at epoch 0
    UPDATE mq_coord.transactional_producer t
       SET producer_epoch = CASE WHEN t.producer_epoch >= 32766 THEN 0 ELSE t.producer_epoch + 1 END,
           producer_id = CASE WHEN t.producer_epoch >= 32766 THEN mq_coord._next_transactional_id()
                              ELSE t.producer_id END,
           updated_at = clock_timestamp()
     WHERE t.transactional_id = p_transactional_id
    RETURNING t.producer_id, t.producer_epoch INTO producer_id, producer_epoch;
    IF FOUND THEN
        RETURN;
    END IF;
    v_next := mq_coord._next_transactional_id();
    -- a concurrent first call for the same id: the loser bumps the winner's epoch
    INSERT INTO mq_coord.transactional_producer AS t (transactional_id, producer_id, producer_epoch)
    VALUES (p_transactional_id, v_next, 0)
    ON CONFLICT (transactional_id) DO UPDATE
       SET producer_epoch = t.producer_epoch + 1, updated_at = clock_timestamp()
    RETURNING t.producer_id, t.producer_epoch INTO producer_id, producer_epoch;
END $$;

-- What an application role needs to get transactional producer ids here.
CREATE FUNCTION mq_coord.grant_producer(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq_coord TO %s', role);
    EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION mq_coord.init_producer(text) TO %s', role);
END $$;
