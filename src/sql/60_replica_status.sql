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
    -- the ISR: a replicated partition's, or the one copy of a topic that
    -- is not replicated (as a Kafka topic of one replica); NULL for a
    -- replicated topic this node does not hold as leader or follower yet
    SELECT p.leader_epoch, p.role, coalesce((t.config->>'min.insync.replicas')::integer, 1),
           coalesce(cardinality(r.isr),
                    CASE WHEN p.role = 'standalone'
                              AND coalesce((t.config->>'replication.factor')::integer, 1) <= 1 THEN 1 END)
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
