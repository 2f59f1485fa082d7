-------------------------------------------------------------------------------
-- Replication, data node side: committed group offsets on replicated
-- partitions, versioned per leader epoch and copied with fetches.
-------------------------------------------------------------------------------

-- Committed offsets on replicated partitions.  The version of a
-- partition's offsets (0 before it was ever led).
-- (PL/pgSQL, for its cached plan: every follower fetch calls it;
-- _replica_isr_min in 60_replica.sql says why)
CREATE FUNCTION mq._offsets_version(p_topic_id integer, p_partition integer) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN coalesce((SELECT v.version FROM mq.offset_version v
                      WHERE v.topic_id = p_topic_id AND v.partition = p_partition), 0);
END $$;

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
-- (PL/pgSQL for its cached plan, as _offsets_version.)
CREATE FUNCTION mq._offsets_acked_version(p_topic_id integer, p_partition integer, p_leader_epoch integer)
    RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(min(CASE WHEN g.leader_epoch = p_leader_epoch
                                     THEN coalesce(g.offsets_version, -1) ELSE -1 END),
                            mq._offsets_version(p_topic_id, p_partition))
              FROM mq.replica_partition rp
             CROSS JOIN LATERAL unnest(rp.isr) AS i(replica_id)
              LEFT JOIN mq.replica_progress g
                ON g.topic_id = p_topic_id AND g.partition = p_partition AND g.replica_id = i.replica_id
             WHERE rp.topic_id = p_topic_id AND rp.partition = p_partition
               AND i.replica_id IS DISTINCT FROM rp.leader_id);
END $$;
