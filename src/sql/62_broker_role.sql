-------------------------------------------------------------------------------
-- The broker's role: least privilege for mq-broker (docs/replication.md,
-- "The broker's role").
--
-- mq-broker runs as an ordinary login role, never a superuser.  An
-- administrator creates that role and calls, on every data node,
--     SELECT mq.grant_broker('mq_broker');
-- and on the coordinator
--     SELECT mq_coord.grant_broker('mq_broker');
-- which grant exactly what the broker calls (broker/mq-broker/calls.h):
-- the replica functions on a data node (all SECURITY DEFINER: they check
-- leader epochs themselves and run their catalog work as the extension
-- owner) and, in mq's own authorization (mq.grant), create and describe on
-- every topic, so that it sees and creates the replicas it is assigned;
-- the coordinator functions and the few columns it reads there.  A data node's grants also serve the followers of the
-- partitions it leads: they connect to it with the same role.
--
-- Both functions are SECURITY INVOKER: the caller needs the grant option
-- on these objects (the extension owner, or a superuser), and nothing runs
-- with more rights than the caller has.  Every name is qualified.
--
-- mq_coord functions are not executable by PUBLIC (the schema never had
-- USAGE for PUBLIC; its functions are now revoked too).
-------------------------------------------------------------------------------

CREATE FUNCTION mq.grant_broker(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq TO %s', role);
    EXECUTE pg_catalog.format('GRANT SELECT ON mq.topics TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION '
        'mq.create_topic(text, integer, jsonb), '
        'mq.replica_attach_broker(integer), '
        'mq.replica_renew_lease(integer), '
        'mq.replica_resign_all(), '
        'mq.replica_become_leader(text, integer, integer, integer, integer[], integer[], text), '
        'mq.replica_become_follower(text, integer, integer, integer, text, integer[]), '
        'mq.replica_set_isr(text, integer, integer, integer[]), '
        'mq.replica_leader_state(text, integer, integer), '
        'mq.replica_leader_states(text[], integer[], integer[]), '
        'mq.replica_fetch(text, integer, integer, integer, bigint, integer, integer, bigint), '
        'mq.replica_fetch_many(integer, text[], integer[], integer[], bigint[], bigint[], integer, integer), '
        'mq.replica_append(text, integer, integer, mq.replica_batch), '
        'mq.replica_truncate(text, integer, integer, bigint), '
        'mq.replica_epoch_end_offset(text, integer, integer, integer), '
        'mq.replica_log_state(text, integer, integer), '
        'mq.replica_add_producer_ids(bigint, bigint), '
        'mq.replica_producer_ids_left(), '
        'mq.replica_place_topic(text, integer, jsonb, integer[], uuid), '
        -- deleted replicated topics (66_topic_delete.sql)
        'mq._replica_incarnation(text, uuid), mq.replica_topics(), mq.replica_drop_topic(text, uuid), '
        'mq._replica_add_partitions(text, integer), '
        'mq.replica_adopt_partitions(text, integer[]), '
        'mq.replica_unhost(text, integer), '
        'mq.replica_set_replicas(text, integer, integer, integer[], integer[]), '
        -- recovery of mq's prepared transactions (64_twophase.sql)
        'mq.txn_in_doubt(), mq.txn_finish(text, boolean), '
        'mq.txn_output_replicated(text, integer, integer, bigint), '
        'mq.txn_redo_output(text, integer, integer, bigint, integer, integer, bytea[], bytea[], jsonb[], timestamptz[]), '
        'mq.txn_redo_offset(text, text, integer, integer, bigint) '
        'TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON PROCEDURE mq.replica_fetch_commit(integer, text[], integer[], integer[], bigint[], '
        'bigint[], integer, integer, integer[], mq.replica_batch[], text[], text[]) TO %s', role);
    -- mq's own authorization (90_acl.sql): the broker sees every topic in
    -- mq.topics and creates the replicas it is assigned
    PERFORM mq.grant('create, describe', 'topic', '*',
                     (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) role));
END;
$$;
COMMENT ON FUNCTION mq.grant_broker(regrole) IS
    'grant a role exactly what mq-broker needs on a data node (see docs/replication.md)';

CREATE FUNCTION mq_coord.grant_broker(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq_coord TO %s', role);
    EXECUTE pg_catalog.format('GRANT SELECT (broker_id) ON mq_coord.broker TO %s', role);
    EXECUTE pg_catalog.format('GRANT SELECT (topic, partition, isr) ON mq_coord.partition TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION '
        'mq_coord.broker_lock_class(), '
        'mq_coord.partition_lock_class(), '
        'mq_coord.register_broker(integer, text, text), '
        'mq_coord.heartbeat(integer), '
        'mq_coord.broker_alive(integer, integer), '
        'mq_coord.fence_broker(integer, integer, integer), '
        'mq_coord.elect(text, integer, integer, integer), '
        'mq_coord.alter_isr(text, integer, integer, integer, integer[]), '
        'mq_coord.assignments(integer), '
        'mq_coord.allocate_producer_ids(integer, integer), '
        'mq_coord.moving(integer), '
        'mq_coord.deleted_topics(text[], uuid[]), '
        'mq_coord.register_rack(integer, text), '
        'mq_coord.complete_reassignment(text, integer, integer, integer), '
        'mq_coord.txn_resolve(text, integer, bigint, integer), '
        'mq_coord.txn_any_open(), '
        'mq_coord.txn_outputs_pending(integer), '
        'mq_coord.txn_output_durable(text, text, integer), '
        'mq_coord.txn_outputs_moved(integer), '
        'mq_coord.txn_output_redone(text, text, integer, integer, integer), '
        'mq_coord.txn_part_committed(text, integer), '
        'mq_coord.txn_offsets_moved(integer), '
        'mq_coord.txn_offsets_pending(integer), '
        'mq_coord.txn_offsets_redone(text, text, text, integer, integer, integer) '
        'TO %s', role);
END;
$$;
COMMENT ON FUNCTION mq_coord.grant_broker(regrole) IS
    'grant a role exactly what mq-broker needs on the coordinator (see docs/replication.md)';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq_coord FROM PUBLIC;
