-------------------------------------------------------------------------------
-- Consumer group members (SQL consumers): joining, heartbeats, leaving,
-- and the checks every call of a member goes through (its id, its
-- generation, the partitions it owns).  Generations and assignments are
-- 50_groups.sql's.
--
-- Locking: as 50_groups.sql: each call that changes a group takes its
-- consumer_group row lock (FOR UPDATE) first.
-------------------------------------------------------------------------------

-- Raise the right error for a member id that is not in the group.
CREATE FUNCTION mq._check_member(p_group text, p_member text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_member IS NULL THEN
        RAISE EXCEPTION 'member_id must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF EXISTS (SELECT 1 FROM mq.group_member WHERE group_id = p_group AND member_id = p_member) THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM mq.fenced_member WHERE group_id = p_group AND member_id = p_member) THEN
        RAISE EXCEPTION 'member "%" of group "%" has been fenced by a newer instance with the same instance id',
            p_member, p_group
            USING ERRCODE = 'MQ033', HINT = 'Another consumer joined with this instance id; this one must stop.';
    END IF;
    RAISE EXCEPTION 'member "%" is not in group "%"', p_member, p_group
        USING ERRCODE = 'MQ031',
              HINT = 'Its session may have timed out; join the group again with mq.join_group().';
END $$;

-- A join's arguments other than the group's (nothing changed when wrong).
CREATE FUNCTION mq._check_join_args(p_topics text[], p_instance text, p_assignor text, p_timeout_ms integer)
    RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_instance = '' THEN     -- Kafka's group.instance.id too
        RAISE EXCEPTION 'instance_id must not be empty' USING ERRCODE = 'MQ010';
    END IF;
    IF p_assignor IS NULL OR p_assignor NOT IN ('range', 'roundrobin', 'cooperative-sticky') THEN
        RAISE EXCEPTION 'unknown assignor "%"', p_assignor
            USING ERRCODE = 'MQ010', HINT = 'Use range, roundrobin or cooperative-sticky.';
    END IF;
    IF p_timeout_ms IS NULL OR p_timeout_ms NOT BETWEEN 100 AND 3600000 THEN
        RAISE EXCEPTION 'session_timeout_ms must be between 100 and 3600000'
            USING ERRCODE = 'MQ010';
    END IF;
    IF p_topics IS NULL OR cardinality(p_topics) = 0 THEN
        RAISE EXCEPTION 'a member subscribes to at least one topic' USING ERRCODE = 'MQ010';
    END IF;
END $$;

-- A known member joining again: its row.  With another instance id than
-- it joined with, refused as Kafka's coordinator refuses it: fenced when
-- that id is another member's, else an unknown member.
CREATE FUNCTION mq._rejoining_member(p_group text, p_member text, p_instance text)
    RETURNS mq.group_member
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_old mq.group_member;
BEGIN
    PERFORM mq._check_member(p_group, p_member);
    SELECT * INTO v_old FROM mq.group_member m WHERE m.group_id = p_group AND m.member_id = p_member;
    IF p_instance IS NULL OR v_old.instance_id IS NOT DISTINCT FROM p_instance THEN
        RETURN v_old;
    END IF;
    IF EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group AND m.instance_id = p_instance) THEN
        RAISE EXCEPTION 'instance id "%" of group "%" belongs to another member, not "%"',
            p_instance, p_group, p_member
            USING ERRCODE = 'MQ033', HINT = 'Another consumer joined with this instance id; this one must stop.';
    END IF;
    RAISE EXCEPTION 'member "%" of group "%" joined without instance id "%"', p_member, p_group, p_instance
        USING ERRCODE = 'MQ031',
              HINT = 'A member keeps the instance id it joined with; join without member_id to join as another.';
END $$;

