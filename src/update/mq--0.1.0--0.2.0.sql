-------------------------------------------------------------------------------
-- Update 0.1.0 -> 0.2.0, the part written by hand (scripts/update-sql.pl
-- appends every function, procedure, view, comment and grant of src/sql
-- after it, re-run as CREATE OR REPLACE; docs/operations.md, "Upgrades").
--
-- Here goes whatever src/sql changed since 0.1.0 that cannot simply be run
-- again, in this order:
--   1. DROPs that CREATE OR REPLACE cannot do: a function or procedure
--      that goes, or whose return type, OUT columns, argument names or
--      defaults change (DROP FUNCTION mq.f(argtypes)); a view whose columns
--      change or that depends on something dropped (DROP VIEW; part 2
--      creates it again, with its grants and comments)
--   2. catalog changes, written as the install script has them: CREATE
--      TABLE / TYPE / INDEX / SEQUENCE / TRIGGER, ALTER TABLE ... ADD
--      COLUMN (new columns go at the end of CREATE TABLE in src/sql too,
--      where ADD COLUMN puts them), constraints, pg_extension_config_dump
--      for new catalog tables and sequences, data fixes (UPDATE mq.topic
--      ...), and setval for identity sequences.
-- Part 2 runs after this part, so a new function may use a new column;
-- what needs part 2's functions (CREATE TRIGGER ... EXECUTE FUNCTION of a
-- new trigger function, a data fix calling a new function) goes after a
-- line "-- SCRAM credentials for Kafka clients (91_scram.sql)
CREATE TABLE mq.scram_credential (
    user_name  text NOT NULL CHECK (user_name <> ''),
    mechanism  text NOT NULL CHECK (mechanism IN ('SCRAM-SHA-256', 'SCRAM-SHA-512')),
    iterations integer NOT NULL CHECK (iterations BETWEEN 4096 AND 16384),
    salt       bytea NOT NULL CHECK (length(salt) >= 16),
    stored_key bytea NOT NULL,
    server_key bytea NOT NULL,
    set_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_name, mechanism)
);
REVOKE ALL ON mq.scram_credential FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.scram_credential', '');
CREATE TABLE mq.scram_secret (
    secret bytea NOT NULL CHECK (length(secret) = 32),
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row)
);
REVOKE ALL ON mq.scram_secret FROM PUBLIC;
-- @definitions", where part 2 is put then.
-- test/cli/upgrade.sh compares the updated schema with a fresh install of
-- 0.2.0 and fails, naming the difference, until this part is complete.
-- What to carry: `perl scripts/update-sql.pl --changed-since
-- src/release/mq--0.1.0.sql src/sql/*.sql` prints every statement part 2
-- cannot re-run that 0.1.0 does not have word for word.
-------------------------------------------------------------------------------

-- SQL API conventions (docs/design.md): the parameters of the public
-- functions lost their p_ prefix.  CREATE OR REPLACE cannot rename a
-- parameter, so each of these goes and part 2 creates it again with the
-- same argument types.  The EXECUTE grants roles were given on them
-- (mq_coord.grant_client, grant_broker and the like) would go with them:
-- they are kept in a setting of this transaction and given back after
-- part 2 (below the @definitions line).
SELECT pg_catalog.set_config('mq_update.grants', coalesce((
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'routine', p.oid::regprocedure::text,
               'grantee', CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                               ELSE pg_catalog.quote_ident(a.grantee::regrole::text) END,
               'option', a.is_grantable))
      FROM pg_catalog.pg_proc p
     CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) ANY (ARRAY['mq'::regnamespace, 'mq_coord'::regnamespace])
       AND p.proname !~ '^_'
       AND EXISTS (SELECT FROM pg_catalog.unnest(p.proargnames) n WHERE n ~ '^p_')
       AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner)::text, '[]'), true);
