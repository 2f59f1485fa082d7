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
    topics             text[] NOT NULL,   -- subscribed by name, sorted, as Kafka's consumers
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
RETURNS TABLE (member_id text, topics text[], ord integer)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT m.member_id, m.topics,
           (row_number() OVER (ORDER BY m.instance_id IS NULL, m.instance_id COLLATE "C",
                                        m.member_id COLLATE "C"))::integer
      FROM mq.group_member m WHERE m.group_id = p_group
$$;

-- Every partition of the topics the group's members subscribe to, sorted
-- by topic name (byte order) and partition, as the assignors see them.
-- Members subscribe by name: a topic dropped and created again under its
-- name is the subscribed topic again.
CREATE FUNCTION mq._group_partitions(p_group text)
RETURNS TABLE (topic_id integer, topic_name text, partition integer, ord bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.topic_id, t.topic_name, p.p, row_number() OVER (ORDER BY t.topic_name COLLATE "C", p.p)
      FROM mq.topic t CROSS JOIN LATERAL generate_series(0, t.partitions - 1) p(p)
     WHERE EXISTS (SELECT 1 FROM mq.group_member m WHERE m.group_id = p_group AND t.topic_name = ANY (m.topics))
$$;

-- Whether the group's assignment no longer covers the partitions its
-- members subscribe to: a subscribed topic gained partitions
-- (mq.add_partitions), or a subscribed topic was created (again) since
-- the last rebalance.  Kafka's consumers notice this in their metadata
-- and rejoin; here the group's next join, heartbeat or member poll, or
-- maintenance, rebalances.  After a rebalance the assignment has one row
-- per subscribed partition, partitions are never removed, and a dropped
-- topic's rows go with it, so counting suffices.
CREATE FUNCTION mq._metadata_changed(p_group text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT sum(t.partitions) FROM mq.topic t
                      WHERE EXISTS (SELECT 1 FROM mq.group_member m
                                     WHERE m.group_id = p_group AND t.topic_name = ANY (m.topics))), 0)
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
              JOIN mq.topic t ON t.topic_name = ANY (o.topics))
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
                 WHERE gp.topic_name = ANY (o.topics)) AS subscribers
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
              JOIN mq.topic t ON t.topic_id = a.topic_id
              JOIN mq.group_member m ON m.group_id = a.group_id AND m.member_id = coalesce(a.target, a.owner)
                                    AND t.topic_name = ANY (m.topics)
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
        SELECT gp.topic_id AS tid, gp.topic_name AS tname, gp.partition AS pn
          FROM mq._group_partitions(p_group) gp
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_tid, v_part) AS k(t, p)
                            WHERE k.t = gp.topic_id AND k.p = gp.partition)
         ORDER BY gp.ord
    LOOP
        SELECT u.i::integer INTO v_i
          FROM unnest(v_load) WITH ORDINALITY AS u(n, i)
          JOIN mq.group_member m ON m.group_id = p_group AND m.member_id = v_members[u.i::integer]
         WHERE r.tname = ANY (m.topics)
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