-- The public mq.join_group, heartbeat and leave_group are C wrappers
-- (src/owner.c) that call these as the owner with the caller's role last;
-- a member acts for its group only with READ on the group.
CREATE FUNCTION mq_internal.join_group(group_id text, topics text[], member_id text,
                                       instance_id text, assignor text,
                                       session_timeout_ms integer, p_caller oid)
    RETURNS TABLE (member text, generation integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text := join_group.group_id;
    v_topics text[];
    v_member text := join_group.member_id;
    v_old mq.group_member;
    v_changed boolean := false;
BEGIN
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'read');
    PERFORM mq._check_join_args(join_group.topics, join_group.instance_id, join_group.assignor,
                                join_group.session_timeout_ms);
    -- by name, each one the caller may describe (42501 otherwise, whether
    -- it exists or not, as Kafka's Metadata answers a consumer) and then
    -- existing (MQ001 otherwise): a hidden topic's existence and partitions
    -- (the heartbeat's assignment) are not told
    PERFORM mq._authorize(p_caller, 'topic', t, 'describe') FROM unnest(join_group.topics) t;
    SELECT array_agg(t ORDER BY t COLLATE "C") INTO v_topics
      FROM (SELECT DISTINCT unnest(join_group.topics) AS t) s WHERE mq._topic_id(t) IS NOT NULL;
    IF EXISTS (SELECT 1 FROM mq.kafka_group_member k WHERE k.group_id = v_group AND k.active) THEN
        RAISE EXCEPTION 'group "%" has live Kafka members', v_group USING ERRCODE = 'MQ032',
            HINT = 'A group''s members are all SQL consumers or all Kafka consumers (mq-kafka refuses the other way round).';
    END IF;

    INSERT INTO mq.consumer_group AS g (group_id, assignor) VALUES (v_group, join_group.assignor)
    ON CONFLICT ON CONSTRAINT consumer_group_pkey DO NOTHING;
    PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._expire_members(v_group);
    IF EXISTS (SELECT 1 FROM mq.consumer_group g WHERE g.group_id = v_group AND g.assignor <> join_group.assignor)
    THEN
        IF EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = v_group) THEN
            RAISE EXCEPTION 'group "%" uses assignor "%", not "%"', v_group,
                (SELECT g.assignor FROM mq.consumer_group g WHERE g.group_id = v_group), join_group.assignor
                USING ERRCODE = 'MQ032', HINT = 'All members of a group use the same assignor.';
        END IF;
        UPDATE mq.consumer_group g SET assignor = join_group.assignor WHERE g.group_id = v_group;
    END IF;

    IF v_member IS NOT NULL THEN
        -- a known member joining again, perhaps with new topics
        v_old := mq._rejoining_member(v_group, v_member, join_group.instance_id);
        v_changed := v_old.topics IS DISTINCT FROM v_topics;
        UPDATE mq.group_member m
           SET topics = v_topics, session_timeout_ms = join_group.session_timeout_ms,
               last_heartbeat = clock_timestamp()
         WHERE m.group_id = v_group AND m.member_id = v_member;
    ELSIF join_group.instance_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM mq.group_member m WHERE m.group_id = v_group AND m.instance_id = join_group.instance_id) THEN
        -- a static member restarting: a new member id takes over the old
        -- one's partitions without a rebalance, and the old id is fenced
        SELECT * INTO v_old FROM mq.group_member m
         WHERE m.group_id = v_group AND m.instance_id = join_group.instance_id;
        v_member := join_group.instance_id || '-' || gen_random_uuid();
        INSERT INTO mq.fenced_member (group_id, member_id, instance_id)
        VALUES (v_group, v_old.member_id, join_group.instance_id) ON CONFLICT DO NOTHING;
        UPDATE mq.group_member m
           SET member_id = v_member, topics = v_topics, session_timeout_ms = join_group.session_timeout_ms,
               last_heartbeat = clock_timestamp()
         WHERE m.group_id = v_group AND m.member_id = v_old.member_id;
        UPDATE mq.group_assignment a SET owner = v_member WHERE a.group_id = v_group AND a.owner = v_old.member_id;
        UPDATE mq.group_assignment a SET target = v_member WHERE a.group_id = v_group AND a.target = v_old.member_id;
        v_changed := v_old.topics IS DISTINCT FROM v_topics;
        PERFORM mq._note_sql_group(v_group) WHERE NOT v_changed;  -- its new id (a new generation notes it)
    ELSE
        v_member := coalesce(join_group.instance_id, 'consumer') || '-' || gen_random_uuid();
        INSERT INTO mq.group_member (group_id, member_id, instance_id, topics, session_timeout_ms)
        VALUES (v_group, v_member, join_group.instance_id, v_topics, join_group.session_timeout_ms);
        v_changed := true;
    END IF;

    IF v_changed THEN
        PERFORM mq._rebalance(v_group);
    ELSE
        PERFORM mq._refresh_metadata(v_group);
    END IF;
    member := v_member;
    SELECT g.generation INTO generation FROM mq.consumer_group g WHERE g.group_id = v_group;
    RETURN NEXT;
END $$;

