-------------------------------------------------------------------------------
-- Kafka listeners on the coordinator (docs/kafka.md, "Replicated clusters").
--
-- Each node's mq-kafka (started by its mq-broker from the [kafka] section)
-- registers the address Kafka clients reach it at, under its broker id, and
-- reads the cluster's view from here: which listeners are live, each
-- broker's node (for forwarding offset commits to a partition's leader)
-- and each partition's leader, replicas and ISR.  A listener is live while
-- its coordinator session holds the advisory lock (MQ_COORD_KAFKA_LOCK,
-- broker id), as a broker is live while it holds its liveness lock; it
-- gives the lock up while its own node is unreachable, so that groups it
-- coordinated move to another listener.
-------------------------------------------------------------------------------

CREATE TABLE mq_coord.kafka_listener (
    broker_id     integer PRIMARY KEY CHECK (broker_id >= 0),
    host          text NOT NULL,
    port          integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    backend_pid   integer,            -- its coordinator session
    registered_at timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('mq_coord.kafka_listener', '');
COMMENT ON TABLE mq_coord.kafka_listener IS
    'the Kafka address of each node''s mq-kafka; live while its session holds its lock';

-- Lock class "MQK".
CREATE FUNCTION mq_coord.kafka_lock_class() RETURNS integer
    LANGUAGE sql IMMUTABLE AS 'SELECT 5067083';     -- 0x4D514B
COMMENT ON FUNCTION mq_coord.kafka_lock_class() IS
    'first key of the advisory lock a live Kafka listener holds (second: its broker id)';

-- Take (p_live) or give up (NOT p_live) the listener's lock in this
-- session, and record its address.  Returns whether it is live.
CREATE FUNCTION mq_coord.kafka_register(broker_id integer, host text, port integer,
                                        live boolean) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_broker_id ALIAS FOR $1;
    p_host ALIAS FOR $2;
    p_port ALIAS FOR $3;
    p_live ALIAS FOR $4;
    v_held boolean := mq_coord._holds(mq_coord.kafka_lock_class(), p_broker_id);
BEGIN
    IF p_broker_id IS NULL OR p_live IS NULL THEN
        RAISE EXCEPTION 'broker_id and live must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF NOT p_live THEN
        IF v_held THEN
            PERFORM pg_advisory_unlock(mq_coord.kafka_lock_class(), p_broker_id);
        END IF;
        RETURN false;
    END IF;
    IF NOT v_held AND NOT pg_try_advisory_lock(mq_coord.kafka_lock_class(), p_broker_id) THEN
        RETURN false;       -- another listener with this id is live
    END IF;
    INSERT INTO mq_coord.kafka_listener AS k (broker_id, host, port, backend_pid)
    VALUES (p_broker_id, p_host, p_port, pg_backend_pid())
    ON CONFLICT (broker_id) DO UPDATE
       SET host = EXCLUDED.host, port = EXCLUDED.port, backend_pid = EXCLUDED.backend_pid
     WHERE (k.host, k.port, k.backend_pid) IS DISTINCT FROM
           (EXCLUDED.host, EXCLUDED.port, EXCLUDED.backend_pid);
    RETURN true;
END $$;
COMMENT ON FUNCTION mq_coord.kafka_register(integer, text, integer, boolean) IS
    'mq-kafka API: take or give up the listener''s liveness lock and record its address';

-- Every registered listener: its address, whether it is live, and its
-- broker's node (NULL when the broker never registered).
CREATE FUNCTION mq_coord.kafka_listeners()
    RETURNS TABLE (broker_id integer, host text, port integer, live boolean, node_conninfo text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT k.broker_id, k.host, k.port,
           EXISTS (SELECT 1 FROM pg_locks l
                    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                      AND l.pid = k.backend_pid
                      AND l.classid = mq_coord.kafka_lock_class()::oid
                      AND l.objid = k.broker_id::oid),
           b.node_conninfo
      FROM mq_coord.kafka_listener k
      LEFT JOIN mq_coord.broker b ON b.broker_id = k.broker_id
     ORDER BY k.broker_id;
$$;
COMMENT ON FUNCTION mq_coord.kafka_listeners() IS
    'mq-kafka API: the Kafka listeners, which are live, and their nodes';

-- Every replicated partition's leader (NULL: none), replicas and ISR.
CREATE FUNCTION mq_coord.kafka_partitions()
    RETURNS TABLE (topic text, partition integer, leader integer, replicas integer[], isr integer[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.topic, p.partition, p.leader, p.replicas, p.isr
      FROM mq_coord.partition p ORDER BY p.topic, p.partition;
$$;
COMMENT ON FUNCTION mq_coord.kafka_partitions() IS
    'mq-kafka API: each replicated partition''s leader, replicas and ISR';

-- What mq-kafka calls on the coordinator; it connects as its broker's role.
CREATE FUNCTION mq_coord.grant_kafka(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq_coord TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION '
        'mq_coord.kafka_register(integer, text, integer, boolean), '
        'mq_coord.kafka_listeners(), '
        'mq_coord.kafka_partitions(), '
        -- CreateTopics and CreatePartitions in a cluster act here (docs/kafka.md)
        'mq_coord.create_topic(text, integer, jsonb), '
        -- DeleteTopics in a cluster (66_topic_delete.sql)
        'mq_coord.delete_topic(text), '
        'mq_coord.add_partitions(text, integer), '
        -- AlterConfigs and IncrementalAlterConfigs in a cluster
        'mq_coord.alter_topic_config(text, jsonb), '
        -- Kafka transactions across nodes (68_kafka_txn_cluster.sql)
        'mq_coord.init_producer(text), '
        'mq_coord.kafka_txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[]), '
        'mq_coord.kafka_txn_abort(text, text), mq_coord.txn_output_durable(text, text, integer), '
        'mq_coord.txn_done(text), '
        -- OffsetFetch's require_stable
        'mq_coord.kafka_txn_note_offsets(text, text, text[], integer[], timestamptz), '
        'mq_coord.txn_offsets_unstable(text), '
        -- AlterPartitionReassignments and ListPartitionReassignments
        'mq_coord.reassign(text, integer, integer[], bigint), '
        -- ElectLeaders (69_preferred_election.sql)
        'mq_coord.elect_preferred(text, integer, integer) '
        'TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT SELECT (topic, partition, replicas, target_replicas, original_replicas) '
        'ON mq_coord.partition TO %s', role);
    -- DescribeConfigs of a replicated topic no node holding it answers
    EXECUTE pg_catalog.format('GRANT SELECT (topic, config) ON mq_coord.topic TO %s', role);
END;
$$;
COMMENT ON FUNCTION mq_coord.grant_kafka(regrole) IS
    'grant a role what mq-kafka needs on the coordinator (see docs/kafka.md)';

REVOKE ALL ON FUNCTION mq_coord.kafka_register(integer, text, integer, boolean),
    mq_coord.kafka_listeners(), mq_coord.kafka_partitions(), mq_coord.grant_kafka(regrole),
    mq_coord.kafka_lock_class() FROM PUBLIC;
