-------------------------------------------------------------------------------
-- One address for clients (docs/cli.md, "A replicated cluster"): routing
-- and consumer groups that span the cluster, kept on the coordinator.
--
-- Routing: mq_coord.route(topic) gives each partition's leader, leader
-- epoch and the address of the leader's node (the node_conninfo its broker
-- registered, which never holds a password); a client keeps only host,
-- port and database from it and connects with its own role.
--
-- Cluster consumer groups: membership and assignment live here, in one
-- place that outlives any data node's failover; the records and the
-- committed offsets stay on each partition's leader (and replicate with
-- the partition).  A member joins with the topics it reads, heartbeats
-- within its session timeout, and gets the partitions the range assignor
-- gives it in the group's current generation.  Every change of the member
-- set (a join, a leave, a member whose last heartbeat is older than its
-- session timeout) or of a subscribed topic's partition count starts a new
-- generation with a new assignment.  The assignment balances the work; it
-- does not guard against two members reading one partition while a
-- rebalance is being heard: the leader's poll claims (src/poll.c) do, so a
-- member that still reads a partition moved away reads from the committed
-- position, never the same records as the new owner.
--
-- Locking: every change of a group runs under its cluster_group row lock
-- (FOR UPDATE); the functions are SECURITY DEFINER with a pinned
-- search_path and compute assignments in SQL, never in helper tables.
-------------------------------------------------------------------------------