DROP FUNCTION mq.replica_add_producer_ids(bigint,bigint);
DROP FUNCTION mq.replica_adopt_partitions(text,integer[]);
DROP FUNCTION mq.replica_append(text,integer,integer,mq.replica_batch);
DROP FUNCTION mq.replica_attach_broker(integer);
DROP FUNCTION mq.replica_become_follower(text,integer,integer,integer,text,integer[]);
DROP FUNCTION mq.replica_become_leader(text,integer,integer,integer,integer[],integer[],text);
DROP FUNCTION mq.replica_epoch_end_offset(text,integer,integer,integer);
DROP FUNCTION mq.replica_fetch(text,integer,integer,integer,bigint,integer,integer,bigint);
DROP FUNCTION mq.replica_leader_state(text,integer,integer);
DROP FUNCTION mq.replica_log_state(text,integer,integer);
DROP FUNCTION mq.replica_place_topic(text,integer,jsonb,integer[]);
DROP FUNCTION mq.replica_renew_lease(integer);
DROP FUNCTION mq.replica_set_isr(text,integer,integer,integer[]);
DROP FUNCTION mq.replica_set_replicas(text,integer,integer,integer[],integer[]);
DROP FUNCTION mq.replica_truncate(text,integer,integer,bigint);
DROP FUNCTION mq.replica_unhost(text,integer);
DROP FUNCTION mq.txn_output_replicated(text,integer,integer,bigint);
DROP FUNCTION mq.txn_redo_offset(text,text,integer,integer,bigint);
DROP FUNCTION mq.txn_redo_output(text,integer,integer,bigint,integer,integer,bytea[],bytea[]);
DROP FUNCTION mq_coord.add_partitions(text,integer);
DROP FUNCTION mq_coord.allocate_producer_ids(integer,integer);
DROP FUNCTION mq_coord.alter_isr(text,integer,integer,integer,integer[]);
DROP FUNCTION mq_coord.assignments(integer);
DROP FUNCTION mq_coord.broker_alive(integer,integer);
DROP FUNCTION mq_coord.cluster_group_heartbeat(text,text);
DROP FUNCTION mq_coord.cluster_group_members(text);
DROP FUNCTION mq_coord.complete_reassignment(text,integer,integer,integer);
DROP FUNCTION mq_coord.create_topic(text,integer,jsonb);
DROP FUNCTION mq_coord.elect(text,integer,integer,integer);
DROP FUNCTION mq_coord.fence_broker(integer,integer,integer);
DROP FUNCTION mq_coord.heartbeat(integer);
DROP FUNCTION mq_coord.init_producer(text);
DROP FUNCTION mq_coord.join_cluster_group(text,text[],text,integer);
DROP FUNCTION mq_coord.kafka_register(integer,text,integer,boolean);
DROP FUNCTION mq_coord.leave_cluster_group(text,text);
DROP FUNCTION mq_coord.moving(integer);
DROP FUNCTION mq_coord.propose_reassignment(text[],integer[]);
DROP FUNCTION mq_coord.reassign(text,integer,integer[],bigint);
DROP FUNCTION mq_coord.register_broker(integer,text,text);
DROP FUNCTION mq_coord.register_rack(integer,text);
DROP FUNCTION mq_coord.remove_broker(integer);
DROP FUNCTION mq_coord.route(text);
DROP FUNCTION mq_coord.set_broker_rack(integer,text);
DROP FUNCTION mq_coord.txn_abort(text,text);
DROP FUNCTION mq_coord.txn_decide(text,text,jsonb,integer,jsonb,bytea[],bytea[]);
DROP FUNCTION mq_coord.txn_done(text);
DROP FUNCTION mq_coord.txn_offsets_moved(integer);
DROP FUNCTION mq_coord.txn_offsets_pending(integer);
DROP FUNCTION mq_coord.txn_offsets_redone(text,integer,integer);
DROP FUNCTION mq_coord.txn_output_durable(text,text,integer);
DROP FUNCTION mq_coord.txn_output_redone(text,text,integer,integer,integer);
DROP FUNCTION mq_coord.txn_outputs_moved(integer);
DROP FUNCTION mq_coord.txn_outputs_pending(integer);
DROP FUNCTION mq_coord.txn_part_committed(text,integer);
DROP FUNCTION mq_coord.txn_resolve(text,integer,bigint,integer);
DROP FUNCTION mq_coord.txn_state(text);
-- the records a Kafka transaction's decision stores keep their headers
-- and CreateTimes (64_twophase_redo.sql)
DROP FUNCTION mq_coord._txn_check_outputs(text,jsonb,jsonb,bytea[],bytea[]);
DROP FUNCTION mq_coord._txn_store_outputs(text,jsonb,bytea[],bytea[]);
-- placement orders the live brokers only, on request (66_placement.sql)
DROP FUNCTION mq_coord._placement_order();
-- mq.send_batch takes the size of the Kafka batch its records came in
-- (batch_bytes, what max.message.bytes then limits: 30_produce.sql)
DROP FUNCTION mq.send_batch(text,bytea[],bytea[],jsonb[],integer,bigint,integer,integer,timestamptz[],timestamptz);

