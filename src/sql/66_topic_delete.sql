-------------------------------------------------------------------------------
-- Deleting a replicated topic (docs/replication.md, "Deleting a topic"),
-- and the incarnations that make creating it again under its name safe.
--
-- On the coordinator: each topic has an incarnation, a random uuid given
-- when mq_coord.create_topic makes it and never given again (a restored
-- coordinator cannot hand one out twice, as a sequence could).
-- mq_coord.delete_topic removes the topic and its partitions (replicas,
-- leaders, epochs, ISRs, moves) in one transaction and keeps a tombstone
-- of the incarnation in mq_coord.deleted_topic.  The brokers stop leading
-- and following its partitions at their next tick (nothing assigns them
-- any more) and drop their node's copy when a tombstone names the
-- incarnation their node holds (mq_coord.deleted_topics): at once, or
-- when a broker that was down during the deletion is back.  Tombstones
-- stay, so a broker down for long still finds its node's incarnation
-- there; a coordinator without them (new, or restored from before the
-- deletion) never makes a broker drop anything.
--
-- Leader epochs go on across incarnations: a topic created again starts
-- its partitions at the largest leader epoch any earlier incarnation of
-- its name reached (mq_coord._place_partitions), so its first election
-- is above any epoch a node holding an old copy has.  The data nodes
-- fence older epochs (MQ024), so such a copy can neither fetch from the
-- new incarnation's leaders nor be fetched from by its followers until
-- its broker dropped it; the incarnation says which copy to drop, the
-- epochs keep the two apart meanwhile.
--
-- On a data node: mq.replica_topic records the incarnation each
-- replicated topic was placed with (mq.replica_place_topic, which drops
-- and creates afresh, in one transaction, a topic the node holds in
-- another incarnation), and mq.replica_drop_topic drops the node's copy
-- of one incarnation, as mq.drop_topic drops a topic (its tables, roles,
-- epochs, committed offsets and producer state), without mq's
-- authorization: the coordinator decided it.
--
-- Locking: delete_topic takes create_topic's advisory lock, so that a
-- creation of the same name waits for it, and deletes the partitions'
-- rows, so that an election or ISR change under way finishes first (and
-- any later one finds the partition gone).  On the node, the drop takes
-- the topic's row and tables as mq.drop_topic does.
-------------------------------------------------------------------------------

ALTER TABLE mq_coord.topic
    ADD COLUMN incarnation uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid();

