-------------------------------------------------------------------------------
-- Consumer groups: membership, generations, assignors, rebalancing
--
-- The group coordinator runs in the database.  Members join with the
-- topics they subscribe to and an assignor; every change of membership or
-- subscription starts a new generation and recomputes the assignment:
--   range, roundrobin   eager: every partition is revoked and reassigned
--   cooperative-sticky  cooperative (KIP-429): partitions keep their owner
--                       where the balance allows; a partition that moves is
--                       first marked revoking, announced to its owner by a
--                       heartbeat, released by the owner's next heartbeat,
--                       and only then owned by its new member.
-- Members that stop heartbeating are removed after their session timeout
-- by maintenance (or by any later call on the group).  A static member
-- (instance id) that rejoins gets a new member id and keeps its partitions
-- without a rebalance; the old member id is fenced.  A subscribed topic
-- that gains partitions rebalances the group at its next join, heartbeat
-- or member poll, or at maintenance (_refresh_metadata).
--
-- Locking: every change to a group runs under its consumer_group row lock
-- (FOR UPDATE), with its __consumer_offsets record queued (mq._note_sql_group).
-- Assignments are computed in variables and arrays, never in helper tables:
-- these run as the extension owner, and a caller's table of the same name
-- (a temp table with a trigger) would run the caller's code as the owner.
-------------------------------------------------------------------------------

CREATE TABLE mq.consumer_group (
    group_id     text PRIMARY KEY,
    generation   integer NOT NULL DEFAULT 0,
    assignor     text NOT NULL,
    rebalances   bigint NOT NULL DEFAULT 0,
    last_revoked integer NOT NULL DEFAULT 0,   -- partitions the last rebalance revoked
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mq.group_member (
    group_id           text NOT NULL,
    member_id          text NOT NULL,
    instance_id        text,
    topics             integer[] NOT NULL,
    session_timeout_ms integer NOT NULL,
    last_heartbeat     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (group_id, member_id),
    UNIQUE (group_id, instance_id)
);
CREATE TRIGGER cascade_to_group_member AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_member', 'group_id');

CREATE TABLE mq.group_assignment (
    group_id   text NOT NULL,
    topic_id   integer NOT NULL,
    partition  integer NOT NULL,
    owner      text,                  -- the member consuming it now
    target     text,                  -- where it goes once the owner releases it
    revoking   boolean NOT NULL DEFAULT false,
    announced  boolean NOT NULL DEFAULT false,  -- the owner was told by a heartbeat
    PRIMARY KEY (group_id, topic_id, partition)
);
CREATE TRIGGER cascade_to_group_assignment AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_assignment', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_group_assignment AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_assignment', 'group_id');
CREATE TRIGGER cascade_to_poll_pending AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.poll_pending', 'group_id');

-- member ids replaced by a newer instance with the same instance id
CREATE TABLE mq.fenced_member (
    group_id    text NOT NULL,
    member_id   text NOT NULL,
    instance_id text NOT NULL,
    fenced_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, member_id)
);

SELECT pg_catalog.pg_extension_config_dump('mq.consumer_group', '');
SELECT pg_catalog.pg_extension_config_dump('mq.group_member', '');
SELECT pg_catalog.pg_extension_config_dump('mq.group_assignment', '');

