-------------------------------------------------------------------------------
-- The membership of mq-kafka's consumer groups (broker/mq-kafka/group_store.c),
-- kept so that a restarted mq-kafka carries on with the same members and
-- generation instead of making every group rebalance (Kafka keeps the same
-- in __consumer_offsets).  One row per group, in mq-kafka's own encoding;
-- a later save (by the saver's clock, `version`) replaces an earlier one
-- whatever order their transactions commit in.  A group that empties is
-- forgotten.  Dumped, as SQL groups' members are: mq-kafka on a restored
-- database takes up the groups whose members' sessions have not run out
-- since the last save (group_store.c), and the others' members rejoin.
--
-- kafka_metadata is the same group in Kafka's GroupMetadataValue format,
-- from which the group views show Kafka's members to SQL
-- (56_group_views.sql).  saved_at is when mq-kafka last saved the group or
-- said it still holds it (mq.kafka_group_touch, every third of the
-- group's shortest session timeout): its members count as live for their
-- session timeout after it, as a Kafka coordinator that takes a group
-- over counts them until they heartbeat or time out.
-------------------------------------------------------------------------------
CREATE TABLE mq.kafka_group_state (
    group_id       text PRIMARY KEY,
    version        bigint NOT NULL,
    state          bytea NOT NULL,
    saved_at       timestamptz NOT NULL DEFAULT now(),
    kafka_metadata bytea
);
COMMENT ON TABLE mq.kafka_group_state IS
    'mq-kafka''s consumer groups (members, generation, assignments), kept across its restarts';
SELECT pg_catalog.pg_extension_config_dump('mq.kafka_group_state', '');

-- Save a group's state, or forget the group (state NULL); needs READ on
-- the group, as the JoinGroup and SyncGroup that change it do.
-- kafka_metadata, the group in Kafka's GroupMetadataValue format, is
-- appended to __consumer_offsets (55_consumer_offsets.sql) when the save
-- is the latest.
CREATE FUNCTION mq_internal.kafka_group_save(group_id text, version bigint, state bytea,
                                             kafka_metadata bytea, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n bigint;
BEGIN
    PERFORM mq._check_group(kafka_group_save.group_id);
    PERFORM mq._authorize(p_caller, 'group', kafka_group_save.group_id, 'read');
    IF kafka_group_save.version IS NULL THEN
        RAISE EXCEPTION 'version must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF kafka_group_save.state IS NULL THEN
        DELETE FROM mq.kafka_group_state s
         WHERE s.group_id OPERATOR(pg_catalog.=) kafka_group_save.group_id
           AND s.version OPERATOR(pg_catalog.<) kafka_group_save.version;
    ELSE
        INSERT INTO mq.kafka_group_state AS s (group_id, version, state, kafka_metadata)
        VALUES (kafka_group_save.group_id, kafka_group_save.version, kafka_group_save.state,
                kafka_group_save.kafka_metadata)
        ON CONFLICT ON CONSTRAINT kafka_group_state_pkey DO UPDATE
           SET version = EXCLUDED.version, state = EXCLUDED.state, saved_at = pg_catalog.now(),
               kafka_metadata = EXCLUDED.kafka_metadata
         WHERE s.version OPERATOR(pg_catalog.<) EXCLUDED.version;
    END IF;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF kafka_group_save.kafka_metadata IS NOT NULL AND v_n OPERATOR(pg_catalog.>) 0 THEN
        PERFORM mq._consumer_offsets_append(kafka_group_save.group_id, NULL, NULL, NULL, NULL,
                                            kafka_group_save.kafka_metadata);
    END IF;
END $$;
CREATE FUNCTION mq.kafka_group_save(group_id text, version bigint, state bytea,
                                    kafka_metadata bytea DEFAULT NULL) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_group_save(text, bigint, bytea, bytea) IS
    'mq-kafka API: keep a consumer group''s membership (NULL: forget it), and append its Kafka group metadata to __consumer_offsets; needs read on the group';

-- mq-kafka still holds these groups with their members: their saved_at
-- moves to now, so SQL counts the members live for another session
-- timeout.  Groups the caller may not read are left as they are; returns
-- how many were touched.
CREATE FUNCTION mq_internal.kafka_group_touch(group_ids text[], p_caller oid) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    IF kafka_group_touch.group_ids IS NULL THEN
        RAISE EXCEPTION 'group_ids must not be null' USING ERRCODE = 'MQ010';
    END IF;
    UPDATE mq.kafka_group_state s SET saved_at = pg_catalog.now()
     WHERE s.group_id OPERATOR(pg_catalog.=) ANY (kafka_group_touch.group_ids)
       AND mq._has_privilege(p_caller, 'group', s.group_id, 'read');
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END $$;
CREATE FUNCTION mq.kafka_group_touch(group_ids text[]) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_group_touch(text[]) IS
    'mq-kafka API: the consumer groups it still holds with members, so that SQL counts them live; needs read on each group';

-- In a replicated cluster mq-kafka keeps no group state (a group's
-- coordinator moves between nodes), but Kafka tools still read each
-- group's metadata from __consumer_offsets: append the group in Kafka's
-- GroupMetadataValue format alone, to this node's own partitions of the
-- topic (55_consumer_offsets.sql); needs read on the group.
CREATE FUNCTION mq_internal.kafka_group_metadata(group_id text, kafka_metadata bytea, p_caller oid)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._check_group(kafka_group_metadata.group_id);
    PERFORM mq._authorize(p_caller, 'group', kafka_group_metadata.group_id, 'read');
    -- a tombstone is mq's to write, when the group goes (mq.delete_group)
    IF kafka_group_metadata.kafka_metadata IS NULL THEN
        RAISE EXCEPTION 'kafka_metadata must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._consumer_offsets_append(kafka_group_metadata.group_id, NULL, NULL, NULL, NULL,
                                        kafka_group_metadata.kafka_metadata);
END $$;
CREATE FUNCTION mq.kafka_group_metadata(group_id text, kafka_metadata bytea) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_group_metadata(text, bytea) IS
    'mq-kafka API, in a replicated cluster: append a consumer group''s Kafka group metadata to this node''s partitions of __consumer_offsets; needs read on the group';

-- The groups saved within max_age that the caller may read: what a
-- restarted mq-kafka takes up again.  Not a group with a member whose
-- session SQL counts as timed out (mq.kafka_group_member): SQL may have
-- reset its offsets since, which the members' old generation must not
-- overwrite; its members join again, as a new generation.
CREATE FUNCTION mq_internal.kafka_group_states(max_age interval, p_caller oid,
                                               OUT group_id text, OUT state bytea)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT s.group_id, s.state FROM mq.kafka_group_state s
     WHERE s.saved_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.-) kafka_group_states.max_age)
       AND mq._has_privilege(p_caller, 'group', s.group_id, 'read')
       AND NOT EXISTS (SELECT 1 FROM mq.kafka_group_member k
                        WHERE k.group_id OPERATOR(pg_catalog.=) s.group_id AND NOT k.active)
     ORDER BY 1;
