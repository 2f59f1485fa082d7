-------------------------------------------------------------------------------
-- __consumer_offsets (docs/kafka.md, "__consumer_offsets"; src/consumer_offsets.c):
-- a compacted topic holding every offset commit in Kafka's own key/value
-- format, so that Kafka tools reading it (Burrow) see mq's groups.  It is
-- created on first need (mq-kafka's Metadata naming it, or this function
-- called by hand), with every committed offset known then; from then on
-- each commit appends its record in the committing transaction, when it
-- commits (its produce locks are the last any transaction takes).  Only the
-- commits write it: a produce, delete_records or add_partitions on it is
-- MQ070.  Its partitions are Kafka's choice for a group (abs of the Java
-- hash of the group id, modulo the count); the count cannot change.  On a
-- node with an attached broker (a replicated cluster) each node appends
-- what it takes to two partitions of its own (broker id * 2 + the
-- group's hash modulo 2; src/consumer_offsets.c), so there the topic
-- grows to cover them (mq-kafka asks for every listener's), and the first
-- records are only the offsets of partitions this node leads.  SQL
-- groups' membership is appended as Kafka's group metadata records at
-- each new generation (mq._note_sql_group).
-------------------------------------------------------------------------------
CREATE FUNCTION mq._consumer_offsets_append(group_id text, topic text, partition integer,
                                            next_offset bigint, metadata text, group_value bytea,
                                            committed_at timestamptz DEFAULT NULL)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_offsets_append' LANGUAGE C VOLATILE;
-- A transaction's records are appended when it commits (src/consumer_offsets.c,
-- "Lock order"); this appends them now, for a test that reads them back in
-- the same transaction.
CREATE FUNCTION mq._consumer_offsets_flush() RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_consumer_offsets_flush' LANGUAGE C VOLATILE;

CREATE FUNCTION mq._refuse_internal_topic(topic text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF topic OPERATOR(pg_catalog.=) '__consumer_offsets' THEN
        RAISE EXCEPTION 'cannot write to internal topic "%"', topic
            USING ERRCODE = 'MQ070',
                  HINT = 'Offset commits (mq.commit_offset, Kafka''s OffsetCommit) append to it.';
    END IF;
END $$;

-- Kafka's protocol types: a nullable STRING (int16 length, -1: null) and
-- BYTES (int32 length)
CREATE FUNCTION mq._kafka_string(s text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v bytea := convert_to(s, 'UTF8');
BEGIN
    IF octet_length(v) > 32767 THEN     -- as consumer_offsets.c's put_str
        RAISE EXCEPTION 'a string of % bytes does not fit a __consumer_offsets record', octet_length(v)
            USING ERRCODE = 'MQ010';
    END IF;
    RETURN CASE WHEN s IS NULL THEN '\xffff'::bytea ELSE int2send(octet_length(v)::smallint) || v END;
END $$;
CREATE FUNCTION mq._kafka_bytes(b bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT int4send(length(b)) || b
$$;

-- Kafka's consumer protocol, version 0, as its clients encode a member's
-- metadata and assignment: ConsumerProtocolSubscription (the topics, by
-- name) and ConsumerProtocolAssignment (topic, partitions of each: the
-- pairs topics[i], partitions[i]), both without user data, topics in
-- byte order.  Pure, so the roles mq-kafka acts as may call them too
-- (DescribeGroups of an SQL group, h_group_describe.c).
CREATE FUNCTION mq._consumer_subscription(topics text[]) RETURNS bytea
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT int2send(0::smallint) || int4send(count(*)::integer)
        || coalesce(string_agg(mq._kafka_string(t), ''::bytea ORDER BY t COLLATE "C"), ''::bytea)
        || '\xffffffff'::bytea
      FROM unnest(topics) t
$$;
CREATE FUNCTION mq._consumer_assignment(topics text[], partitions integer[]) RETURNS bytea
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT int2send(0::smallint) || int4send(count(*)::integer)
        || coalesce(string_agg(x.entry, ''::bytea ORDER BY x.topic COLLATE "C"), ''::bytea)
        || '\xffffffff'::bytea
      FROM (SELECT a.topic, mq._kafka_string(a.topic) || int4send(count(*)::integer)
                   || string_agg(int4send(a.partition), ''::bytea ORDER BY a.partition) AS entry
              FROM unnest(topics, partitions) AS a(topic, partition)
             GROUP BY a.topic) x
$$;

-- A member of an SQL group as Kafka's MemberMetadata (GroupMetadataValue
-- version 3): its member and instance ids, client id "mq" and no host
-- (mq does not know it), its session timeout as both timeouts, its
-- subscription (its topics) and its assignment of this generation (the
-- partitions targeted to it), in the consumer protocol above.
CREATE FUNCTION mq._sql_member_value(p_group text, p_member mq.group_member) RETURNS bytea
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT mq._kafka_string(p_member.member_id) || mq._kafka_string(p_member.instance_id)
        || mq._kafka_string('mq') || mq._kafka_string('')
        || int4send(p_member.session_timeout_ms) || int4send(p_member.session_timeout_ms)
        || mq._kafka_bytes(mq._consumer_subscription(p_member.topics))
        || mq._kafka_bytes((SELECT mq._consumer_assignment(array_agg(t.topic_name), array_agg(a.partition))
                              FROM mq.group_assignment a JOIN mq.topic t USING (topic_id)
                             WHERE a.group_id = p_group AND a.target = p_member.member_id))
$$;

-- An SQL group (mq.join_group) as Kafka's GroupMetadataValue version 3,
-- as Kafka 3.9 writes it: protocol type "consumer", its generation, its
-- assignor as the protocol, its first member (by member id) as the
-- leader, and its members; a group without members is Kafka's Empty
-- group (no protocol, no leader).  NULL when the group does not exist.
CREATE FUNCTION mq._sql_group_value(p_group text) RETURNS bytea
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_group mq.consumer_group;
    v_n integer;
    v_leader text;
    v_members bytea;
BEGIN
    SELECT * INTO v_group FROM mq.consumer_group g WHERE g.group_id OPERATOR(pg_catalog.=) p_group;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT count(*), min(m.member_id COLLATE "C"),
           coalesce(string_agg(mq._sql_member_value(p_group, m), ''::bytea ORDER BY m.member_id COLLATE "C"),
                    ''::bytea)
      INTO v_n, v_leader, v_members
      FROM mq.group_member m WHERE m.group_id OPERATOR(pg_catalog.=) p_group;
    RETURN int2send(3::smallint) || mq._kafka_string('consumer') || int4send(v_group.generation)
        || mq._kafka_string(CASE WHEN v_n > 0 THEN v_group.assignor END)
        || mq._kafka_string(v_leader)
        || int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
        || int4send(v_n) || v_members;
END $$;

-- Append an SQL group's metadata record (a tombstone once the group is
-- gone) when __consumer_offsets exists.  Called with the group's row
-- locked (a new generation, a static member's return, its deletion), so
-- the group's records are in the order of its changes.
CREATE FUNCTION mq._note_sql_group(p_group text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM mq.topic t WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets') THEN
        PERFORM mq._consumer_offsets_append(p_group, NULL, NULL, NULL, NULL, mq._sql_group_value(p_group));
    END IF;
END $$;

-- The partitions __consumer_offsets needs here: on a node with an
-- attached broker, its broker's two (and what mq-kafka asks for, every
-- listener's); on a node of its own, what was asked.
CREATE FUNCTION mq._consumer_offsets_wanted(p_partitions integer) RETURNS integer
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT greatest(p_partitions, coalesce((SELECT (b.broker_id + 1) * 2 FROM mq.replica_broker b), 0))
$$;

-- On a node with an attached broker, add the partitions it lacks
-- (src/consumer_offsets.c appends to none beyond the count).
CREATE FUNCTION mq._grow_consumer_offsets(p_partitions integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_old integer;
    v_want integer := mq._consumer_offsets_wanted(p_partitions);
BEGIN
    SELECT t.topic_id, t.partitions INTO v_id, v_old FROM mq.topic t
     WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets' FOR UPDATE;
    IF NOT EXISTS (SELECT 1 FROM mq.replica_broker) OR v_old >= v_want THEN
        RETURN v_old;
    END IF;
    IF v_want > 10000 THEN
        RAISE EXCEPTION 'invalid partition count %', v_want
            USING ERRCODE = 'MQ005', HINT = 'A topic has at most 10000 partitions.';
    END IF;
    UPDATE mq.topic t SET partitions = v_want WHERE t.topic_id OPERATOR(pg_catalog.=) v_id;
    FOR p IN v_old .. v_want - 1 LOOP
        PERFORM mq._create_partition(v_id, p);
    END LOOP;
    RETURN v_want;
END $$;

-- Creates the topic if it does not exist (needs no right: Kafka creates it
-- for any client's group); returns its partition count.  Commits wait
-- while it is created (SHARE on mq.consumer_offset), so that each one is
-- either in the first records or appends its own.  On a node with an
-- attached broker, an existing topic grows to the partitions asked for
-- and its broker's; the first records there leave out offsets of
-- partitions another node leads (its leader appended them).
CREATE FUNCTION mq_internal.ensure_consumer_offsets(partitions integer, p_caller oid)
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    SELECT t.partitions INTO v_n FROM mq.topic t
     WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets';
    IF v_n IS NOT NULL AND v_n >= mq._consumer_offsets_wanted(ensure_consumer_offsets.partitions) THEN
        RETURN v_n;
    END IF;
    IF ensure_consumer_offsets.partitions IS NULL OR ensure_consumer_offsets.partitions < 1
       OR ensure_consumer_offsets.partitions > 1000 THEN
        RAISE EXCEPTION 'invalid partition count %', coalesce(ensure_consumer_offsets.partitions::text, 'NULL')
            USING ERRCODE = 'MQ005', HINT = '__consumer_offsets has between 1 and 1000 partitions.';
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('mq.create_topic'));
    LOCK TABLE mq.consumer_offset IN SHARE MODE;
    SELECT t.partitions INTO v_n FROM mq.topic t
     WHERE t.topic_name OPERATOR(pg_catalog.=) '__consumer_offsets';
    IF v_n IS NOT NULL THEN
        RETURN mq._grow_consumer_offsets(ensure_consumer_offsets.partitions);
    END IF;
    v_n := mq._consumer_offsets_wanted(ensure_consumer_offsets.partitions);
    PERFORM mq_internal.create_topic('__consumer_offsets', v_n, '{"cleanup.policy": "compact"}', NULL);
    PERFORM mq._consumer_offsets_append(o.group_id, t.topic_name, o.partition, o.next_offset,
                                        o.metadata, NULL, o.committed_at)
       FROM mq.consumer_offset o JOIN mq.topic t USING (topic_id)
      WHERE NOT EXISTS (SELECT 1 FROM mq.replica_partition r, mq.replica_broker b
                         WHERE r.topic_id OPERATOR(pg_catalog.=) o.topic_id
                           AND r.partition OPERATOR(pg_catalog.=) o.partition
                           AND r.leader_id IS DISTINCT FROM b.broker_id)
      ORDER BY o.committed_at, o.group_id, t.topic_name, o.partition;
    PERFORM mq._note_sql_group(g.group_id) FROM mq.consumer_group g ORDER BY g.group_id;
    RETURN v_n;
END $$;
CREATE FUNCTION mq.ensure_consumer_offsets(partitions integer DEFAULT 10) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

COMMENT ON FUNCTION mq._kafka_string(text) IS
    'internal: a text as Kafka''s nullable STRING (int16 length, -1 for NULL)';
COMMENT ON FUNCTION mq._kafka_bytes(bytea) IS
    'internal: a bytea as Kafka''s BYTES (int32 length)';
COMMENT ON FUNCTION mq._consumer_subscription(text[]) IS
    'internal: Kafka''s ConsumerProtocolSubscription v0 of topics';
COMMENT ON FUNCTION mq._consumer_assignment(text[], integer[]) IS
    'internal: Kafka''s ConsumerProtocolAssignment v0 of (topic, partition) pairs';
COMMENT ON FUNCTION mq._sql_member_value(text, mq.group_member) IS
    'internal: a member of an SQL group as Kafka''s group metadata MemberMetadata, with its ConsumerProtocol subscription and assignment';
COMMENT ON FUNCTION mq._sql_group_value(text) IS
    'internal: an SQL group as Kafka''s GroupMetadataValue version 3 (NULL if it does not exist)';
COMMENT ON FUNCTION mq._note_sql_group(text) IS
    'internal: appends an SQL group''s metadata record (a tombstone once it is gone) to __consumer_offsets, if it exists';
COMMENT ON FUNCTION mq._consumer_offsets_wanted(integer) IS
    'internal: the partitions __consumer_offsets needs on this node (its attached broker''s two, or what was asked)';
COMMENT ON FUNCTION mq._grow_consumer_offsets(integer) IS
    'internal: on a node with an attached broker, adds the __consumer_offsets partitions it lacks';