CREATE FUNCTION mq_coord.route(topic text)
    RETURNS TABLE (partition integer, partitions integer, leader integer, leader_epoch integer,
                   leader_conninfo text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.partition, t.partitions, p.leader, p.leader_epoch, b.node_conninfo
      FROM mq_coord.partition p
      JOIN mq_coord.topic t USING (topic)
      LEFT JOIN mq_coord.broker b ON b.broker_id = p.leader
     WHERE p.topic = route.topic
     ORDER BY p.partition;
$$;

CREATE TABLE mq_coord.cluster_group (
    group_id      text PRIMARY KEY CHECK (group_id <> ''),
    generation    integer NOT NULL DEFAULT 0,
    partitions    jsonb NOT NULL DEFAULT '{}',   -- topic -> partition count at the last rebalance
    rebalances    bigint NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE mq_coord.cluster_group_member (
    group_id           text NOT NULL,
    member_id          text NOT NULL,
    topics             text[] NOT NULL,
    session_timeout_ms integer NOT NULL CHECK (session_timeout_ms BETWEEN 100 AND 3600000),
    last_heartbeat     timestamptz NOT NULL DEFAULT clock_timestamp(),
    joined_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (group_id, member_id)
);
CREATE TRIGGER cascade_to_cluster_group_member AFTER DELETE ON mq_coord.cluster_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.cluster_group_member', 'group_id');

CREATE TABLE mq_coord.cluster_group_assignment (
    group_id   text NOT NULL,
    topic      text NOT NULL,
    partition  integer NOT NULL,
    member_id  text NOT NULL,
    generation integer NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
);
CREATE TRIGGER cascade_to_cluster_group_assignment AFTER DELETE ON mq_coord.cluster_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.cluster_group_assignment', 'group_id');

SELECT pg_catalog.pg_extension_config_dump('mq_coord.cluster_group', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.cluster_group_member', '');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.cluster_group_assignment', '');

-- The partition counts of the topics the group's members subscribe to.
CREATE FUNCTION mq_coord._cluster_group_partitions(p_group text) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_object_agg(t.topic, t.partitions), '{}')
      FROM mq_coord.topic t
     WHERE EXISTS (SELECT 1 FROM mq_coord.cluster_group_member m
                    WHERE m.group_id = p_group AND t.topic = ANY (m.topics));
$$;

-- A new generation: the range assignor (Kafka's RangeAssignor) over the
-- members in member id order, per subscribed topic.
CREATE FUNCTION mq_coord._cluster_group_rebalance(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_generation integer;
BEGIN
    UPDATE mq_coord.cluster_group
       SET generation = generation + 1, rebalances = rebalances + 1,
           partitions = mq_coord._cluster_group_partitions(p_group), updated_at = clock_timestamp()
     WHERE group_id = p_group
    RETURNING generation INTO v_generation;
    DELETE FROM mq_coord.cluster_group_assignment WHERE group_id = p_group;
    INSERT INTO mq_coord.cluster_group_assignment (group_id, topic, partition, member_id, generation)
    WITH subs AS (
        SELECT t.topic, m.member_id, t.partitions AS np,
               row_number() OVER (PARTITION BY t.topic ORDER BY m.member_id COLLATE "C") - 1 AS idx,
               count(*) OVER (PARTITION BY t.topic) AS nm
          FROM mq_coord.cluster_group_member m
          JOIN mq_coord.topic t ON t.topic = ANY (m.topics)
         WHERE m.group_id = p_group)
    SELECT p_group, s.topic, p.p, s.member_id, v_generation
      FROM subs s
     CROSS JOIN LATERAL generate_series(
           (s.idx * (s.np / s.nm) + least(s.idx, s.np % s.nm))::int,
           ((s.idx + 1) * (s.np / s.nm) + least(s.idx + 1, s.np % s.nm) - 1)::int) AS p(p);
    INSERT INTO mq_coord.event (kind, detail)
    VALUES ('group_rebalanced', jsonb_build_object('group', p_group, 'generation', v_generation,
            'members', (SELECT count(*) FROM mq_coord.cluster_group_member WHERE group_id = p_group)));
END $$;

-- Lock the group's row (creating the group) and drop its expired members;
-- rebalance when members expired or a subscribed topic gained partitions.
CREATE FUNCTION mq_coord._cluster_group_lock(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_counts jsonb;
    v_expired integer;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'a group id must not be empty' USING ERRCODE = 'MQ010';
    END IF;
    INSERT INTO mq_coord.cluster_group (group_id) VALUES (p_group) ON CONFLICT (group_id) DO NOTHING;
    SELECT partitions INTO v_counts FROM mq_coord.cluster_group WHERE group_id = p_group FOR UPDATE;
    DELETE FROM mq_coord.cluster_group_member
     WHERE group_id = p_group
       AND last_heartbeat < clock_timestamp() - session_timeout_ms * interval '1 ms';
    GET DIAGNOSTICS v_expired = ROW_COUNT;
    IF v_expired > 0 OR v_counts IS DISTINCT FROM mq_coord._cluster_group_partitions(p_group) THEN
        PERFORM mq_coord._cluster_group_rebalance(p_group);
    END IF;
END $$;

-- The member's partitions in the group's current generation.
CREATE FUNCTION mq_coord._cluster_group_mine(p_group text, p_member text)
    RETURNS TABLE (member_id text, generation integer, topic text, partition integer)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p_member, g.generation, a.topic, a.partition
      FROM mq_coord.cluster_group g
      LEFT JOIN mq_coord.cluster_group_assignment a
             ON a.group_id = g.group_id AND a.member_id = p_member
     WHERE g.group_id = p_group
     ORDER BY a.topic, a.partition;
$$;

-- Join (or rejoin with the member id): returns the member id, the
-- generation and the member's partitions (one row with NULL topic when it
-- has none).  The public mq_coord.join_cluster_group below calls it (its
-- input member_id and its output column member_id share a name, which
-- PL/pgSQL refuses; docs/design.md, "SQL API conventions").
CREATE FUNCTION mq_coord._join_cluster_group(p_group text, p_topics text[], p_member_id text,
                                             p_session_timeout_ms integer)
    RETURNS TABLE (member_id text, generation integer, topic text, partition integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_member text := coalesce(nullif(p_member_id, ''), p_group || '-' || gen_random_uuid()::text);
    v_old text[];
BEGIN
    IF p_topics IS NULL OR cardinality(p_topics) = 0 THEN
        RAISE EXCEPTION 'a member subscribes to at least one topic' USING ERRCODE = 'MQ010';
    END IF;
    IF p_session_timeout_ms IS NULL OR p_session_timeout_ms NOT BETWEEN 100 AND 3600000 THEN
        RAISE EXCEPTION 'session timeout % ms is outside 100 to 3600000', p_session_timeout_ms
            USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq_coord._cluster_group_lock(p_group);
    SELECT m.topics INTO v_old FROM mq_coord.cluster_group_member m
     WHERE m.group_id = p_group AND m.member_id = v_member;
    INSERT INTO mq_coord.cluster_group_member AS m (group_id, member_id, topics, session_timeout_ms)
    VALUES (p_group, v_member, p_topics, p_session_timeout_ms)
    ON CONFLICT ON CONSTRAINT cluster_group_member_pkey DO UPDATE
       SET topics = EXCLUDED.topics, session_timeout_ms = EXCLUDED.session_timeout_ms,
           last_heartbeat = clock_timestamp();
    IF v_old IS DISTINCT FROM p_topics THEN
        PERFORM mq_coord._cluster_group_rebalance(p_group);
    END IF;
    RETURN QUERY SELECT * FROM mq_coord._cluster_group_mine(p_group, v_member);
END $$;

CREATE FUNCTION mq_coord.join_cluster_group(group_id text, topics text[], member_id text DEFAULT NULL,
                                            session_timeout_ms integer DEFAULT 10000)
    RETURNS TABLE (member_id text, generation integer, topic text, partition integer)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM mq_coord._join_cluster_group($1, $2, $3, $4);
$$;

-- A member's heartbeat: the generation and its partitions now.  A member
-- that expired (or never joined) gets MQ031 and joins again.  Called by
-- the public mq_coord.cluster_group_heartbeat below.
CREATE FUNCTION mq_coord._cluster_group_heartbeat(p_group text, p_member_id text)
    RETURNS TABLE (member_id text, generation integer, topic text, partition integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq_coord._cluster_group_lock(p_group);
    UPDATE mq_coord.cluster_group_member m SET last_heartbeat = clock_timestamp()
     WHERE m.group_id = p_group AND m.member_id = p_member_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'member "%" is not in cluster group "%"', p_member_id, p_group
            USING ERRCODE = 'MQ031', HINT = 'Join again (its session timed out, or it left).';
    END IF;
    RETURN QUERY SELECT * FROM mq_coord._cluster_group_mine(p_group, p_member_id);
END $$;

CREATE FUNCTION mq_coord.cluster_group_heartbeat(group_id text, member_id text)
    RETURNS TABLE (member_id text, generation integer, topic text, partition integer)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM mq_coord._cluster_group_heartbeat($1, $2);
$$;

CREATE FUNCTION mq_coord.leave_cluster_group(group_id text, member_id text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_group ALIAS FOR $1;
    p_member_id ALIAS FOR $2;
BEGIN
    PERFORM mq_coord._cluster_group_lock(p_group);
    DELETE FROM mq_coord.cluster_group_member m WHERE m.group_id = p_group AND m.member_id = p_member_id;
    IF FOUND THEN
        PERFORM mq_coord._cluster_group_rebalance(p_group);
    END IF;
END $$;

-- Members and what they own, for "mqctl group describe" on the coordinator.
CREATE FUNCTION mq_coord.cluster_group_members(group_id text)
    RETURNS TABLE (member_id text, generation integer, topics text[], last_heartbeat timestamptz,
                   active boolean, assigned text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT m.member_id, g.generation, m.topics, m.last_heartbeat,
           m.last_heartbeat >= clock_timestamp() - m.session_timeout_ms * interval '1 ms',
           ARRAY(SELECT a.topic || ':' || a.partition FROM mq_coord.cluster_group_assignment a
                  WHERE a.group_id = m.group_id AND a.member_id = m.member_id
                  ORDER BY a.topic, a.partition)
      FROM mq_coord.cluster_group_member m
      JOIN mq_coord.cluster_group g USING (group_id)
     WHERE m.group_id = cluster_group_members.group_id
     ORDER BY m.member_id COLLATE "C";
$$;

-- What a client role needs on the coordinator: routing and cluster groups.
CREATE FUNCTION mq_coord.grant_client(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq_coord TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION '
        'mq_coord.route(text), '
        'mq_coord.join_cluster_group(text, text[], text, integer), '
        'mq_coord.cluster_group_heartbeat(text, text), '
        'mq_coord.leave_cluster_group(text, text), '
        'mq_coord.cluster_group_members(text) '
        'TO %s', role);
END $$;
