-------------------------------------------------------------------------------
-- Kafka transactions (KIP-98) for mq-kafka (broker/mq-kafka/h_txn.c,
-- docs/kafka.md "Transactions", docs/design.md "Kafka transactions: offsets
-- at commit").
--
-- A transactional id has one row in mq.kafka_txn: its producer id and
-- epoch (from mq.init_producer, 67_kafka_txn_init.sql, so mq.producer
-- holds them too), whether a transaction is open, its timeout and when it
-- began.  A transactional batch is STAGED in mq.kafka_txn_record at
-- Produce time, checked but without an offset and without the partition's
-- produce lock, so other producers of the partition never wait for an
-- open transaction; the offsets a TxnOffsetCommit sends are staged in
-- mq.kafka_txn_offset.
-- mq.kafka_txn_end(commit) appends every staged batch (partitions in
-- ascending order, mq's lock order) and commits the staged offsets in ONE
-- PostgreSQL transaction: offsets are assigned at commit, so no reader,
-- read_committed or not, ever sees an open or aborted transaction's
-- records, and the last stable offset is the high watermark.  Abort, an
-- epoch bump (a new instance: InitProducerId) and the timeout (each call
-- past it is fenced; mq.run_maintenance's sweep aborts) delete the stage.
--
-- Locking: every function takes the transactional id's row FOR UPDATE
-- first, so the calls of one id are serialized; staging takes no other
-- lock.  Authorization: WRITE on the transactional id (resource type
-- 'transactional_id'), WRITE on each topic staged into, READ on the group
-- whose offsets are staged, checked at the call as Kafka's broker does.
-- Dumped: the ids without an open transaction (the condition below), so
-- that a producer goes on with its producer id and epoch after a restore,
-- as after a restart.  An open transaction does not outlive a restore:
-- its stage is not dumped, nor its id, whose producer's next call gets
-- INVALID_PRODUCER_ID_MAPPING, so that it aborts and goes on.
-------------------------------------------------------------------------------
CREATE TABLE mq.kafka_txn (
    transactional_id text PRIMARY KEY CHECK (transactional_id <> ''),
    producer_id      bigint NOT NULL,
    producer_epoch   integer NOT NULL,
    state            text NOT NULL DEFAULT 'empty' CHECK (state IN ('empty', 'ongoing')),
    timeout_ms       integer NOT NULL CHECK (timeout_ms > 0),
    started_at       timestamptz,       -- the open transaction's first call
    last_result      text CHECK (last_result IN ('commit', 'abort')),
    -- the client's pair an InitProducerId replaced (KIP-360): a retry of
    -- that call gets the current pair again; NULL after a new instance's
    last_producer_id    bigint,
    last_producer_epoch integer,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE mq.kafka_txn IS
    'Kafka transactional ids: producer id, epoch, open transaction, timeout';
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
COMMENT ON TABLE mq.kafka_txn_record IS
    'batches of open Kafka transactions, appended (and given offsets) at commit';

CREATE TABLE mq.kafka_txn_offset (
    transactional_id text NOT NULL,
    group_id         text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    next_offset      bigint NOT NULL,
    metadata         text,
    PRIMARY KEY (transactional_id, group_id, topic, partition)
);
COMMENT ON TABLE mq.kafka_txn_offset IS
    'consumer offsets of open Kafka transactions, committed with their records';

-- Has a transaction begun at started_at run past its timeout?
CREATE FUNCTION mq._kafka_txn_expired(p_started timestamptz, p_timeout_ms integer) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (p_started OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => p_timeout_ms / 1000.0))
           OPERATOR(pg_catalog.<) pg_catalog.now();
$$;

-- The id's row, locked, after the fencing check; an open transaction past
-- its timeout is fenced at once, and aborted with a new epoch by the sweep
-- (as Kafka's coordinator aborts and fences it).
CREATE FUNCTION mq._kafka_txn_lock(p_id text, p_producer_id bigint, p_epoch integer, p_caller oid)
    RETURNS mq.kafka_txn
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn;
BEGIN
    -- the id, producer id and epoch are the token that fences an old instance
    IF p_id IS NULL OR p_producer_id IS NULL OR p_epoch IS NULL THEN
        RAISE EXCEPTION 'transactional_id, producer_id and producer_epoch must not be null'
            USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._authorize(p_caller, 'transactional_id', p_id, 'write');
    SELECT * INTO v FROM mq.kafka_txn t
     WHERE t.transactional_id OPERATOR(pg_catalog.=) p_id FOR UPDATE;
    IF NOT FOUND OR v.producer_id OPERATOR(pg_catalog.<>) p_producer_id THEN
        RAISE EXCEPTION 'transactional id "%" does not have producer id %', p_id, p_producer_id
            USING ERRCODE = 'MQ073', HINT = 'Call InitProducerId (mq.kafka_txn_init) first.';
    END IF;
    IF v.state OPERATOR(pg_catalog.=) 'ongoing'
       AND mq._kafka_txn_expired(v.started_at, v.timeout_ms) THEN
        -- the sweep (mq._kafka_txn_expire) aborts it; an error here would
        -- roll back an abort done here
        RAISE EXCEPTION 'producer %, epoch % of transactional id "%" is fenced: its transaction timed out',
            p_producer_id, p_epoch, p_id
            USING ERRCODE = 'MQ012', HINT = 'The transaction ran longer than its transaction.timeout.ms.';
    END IF;
    IF v.producer_epoch OPERATOR(pg_catalog.<>) p_epoch THEN
        RAISE EXCEPTION 'producer %, epoch % of transactional id "%" is fenced: the current epoch is %',
            p_producer_id, p_epoch, p_id, v.producer_epoch
            USING ERRCODE = 'MQ012', HINT = 'A newer instance took the id over, or the transaction timed out.';
    END IF;
    RETURN v;
END $$;

-- Abort the id's open transaction and fence its producer (a new epoch).
CREATE FUNCTION mq._kafka_txn_timeout(p_id text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v record;
BEGIN
    DELETE FROM mq.kafka_txn_record r WHERE r.transactional_id OPERATOR(pg_catalog.=) p_id;
    DELETE FROM mq.kafka_txn_offset o WHERE o.transactional_id OPERATOR(pg_catalog.=) p_id;
    -- in a cluster the epochs are the coordinator's (mq_coord.init_producer,
    -- 68_kafka_txn_cluster.sql): the next one here fences the client, and
    -- its next InitProducerId gets at least that one there; here the next
    -- is mq.init_producer's (a new producer id once the epoch is spent)
    IF mq._cluster_producer_ids() THEN
        SELECT t.producer_id, t.producer_epoch OPERATOR(pg_catalog.+) 1 AS producer_epoch INTO v
          FROM mq.kafka_txn t WHERE t.transactional_id OPERATOR(pg_catalog.=) p_id;
    ELSE
        SELECT i.producer_id, i.producer_epoch INTO v FROM mq.init_producer(p_id) i;
    END IF;
    UPDATE mq.kafka_txn t
       SET producer_id = v.producer_id, producer_epoch = v.producer_epoch,
           state = 'empty', started_at = NULL, last_result = 'abort',
           last_producer_id = NULL, last_producer_epoch = NULL, updated_at = pg_catalog.now()
     WHERE t.transactional_id OPERATOR(pg_catalog.=) p_id;
END $$;

-- Open the transaction if it is not (AddPartitionsToTxn, AddOffsetsToTxn,
-- a staged batch).
CREATE FUNCTION mq._kafka_txn_begin(p_id text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    UPDATE mq.kafka_txn t SET state = 'ongoing', started_at = pg_catalog.now(), updated_at = pg_catalog.now()
     WHERE t.transactional_id OPERATOR(pg_catalog.=) p_id AND t.state OPERATOR(pg_catalog.=) 'empty';
$$;

-- The id's row with a new producer id and epoch, nothing open, nothing
-- staged (the caller holds the row's lock, if it exists); p_last_id and
-- p_last_epoch are the client's pair the new one replaces, noted if it
-- sent one (a producer id above 0: mq_internal.kafka_txn_init_check).
-- An epoch of the row's producer id older than the row's is refused
-- (MQ056): in a cluster the epoch comes from the coordinator in a
-- transaction of its own (mq.kafka_txn_adopt), and another InitProducerId
-- of the id may have installed a newer one meanwhile, even into a row
-- that did not exist when this one began.  The row's own epoch is taken:
-- the coordinator gives each epoch once, and a transaction's timeout
-- fences its client with the coordinator's next epoch, which no client
-- has had (_kafka_txn_timeout).
CREATE FUNCTION mq._kafka_txn_install(p_id text, p_timeout integer, p_producer_id bigint,
                                      p_epoch integer, p_last_id bigint, p_last_epoch integer) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn;
BEGIN
    DELETE FROM mq.kafka_txn_record r WHERE r.transactional_id OPERATOR(pg_catalog.=) p_id;
    DELETE FROM mq.kafka_txn_offset o WHERE o.transactional_id OPERATOR(pg_catalog.=) p_id;
    INSERT INTO mq.kafka_txn AS t (transactional_id, producer_id, producer_epoch, timeout_ms,
                                   last_producer_id, last_producer_epoch)
    VALUES (p_id, p_producer_id, p_epoch, p_timeout,
            CASE WHEN p_last_id OPERATOR(pg_catalog.>) 0 THEN p_last_id END,
            CASE WHEN p_last_id OPERATOR(pg_catalog.>) 0 THEN p_last_epoch END)
    ON CONFLICT ON CONSTRAINT kafka_txn_pkey DO UPDATE
       SET producer_id = EXCLUDED.producer_id, producer_epoch = EXCLUDED.producer_epoch,
           timeout_ms = EXCLUDED.timeout_ms, state = 'empty', started_at = NULL,
           last_result = NULL, last_producer_id = EXCLUDED.last_producer_id,
           last_producer_epoch = EXCLUDED.last_producer_epoch, updated_at = pg_catalog.now()
     WHERE t.producer_id OPERATOR(pg_catalog.<>) EXCLUDED.producer_id
        OR t.producer_epoch OPERATOR(pg_catalog.<=) EXCLUDED.producer_epoch;
    IF NOT FOUND THEN
        SELECT * INTO v FROM mq.kafka_txn t WHERE t.transactional_id OPERATOR(pg_catalog.=) p_id;
        RAISE EXCEPTION 'transactional id "%" already has epoch % of producer %, newer than %',
            p_id, v.producer_epoch, p_producer_id, p_epoch
            USING ERRCODE = 'MQ056', HINT = 'Another InitProducerId of the id came first: ask again.';
    END IF;
END $$;

-- AddPartitionsToTxn: the partitions join the transaction all or none,
-- as with Kafka.  A partition refused (its topic unknown, MQ001, or one
-- the caller may not write, 42501; no such partition, MQ006) is answered
-- with its SQLSTATE and the error's table field (the resource kind of a
-- 42501, which mq-kafka's kerr.c reads); when any is, none is added and
-- the others are answered not added, without a SQLSTATE (Kafka's
-- OPERATION_NOT_ATTEMPTED).  The transactional id's own refusals
-- (fenced, unknown producer id, no right to the id) fail the call.
CREATE FUNCTION mq_internal.kafka_txn_add_partitions(transactional_id text, producer_id bigint,
                                                     producer_epoch integer, topics text[], partitions integer[],
                                                     p_caller oid, OUT topic text, OUT partition integer,
                                                     OUT added boolean, OUT sqlstate text, OUT resource text)
RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer := coalesce(pg_catalog.cardinality($4), 0);
    v_states text[];
    v_resources text[];
    v_state text;
    v_resource text;
BEGIN
    IF v_n OPERATOR(pg_catalog.<>) coalesce(pg_catalog.cardinality($5), 0) THEN
        RAISE EXCEPTION 'topics and partitions must have as many elements' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._kafka_txn_lock($1, $2, $3, p_caller);
    FOR i IN 1 .. v_n LOOP
        BEGIN
            PERFORM mq._kafka_txn_partition($4[i], $5[i], p_caller, 'write');
        EXCEPTION WHEN insufficient_privilege OR SQLSTATE 'MQ001' OR SQLSTATE 'MQ006' THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_resource = TABLE_NAME;
            v_states[i] := v_state;
            v_resources[i] := v_resource;
        END;
    END LOOP;
    IF v_states IS NULL AND v_n OPERATOR(pg_catalog.>) 0 THEN
        PERFORM mq._kafka_txn_begin($1);
    END IF;
    RETURN QUERY
    SELECT $4[g.n], $5[g.n], v_states IS NULL, v_states[g.n], v_resources[g.n]
      FROM pg_catalog.generate_series(1, v_n) AS g(n) ORDER BY g.n;
END $$;
CREATE FUNCTION mq.kafka_txn_add_partitions(transactional_id text, producer_id bigint, producer_epoch integer,
                                            topics text[], partitions integer[], OUT topic text,
                                            OUT partition integer, OUT added boolean, OUT sqlstate text,
                                            OUT resource text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_add_partitions(text, bigint, integer, text[], integer[]) IS
    'mq-kafka API: partitions join the transactional id''s transaction, all or none; needs write on their topics';

-- The caller may write the topic (operation 'write'; staged offsets:
-- 'read'), and the partition exists here (true).
-- In a replicated cluster the transaction's node need not hold a replica
-- of every topic the transaction writes (a topic with fewer replicas than
-- nodes): one it does not hold is taken as it is (false), the daemon
-- having checked it against the cluster's partitions
-- (broker/mq-kafka/h_txn.c), and its leader checks the records when the
-- commit sends them.
CREATE FUNCTION mq._kafka_txn_partition(p_topic text, p_partition integer, p_caller oid,
                                         p_operation text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_count integer;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', p_topic, p_operation);
    SELECT t.partitions INTO v_count FROM mq.topic t WHERE t.topic_name OPERATOR(pg_catalog.=) p_topic;
    IF NOT FOUND AND mq._cluster_producer_ids() THEN
        RETURN false;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', p_topic USING ERRCODE = 'MQ001';
    END IF;
    IF p_partition IS NULL OR p_partition OPERATOR(pg_catalog.<) 0
       OR p_partition OPERATOR(pg_catalog.>=) v_count THEN
        RAISE EXCEPTION 'topic "%" has no partition %', p_topic, p_partition USING ERRCODE = 'MQ006';
    END IF;
    RETURN true;
END $$;

-- A transactional batch, staged until the transaction ends.  A retry of a
-- staged batch (same partition and base sequence) changes nothing.
CREATE FUNCTION mq_internal.kafka_txn_stage(transactional_id text, producer_id bigint, producer_epoch integer,
                                            topic text, partition integer, base_sequence integer,
                                            keys bytea[], vals bytea[], headers jsonb[],
                                            timestamps timestamptz[], batch_bytes integer,
                                            p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF $7 IS NULL OR $8 IS NULL OR pg_catalog.cardinality($7) OPERATOR(pg_catalog.<>) pg_catalog.cardinality($8)
       OR pg_catalog.cardinality($7) OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'a staged batch needs as many keys as values, at least one' USING ERRCODE = 'MQ010';
    END IF;
    IF $6 IS NULL OR $6 OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'base_sequence of a transactional batch must not be negative, not %', $6
            USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._kafka_txn_lock($1, $2, $3, p_caller);
    -- refused now, as Kafka refuses them, not when the commit appends them
    -- (a topic this node does not hold: by its leader at the commit)
    IF mq._kafka_txn_partition($4, $5, p_caller, 'write') THEN
        PERFORM mq._check_records($4, $7, $8, $9, $5, NULL, NULL, NULL, $10, NULL, $11);
    END IF;
    PERFORM mq._kafka_txn_begin($1);
    INSERT INTO mq.kafka_txn_record (transactional_id, topic, partition, base_sequence, keys, vals,
                                     headers, timestamps)
    VALUES ($1, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT ON CONSTRAINT kafka_txn_record_pkey DO NOTHING;
END $$;
CREATE FUNCTION mq.kafka_txn_stage(transactional_id text, producer_id bigint, producer_epoch integer,
                                   topic text, partition integer, base_sequence integer,
                                   keys bytea[], vals bytea[], headers jsonb[] DEFAULT NULL,
                                   timestamps timestamptz[] DEFAULT NULL,
                                   batch_bytes integer DEFAULT NULL) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_stage(text, bigint, integer, text, integer, integer, bytea[], bytea[], jsonb[], timestamptz[], integer) IS
    'mq-kafka API: stage a transactional batch, appended when the transaction commits';

-- A group whose offsets a transaction stages: a valid id (refused now,
-- not at the commit) the caller may read.
CREATE FUNCTION mq._kafka_txn_group(p_group text, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._check_group(p_group);
    PERFORM mq._authorize(p_caller, 'group', p_group, 'read');
END $$;

-- AddOffsetsToTxn: the group may be read by the caller.
CREATE FUNCTION mq_internal.kafka_txn_add_offsets(transactional_id text, producer_id bigint,
                                                  producer_epoch integer, group_id text, p_caller oid)
    RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._kafka_txn_lock($1, $2, $3, p_caller);
    PERFORM mq._kafka_txn_group($4, p_caller);
    PERFORM mq._kafka_txn_begin($1);
END $$;
CREATE FUNCTION mq.kafka_txn_add_offsets(transactional_id text, producer_id bigint, producer_epoch integer,
                                         group_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_add_offsets(text, bigint, integer, text) IS
    'mq-kafka API: a group''s offsets join the transactional id''s transaction; needs read on the group';

-- TxnOffsetCommit, one partition: staged, committed with the records.
-- Returns the transaction's deadline (mq._kafka_txn_lock fences it after),
-- which mq-kafka in a cluster notes on the coordinator with the offset
-- (mq_coord.kafka_txn_note_offsets, 68_kafka_txn_cluster.sql).
CREATE FUNCTION mq_internal.kafka_txn_offset(transactional_id text, producer_id bigint, producer_epoch integer,
                                             group_id text, topic text, partition integer,
                                             next_offset bigint, metadata text, p_caller oid)
    RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_deadline timestamptz;
BEGIN
    PERFORM mq._kafka_txn_lock($1, $2, $3, p_caller);
    PERFORM mq._kafka_txn_group($4, p_caller);
    -- an unknown partition is refused now, as Kafka's TxnOffsetCommit does
    PERFORM mq._kafka_txn_partition($5, $6, p_caller, 'read');
    IF $7 IS NULL OR $7 OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'next_offset must not be negative, not %', $7 USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._check_offset_metadata($8);
    PERFORM mq._kafka_txn_begin($1);
    INSERT INTO mq.kafka_txn_offset AS o (transactional_id, group_id, topic, partition, next_offset, metadata)
    VALUES ($1, $4, $5, $6, $7, $8)
    ON CONFLICT ON CONSTRAINT kafka_txn_offset_pkey DO UPDATE
       SET next_offset = EXCLUDED.next_offset, metadata = EXCLUDED.metadata;
    SELECT t.started_at OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => t.timeout_ms / 1000.0)
      INTO v_deadline FROM mq.kafka_txn t WHERE t.transactional_id OPERATOR(pg_catalog.=) $1;
    RETURN v_deadline;
END $$;
CREATE FUNCTION mq.kafka_txn_offset(transactional_id text, producer_id bigint, producer_epoch integer,
                                    group_id text, topic text, partition integer,
                                    next_offset bigint, metadata text DEFAULT NULL) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_offset(text, bigint, integer, text, text, integer, bigint, text) IS
    'mq-kafka API: stage a consumer offset, committed with the transaction''s records; returns the transaction''s deadline (its start and timeout), past which it can only abort';

-- EndTxn's rule when nothing is open, as Kafka's transaction coordinator's:
-- ending the last transaction again the way it ended is a retry (false);
-- the other way, or with none ended since InitProducerId (Kafka's Empty
-- state), is MQ072, INVALID_TXN_STATE.  An open transaction: true.
-- mq.kafka_txn_end and, in a cluster, mq.kafka_txn_collect ask it.
CREATE FUNCTION mq._kafka_txn_to_end(v mq.kafka_txn, p_commit boolean) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_result text := CASE WHEN p_commit THEN 'commit' ELSE 'abort' END;
BEGIN
    IF p_commit IS NULL THEN
        RAISE EXCEPTION 'commit must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF v.state OPERATOR(pg_catalog.=) 'ongoing' THEN
        RETURN true;
    END IF;
    IF v.last_result OPERATOR(pg_catalog.=) v_result THEN
        RETURN false;       -- a retry
    END IF;
    RAISE EXCEPTION 'transactional id "%" has no open transaction to %', v.transactional_id, v_result
        USING ERRCODE = 'MQ072',
              DETAIL = CASE WHEN v.last_result IS NULL THEN 'None ended since its producer id was initialized.'
                            ELSE pg_catalog.format('Its last transaction ended with %s.', v.last_result) END,
              HINT = 'Begin a transaction (add partitions or offsets, or produce) before ending it.';
END $$;

-- EndTxn: commit (append every staged batch, commit the staged offsets) or
-- abort (drop them), all in the caller's one transaction; with nothing
-- open, mq._kafka_txn_to_end's rule.  Returns the topics appended to
-- (mq-kafka wakes the fetches waiting on them).
CREATE FUNCTION mq_internal.kafka_txn_end(transactional_id text, producer_id bigint, producer_epoch integer,
                                          commit boolean, p_caller oid) RETURNS text[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn := mq._kafka_txn_lock($1, $2, $3, p_caller);
    v_topics text[] := '{}';
    r record;
BEGIN
    IF NOT mq._kafka_txn_to_end(v, $4) THEN
        RETURN v_topics;
    END IF;
    IF $4 THEN
        FOR r IN SELECT * FROM mq.kafka_txn_record s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1
                  ORDER BY s.topic, s.partition, s.base_sequence LOOP
            PERFORM mq.send_batch(r.topic, r.keys, r.vals, r.headers, r.partition, NULL, NULL, NULL, r.timestamps);
            IF NOT r.topic OPERATOR(pg_catalog.=) ANY (v_topics) THEN
                v_topics := v_topics OPERATOR(pg_catalog.||) r.topic;
            END IF;
        END LOOP;
        FOR r IN SELECT * FROM mq.kafka_txn_offset s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1
                  ORDER BY s.group_id, s.topic, s.partition LOOP
            PERFORM mq.commit_offset(r.group_id, r.topic, r.partition, r.next_offset, r.metadata);
        END LOOP;
    END IF;
    DELETE FROM mq.kafka_txn_record s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1;
    DELETE FROM mq.kafka_txn_offset s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1;
    UPDATE mq.kafka_txn t SET state = 'empty', started_at = NULL,
                              last_result = CASE WHEN $4 THEN 'commit' ELSE 'abort' END,
                              updated_at = pg_catalog.now()
     WHERE t.transactional_id OPERATOR(pg_catalog.=) $1;
    RETURN v_topics;
END $$;
CREATE FUNCTION mq.kafka_txn_end(transactional_id text, producer_id bigint, producer_epoch integer,
                                 commit boolean) RETURNS text[]
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_end(text, bigint, integer, boolean) IS
    'mq-kafka API: commit (append the staged batches, commit the staged offsets) or abort a Kafka transaction';

-- OffsetFetch with require_stable (KIP-447): the group's partitions whose
-- offset an open transaction of this node staged (TxnOffsetCommit), which
-- Kafka answers UNSTABLE_OFFSET_COMMIT until the transaction ends.  Needs
-- describe on the group, as OffsetFetch; lists the topics the caller may
-- describe.
CREATE FUNCTION mq_internal.kafka_offsets_unstable(group_id text, p_caller oid,
                                                   OUT topic text, OUT partition integer)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq._authorize(p_caller, 'group', $1, 'describe');
    RETURN QUERY
    SELECT DISTINCT o.topic, o.partition
      FROM mq.kafka_txn_offset o
      JOIN mq.kafka_txn t ON t.transactional_id OPERATOR(pg_catalog.=) o.transactional_id
     WHERE o.group_id OPERATOR(pg_catalog.=) $1 AND t.state OPERATOR(pg_catalog.=) 'ongoing'
       AND mq._has_privilege(p_caller, 'topic', o.topic, 'describe')
     ORDER BY 1, 2;
END $$;
CREATE FUNCTION mq.kafka_offsets_unstable(group_id text, OUT topic text, OUT partition integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
COMMENT ON FUNCTION mq.kafka_offsets_unstable(text) IS
    'mq-kafka API: a group''s partitions whose offset an open Kafka transaction staged (OffsetFetch''s UNSTABLE_OFFSET_COMMIT)';

-- Abort every open transaction past its timeout (mq.run_maintenance);
-- returns how many.
CREATE FUNCTION mq._kafka_txn_expire() RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer := 0;
    r record;
BEGIN
    FOR r IN SELECT t.transactional_id FROM mq.kafka_txn t
              WHERE t.state OPERATOR(pg_catalog.=) 'ongoing'
                AND mq._kafka_txn_expired(t.started_at, t.timeout_ms)
              ORDER BY 1 FOR UPDATE SKIP LOCKED LOOP
        PERFORM mq._kafka_txn_timeout(r.transactional_id);
        v_n := v_n OPERATOR(pg_catalog.+) 1;
    END LOOP;
    RETURN v_n;
END $$;

-- The transactions (Kafka's ListTransactions / DescribeTransactions):
-- those whose id the caller may describe, with Kafka's name of the state
-- and the partitions the open transaction has staged batches for.
CREATE VIEW mq.kafka_transactions WITH (security_barrier) AS
    SELECT t.transactional_id, t.producer_id, t.producer_epoch, t.state,
           CASE WHEN t.state OPERATOR(pg_catalog.=) 'ongoing' THEN 'Ongoing'
                WHEN t.last_result OPERATOR(pg_catalog.=) 'commit' THEN 'CompleteCommit'
                WHEN t.last_result OPERATOR(pg_catalog.=) 'abort' THEN 'CompleteAbort'
                ELSE 'Empty' END AS kafka_state,
           t.timeout_ms, t.started_at,
           (SELECT pg_catalog.count(*) FROM mq.kafka_txn_record r
             WHERE r.transactional_id OPERATOR(pg_catalog.=) t.transactional_id) AS staged_batches,
           p.topics, p.partitions, t.updated_at
      FROM mq.kafka_txn t
      CROSS JOIN LATERAL (
          SELECT pg_catalog.array_agg(d.topic ORDER BY d.topic, d.partition) AS topics,
                 pg_catalog.array_agg(d.partition ORDER BY d.topic, d.partition) AS partitions
            FROM (SELECT DISTINCT r.topic, r.partition FROM mq.kafka_txn_record r
                   WHERE r.transactional_id OPERATOR(pg_catalog.=) t.transactional_id) d) p
     WHERE mq._describable('transactional_id', t.transactional_id);
COMMENT ON VIEW mq.kafka_transactions IS
    'Kafka transactional ids the caller may describe: producer id, epoch, state, staged batches and their partitions';

COMMENT ON FUNCTION mq._kafka_txn_expired(timestamptz, integer) IS
    'whether a Kafka transaction begun at the time has run past its timeout';
COMMENT ON FUNCTION mq._kafka_txn_lock(text, bigint, integer, oid) IS
    'lock a transactional id''s row after the authorization and fencing checks (a timed-out transaction is fenced)';
COMMENT ON FUNCTION mq._kafka_txn_timeout(text) IS
    'abort a transactional id''s open transaction and fence its producer with a new epoch';
COMMENT ON FUNCTION mq._kafka_txn_install(text, integer, bigint, integer, bigint, integer) IS
    'give a transactional id''s row a producer id and epoch, with nothing open or staged, noting the client''s pair it replaces';
COMMENT ON FUNCTION mq._kafka_txn_to_end(mq.kafka_txn, boolean) IS
    'whether EndTxn has an open transaction to end: false for a retry of the last end, MQ072 otherwise';
COMMENT ON FUNCTION mq._kafka_txn_begin(text) IS
    'open the transactional id''s transaction unless it is open';
COMMENT ON FUNCTION mq._kafka_txn_partition(text, integer, oid, text) IS
    'check that a partition exists and the caller may write (or read, for staged offsets) its topic';
COMMENT ON FUNCTION mq._kafka_txn_group(text, oid) IS
    'check a group id whose offsets a transaction stages, and that the caller may read the group';
COMMENT ON FUNCTION mq._kafka_txn_expire() IS
    'maintenance: abort every Kafka transaction past its timeout; returns how many';