-- a group member's auto_commit batch, kept for its next poll in any
-- session (01_catalog.sql, src/offsets.c)
CREATE TABLE mq.poll_pending (
    group_id    text NOT NULL,
    topic_id    integer NOT NULL,
    partition   integer NOT NULL,
    member_id   text NOT NULL,
    next_offset bigint NOT NULL,
    replaces    bigint NOT NULL DEFAULT -1,  -- a commit beyond the log end the poll reset from
    PRIMARY KEY (group_id, topic_id, partition)
);

-- preferred leader elections on request (69_preferred_election.sql)
ALTER TABLE mq_coord.partition
    ADD COLUMN preferred_election_until timestamptz;  -- an election asked for, until then

-- the produce contract (31_produce_acks.sql): what mq.produce_records returns
CREATE TYPE mq.produced AS (partition integer, msg_offset bigint,
                            await_epoch integer, await_min_isr integer);

-- compaction and retention (01_catalog.sql, 72_compaction.sql): a
-- segment's last modification, its age once compaction emptied it
ALTER TABLE mq.segment ADD COLUMN last_modified timestamptz;

-- a decided transaction's stored records keep their headers and the
-- producer's CreateTimes (64_twophase_redo.sql)
ALTER TABLE mq_coord.txn_output ADD COLUMN headers jsonb[], ADD COLUMN timestamps timestamptz[];

-- dump and restore (restore -j): catalog tables refer to each other through statement
-- triggers (mq._cascade_delete) instead of foreign keys, and the identity
-- sequences are dumped
ALTER TABLE mq.partition_state DROP CONSTRAINT partition_state_topic_id_fkey;
ALTER TABLE mq.segment DROP CONSTRAINT segment_topic_id_partition_fkey;
ALTER TABLE mq.consumer_offset DROP CONSTRAINT consumer_offset_topic_id_partition_fkey;
ALTER TABLE mq.producer_state DROP CONSTRAINT producer_state_producer_id_fkey;
ALTER TABLE mq.producer_state DROP CONSTRAINT producer_state_topic_id_partition_fkey;
ALTER TABLE mq.group_member DROP CONSTRAINT group_member_group_id_fkey;
ALTER TABLE mq.group_assignment DROP CONSTRAINT group_assignment_group_id_fkey;
ALTER TABLE mq.group_assignment DROP CONSTRAINT group_assignment_topic_id_partition_fkey;
ALTER TABLE mq.replica_partition DROP CONSTRAINT replica_partition_topic_id_partition_fkey;
ALTER TABLE mq.leader_epoch_history DROP CONSTRAINT leader_epoch_history_topic_id_partition_fkey;
ALTER TABLE mq.offset_version DROP CONSTRAINT offset_version_topic_id_partition_fkey;
ALTER TABLE mq.retention_loss DROP CONSTRAINT retention_loss_topic_id_partition_fkey;
ALTER TABLE mq.cleaner_pass DROP CONSTRAINT cleaner_pass_topic_id_partition_fkey;
ALTER TABLE mq.cleaner_rewrite DROP CONSTRAINT cleaner_rewrite_topic_id_partition_base_offset_fkey;
ALTER TABLE mq_coord.partition DROP CONSTRAINT partition_topic_fkey;
ALTER TABLE mq_coord.txn_output DROP CONSTRAINT txn_output_txn_id_fkey;
ALTER TABLE mq_coord.cluster_group_member DROP CONSTRAINT cluster_group_member_group_id_fkey;
ALTER TABLE mq_coord.cluster_group_assignment DROP CONSTRAINT cluster_group_assignment_group_id_fkey;
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq.topic', 'topic_id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq.producer', 'producer_id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq_coord.partition', 'lock_id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('mq_coord.event', 'event_id'), '');
-- mq-kafka's group membership across its restarts (54_kafka_group_state.sql)
CREATE TABLE mq.kafka_group_state (
    group_id       text PRIMARY KEY,
    version        bigint NOT NULL,
    state          bytea NOT NULL,
    saved_at       timestamptz NOT NULL DEFAULT now(),
    kafka_metadata bytea
);
SELECT pg_catalog.pg_extension_config_dump('mq.kafka_group_state', '');
-- Kafka transactions (67_kafka_txn.sql); transactional ids as an ACL resource
ALTER TABLE mq.acl DROP CONSTRAINT acl_resource_type_check;
ALTER TABLE mq.acl ADD CONSTRAINT acl_resource_type_check
    CHECK (resource_type IN ('topic', 'group', 'cluster', 'transactional_id'));
