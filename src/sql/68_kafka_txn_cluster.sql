-------------------------------------------------------------------------------
-- Kafka transactions spanning the nodes of a replicated cluster (mq-kafka's
-- broker/mq-kafka/h_txn_end.c; docs/kafka.md "Transactions", docs/design.md
-- "Kafka transactions across nodes").
--
-- The transaction coordinator is the daemon FindCoordinator names for the
-- transactional id; its node's database holds the transaction: the row of
-- mq.kafka_txn, every staged batch and every staged offset (the leaders'
-- daemons stage them there, 67_kafka_txn.sql).  The producer id and epoch
-- come from the cluster's coordinator (mq_coord.init_producer), so they
-- stay the id's wherever its transactions are coordinated.
--
-- EndTxn commit builds on the decision of exactly-once across nodes
-- (64_twophase.sql, 64_twophase_redo.sql):
--   1. mq.kafka_txn_collect, on the transaction's node: one output part per
--      partition written (its batches merged into one, numbered with the
--      id's own sequences, mq.kafka_txn_sequence) and one offsets part;
--   2. mq_coord.kafka_txn_decide: the commit decision with every record
--      (mq_coord.txn, mq_coord.txn_output), durable on the coordinator;
--   3. each output sent to its partition's current leader as the producer
--      (mq.txn_redo_output: idempotent, so sending again writes nothing),
--      acknowledged by the ISR; then each offset committed forward on its
--      leader (mq.txn_redo_offset); mq_coord.txn_output_durable and
--      mq_coord.txn_done record the progress;
--   4. mq.kafka_txn_finish: the stage is dropped and the sequences move on.
-- No part is prepared: a part's records are in the decision, and every
-- broker sends them again to the partitions it leads while the step is
-- not durable (a part names broker -1, which never leads: recover.c), so
-- a decided transaction completes when the daemon dies after step 2.
-- Abort records an abort decision first (mq_coord.txn_abort), which loses
-- to a commit decided before: that transaction stays committed.
--
-- Locking: as 67_kafka_txn.sql, every node function takes the id's row
-- FOR UPDATE first.  The coordinator's decision is txn_decide's.
-------------------------------------------------------------------------------

-- The next sequence of the id's producer epoch in each partition: the
-- sequence its next committed batch is sent with.  Aborted transactions
-- take none, so the leaders see no gap.
CREATE TABLE mq.kafka_txn_sequence (
    transactional_id text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    producer_epoch   integer NOT NULL,
    next_sequence    integer NOT NULL CHECK (next_sequence >= 0),
    PRIMARY KEY (transactional_id, topic, partition)
);
COMMENT ON TABLE mq.kafka_txn_sequence IS
    'in a cluster, the sequence each transactional id''s next committed batch is sent to a partition with';
-- dumped with the ids mq.kafka_txn dumps (67_kafka_txn.sql)
SELECT pg_catalog.pg_extension_config_dump('mq.kafka_txn_sequence',
    'WHERE transactional_id OPERATOR(pg_catalog.=) ANY (SELECT k.transactional_id FROM mq.kafka_txn k'
    ' WHERE k.state OPERATOR(pg_catalog.=) ''empty'')');

-- InitProducerId in a cluster: the producer id and epoch the coordinator
-- gave the id (mq_coord.init_producer), after mq.kafka_txn_init_check
-- (67_kafka_txn_init.sql) found a new epoch due; current_producer_id and
-- current_producer_epoch are the client's pair it replaces, if it sent
-- one (a producer id above 0).  The previous epoch's open transaction is
-- aborted, as by mq.kafka_txn_init.  The check ran in a transaction of
-- its own, before the coordinator's epoch: another InitProducerId of the
-- id may have been adopted since.  So the client's pair is checked again
-- here, on the locked row (a zombie's pair that a new instance replaced
-- meanwhile is fenced, MQ012), and the install refuses an epoch the row
-- has passed (MQ056, CONCURRENT_TRANSACTIONS: the client asks again and
-- gets a newer one), as Kafka's coordinator checks and bumps in one step.
CREATE FUNCTION mq_internal.kafka_txn_adopt(transactional_id text, timeout_ms integer, producer_id bigint,
                                            producer_epoch integer, current_producer_id bigint,
                                            current_producer_epoch integer, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq_internal.kafka_txn_init_check($1, $2, $5, $6, p_caller);
    IF $3 IS NULL OR $3 OPERATOR(pg_catalog.<) 1 OR $4 IS NULL OR $4 OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'invalid producer id % or epoch %', $3, $4 USING ERRCODE = 'MQ010';
    END IF;
    DELETE FROM mq.kafka_txn_sequence q WHERE q.transactional_id OPERATOR(pg_catalog.=) $1;
    PERFORM mq._kafka_txn_install($1, $2, $3, $4, $5, $6);
END $$;
CREATE FUNCTION mq.kafka_txn_adopt(transactional_id text, timeout_ms integer, producer_id bigint,
                                   producer_epoch integer, current_producer_id bigint DEFAULT NULL,
                                   current_producer_epoch integer DEFAULT NULL) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_adopt(text, integer, bigint, integer, bigint, integer) IS
    'mq-kafka API in a cluster: a transactional id takes the producer id and epoch the coordinator gave it, noting the client''s pair it replaces; aborts the older epoch''s transaction';

-- The open transaction's name on the coordinator: producer id, epoch and
-- when it began, so a retry finds the same decision.
CREATE FUNCTION mq._kafka_txn_name(v mq.kafka_txn) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.format('k%s.%s.%s', v.producer_id, v.producer_epoch,
                             pg_catalog.floor(pg_catalog.date_part('epoch', v.started_at)
                                              OPERATOR(pg_catalog.*) 1000000)::bigint);
$$;

-- The partitions the open transaction of p_id wrote: each one output part
-- (n from 1), its records' count and the sequence they are sent with.
CREATE FUNCTION mq._kafka_txn_outputs(p_id text, p_epoch integer)
    RETURNS TABLE (n bigint, topic text, partition integer, base_sequence integer, count bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.row_number() OVER (ORDER BY r.topic, r.partition), r.topic, r.partition,
           coalesce((SELECT q.next_sequence FROM mq.kafka_txn_sequence q
                      WHERE q.transactional_id OPERATOR(pg_catalog.=) p_id
                        AND q.topic OPERATOR(pg_catalog.=) r.topic
                        AND q.partition OPERATOR(pg_catalog.=) r.partition
                        AND q.producer_epoch OPERATOR(pg_catalog.=) p_epoch), 0),
           pg_catalog.sum(pg_catalog.cardinality(r.keys))::bigint
      FROM mq.kafka_txn_record r
     WHERE r.transactional_id OPERATOR(pg_catalog.=) p_id
     GROUP BY r.topic, r.partition
     ORDER BY r.topic, r.partition;
$$;

-- EndTxn in a cluster, first step, on the transaction's node.  action:
--   none    nothing to do (a retry: mq._kafka_txn_to_end);
--   finish  a commit of nothing: mq.kafka_txn_finish, no decision;
--   abort   record an abort decision for txn_id, then finish;
--   decide  record the commit decision: participants, outputs, keys, vals,
--           headers and timestamps (the producer's CreateTimes) are
--           mq_coord.txn_decide's arguments.
CREATE FUNCTION mq_internal.kafka_txn_collect(transactional_id text, producer_id bigint, producer_epoch integer,
                                              commit boolean, p_caller oid,
                                              OUT action text, OUT txn_id text, OUT participants jsonb,
                                              OUT outputs jsonb, OUT keys bytea[], OUT vals bytea[],
                                              OUT headers jsonb[], OUT timestamps timestamptz[])
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn := mq._kafka_txn_lock($1, $2, $3, p_caller);
    v_offsets jsonb;
BEGIN
    IF NOT mq._kafka_txn_to_end(v, $4) THEN
        action := 'none';
        RETURN;
    END IF;
    txn_id := mq._kafka_txn_name(v);
    IF NOT $4 THEN
        action := 'abort';
        RETURN;
    END IF;
    action := 'decide';
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'gid', pg_catalog.format('mq:%s:%s', txn_id, o.n), 'broker', -1, 'kind', 'output',
               'partitions', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                   'topic', o.topic, 'partition', o.partition, 'epoch', -1))) ORDER BY o.n),
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'gid', pg_catalog.format('mq:%s:%s', txn_id, o.n), 'topic', o.topic,
               'partition', o.partition, 'producer_id', v.producer_id, 'producer_epoch', v.producer_epoch,
               'base_sequence', o.base_sequence, 'count', o.count) ORDER BY o.n)
      INTO participants, outputs
      FROM mq._kafka_txn_outputs($1, v.producer_epoch) o;
    SELECT pg_catalog.array_agg(u.uk ORDER BY r.topic, r.partition, r.base_sequence, u.ui),
           pg_catalog.array_agg(u.uv ORDER BY r.topic, r.partition, r.base_sequence, u.ui),
           pg_catalog.array_agg(u.uh ORDER BY r.topic, r.partition, r.base_sequence, u.ui),
           pg_catalog.array_agg(u.ut ORDER BY r.topic, r.partition, r.base_sequence, u.ui)
      INTO keys, vals, headers, timestamps
      FROM mq.kafka_txn_record r,
           unnest(r.keys, r.vals, r.headers, r.timestamps) WITH ORDINALITY AS u(uk, uv, uh, ut, ui)
     WHERE r.transactional_id OPERATOR(pg_catalog.=) $1;
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'group', s.group_id, 'topic', s.topic, 'partition', s.partition, 'next', s.next_offset)
               ORDER BY s.group_id, s.topic, s.partition)
      INTO v_offsets
      FROM mq.kafka_txn_offset s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1;
    participants := coalesce(participants, '[]');
    IF v_offsets IS NOT NULL THEN
        participants := participants OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array(
            pg_catalog.jsonb_build_object('gid', pg_catalog.format('mq:%s:0', txn_id), 'broker', -1,
                                          'kind', 'offsets', 'partitions', '[]'::jsonb, 'offsets', v_offsets));
    END IF;
    IF participants OPERATOR(pg_catalog.=) '[]'::jsonb THEN
        action := 'finish';     -- nothing written: nothing to decide
    END IF;