-- The group's members in Kafka's assignor order
-- (AbstractPartitionAssignor.MemberInfo.compareTo): static members first,
-- by instance id, then dynamic members by member id; ids compare as Java
-- strings do (byte order here, whatever the database's collation).
CREATE FUNCTION mq._members_ordered(p_group text)
RETURNS TABLE (member_id text, topics integer[], ord integer)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT m.member_id, m.topics,
           (row_number() OVER (ORDER BY m.instance_id IS NULL, m.instance_id COLLATE "C",
                                        m.member_id COLLATE "C"))::integer
      FROM mq.group_member m WHERE m.group_id = p_group
$$;

-- Every partition of the topics the group's members subscribe to, sorted
-- by topic name (byte order) and partition, as the assignors see them.
CREATE FUNCTION mq._group_partitions(p_group text)
RETURNS TABLE (topic_id integer, partition integer, ord bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.topic_id, p.p, row_number() OVER (ORDER BY t.topic_name COLLATE "C", p.p)
      FROM mq.topic t CROSS JOIN LATERAL generate_series(0, t.partitions - 1) p(p)
     WHERE EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group AND t.topic_id = ANY (m.topics))
$$;

-- Whether the group's assignment no longer covers the partitions its
-- members subscribe to: a subscribed topic gained partitions
-- (mq.add_partitions) since the last rebalance.  Kafka's consumers notice
-- this in their metadata and rejoin; here the group's next join,
-- heartbeat or member poll, or maintenance, rebalances.  After a
-- rebalance the assignment has one row per subscribed partition, and
-- partitions are never removed, so counting suffices.
CREATE FUNCTION mq._metadata_changed(p_group text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT sum(t.partitions) FROM mq.topic t
                      WHERE EXISTS (SELECT 1 FROM mq.group_member m
                                     WHERE m.group_id = p_group AND t.topic_id = ANY (m.topics))), 0)
           <> (SELECT count(*) FROM mq.group_assignment a WHERE a.group_id = p_group)
$$;