CREATE TABLE mq.kafka_txn (
    transactional_id text PRIMARY KEY CHECK (transactional_id <> ''),
    producer_id      bigint NOT NULL,
    producer_epoch   integer NOT NULL,
    state            text NOT NULL DEFAULT 'empty' CHECK (state IN ('empty', 'ongoing')),
    timeout_ms       integer NOT NULL CHECK (timeout_ms > 0),
    started_at       timestamptz,       -- the open transaction's first call
    last_result      text CHECK (last_result IN ('commit', 'abort')),
    last_producer_id    bigint,
    last_producer_epoch integer,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('mq.kafka_txn', 'WHERE state OPERATOR(pg_catalog.=) ''empty''');
CREATE TABLE mq.kafka_txn_record (
    transactional_id text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    base_sequence    integer NOT NULL,
    keys             bytea[] NOT NULL,
    vals             bytea[] NOT NULL,
    headers          jsonb[],
    timestamps       timestamptz[],
    staged_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (transactional_id, topic, partition, base_sequence)
);
CREATE TABLE mq.kafka_txn_offset (
    transactional_id text NOT NULL,
    group_id         text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    next_offset      bigint NOT NULL,
    metadata         text,
    PRIMARY KEY (transactional_id, group_id, topic, partition)
);
-- Kafka transactions across nodes (68_kafka_txn_cluster.sql)
CREATE TABLE mq.kafka_txn_sequence (
    transactional_id text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    producer_epoch   integer NOT NULL,
    next_sequence    integer NOT NULL CHECK (next_sequence >= 0),
    PRIMARY KEY (transactional_id, topic, partition)
);
SELECT pg_catalog.pg_extension_config_dump('mq.kafka_txn_sequence',
    'WHERE transactional_id OPERATOR(pg_catalog.=) ANY (SELECT k.transactional_id FROM mq.kafka_txn k'
    ' WHERE k.state OPERATOR(pg_catalog.=) ''empty'')');
CREATE TABLE mq_coord.kafka_txn_staged_offset (
    group_id         text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    transactional_id text NOT NULL,
    expires_at       timestamptz NOT NULL,
    PRIMARY KEY (group_id, topic, partition, transactional_id)
);
CREATE INDEX kafka_txn_staged_offset_id ON mq_coord.kafka_txn_staged_offset (transactional_id);
-- maintenance finds the partitions that need a segment ahead without
-- reading their log tables (01_catalog.sql, 85_maintenance.sql); every
-- partition is noted once, so that the first pass checks each exactly
CREATE TABLE mq.last_segment_written (
    topic_id   integer NOT NULL,
    partition  integer NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, partition)
);
SELECT pg_catalog.pg_extension_config_dump('mq.last_segment_written', '');
INSERT INTO mq.last_segment_written (topic_id, partition)
SELECT ps.topic_id, ps.partition FROM mq.partition_state ps;
-- a closed segment's size and age, recorded once for retention
-- (01_catalog.sql, 70_retention.sql); NULL: the next pass records them
ALTER TABLE mq.segment ADD COLUMN closed_bytes bigint, ADD COLUMN closed_last_time timestamptz;
-- wake-ups name their partition (notify.c)
DROP FUNCTION mq._replica_notify(integer);
-- a follower's long poll no longer wakes for a new high watermark (replica_wait.c)
DROP FUNCTION mq._replica_wait_records(integer, integer, bigint, integer, bigint, bigint);
-- mq.delete_group deletes through mq._delete_offsets_of, which
-- mq.delete_offsets shares (52_group_delete.sql)
DROP FUNCTION mq._delete_group_versions(text);
-- the produce path passes where its segments end: the function read them
-- with the transaction's snapshot, stale under REPEATABLE READ (20_admin.sql)
DROP FUNCTION mq._ensure_segments_to(integer, integer, bigint);
-- a publication FOR ALL TABLES refuses deletes from a table without a
-- replica identity: grants are identified by the whole row (90_acl.sql),
-- a segment's rows by its unique offset index (20_admin.sql)
ALTER TABLE mq.acl REPLICA IDENTITY FULL;
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT g.relid, c.relname AS index_name
               FROM mq.segment g
               JOIN pg_catalog.pg_index i
                 ON i.indrelid OPERATOR(pg_catalog.=) g.relid AND i.indisunique
               JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s REPLICA IDENTITY USING INDEX %I',
                                  s.relid, s.index_name);
    END LOOP;