END $$;
CREATE FUNCTION mq.kafka_group_states(max_age interval, OUT group_id text, OUT state bytea)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
COMMENT ON FUNCTION mq.kafka_group_states(interval) IS
    'mq-kafka API: the consumer groups saved within max_age that the caller may read';

-- mq-kafka's cleanup of the Empty groups it holds (broker/mq-kafka/
-- group_cleanup.c), as Kafka's group coordinator drops an Empty group
-- that has no committed offsets: of group_ids, those the database holds
-- nothing of (no committed offset, no SQL group, no saved membership).
-- A group the caller may not read is not named (it is kept).
CREATE FUNCTION mq_internal.kafka_groups_unused(group_ids text[], p_caller oid) RETURNS SETOF text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT DISTINCT g.id FROM pg_catalog.unnest(group_ids) AS g(id)
     WHERE mq._has_privilege(p_caller, 'group', g.id, 'read')
       AND NOT EXISTS (SELECT 1 FROM mq.consumer_offset o WHERE o.group_id OPERATOR(pg_catalog.=) g.id)
       AND NOT EXISTS (SELECT 1 FROM mq.consumer_group c WHERE c.group_id OPERATOR(pg_catalog.=) g.id)
       AND NOT EXISTS (SELECT 1 FROM mq.kafka_group_state s WHERE s.group_id OPERATOR(pg_catalog.=) g.id)
     ORDER BY 1;
$$;
CREATE FUNCTION mq.kafka_groups_unused(group_ids text[]) RETURNS SETOF text
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
COMMENT ON FUNCTION mq.kafka_groups_unused(text[]) IS
    'mq-kafka API: of the given groups, those with no committed offset, no SQL group and no saved membership (Kafka drops such an Empty group); needs read on each group';