END $$;
CREATE FUNCTION mq.kafka_txn_collect(transactional_id text, producer_id bigint, producer_epoch integer,
                                     commit boolean,
                                     OUT action text, OUT txn_id text, OUT participants jsonb,
                                     OUT outputs jsonb, OUT keys bytea[], OUT vals bytea[],
                                     OUT headers jsonb[], OUT timestamps timestamptz[])
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_collect(text, bigint, integer, boolean) IS
    'mq-kafka API in a cluster: what ending a Kafka transaction decides on the coordinator (its parts, records and offsets)';

-- EndTxn in a cluster, last step: the decision on the coordinator was
-- committed (the records reach their leaders from it) or aborted; the
-- stage goes, and a commit moves the id's sequences past what it sent.
-- A transaction other than txn_id (a retry after the end) is left alone.
CREATE FUNCTION mq_internal.kafka_txn_finish(transactional_id text, producer_id bigint, producer_epoch integer,
                                             txn_id text, committed boolean, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn := mq._kafka_txn_lock($1, $2, $3, p_caller);
BEGIN
    IF $5 IS NULL THEN
        RAISE EXCEPTION 'committed must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF v.state OPERATOR(pg_catalog.<>) 'ongoing'
       OR mq._kafka_txn_name(v) IS DISTINCT FROM $4 THEN
        RETURN;
    END IF;
    IF $5 THEN
        INSERT INTO mq.kafka_txn_sequence AS q (transactional_id, topic, partition, producer_epoch, next_sequence)
        SELECT $1, o.topic, o.partition, v.producer_epoch,
               ((o.base_sequence::bigint OPERATOR(pg_catalog.+) o.count)
                OPERATOR(pg_catalog.%) 2147483648)::integer
          FROM mq._kafka_txn_outputs($1, v.producer_epoch) o
        ON CONFLICT ON CONSTRAINT kafka_txn_sequence_pkey DO UPDATE
           SET producer_epoch = EXCLUDED.producer_epoch, next_sequence = EXCLUDED.next_sequence;
    END IF;
    DELETE FROM mq.kafka_txn_record s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1;
    DELETE FROM mq.kafka_txn_offset s WHERE s.transactional_id OPERATOR(pg_catalog.=) $1;
    UPDATE mq.kafka_txn t SET state = 'empty', started_at = NULL,
                              last_result = CASE WHEN $5 THEN 'commit' ELSE 'abort' END,
                              updated_at = pg_catalog.now()
     WHERE t.transactional_id OPERATOR(pg_catalog.=) $1;
END $$;
CREATE FUNCTION mq.kafka_txn_finish(transactional_id text, producer_id bigint, producer_epoch integer,
                                    txn_id text, committed boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_finish(text, bigint, integer, text, boolean) IS
    'mq-kafka API in a cluster: end a Kafka transaction whose decision the coordinator recorded';

-- On the coordinator: the commit decision of a Kafka transaction
-- (mq_coord.txn_decide, fenced by the id's epoch there), refused with
-- MQ056 (retriable: Kafka's CONCURRENT_TRANSACTIONS) while an earlier one
-- of the same id is not complete, so that the leaders get each id's
-- batches in order.  One with offsets only is at once outputs_durable.
CREATE FUNCTION mq_coord.kafka_txn_decide(txn_id text, owner text, participants jsonb, producer_epoch integer,
                                          outputs jsonb, keys bytea[], vals bytea[],
                                          headers jsonb[] DEFAULT NULL, timestamps timestamptz[] DEFAULT NULL)
    RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    v_open text;
    v_state text;
BEGIN
    SELECT t.txn_id INTO v_open FROM mq_coord.txn t
     WHERE t.owner = $2 AND t.txn_id <> $1 AND t.state IN ('commit', 'outputs_durable')
     ORDER BY t.decided_at LIMIT 1;
    IF v_open IS NOT NULL THEN
        RAISE EXCEPTION 'transactional id "%" has a transaction decided and not yet complete: %', $2, v_open
            USING ERRCODE = 'MQ056', HINT = 'Retry shortly: mq-kafka or the brokers'' recovery completes it.';
    END IF;
    v_state := mq_coord.txn_decide($1, $2, $3, $4, $5, $6, $7, $8, $9);
    -- decided: its offsets are in mq_coord.txn now (txn_offsets_unstable)
    PERFORM mq_coord._kafka_txn_forget_offsets($2);
    IF v_state = 'commit' AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements($3) e WHERE e->>'kind' = 'output') THEN
        v_state := mq_coord.txn_output_durable($1, pg_catalog.format('mq:%s:0', $1));
    END IF;
    RETURN v_state;
END $$;
COMMENT ON FUNCTION mq_coord.kafka_txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[]) IS
    'mq-kafka: the commit decision of a Kafka transaction across nodes, after the id''s earlier one completed';
REVOKE ALL ON FUNCTION mq_coord.kafka_txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[]) FROM PUBLIC;

-- On the coordinator: the offsets open transactions staged on their nodes
-- (mq.kafka_txn_offset), noted by the mq-kafka that staged them before it
-- answers TxnOffsetCommit, so that OffsetFetch's require_stable sees them
-- while the transaction's node is down (offsets_stable.c asks the live
-- nodes themselves).  A row goes when its transaction is decided (the
-- offsets are then in mq_coord.txn until committed), aborted by its client
-- (mq_coord.kafka_txn_abort) or fenced by a new InitProducerId
-- (mq_coord.init_producer); past expires_at, the transaction's deadline,
-- its node fences it and it can only abort, so the row no longer counts.
CREATE TABLE mq_coord.kafka_txn_staged_offset (
    group_id         text NOT NULL,
    topic            text NOT NULL,
    partition        integer NOT NULL,
    transactional_id text NOT NULL,
    expires_at       timestamptz NOT NULL,
    PRIMARY KEY (group_id, topic, partition, transactional_id)
);
CREATE INDEX kafka_txn_staged_offset_id ON mq_coord.kafka_txn_staged_offset (transactional_id);
COMMENT ON TABLE mq_coord.kafka_txn_staged_offset IS
    'offsets that open Kafka transactions staged on their nodes, for OffsetFetch''s require_stable while a node is down';