END $$;
-- Kafka client quotas (93_client_quotas.sql)
CREATE TABLE mq.client_quota (
    user_name      text,
    default_user   boolean NOT NULL DEFAULT false,
    client_id      text,
    default_client boolean NOT NULL DEFAULT false,
    quota_key      text NOT NULL
                   CHECK (quota_key IN ('producer_byte_rate', 'consumer_byte_rate', 'request_percentage')),
    quota_value    double precision NOT NULL CHECK (quota_value > 0 AND quota_value < 'Infinity'),
    set_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (NOT (default_user AND user_name IS NOT NULL)),
    CHECK (NOT (default_client AND client_id IS NOT NULL)),
    CHECK (user_name IS NOT NULL OR default_user OR client_id IS NOT NULL OR default_client),
    UNIQUE NULLS NOT DISTINCT (user_name, default_user, client_id, default_client, quota_key)
);
REVOKE ALL ON mq.client_quota FROM PUBLIC;
-- no key can identify a row (names are NULL for defaults), so the whole
-- row does, as for mq.acl: a publication FOR ALL TABLES needs one
ALTER TABLE mq.client_quota REPLICA IDENTITY FULL;
-- quotas are the user's configuration: pg_dump keeps them
SELECT pg_catalog.pg_extension_config_dump('mq.client_quota', '');
-- deleting replicated topics: incarnations and tombstones (66_topic_delete.sql)
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
SELECT pg_catalog.pg_extension_config_dump('mq.replica_topic', '');
-- SQL group members subscribe by topic name, as Kafka's consumers do
-- (50_groups.sql): a topic dropped and created again is subscribed again.
-- The view reading the column and the functions whose result types name
-- it go first (part 2 creates them again, with their grants).
DROP VIEW mq.group_members;
DROP FUNCTION mq._members_ordered(text);
DROP FUNCTION mq._group_partitions(text);
CREATE FUNCTION mq._update_topic_names(ids integer[]) RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.array_agg(t.topic_name ORDER BY t.topic_name COLLATE "C"), '{}')
      FROM mq.topic t WHERE t.topic_id OPERATOR(pg_catalog.=) ANY (ids)