-- Keep the session alive and learn the assignment.  A partition the member
-- must give up is returned once as 'revoking'; the next heartbeat releases
-- it to its new owner.  With generation_id, a heartbeat from another
-- generation than the group's is refused (Kafka's ILLEGAL_GENERATION) and
-- changes nothing: the member rejoins (join_group with its member id) to
-- learn the current one.  Without it (NULL) the generation is not checked.
-- The check is against the generation the heartbeat found: what this call
-- itself then changes (expiring silent members, rebalancing onto new
-- partitions) comes back in the rows it returns.
CREATE FUNCTION mq_internal.heartbeat(group_id text, member_id text, generation_id integer, p_caller oid)
    RETURNS TABLE (generation integer, topic text, partition integer, state text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text := heartbeat.group_id;
    v_member text := heartbeat.member_id;
    v_generation integer;
BEGIN
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'read');
    SELECT g.generation INTO v_generation FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._expire_members(v_group);
    PERFORM mq._check_member(v_group, v_member);
    IF heartbeat.generation_id IS NOT NULL AND heartbeat.generation_id <> v_generation THEN
        RAISE EXCEPTION 'stale generation % for group "%": the current generation is %',
            heartbeat.generation_id, v_group, v_generation
            USING ERRCODE = 'MQ030',
                  HINT = 'The group rebalanced; join again with mq.join_group(..., member_id => ...) for the current generation.';
    END IF;
    PERFORM mq._refresh_metadata(v_group);
    UPDATE mq.group_member m SET last_heartbeat = clock_timestamp()
     WHERE m.group_id = v_group AND m.member_id = v_member;
    UPDATE mq.group_assignment a SET owner = a.target, revoking = false, announced = false
     WHERE a.group_id = v_group AND a.owner = v_member AND a.revoking AND a.announced;
    UPDATE mq.group_assignment a SET announced = true
     WHERE a.group_id = v_group AND a.owner = v_member AND a.revoking AND NOT a.announced;
    RETURN QUERY
    SELECT g.generation, t.topic_name, a.partition,
           CASE WHEN a.revoking THEN 'revoking' ELSE 'owned' END
      FROM mq.group_assignment a
      JOIN mq.consumer_group g ON g.group_id = a.group_id
      JOIN mq.topic t ON t.topic_id = a.topic_id
     WHERE a.group_id = v_group AND a.owner = v_member
     ORDER BY t.topic_name, a.partition;
    IF NOT FOUND THEN
        -- no partitions: still tell the member its generation
        RETURN QUERY SELECT g.generation, NULL::text, NULL::integer, 'none'::text
                       FROM mq.consumer_group g WHERE g.group_id = v_group;
    END IF;
END $$;

CREATE FUNCTION mq_internal.leave_group(group_id text, member_id text, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text := leave_group.group_id;
BEGIN
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'read');
    PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
    PERFORM mq._check_member(v_group, leave_group.member_id);
    DELETE FROM mq.group_member m WHERE m.group_id = v_group AND m.member_id = leave_group.member_id;
    UPDATE mq.group_assignment a SET owner = NULL, revoking = false, announced = false
     WHERE a.group_id = v_group AND a.owner = leave_group.member_id;
    PERFORM mq._rebalance(v_group);
END $$;

CREATE FUNCTION mq.join_group(group_id text, topics text[], member_id text DEFAULT NULL,
                              instance_id text DEFAULT NULL, assignor text DEFAULT 'range',
                              session_timeout_ms integer DEFAULT 45000)
    RETURNS TABLE (member text, generation integer)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.heartbeat(group_id text, member_id text, generation_id integer DEFAULT NULL)
    RETURNS TABLE (generation integer, topic text, partition integer, state text)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.leave_group(group_id text, member_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

-- Partitions of a topic the member owns (for mq.poll with member_id).
-- A poll, like a heartbeat, first rebalances a group whose topics gained
-- partitions (not in a read-only transaction; a group that another
-- transaction holds is left to that one).
CREATE FUNCTION mq._member_partitions(p_group text, p_topic_id integer, p_member text) RETURNS integer[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._check_member(p_group, p_member);
    IF current_setting('transaction_read_only') = 'off' AND mq._metadata_changed(p_group) THEN
        PERFORM mq._refresh_metadata(p_group);
    END IF;
    RETURN ARRAY(SELECT a.partition FROM mq.group_assignment a
                  WHERE a.group_id = p_group AND a.topic_id = p_topic_id AND a.owner = p_member);
END $$;

-- An offset commit from a member: its generation must be current and it
-- must own the partition.
CREATE FUNCTION mq._check_member_commit(p_group text, p_topic_id integer, p_partition integer,
                                        p_member text, p_generation integer) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_generation integer;
BEGIN
    PERFORM mq._check_member(p_group, p_member);
    SELECT g.generation INTO v_generation FROM mq.consumer_group g WHERE g.group_id = p_group;
    IF p_generation IS DISTINCT FROM v_generation THEN
        RAISE EXCEPTION 'stale generation % for group "%": the current generation is %',
            coalesce(p_generation::text, 'NULL'), p_group, v_generation
            USING ERRCODE = 'MQ030',
                  HINT = 'The group rebalanced; call mq.heartbeat() for the current generation and assignment.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mq.group_assignment a
                    WHERE a.group_id = p_group AND a.topic_id = p_topic_id
                      AND a.partition = p_partition AND a.owner = p_member) THEN
        RAISE EXCEPTION 'member "%" does not own partition % of topic "%"', p_member, p_partition,
            (SELECT topic_name FROM mq.topic WHERE topic_id = p_topic_id)
            USING ERRCODE = 'MQ034', HINT = 'Commit only the partitions mq.heartbeat() lists for the member.';
    END IF;
END $$;
