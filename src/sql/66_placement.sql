-------------------------------------------------------------------------------
-- Placement: where replicas live, and moving them (docs/replication.md,
-- "Placement and reassignment").
--
-- On the coordinator (schema mq_coord):
--   brokers in placement order, alternating between racks when brokers
--   have one (mq_coord.set_broker_rack); adding partitions to a replicated
--   topic; removing a broker that holds nothing; and reassignment, as
--   Kafka's KIP-455: mq_coord.reassign records the target replica set in
--   mq_coord.partition.target_replicas and widens replicas to target first,
--   then the replicas leaving; the new replicas follow (under the
--   throttle: the copies a broker serves as leader share throttle_bytes
--   per second, and so do the copies it receives) until the leader's ISR
--   holds the whole target; a leader outside the target then hands
--   leadership to the first target replica (a new election, a new epoch);
--   the leader, inside the target, completes the move
--   (mq_coord.complete_reassignment: replicas = target, ISR = ISR within
--   target), and the brokers of the replicas that left mark them not
--   hosted on their nodes.
--
-- On a data node (schema mq): a broker places a replicated topic on its
-- node in one transaction (mq.replica_place_topic: created or grown, every
-- partition it has not yet seen given to replication, the ones this node
-- does not replicate marked not hosted), and marks a replica that moved
-- away not hosted (mq.replica_unhost).  A partition not hosted is a
-- follower with hosted = false in mq.replica_partition: produce, fetch
-- and poll there raise MQ020 saying the node holds no replica of it.
--
-- Locking: coordinator functions lock the partition's row (FOR UPDATE) as
-- elect and alter_isr do; node functions change roles under the
-- partition's produce lock (mq._replica_lock), as become_follower does.
-------------------------------------------------------------------------------

ALTER TABLE mq_coord.broker ADD COLUMN rack text;
ALTER TABLE mq_coord.partition
    ADD COLUMN target_replicas integer[],     -- while moving: the replica set it moves to
    ADD COLUMN original_replicas integer[],   -- while moving: the replicas before (a cancel goes back)
    ADD COLUMN throttle_bytes bigint CHECK (throttle_bytes > 0);  -- copy rate of the new replicas