$$;
ALTER TABLE mq.group_member ALTER COLUMN topics TYPE text[] USING mq._update_topic_names(topics);
DROP FUNCTION mq._update_topic_names(integer[]);
-- @definitions
-- Kafka's collision rule, looked up by an index on each catalog of topics
-- (20_admin.sql, 61_coordinator.sql): after part 2 made the key's function
CREATE INDEX topic_collision_key ON mq.topic (mq._topic_collision_key(topic_name));
CREATE INDEX topic_collision_key ON mq_coord.topic (mq._topic_collision_key(topic));
-- topic ids, looked up by an index (20_admin.sql): after part 2 made the function
CREATE INDEX topic_kafka_id ON mq.topic (mq._kafka_topic_id(topic_name));
CREATE TRIGGER cascade_to_partition_state AFTER DELETE ON mq.topic
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.partition_state', 'topic_id');
CREATE TRIGGER cascade_to_segment AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.segment', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_consumer_offset AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.consumer_offset', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_last_segment_written AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.last_segment_written', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_producer_state AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.producer_state', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_producer_state AFTER DELETE ON mq.producer
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.producer_state', 'producer_id');
CREATE TRIGGER cascade_to_group_member AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_member', 'group_id');
CREATE TRIGGER cascade_to_group_assignment AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_assignment', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_group_assignment AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.group_assignment', 'group_id');
CREATE TRIGGER cascade_to_replica_partition AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.replica_partition', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_leader_epoch_history AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.leader_epoch_history', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_offset_version AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.offset_version', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_partition AFTER DELETE ON mq_coord.topic
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.partition', 'topic');
CREATE TRIGGER cascade_to_txn_output AFTER DELETE ON mq_coord.txn
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.txn_output', 'txn_id');
CREATE TRIGGER cascade_to_cluster_group_member AFTER DELETE ON mq_coord.cluster_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.cluster_group_member', 'group_id');
CREATE TRIGGER cascade_to_cluster_group_assignment AFTER DELETE ON mq_coord.cluster_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.cluster_group_assignment', 'group_id');
CREATE TRIGGER cascade_to_retention_loss AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.retention_loss', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_cleaner_pass AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.cleaner_pass', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_cleaner_rewrite AFTER DELETE ON mq.segment
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.cleaner_rewrite', 'topic_id', 'partition', 'base_offset');
CREATE TRIGGER cascade_to_poll_pending AFTER DELETE ON mq.partition_state
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.poll_pending', 'topic_id', 'partition');
CREATE TRIGGER cascade_to_poll_pending AFTER DELETE ON mq.consumer_group
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.poll_pending', 'group_id');
CREATE TRIGGER cascade_to_replica_topic AFTER DELETE ON mq.topic
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq.replica_topic', 'topic_id');
-- the key of the fake SCRAM salts (91_scram.sql; needs mq._scram_random)
INSERT INTO mq.scram_secret (secret) VALUES (mq._scram_random(32));

-- the EXECUTE grants on the routines whose parameters were renamed, given
-- back (see the top of this file); those whose arguments changed too are
-- given on their new signature
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT * FROM pg_catalog.jsonb_to_recordset(
                 pg_catalog.current_setting('mq_update.grants')::jsonb)
                 AS (routine text, grantee text, option boolean) LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s',
            CASE pg_catalog.substring(g.routine, '([a-z_]+)\(')
                -- headers and CreateTimes of a decision's records (64_twophase_redo.sql)
                WHEN 'txn_redo_output' THEN 'mq.txn_redo_output(text, integer, integer, bigint, integer, '
                                            'integer, bytea[], bytea[], jsonb[], timestamptz[])'
                WHEN 'txn_decide' THEN 'mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], '
                                       'bytea[], jsonb[], timestamptz[])'
                -- one report per offset (64_twophase_redo.sql)
                WHEN 'txn_offsets_redone' THEN 'mq_coord.txn_offsets_redone(text, text, text, integer, '
                                               'integer, integer)'
                -- the incarnation a topic is placed with (66_topic_delete.sql)
                WHEN 'replica_place_topic' THEN 'mq.replica_place_topic(text, integer, jsonb, integer[], uuid)'
                ELSE g.routine END,
            g.grantee, CASE WHEN g.option THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END $$;