-- The target assignment of a group's current members, by its assignor.
CREATE FUNCTION mq._assign(p_group text)
RETURNS TABLE (topic_id integer, partition integer, member_id text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_assignor text;
BEGIN
    SELECT g.assignor INTO v_assignor FROM mq.consumer_group g WHERE g.group_id = p_group;
    IF v_assignor = 'range' THEN
        -- RangeAssignor: per topic, its subscribers in member order get
        -- contiguous ranges: n / m each, the first n % m one more
        RETURN QUERY
        WITH subs AS (
            SELECT t.topic_id, o.member_id,
                   row_number() OVER (PARTITION BY t.topic_id ORDER BY o.ord) - 1 AS idx,
                   count(*) OVER (PARTITION BY t.topic_id) AS nm,
                   t.partitions AS np
              FROM mq._members_ordered(p_group) o
              JOIN mq.topic t ON t.topic_id = ANY (o.topics))
        SELECT s.topic_id, p.p, s.member_id
          FROM subs s
         CROSS JOIN LATERAL generate_series(
               (s.idx * (s.np / s.nm) + least(s.idx, s.np % s.nm))::int,
               ((s.idx + 1) * (s.np / s.nm) + least(s.idx + 1, s.np % s.nm) - 1)::int) AS p(p);
    ELSIF v_assignor = 'roundrobin' THEN
        RETURN QUERY SELECT * FROM mq._assign_roundrobin(p_group);
    ELSE
        -- cooperative-sticky: every member keeps what it owns up to its
        -- quota; the rest goes to the least-loaded subscribed members
        RETURN QUERY SELECT * FROM mq._assign_sticky(p_group);
    END IF;
END $$;

-- RoundRobinAssignor: all subscribed topic-partitions in order, dealt by
-- a circular pointer over the members in member order; for each
-- partition the pointer moves on past members not subscribed to its
-- topic, and after an assignment it moves to the next member.
CREATE FUNCTION mq._assign_roundrobin(p_group text)
RETURNS TABLE (topic_id integer, partition integer, member_id text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_members text[];
    v_n integer;
    v_ptr integer := 1;    -- position in v_members
    r record;
BEGIN
    SELECT array_agg(o.member_id ORDER BY o.ord) INTO v_members FROM mq._members_ordered(p_group) o;
    v_n := coalesce(cardinality(v_members), 0);
    FOR r IN
        SELECT gp.topic_id AS tid, gp.partition AS pn,
               (SELECT array_agg(o.ord) FROM mq._members_ordered(p_group) o
                 WHERE gp.topic_id = ANY (o.topics)) AS subscribers
          FROM mq._group_partitions(p_group) gp
         ORDER BY gp.ord
    LOOP
        WHILE NOT (v_ptr = ANY (r.subscribers)) LOOP
            v_ptr := v_ptr % v_n + 1;
        END LOOP;
        topic_id := r.tid;
        partition := r.pn;
        member_id := v_members[v_ptr];
        RETURN NEXT;
        v_ptr := v_ptr % v_n + 1;
    END LOOP;
END $$;

-- cooperative-sticky.  Built in variables, not in a helper table: these
-- run as the extension owner, where a table the caller created first (a
-- temp table with a trigger) would run the caller's code as the owner.
CREATE FUNCTION mq._assign_sticky(p_group text)
RETURNS TABLE (topic_id integer, partition integer, member_id text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_members text[];      -- in member order
    v_load integer[];      -- partitions given to each of v_members so far
    v_tid integer[] := '{}';
    v_part integer[] := '{}';
    v_who text[] := '{}';
    v_total integer;
    v_floor integer;
    v_extra integer;       -- members that may hold one more than the floor
    v_i integer;
    r record;
BEGIN
    SELECT array_agg(o.member_id ORDER BY o.ord) INTO v_members FROM mq._members_ordered(p_group) o;
    IF v_members IS NULL THEN
        RETURN;
    END IF;
    v_load := array_fill(0, ARRAY[cardinality(v_members)]);
    SELECT count(*) INTO v_total FROM mq._group_partitions(p_group);
    v_floor := v_total / cardinality(v_members);
    v_extra := v_total % cardinality(v_members);

    -- keep current ownership (the future owner of a revoking partition), up
    -- to the floor; then one more each for up to v_extra members
    FOR r IN
        SELECT k.topic_id AS tid, k.partition AS pn, k.who, k.n <= v_floor AS within FROM (
            SELECT a.topic_id, a.partition, coalesce(a.target, a.owner) AS who,
                   row_number() OVER (PARTITION BY coalesce(a.target, a.owner) ORDER BY a.topic_id, a.partition) AS n
              FROM mq.group_assignment a
              JOIN mq.group_member m ON m.group_id = a.group_id AND m.member_id = coalesce(a.target, a.owner)
                                    AND a.topic_id = ANY (m.topics)
             WHERE a.group_id = p_group) k
         ORDER BY k.n > v_floor, k.topic_id, k.partition
    LOOP
        v_i := array_position(v_members, r.who);
        IF NOT r.within THEN
            EXIT WHEN v_extra = 0;
            CONTINUE WHEN v_load[v_i] <> v_floor;
            v_extra := v_extra - 1;
        END IF;
        v_tid := v_tid || r.tid;
        v_part := v_part || r.pn;
        v_who := v_who || r.who;
        v_load[v_i] := v_load[v_i] + 1;
    END LOOP;
    -- everything else to the least-loaded member subscribed to its topic,
    -- the first in member order among equals
    FOR r IN
        SELECT gp.topic_id AS tid, gp.partition AS pn
          FROM mq._group_partitions(p_group) gp
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_tid, v_part) AS k(t, p)
                            WHERE k.t = gp.topic_id AND k.p = gp.partition)
         ORDER BY gp.ord
    LOOP
        SELECT u.i::integer INTO v_i
          FROM unnest(v_load) WITH ORDINALITY AS u(n, i)
          JOIN mq.group_member m ON m.group_id = p_group AND m.member_id = v_members[u.i::integer]
         WHERE r.tid = ANY (m.topics)
         ORDER BY u.n, u.i
         LIMIT 1;
        v_tid := v_tid || r.tid;
        v_part := v_part || r.pn;
        v_who := v_who || v_members[v_i];
        v_load[v_i] := v_load[v_i] + 1;
    END LOOP;
    RETURN QUERY SELECT * FROM unnest(v_tid, v_part, v_who);
END $$;

-- A new generation with a new assignment.  Eager assignors revoke every
-- owned partition; cooperative-sticky revokes only those that move.  The
-- target is held in arrays, not in a helper table (see _assign_sticky).
CREATE FUNCTION mq._rebalance(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_cooperative boolean;
    v_revoked integer;
    v_t integer[];
    v_p integer[];
    v_m text[];
BEGIN
    SELECT g.assignor = 'cooperative-sticky' INTO v_cooperative
      FROM mq.consumer_group g WHERE g.group_id = p_group;
    SELECT array_agg(x.topic_id), array_agg(x.partition), array_agg(x.member_id)
      INTO v_t, v_p, v_m FROM mq._assign(p_group) x;

    -- partitions nobody subscribes to any more leave the assignment
    DELETE FROM mq.group_assignment a
     WHERE a.group_id = p_group
       AND NOT EXISTS (SELECT 1 FROM unnest(v_t, v_p) AS t(topic_id, partition)
                        WHERE t.topic_id = a.topic_id AND t.partition = a.partition);
    INSERT INTO mq.group_assignment (group_id, topic_id, partition)
    SELECT p_group, t.topic_id, t.partition FROM unnest(v_t, v_p) AS t(topic_id, partition)
    ON CONFLICT DO NOTHING;

    IF v_cooperative THEN
        SELECT count(*) INTO v_revoked
          FROM mq.group_assignment a JOIN unnest(v_t, v_p, v_m) AS t(topic_id, partition, member_id)
               USING (topic_id, partition)
         WHERE a.group_id = p_group AND a.owner IS NOT NULL AND a.owner <> t.member_id;
        UPDATE mq.group_assignment a
           SET owner = CASE WHEN a.owner IS NULL OR a.owner = t.member_id THEN t.member_id ELSE a.owner END,
               target = t.member_id,
               revoking = a.owner IS NOT NULL AND a.owner <> t.member_id,
               announced = false
          FROM unnest(v_t, v_p, v_m) AS t(topic_id, partition, member_id)
         WHERE a.group_id = p_group AND a.topic_id = t.topic_id AND a.partition = t.partition;
    ELSE
        SELECT count(*) INTO v_revoked
          FROM mq.group_assignment a WHERE a.group_id = p_group AND a.owner IS NOT NULL;
        UPDATE mq.group_assignment a
           SET owner = t.member_id, target = t.member_id, revoking = false, announced = false
          FROM unnest(v_t, v_p, v_m) AS t(topic_id, partition, member_id)
         WHERE a.group_id = p_group AND a.topic_id = t.topic_id AND a.partition = t.partition;
    END IF;
    UPDATE mq.consumer_group
       SET generation = generation + 1, rebalances = rebalances + 1,
           last_revoked = v_revoked, updated_at = now()
     WHERE group_id = p_group;
    PERFORM mq._note_sql_group(p_group);    -- Kafka's group metadata record
END $$;

-- Rebalance the groups (or one group) whose subscribed topics gained
-- partitions (see _metadata_changed); maintenance calls it for all
-- groups.  A group locked by one of its members is skipped: that
-- member's call rebalances it.  Returns the number of groups rebalanced.
CREATE FUNCTION mq._refresh_metadata(p_group text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text;
    v_n integer := 0;
BEGIN
    FOR v_group IN
        SELECT g.group_id FROM mq.consumer_group g
         WHERE (p_group IS NULL OR g.group_id = p_group) AND mq._metadata_changed(g.group_id)
    LOOP
        PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE SKIP LOCKED;
        IF FOUND AND mq._metadata_changed(v_group) THEN
            PERFORM mq._rebalance(v_group);
            v_n := v_n + 1;
        END IF;
    END LOOP;
    RETURN v_n;
END $$;

-- Remove members whose session timed out; rebalance their groups.
CREATE FUNCTION mq._expire_members(p_group text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group text;
    v_n integer := 0;
    v_gone text[];
BEGIN
    FOR v_group IN
        SELECT DISTINCT m.group_id FROM mq.group_member m
         WHERE (p_group IS NULL OR m.group_id = p_group)
           AND m.last_heartbeat + m.session_timeout_ms * interval '1 millisecond' < clock_timestamp()
    LOOP
        PERFORM 1 FROM mq.consumer_group g WHERE g.group_id = v_group FOR UPDATE;
        WITH gone AS (
            DELETE FROM mq.group_member m
             WHERE m.group_id = v_group
               AND m.last_heartbeat + m.session_timeout_ms * interval '1 millisecond' < clock_timestamp()
            RETURNING m.member_id)
        SELECT array_agg(member_id) INTO v_gone FROM gone;
        IF v_gone IS NOT NULL THEN
            UPDATE mq.group_assignment SET owner = NULL, revoking = false, announced = false
             WHERE group_id = v_group AND owner = ANY (v_gone);
            PERFORM mq._rebalance(v_group);
            v_n := v_n + cardinality(v_gone);
        END IF;
    END LOOP;
    RETURN v_n;
END $$;

-- A group id's rules (group_id.c): named, at most 255 bytes; for a read
-- (reading), false for a longer one, which has nothing stored.
CREATE FUNCTION mq._check_group(group_id text, reading boolean DEFAULT false) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_check_group_sql' LANGUAGE C IMMUTABLE;

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
    v_topics integer[];
    v_member text := join_group.member_id;
    v_old mq.group_member;
    v_changed boolean := false;
BEGIN
    PERFORM mq._check_group(v_group);
    PERFORM mq._authorize(p_caller, 'group', v_group, 'read');
    IF join_group.instance_id = '' THEN     -- Kafka's group.instance.id too
        RAISE EXCEPTION 'instance_id must not be empty' USING ERRCODE = 'MQ010';
    END IF;
    IF join_group.assignor IS NULL OR join_group.assignor NOT IN ('range', 'roundrobin', 'cooperative-sticky') THEN
        RAISE EXCEPTION 'unknown assignor "%"', join_group.assignor
            USING ERRCODE = 'MQ010', HINT = 'Use range, roundrobin or cooperative-sticky.';
    END IF;
    IF join_group.session_timeout_ms IS NULL OR join_group.session_timeout_ms NOT BETWEEN 100 AND 3600000 THEN
        RAISE EXCEPTION 'session_timeout_ms must be between 100 and 3600000'
            USING ERRCODE = 'MQ010';
    END IF;
    IF join_group.topics IS NULL OR cardinality(join_group.topics) = 0 THEN
        RAISE EXCEPTION 'a member subscribes to at least one topic' USING ERRCODE = 'MQ010';
    END IF;
    SELECT array_agg(mq._topic_id(t) ORDER BY t) INTO v_topics
      FROM (SELECT DISTINCT unnest(join_group.topics) AS t) s;
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
        PERFORM mq._check_member(v_group, v_member);
        SELECT * INTO v_old FROM mq.group_member m WHERE m.group_id = v_group AND m.member_id = v_member;
        -- with another instance id than it joined with, as Kafka's
        -- coordinator answers: fenced when that id is another member's,
        -- else an unknown member (nothing changed either way)
        IF join_group.instance_id IS NOT NULL AND v_old.instance_id IS DISTINCT FROM join_group.instance_id THEN
            IF EXISTS (SELECT 1 FROM mq.group_member m
                        WHERE m.group_id = v_group AND m.instance_id = join_group.instance_id) THEN
                RAISE EXCEPTION 'instance id "%" of group "%" belongs to another member, not "%"',
                    join_group.instance_id, v_group, v_member
                    USING ERRCODE = 'MQ033', HINT = 'Another consumer joined with this instance id; this one must stop.';
            END IF;
            RAISE EXCEPTION 'member "%" of group "%" joined without instance id "%"',
                v_member, v_group, join_group.instance_id
                USING ERRCODE = 'MQ031',
                      HINT = 'A member keeps the instance id it joined with; join without member_id to join as another.';
        END IF;
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