CREATE FUNCTION mq_coord.kafka_txn_note_offsets(transactional_id text, group_id text, topics text[],
                                                partitions integer[], expires_at timestamptz) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $5 IS NULL OR cardinality($3) IS DISTINCT FROM cardinality($4)
       OR array_position($3, NULL) IS NOT NULL OR array_position($4, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'transactional id, group, topics, partitions and expires_at must be given, '
                        'one partition for each topic' USING ERRCODE = 'MQ010';
    END IF;
    DELETE FROM mq_coord.kafka_txn_staged_offset s WHERE s.group_id = $2 AND s.expires_at < now();
    INSERT INTO mq_coord.kafka_txn_staged_offset AS s (group_id, topic, partition, transactional_id, expires_at)
    SELECT DISTINCT $2, u.topic, u.partition, $1, $5 FROM unnest($3, $4) u(topic, partition)
    ON CONFLICT ON CONSTRAINT kafka_txn_staged_offset_pkey DO UPDATE SET expires_at = EXCLUDED.expires_at;
END $$;
COMMENT ON FUNCTION mq_coord.kafka_txn_note_offsets(text, text, text[], integer[], timestamptz) IS
    'mq-kafka: note offsets an open Kafka transaction staged on its node, until its deadline (OffsetFetch''s require_stable)';
REVOKE ALL ON FUNCTION mq_coord.kafka_txn_note_offsets(text, text, text[], integer[], timestamptz) FROM PUBLIC;

-- the id's noted offsets go: its transaction was decided, aborted or fenced
CREATE FUNCTION mq_coord._kafka_txn_forget_offsets(p_id text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    DELETE FROM mq_coord.kafka_txn_staged_offset s WHERE s.transactional_id = p_id;
$$;
COMMENT ON FUNCTION mq_coord._kafka_txn_forget_offsets(text) IS
    'drop the offsets noted for a transactional id whose transaction was decided, aborted or fenced';
REVOKE ALL ON FUNCTION mq_coord._kafka_txn_forget_offsets(text) FROM PUBLIC;

-- On the coordinator: EndTxn abort of a Kafka transaction across nodes
-- (mq_coord.txn_abort, which loses to a commit decided before); returns
-- the transaction's state.
CREATE FUNCTION mq_coord.kafka_txn_abort(txn_id text, owner text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM mq_coord._kafka_txn_forget_offsets($2);
    RETURN mq_coord.txn_abort($1, 'aborted by the Kafka client');
END $$;
COMMENT ON FUNCTION mq_coord.kafka_txn_abort(text, text) IS
    'mq-kafka: record the abort of a Kafka transaction across nodes and drop the offsets noted for it';
REVOKE ALL ON FUNCTION mq_coord.kafka_txn_abort(text, text) FROM PUBLIC;

-- On the coordinator, for OffsetFetch with require_stable (KIP-447): the
-- group's partitions whose offset a decided transaction commits and no
-- leader has committed yet (the step is not complete and the offset is
-- not redone), or an open transaction staged before its deadline
-- (noted above), which Kafka answers UNSTABLE_OFFSET_COMMIT until then.
CREATE FUNCTION mq_coord.txn_offsets_unstable(group_id text) RETURNS TABLE (topic text, partition integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT o->>'topic', (o->>'partition')::integer
      FROM mq_coord.txn t, jsonb_array_elements(t.participants) e, jsonb_array_elements(e->'offsets') o
     WHERE t.state IN ('commit', 'outputs_durable') AND e->>'kind' = 'offsets'
       AND o->>'group' = txn_offsets_unstable.group_id
       AND NOT coalesce((o->>'redone')::boolean, false)
    UNION
    SELECT s.topic, s.partition FROM mq_coord.kafka_txn_staged_offset s
     WHERE s.group_id = txn_offsets_unstable.group_id AND s.expires_at >= now()
     ORDER BY 1, 2
$$;
COMMENT ON FUNCTION mq_coord.txn_offsets_unstable(text) IS
    'mq-kafka: a group''s partitions whose offset a decided transaction has not committed yet, or an open one staged (OffsetFetch''s UNSTABLE_OFFSET_COMMIT)';
REVOKE ALL ON FUNCTION mq_coord.txn_offsets_unstable(text) FROM PUBLIC;

COMMENT ON FUNCTION mq._kafka_txn_name(mq.kafka_txn) IS
    'the name of a transactional id''s open transaction on the coordinator (mq_coord.txn)';
COMMENT ON FUNCTION mq._kafka_txn_outputs(text, integer) IS
    'the partitions an open Kafka transaction wrote, each with its records'' count and the sequence they are sent with';
