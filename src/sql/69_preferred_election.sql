-------------------------------------------------------------------------------
-- Preferred leader elections on request (Kafka's ElectLeaders, KIP-460):
-- the leader of a partition hands leadership to its preferred replica (the
-- first of its replicas) at its next tick, without waiting for
-- auto.leader.rebalance.delay.ms and even with auto.leader.rebalance.enable
-- off (docs/replication.md, "Preferred leaders").  mq_coord.elect_preferred
-- records the request until a deadline; the leader's broker reads it with
-- its assignments and hands over as handover.c does; mq_coord.elect clears
-- it when the preferred replica is elected.  Locking: the partition's row
-- (FOR UPDATE), as mq_coord.elect and mq_coord.reassign take it.
-------------------------------------------------------------------------------

ALTER TABLE mq_coord.partition
    ADD COLUMN preferred_election_until timestamptz;  -- an election asked for, until then

-- What every broker reads each tick: the partitions it holds a replica of,
-- with the leader's node address, whether a preferred leader election
-- is asked for, and the topic's incarnation (66_topic_delete.sql).
CREATE FUNCTION mq_coord.assignments(broker_id integer)
    RETURNS TABLE (topic text, partition integer, partitions integer, config jsonb, lock_id integer,
                   replicas integer[], leader integer, leader_epoch integer, isr integer[],
                   partition_epoch integer, leader_conninfo text, leader_name text,
                   elect_preferred boolean, incarnation uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.topic, p.partition, t.partitions, t.config, p.lock_id, p.replicas, p.leader,
           p.leader_epoch, p.isr, p.partition_epoch, b.node_conninfo, b.node_name,
           coalesce(p.preferred_election_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp(), false),
           t.incarnation
      FROM mq_coord.partition p
      JOIN mq_coord.topic t USING (topic)
      LEFT JOIN mq_coord.broker b ON b.broker_id OPERATOR(pg_catalog.=) p.leader
     WHERE assignments.broker_id OPERATOR(pg_catalog.=) ANY (p.replicas)
     ORDER BY p.topic, p.partition;
$$;

-- Ask for partition's preferred replica to lead it within timeout_ms.
-- Returns 'requested'; 'not_needed' when it leads already; 'not_available'
-- when it is not in the ISR or its broker holds no liveness lock;
-- 'unknown' for a partition the coordinator does not know.
CREATE FUNCTION mq_coord.elect_preferred(topic text, partition integer, timeout_ms integer)
    RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_timeout_ms ALIAS FOR $3;
    pt mq_coord.partition;
BEGIN
    SELECT * INTO pt FROM mq_coord.partition WHERE topic = p_topic AND partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    IF pt.leader IS NOT DISTINCT FROM pt.replicas[1] THEN
        RETURN 'not_needed';
    END IF;
    IF NOT pt.replicas[1] = ANY (pt.isr) OR NOT mq_coord.broker_alive(pt.replicas[1], 2147483647) THEN
        RETURN 'not_available';
    END IF;
    UPDATE mq_coord.partition
       SET preferred_election_until = clock_timestamp() + greatest(p_timeout_ms, 1000) * interval '1 ms'
     WHERE topic = p_topic AND partition = p_partition;
    INSERT INTO mq_coord.event (topic, partition, kind, broker_id, detail)
    VALUES (p_topic, p_partition, 'preferred_election_requested', pt.replicas[1],
            jsonb_build_object('leader', pt.leader, 'timeout_ms', p_timeout_ms));
    RETURN 'requested';
END $$;
