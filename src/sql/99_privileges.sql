-------------------------------------------------------------------------------
-- Privileges (docs/operations.md): EXECUTE for what checks its own rights;
-- everything else for the owner and the roles it grants.
-------------------------------------------------------------------------------

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq_internal FROM PUBLIC;
-- procedures are not among ALL FUNCTIONS; the broker's (mq.grant_broker)
REVOKE ALL ON PROCEDURE mq.replica_fetch_commit(integer, text[], integer[], integer[], bigint[], bigint[],
                                                integer, integer, integer[], mq.replica_batch[], text[], text[])
    FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;
-- the views show each role only the topics and groups it may DESCRIBE
GRANT SELECT ON mq.topics, mq.partitions, mq.leader_epochs, mq.segments, mq.groups, mq.group_members, mq.group_assignments,
    mq.grants, mq.effective_grants, mq.kafka_transactions, mq.producers TO PUBLIC;
GRANT EXECUTE ON FUNCTION mq.validate_config(jsonb), mq.murmur2(bytea),
    -- what validate_config (the caller's rights) calls for every key
    mq._config_key(text), mq._config_number(text, jsonb, text, numeric, numeric),
    mq._config_text(text, jsonb, text), mq._config_ms(jsonb, text), mq._config_shown(jsonb),
    mq._validate_compaction_config(text, jsonb),
    mq.partition_for(text, bytea), mq.partition_for(text, text),
    mq._log_end_offset(integer, integer), mq._describable(text, text), mq._grant_shown(text, text, text),
    -- pure: what mq-kafka's AlterConfigs pass to mq.alter_topic
    mq._config_replace(jsonb, text[], text[]), mq._config_incremental(jsonb, text[], integer[], text[]),
    mq.config_defaults(),
    mq.header_list(jsonb), mq.headers_jsonb(mq.header[]),
    -- pure: the consumer protocol's encoding (mq-kafka's DescribeGroups),
    -- and the decoding of Kafka's members for the group views
    mq._kafka_string(text), mq._consumer_subscription(text[]), mq._consumer_assignment(text[], integer[]),
    mq._kafka_group_members(bytea),
    -- pure: Kafka's topic name rule and topic ids (mq-kafka's Metadata and
    -- Fetch, as the client's role)
    mq._topic_name_valid(text), mq._kafka_topic_id(text),
    -- mq-kafka's OffsetFetch: mq.committed_offset's checks, as the client's role
    mq._committed_position(text, text, integer),
    mq._has_privilege(oid, text, text, text),
    mq.has_topic_privilege(name, text, text), mq.has_topic_privilege(text, text),
    mq.has_group_privilege(name, text, text), mq.has_group_privilege(text, text),
    -- what the produce contract (31_produce_acks.sql, the caller's rights)
    -- calls besides send_batch
    mq._produce_state(text, integer), mq._produce_outside_block(),
    -- mq-kafka's parked fetches (the topics the caller may read)
    mq._await_partitions(text[], integer[], bigint[], integer),
    -- mq-kafka's Produce response on LogAppendTime topics
    mq._produce_answer(text, integer, bigint) TO PUBLIC;
-- Produce, consume, groups, topic administration, grant and revoke check
-- the caller's rights on each topic and group themselves (src/acl.c), as
-- a Kafka broker does: every role may call them, mq.grant() decides what
-- they may do (docs/operations.md).  Replication, coordination,
-- maintenance and init_producer stay with roles granted EXECUTE.
-- rerun on update
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
              WHERE p.pronamespace OPERATOR(pg_catalog.=) 'mq'::regnamespace
                AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY[
                    'send', 'send_batch', 'produce', 'produce_records', 'produce_check', 'produce_await', 'fetch', 'kafka_fetch', 'poll', 'commit_offset',
                    'commit_polled', 'committed_offset', 'committed_offsets', 'join_group', 'heartbeat',
                    'leave_group', 'delete_group', 'delete_offsets', 'delete_records', 'create_topic', 'drop_topic', 'alter_topic',
                    'kafka_group_save', 'kafka_group_metadata', 'kafka_group_states', 'kafka_group_touch', 'kafka_groups_unused', 'ensure_consumer_offsets',
                    'kafka_init_producer', 'kafka_txn_init', 'kafka_txn_init_check', 'kafka_txn_add_partitions', 'kafka_txn_stage', 'kafka_txn_add_offsets',
                    'kafka_txn_offset', 'kafka_txn_end', 'kafka_txn_adopt', 'kafka_txn_collect', 'kafka_txn_finish',
                    'kafka_offsets_unstable',
                    'add_partitions', 'move_partition', 'grant', 'revoke', 'offsets_for_times',
                    'reset_offsets', 'await_commit']::name[]) LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO PUBLIC', f);
    END LOOP;
END $$;

-- SCRAM credentials (91_scram.sql): the functions check the caller's
-- rights (an administrator, or the user itself); the view shows what the
-- caller may see.  mq.scram_lookup stays with the role mq-kafka runs as.
GRANT SELECT ON mq.scram_credentials TO PUBLIC;
GRANT EXECUTE ON FUNCTION mq.set_scram_credential(text, text, text, integer),
    mq.set_scram_credential_salted(text, text, integer, bytea, bytea),
    mq.set_scram_keys(text, text, integer, bytea, bytea, bytea),
    mq.drop_scram_credential(text, text), mq.list_scram_credentials() TO PUBLIC;

-- client quotas (93_client_quotas.sql): the functions check the caller's
-- rights (alter on the cluster to set, describe to list);
-- mq.client_quota_lookup stays with the role mq-kafka runs as.
GRANT EXECUTE ON FUNCTION mq.set_client_quota(text, double precision, text, text, boolean, boolean),
    mq.list_client_quotas() TO PUBLIC;

-- lag and statistics, for any role as the other views: rows of the topics
-- and groups it may describe, which members of pg_monitor
-- (postgres_exporter's role) may all
GRANT SELECT ON mq.consumer_lag, mq.partition_stats, mq.group_members, mq.group_assignments TO pg_monitor;
GRANT SELECT ON mq.consumer_lag, mq.partition_stats TO PUBLIC;
GRANT EXECUTE ON FUNCTION mq._offset_time(integer, integer, bigint),
    mq._retention_headroom(integer, integer, bigint) TO pg_monitor, PUBLIC;

-- what max.message.bytes counts (src/record_size.c), for anyone sizing records
GRANT EXECUTE ON FUNCTION mq.record_size(bytea, bytea, jsonb) TO PUBLIC;
-- 0.1.0's mq-kafka waits for acks=all with it
GRANT EXECUTE ON FUNCTION mq._replica_await_hwm(text, integer, bigint, integer, integer, integer) TO PUBLIC;

-- the coordinator's client functions (64_twophase.sql, 65_cluster_groups.sql)
-- go to roles given mq_coord.grant_pipeline or grant_client, never to PUBLIC;
-- nor do the placement functions (66_placement.sql), which stay with
-- administrators
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA mq_coord FROM PUBLIC;