-- Registered brokers in placement order: the first of each rack, then the
-- second of each, ... (Kafka's rack-alternated list), so that consecutive
-- brokers sit in different racks; without racks, by id.  With live_only,
-- of the live brokers only (some session of this database holds the
-- broker's liveness lock), alternated among themselves: the brokers Kafka's
-- controller places new partitions on first, the unfenced ones.
CREATE FUNCTION mq_coord._placement_order(live_only boolean DEFAULT false) RETURNS integer[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(array_agg(b.broker_id ORDER BY b.n, b.rack, b.broker_id), '{}')
      FROM (SELECT broker_id, coalesce(rack, '') AS rack,
                   row_number() OVER (PARTITION BY coalesce(rack, '') ORDER BY broker_id) AS n
              FROM mq_coord.broker r
             WHERE NOT live_only
                OR EXISTS (SELECT 1 FROM pg_locks l
                            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                              AND l.database = (SELECT d.oid FROM pg_database d
                                                 WHERE d.datname = current_database())
                              AND l.classid = mq_coord.broker_lock_class()::oid
                              AND l.objid = r.broker_id::oid)) b;
$$;

-- Place partitions p_from .. p_to - 1 of a topic, as Kafka 3.9's
-- StripedReplicaPlacer: the live brokers first, then, only when p_rf is
-- larger than them, the brokers that are registered but down.  Each
-- partition's replicas are consecutive brokers of the live brokers'
-- placement order, starting one further for each partition, so that
-- preferred leaders (the first replica) spread and are always live;
-- replicas beyond the live brokers are the brokers down, in placement
-- order, and stay outside the ISR (as KRaft's ISR of a new partition is
-- its unfenced replicas) until they return and catch up.  The one owner
-- of where new replicas go: mq_coord.create_topic and add_partitions
-- (SQL, mqctl, mq-kafka's CreateTopics, CreatePartitions and Metadata's
-- auto-creation) all place through it.  MQ046 (Kafka's
-- INVALID_REPLICATION_FACTOR), nothing placed, when no broker is live or
-- when p_rf is larger than the registered brokers.  A topic's partition 0
-- starts at the live broker after the previous topic's (the number of
-- other topics, modulo the live brokers), as Kafka starts each topic at a
-- random broker: otherwise every topic's partition 0 would be led by the
-- first broker, and a cluster of one-partition topics by one node.  Added
-- partitions continue from where partition 0 is (or, when partition 0's
-- first replica is not live, from where a new topic would start).  A
-- name deleted before starts at the largest leader epoch it reached
-- (66_topic_delete.sql), so that nodes holding an old copy are fenced.
CREATE FUNCTION mq_coord._place_partitions(p_topic text, p_from integer, p_to integer, p_rf integer)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_brokers integer[] := mq_coord._placement_order(true);
    v_n integer := cardinality(v_brokers);
    v_down integer[];
    v_registered integer := (SELECT count(*) FROM mq_coord.broker);
    v_start integer;
    v_replicas integer[];
    v_epoch integer := (SELECT coalesce(max(d.leader_epoch), 0) FROM mq_coord.deleted_topic d
                         WHERE d.topic = p_topic);
BEGIN
    IF v_n = 0 THEN
        RAISE EXCEPTION 'replication.factor % cannot be placed: all brokers are down (% registered)',
            p_rf, v_registered
            USING ERRCODE = 'MQ046', HINT = 'Start the brokers: a new partition''s leader must be live.';
    END IF;
    IF v_registered < p_rf THEN
        RAISE EXCEPTION 'replication.factor % is larger than the % registered brokers', p_rf, v_registered
            USING ERRCODE = 'MQ046',
                  HINT = 'Start more brokers so that they register, or lower replication.factor.';
    END IF;
    -- the brokers down, in placement order (used only beyond the live ones)
    v_down := ARRAY(SELECT o FROM unnest(mq_coord._placement_order()) WITH ORDINALITY AS u(o, k)
                     WHERE NOT o = ANY (v_brokers) ORDER BY k);
    SELECT array_position(v_brokers, q.replicas[1]) - 1 INTO v_start
      FROM mq_coord.partition q WHERE q.topic = p_topic AND q.partition = 0;
    IF v_start IS NULL THEN
        SELECT count(*) % v_n INTO v_start FROM mq_coord.topic t WHERE t.topic <> p_topic;
    END IF;
    FOR p IN p_from .. p_to - 1 LOOP
        SELECT array_agg(v_brokers[1 + ((v_start + p + i) % v_n)] ORDER BY i) INTO v_replicas
          FROM generate_series(0, least(p_rf, v_n) - 1) AS i;
        INSERT INTO mq_coord.partition (topic, partition, replicas, isr, leader_epoch)
        VALUES (p_topic, p, v_replicas || v_down[1 : p_rf - v_n], v_replicas, v_epoch);
    END LOOP;
END $$;

CREATE FUNCTION mq_coord._check_broker(p_broker_id integer) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mq_coord.broker WHERE broker_id = p_broker_id) THEN
        RAISE EXCEPTION 'broker % is not registered on the coordinator', coalesce(p_broker_id::text, 'NULL')
            USING ERRCODE = 'MQ042', HINT = 'A broker registers when its mq-broker first connects.';
    END IF;
END $$;

-- The rack of a registered broker (NULL: none); used by placements made
-- from now on.
CREATE FUNCTION mq_coord.set_broker_rack(broker_id integer, rack text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_rack ALIAS FOR $2;
BEGIN
    PERFORM mq_coord._check_broker(p_broker_id);
    UPDATE mq_coord.broker SET rack = nullif(p_rack, '') WHERE broker_id = p_broker_id;
    INSERT INTO mq_coord.event (kind, broker_id, detail)
    VALUES ('broker_rack', p_broker_id, jsonb_build_object('rack', nullif(p_rack, '')));
END $$;

-- A live broker records its own rack (its config's rack), as it registers.
CREATE FUNCTION mq_coord.register_rack(broker_id integer, rack text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_rack ALIAS FOR $2;
BEGIN
    IF NOT mq_coord._holds(mq_coord.broker_lock_class(), p_broker_id) THEN
        RAISE EXCEPTION 'broker % must hold its liveness lock to register its rack', p_broker_id
            USING ERRCODE = 'MQ010';
    END IF;
    UPDATE mq_coord.broker SET rack = nullif(p_rack, '')
     WHERE broker_id = p_broker_id AND rack IS DISTINCT FROM nullif(p_rack, '');
END $$;

-- Remove a broker that holds no replica and whose mq-broker is stopped.
CREATE FUNCTION mq_coord.remove_broker(broker_id integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    v_n integer;
BEGIN
    PERFORM mq_coord._check_broker(p_broker_id);
    SELECT count(*) INTO v_n FROM mq_coord.partition
     WHERE p_broker_id = ANY (replicas) OR p_broker_id = ANY (coalesce(target_replicas, '{}'));
    IF v_n > 0 THEN
        RAISE EXCEPTION 'broker % still holds replicas of % partition(s)', p_broker_id, v_n
            USING ERRCODE = 'MQ043',
                  HINT = 'Reassign them to other brokers first (mqctl reassign), then remove it.';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 2
                  AND classid = mq_coord.broker_lock_class()::oid AND objid = p_broker_id::oid) THEN
        RAISE EXCEPTION 'the mq-broker of broker % is running', p_broker_id
            USING ERRCODE = 'MQ043', HINT = 'Stop it first: a running broker registers again.';
    END IF;
    DELETE FROM mq_coord.broker WHERE broker_id = p_broker_id;
    INSERT INTO mq_coord.event (kind, broker_id) VALUES ('broker_removed', p_broker_id);
END $$;

-- Add p_count partitions to a replicated topic, placed as create_topic
-- places them; the brokers add them on their nodes when they see them.
-- Returns the new partition count.
CREATE FUNCTION mq_coord.add_partitions(topic text, count integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_count ALIAS FOR $2;
    t mq_coord.topic;
BEGIN
    SELECT * INTO t FROM mq_coord.topic WHERE topic = p_topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" is not known to the coordinator', p_topic USING ERRCODE = 'MQ001';
    END IF;
    IF p_count IS NULL OR p_count < 1 OR p_count > 10000 - t.partitions THEN
        RAISE EXCEPTION 'invalid partition count increase % (the topic has %, at most 10000)',
            coalesce(p_count::text, 'NULL'), t.partitions
            USING ERRCODE = 'MQ005', HINT = 'Partitions can be added, never removed.';
    END IF;
    PERFORM mq_coord._place_partitions(p_topic, t.partitions, t.partitions + p_count,
                                       coalesce((t.config->>'replication.factor')::integer, 1));
    UPDATE mq_coord.topic SET partitions = t.partitions + p_count WHERE topic = p_topic;
    INSERT INTO mq_coord.event (topic, kind, detail)
    VALUES (p_topic, 'partitions_added', jsonb_build_object('from', t.partitions, 'to', t.partitions + p_count));
    RETURN t.partitions + p_count;
END $$;

-- A replicated topic's new config (AlterConfigs and
-- IncrementalAlterConfigs through mq-kafka, which computed it on a node
-- holding the topic, as the client): validated as mq.create_topic
-- validates it, kept with replication.factor as it was; each replica's
-- broker brings its node's topic to it (mq.replica_place_topic, placing
-- the topic again).
-- Returns the config stored.
CREATE FUNCTION mq_coord.alter_topic_config(topic text, config jsonb) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_config ALIAS FOR $2;
    t mq_coord.topic;
    v_config jsonb;
BEGIN
    SELECT * INTO t FROM mq_coord.topic WHERE topic = p_topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" is not known to the coordinator', p_topic USING ERRCODE = 'MQ001';
    END IF;
    v_config := mq.validate_config(coalesce(p_config, '{}') - 'replication.factor');
    IF t.config ? 'replication.factor' THEN
        v_config := v_config || jsonb_build_object('replication.factor', t.config->'replication.factor');
    END IF;
    IF v_config IS DISTINCT FROM t.config THEN
        UPDATE mq_coord.topic SET config = v_config WHERE topic = p_topic;
        INSERT INTO mq_coord.event (topic, kind, detail)
        VALUES (p_topic, 'config_altered', jsonb_build_object('from', t.config, 'to', v_config));
    END IF;
    RETURN v_config;
END $$;
COMMENT ON FUNCTION mq_coord.alter_topic_config(text, jsonb) IS
    'a replicated topic''s new config (replication.factor kept), which each replica''s broker brings its node to; returns it';

-- A proposal (Kafka's --generate): every partition of the topics placed
-- anew on p_brokers, replication factor kept, in the placement order of
-- those brokers.  Nothing changes.
CREATE FUNCTION mq_coord.propose_reassignment(topics text[], brokers integer[])
    RETURNS TABLE (topic text, partition integer, replicas integer[], proposed integer[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topics ALIAS FOR $1;
    p_brokers ALIAS FOR $2;
    v_order integer[];
    v_n integer;
BEGIN
    PERFORM mq_coord._check_broker(b) FROM unnest(p_brokers) AS b;
    v_order := ARRAY(SELECT o FROM unnest(mq_coord._placement_order()) WITH ORDINALITY AS u(o, k)
                      WHERE o = ANY (p_brokers) ORDER BY k);
    v_n := cardinality(v_order);
    RETURN QUERY
    SELECT p.topic, p.partition, p.replicas,
           ARRAY(SELECT v_order[1 + ((p.partition + i) % v_n)]
                   FROM generate_series(0, least(cardinality(p.replicas), v_n) - 1) AS i ORDER BY i)
      FROM mq_coord.partition p
     WHERE p.topic = ANY (p_topics) AND v_n > 0
     ORDER BY p.topic, p.partition;
END $$;

-- Start moving a partition to p_target (preferred leader first), under a
-- throttle of p_throttle_bytes per second (NULL: no limit): per broker,
-- the throttled copies it serves as leader share the smallest throttle
-- among their moves, and so do the copies it receives (docs/replication.md,
-- "Moving replicas").  Returns the replica set while moving: target, then the
-- replicas leaving.  The same target again changes only the throttle;
-- while moving, the replicas it had before cancel the move (it then
-- moves back: the replicas added are dropped once the original ones are
-- in sync); any other target is refused.
CREATE FUNCTION mq_coord.reassign(topic text, partition integer, target_replicas integer[],
                                  throttle_bytes bigint DEFAULT NULL) RETURNS integer[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_target ALIAS FOR $3;
    p_throttle_bytes ALIAS FOR $4;
    pt mq_coord.partition;
    v_min integer;
    v_full integer[];
BEGIN
    SELECT * INTO pt FROM mq_coord.partition WHERE topic = p_topic AND partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % of topic "%" is not known to the coordinator', p_partition, p_topic
            USING ERRCODE = 'MQ006';
    END IF;
    SELECT coalesce((config->>'min.insync.replicas')::integer, 1) INTO v_min
      FROM mq_coord.topic WHERE topic = p_topic;
    IF p_target IS NULL OR cardinality(p_target) < greatest(v_min, 1) OR cardinality(p_target) > 16
       OR array_position(p_target, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT b) FROM unnest(p_target) AS b) <> cardinality(p_target)
       OR p_throttle_bytes < 1 THEN
        RAISE EXCEPTION 'invalid reassignment of "%" partition % to % (throttle %)', p_topic, p_partition,
            coalesce(p_target::text, 'NULL'), coalesce(p_throttle_bytes::text, 'none')
            USING ERRCODE = 'MQ044',
                  HINT = format('Give 1 to 16 distinct broker ids, at least min.insync.replicas (%s), '
                                'and a positive throttle in bytes per second.', v_min);
    END IF;
    PERFORM mq_coord._check_broker(b) FROM unnest(p_target) AS b;
    IF pt.target_replicas IS NOT NULL AND pt.target_replicas <> p_target
       AND pt.original_replicas <> p_target THEN
        RAISE EXCEPTION '"%" partition % is already moving to %', p_topic, p_partition, pt.target_replicas
            USING ERRCODE = 'MQ045',
                  HINT = format('Wait until mqctl reassign --verify reports it complete, or cancel it by '
                                'moving it back to %s.', pt.original_replicas);
    END IF;
    IF pt.target_replicas IS NULL AND pt.replicas = p_target THEN
        RETURN pt.replicas;             -- already there
    END IF;
    v_full := p_target || ARRAY(SELECT r FROM unnest(pt.replicas) WITH ORDINALITY AS u(r, k)
                                 WHERE NOT r = ANY (p_target) ORDER BY k);
    UPDATE mq_coord.partition
       SET replicas = v_full, target_replicas = p_target, throttle_bytes = p_throttle_bytes,
           original_replicas = coalesce(pt.original_replicas, pt.replicas),
           partition_epoch = partition_epoch + 1, updated_at = clock_timestamp()
     WHERE topic = p_topic AND partition = p_partition;
    IF pt.target_replicas IS NULL THEN
        INSERT INTO mq_coord.event (topic, partition, kind, detail)
        VALUES (p_topic, p_partition, 'reassignment_started',
                jsonb_build_object('from', pt.replicas, 'to', p_target, 'throttle_bytes', p_throttle_bytes));
    ELSIF pt.target_replicas <> p_target THEN
        INSERT INTO mq_coord.event (topic, partition, kind, detail)
        VALUES (p_topic, p_partition, 'reassignment_cancelled',
                jsonb_build_object('was_moving_to', pt.target_replicas, 'back_to', p_target));
    END IF;
    RETURN v_full;
END $$;

-- The leader ends a move, conditional on leading in its epoch, being in
-- the target, and the whole target being in the ISR: replicas become the
-- target, the ISR keeps its members within it.  Returns the new ISR, or
-- NULL when it is not time (or we no longer lead).
CREATE FUNCTION mq_coord.complete_reassignment(topic text, partition integer, leader integer,
                                               leader_epoch integer) RETURNS integer[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader ALIAS FOR $3;
    p_leader_epoch ALIAS FOR $4;
    pt mq_coord.partition;
    v_isr integer[];
BEGIN
    SELECT * INTO pt FROM mq_coord.partition WHERE topic = p_topic AND partition = p_partition FOR UPDATE;
    IF NOT FOUND OR pt.leader IS DISTINCT FROM p_leader OR pt.leader_epoch <> p_leader_epoch
       OR pt.target_replicas IS NULL OR NOT pt.target_replicas <@ pt.isr
       OR NOT p_leader = ANY (pt.target_replicas) THEN
        RETURN NULL;
    END IF;
    v_isr := ARRAY(SELECT i FROM unnest(pt.isr) WITH ORDINALITY AS u(i, k)
                    WHERE i = ANY (pt.target_replicas) ORDER BY k);
    UPDATE mq_coord.partition
       SET replicas = pt.target_replicas, isr = v_isr, target_replicas = NULL, throttle_bytes = NULL,
           original_replicas = NULL, partition_epoch = partition_epoch + 1, updated_at = clock_timestamp()
     WHERE topic = p_topic AND partition = p_partition;
    INSERT INTO mq_coord.event (topic, partition, kind, broker_id, detail)
    VALUES (p_topic, p_partition, 'reassignment_completed', p_leader,
            jsonb_build_object('replicas', pt.target_replicas, 'isr', v_isr,
                               'removed', ARRAY(SELECT r FROM unnest(pt.replicas) AS r
                                                 WHERE NOT r = ANY (pt.target_replicas))));
    RETURN v_isr;
END $$;

-- What a broker reads every tick besides its assignments: its partitions
-- that are moving, with their target and throttle (usually none), and the
-- throttled moves led by a leader of one of its throttled copies (a
-- replica of a throttled move, not the leader, not in the ISR): that
-- leader's budget is shared by all the copies it serves, and the broker
-- works out its share from them (broker/mq-broker/throttle.c).
CREATE FUNCTION mq_coord.moving(broker_id integer)
    RETURNS TABLE (topic text, partition integer, target_replicas integer[], throttle_bytes bigint,
                   leader integer, replicas integer[], isr integer[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH m AS (SELECT * FROM mq_coord.partition p WHERE p.target_replicas IS NOT NULL)
    SELECT m.topic, m.partition, m.target_replicas, m.throttle_bytes, m.leader, m.replicas, m.isr
      FROM m
     WHERE moving.broker_id = ANY (m.replicas)
        OR (m.throttle_bytes IS NOT NULL
            AND m.leader IN (SELECT c.leader FROM m c
                              WHERE c.throttle_bytes IS NOT NULL AND c.leader <> moving.broker_id
                                AND moving.broker_id = ANY (c.replicas) AND NOT moving.broker_id = ANY (c.isr)))
     ORDER BY m.topic, m.partition;
$$;

-- For people and mqctl: every partition's move, if any.
CREATE VIEW mq_coord.reassignments AS
SELECT p.topic, p.partition, p.replicas, p.target_replicas, p.isr, p.leader, p.throttle_bytes,
       ARRAY(SELECT r FROM unnest(p.target_replicas) AS r WHERE NOT r = ANY (p.isr)) AS catching_up,
       (SELECT max(e.at) FROM mq_coord.event e
         WHERE e.topic = p.topic AND e.partition = p.partition AND e.kind = 'reassignment_started') AS started_at
  FROM mq_coord.partition p
 WHERE p.target_replicas IS NOT NULL;

-------------------------------------------------------------------------------
-- The data node's side
-------------------------------------------------------------------------------

-- Mark one partition's role on this node: a follower in its epoch (a
-- leader resigns), hosted or not.  Under the produce lock.
CREATE FUNCTION mq._replica_mark(p_topic_id integer, p_partition integer, p_hosted boolean)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st mq.partition_state;
BEGIN
    PERFORM mq._replica_lock(p_topic_id, p_partition);
    SELECT * INTO st FROM mq.partition_state
     WHERE topic_id = p_topic_id AND partition = p_partition FOR UPDATE;
    UPDATE mq.partition_state SET role = 'follower', high_watermark = coalesce(high_watermark, 0)
     WHERE topic_id = p_topic_id AND partition = p_partition;
    INSERT INTO mq.replica_partition AS r (topic_id, partition, hosted)
    VALUES (p_topic_id, p_partition, p_hosted)
    ON CONFLICT (topic_id, partition) DO UPDATE
       SET hosted = p_hosted,
           leader_id = CASE WHEN p_hosted THEN r.leader_id END,
           leader_name = CASE WHEN p_hosted THEN r.leader_name END,
           updated_at = now();
    IF NOT p_hosted THEN
        DELETE FROM mq.replica_progress WHERE topic_id = p_topic_id AND partition = p_partition;
    END IF;
    IF st.high_watermark IS NULL THEN
        PERFORM mq._invalidate(st.relid);   -- cached "replicated" flag changes
    END IF;
    PERFORM mq._replica_notify(p_topic_id, p_partition);
END $$;

-- Every partition of the topic that replication has not touched yet
-- ('standalone') becomes a follower: hosted when its number is in
-- p_hosted, else not hosted.  Returns how many were marked not hosted.
CREATE FUNCTION mq.replica_adopt_partitions(topic text, hosted integer[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_hosted ALIAS FOR $2;
    v_id integer := mq._topic_id(p_topic);
    v_absent integer := 0;
    r record;
BEGIN
    FOR r IN SELECT p.partition FROM mq.partition_state p
              WHERE p.topic_id = v_id AND p.role = 'standalone' ORDER BY 1 LOOP
        PERFORM mq._replica_mark(v_id, r.partition, r.partition = ANY (coalesce(p_hosted, '{}')));
        v_absent := v_absent + (NOT r.partition = ANY (coalesce(p_hosted, '{}')))::integer;
    END LOOP;
    RETURN v_absent;
END $$;

-- The broker grows its node's copy to the coordinator's partition count:
-- not refused as a client's change would be (mq._refuse_replicated_topic);
-- only brokers may call it (grant_broker).
CREATE FUNCTION mq._replica_add_partitions(p_topic text, p_count integer) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT mq_internal.add_partitions(p_topic, p_count, NULL)
$$;

-- The broker places a replicated topic on its node, in one transaction:
-- created (owned by the broker) or grown to p_partitions, then adopted
-- (above).  A copy of another incarnation than the coordinator's
-- (66_topic_delete.sql) is dropped first and the topic created afresh.
-- SECURITY INVOKER: it creates with the broker's own rights.
-- Returns the partitions newly marked not hosted.
CREATE FUNCTION mq.replica_place_topic(topic text, partitions integer, config jsonb,
                                       hosted integer[], incarnation uuid DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partitions ALIAS FOR $2;
    p_config ALIAS FOR $3;
    p_hosted ALIAS FOR $4;
    p_incarnation ALIAS FOR $5;
    v_have integer;
    v_want jsonb;
    v_cfg jsonb;
BEGIN
    IF p_incarnation IS NOT NULL THEN       -- a 0.1.0 broker gives none
        PERFORM mq._replica_incarnation(p_topic, p_incarnation);   -- an older incarnation goes
    END IF;
    SELECT t.partitions INTO v_have FROM mq.topics t WHERE t.topic = p_topic;
    IF v_have IS NULL THEN
        PERFORM mq.create_topic(p_topic, p_partitions, p_config);
    ELSIF v_have < p_partitions THEN
        PERFORM mq._replica_add_partitions(p_topic, p_partitions - v_have);
    END IF;
    -- the coordinator's config (changed by AlterConfigs in the cluster):
    -- keys the node has and it lacks return to their defaults,
    -- replication.factor stays as created; nothing when they agree
    v_want := coalesce(p_config, '{}') - 'replication.factor';
    SELECT t.config - 'replication.factor' INTO v_cfg FROM mq.topics t WHERE t.topic = p_topic;
    IF v_have IS NOT NULL AND v_cfg IS DISTINCT FROM v_want THEN
        PERFORM mq.alter_topic(p_topic, coalesce((SELECT jsonb_object_agg(k, NULL) FROM jsonb_object_keys(v_cfg) k
                                                   WHERE NOT v_want ? k), '{}') || v_want);
    END IF;
    IF p_incarnation IS NOT NULL THEN
        PERFORM mq._replica_incarnation(p_topic, p_incarnation);   -- recorded
    END IF;
    RETURN mq.replica_adopt_partitions(p_topic, p_hosted);
END $$;

-- A replica that moved away: this node no longer serves the partition.
-- Its records stay until the topic is dropped (if the node becomes a
-- replica again, its broker truncates by leader epoch first).
CREATE FUNCTION mq.replica_unhost(topic text, partition integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    v_id integer := mq._topic_id(p_topic);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mq.partition_state WHERE topic_id = v_id AND partition = p_partition) THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', p_partition, p_topic USING ERRCODE = 'MQ006';
    END IF;
    PERFORM mq._replica_mark(v_id, p_partition, false);
END $$;

-- On the leader: the replica set changed (a move started or ended).  The
-- followers listed by replica_leader_state are these; p_isr, when given,
-- is the ISR after a completed move (the coordinator changed it first).
-- The ISR keeps only members of the replica set: the set shrinks only
-- after the coordinator completed the move, whose ISR is within it.
CREATE FUNCTION mq.replica_set_replicas(topic text, partition integer, leader_epoch integer,
                                        replicas integer[], isr integer[] DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_leader_epoch ALIAS FOR $3;
    p_replicas ALIAS FOR $4;
    p_isr ALIAS FOR $5;
    v_id integer := mq._topic_id(p_topic);
BEGIN
    PERFORM mq._replica_fence(v_id, p_partition, p_leader_epoch, 'leader');
    UPDATE mq.replica_partition
       SET replicas = p_replicas,
           isr = ARRAY(SELECT i FROM unnest(coalesce(p_isr, isr)) WITH ORDINALITY AS u(i, k)
                        WHERE i = ANY (p_replicas) ORDER BY k),
           updated_at = now()
     WHERE topic_id = v_id AND partition = p_partition;
    DELETE FROM mq.replica_progress
     WHERE topic_id = v_id AND partition = p_partition AND NOT replica_id = ANY (p_replicas);
    PERFORM mq._replica_notify(v_id, p_partition);
    RETURN mq._replica_advance_hwm(v_id, p_partition);
END $$;