CREATE TABLE mq_coord.deleted_topic (
    incarnation  uuid PRIMARY KEY,
    topic        text NOT NULL,
    leader_epoch integer NOT NULL,    -- the largest of its partitions'
    deleted_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deleted_topic_name ON mq_coord.deleted_topic (topic);
SELECT pg_catalog.pg_extension_config_dump('mq_coord.deleted_topic', '');

CREATE TABLE mq.replica_topic (
    topic_id    integer PRIMARY KEY,
    incarnation uuid NOT NULL
);
CREATE TRIGGER cascade_to_replica_topic AFTER DELETE ON mq.topic
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.replica_topic', 'topic_id');
SELECT pg_catalog.pg_extension_config_dump('mq.replica_topic', '');

-- Delete a replicated topic: the brokers drop it from their nodes.
CREATE FUNCTION mq_coord.delete_topic(topic text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    t mq_coord.topic;
BEGIN
    IF p_topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('mq_coord.create_topic'));
    SELECT * INTO t FROM mq_coord.topic WHERE topic = p_topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" is not known to the coordinator', p_topic USING ERRCODE = 'MQ001';
    END IF;
    INSERT INTO mq_coord.deleted_topic (incarnation, topic, leader_epoch)
    SELECT t.incarnation, p_topic, coalesce(max(p.leader_epoch), 0)
      FROM mq_coord.partition p WHERE p.topic = p_topic;
    DELETE FROM mq_coord.topic WHERE topic = p_topic;     -- its partitions go with it
    INSERT INTO mq_coord.event (topic, kind, detail)
    VALUES (p_topic, 'topic_deleted',
            jsonb_build_object('partitions', t.partitions, 'incarnation', t.incarnation));
END $$;

-- Of a node's replicated topics (names and incarnations, as
-- mq.replica_topics lists them), those deleted: their incarnation has a
-- tombstone; one placed before incarnations were recorded (NULL) when its
-- name has a tombstone and no topic has the name now.
CREATE FUNCTION mq_coord.deleted_topics(topics text[], incarnations uuid[])
    RETURNS TABLE (topic text, incarnation uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.topic, n.incarnation
      FROM unnest(deleted_topics.topics, deleted_topics.incarnations) AS n(topic, incarnation)
     WHERE EXISTS (SELECT 1 FROM mq_coord.deleted_topic d
                    WHERE d.topic OPERATOR(pg_catalog.=) n.topic
                      AND (d.incarnation OPERATOR(pg_catalog.=) n.incarnation OR n.incarnation IS NULL))
       AND (n.incarnation IS NOT NULL
            OR NOT EXISTS (SELECT 1 FROM mq_coord.topic t WHERE t.topic OPERATOR(pg_catalog.=) n.topic))
     ORDER BY 1;
$$;

-------------------------------------------------------------------------------
-- The data node's side
-------------------------------------------------------------------------------

-- This node's replicated topics (any partition given to replication) and
-- the incarnation each was placed with (NULL: placed before they were
-- recorded, or by hand).
CREATE FUNCTION mq.replica_topics() RETURNS TABLE (topic text, incarnation uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.topic_name, r.incarnation
      FROM mq.topic t
      LEFT JOIN mq.replica_topic r ON r.topic_id OPERATOR(pg_catalog.=) t.topic_id
     WHERE EXISTS (SELECT 1 FROM mq.replica_partition p WHERE p.topic_id OPERATOR(pg_catalog.=) t.topic_id)
     ORDER BY 1;
$$;

-- Drop this node's copy of a replicated topic in one incarnation (NULL:
-- one placed without).  Returns false when the node holds no such copy
-- (none, another incarnation, or a topic replication never touched).
CREATE FUNCTION mq.replica_drop_topic(topic text, incarnation uuid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_incarnation ALIAS FOR $2;
    v_id integer;
BEGIN
    SELECT t.topic_id INTO v_id FROM mq.topic t WHERE t.topic_name = p_topic FOR UPDATE;
    IF v_id IS NULL
       OR NOT EXISTS (SELECT 1 FROM mq.replica_partition p WHERE p.topic_id = v_id)
       OR (SELECT r.incarnation FROM mq.replica_topic r WHERE r.topic_id = v_id)
          IS DISTINCT FROM p_incarnation THEN
        RETURN false;
    END IF;
    PERFORM mq_internal.drop_topic(p_topic, NULL);    -- no caller: not authorized as one
    RETURN true;
END $$;

-- mq.replica_place_topic's part, before and after it creates: the node's
-- topic in the coordinator's incarnation.  A copy of another incarnation
-- is dropped (the caller then creates the topic afresh); a copy without
-- one is given it.
CREATE FUNCTION mq._replica_incarnation(p_topic text, p_incarnation uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_have uuid;
BEGIN
    SELECT t.topic_id INTO v_id FROM mq.topic t WHERE t.topic_name = p_topic;
    IF v_id IS NULL OR p_incarnation IS NULL THEN
        RETURN;
    END IF;
    SELECT r.incarnation INTO v_have FROM mq.replica_topic r WHERE r.topic_id = v_id;
    IF v_have IS NULL THEN
        INSERT INTO mq.replica_topic (topic_id, incarnation) VALUES (v_id, p_incarnation);
    ELSIF v_have <> p_incarnation THEN
        PERFORM mq.replica_drop_topic(p_topic, v_have);
    END IF;
END $$;
