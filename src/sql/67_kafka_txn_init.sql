-------------------------------------------------------------------------------
-- InitProducerId for mq-kafka (broker/mq-kafka/h_init_producer.c,
-- h_txn_init.c): an idempotent producer's new producer id, and a
-- transactional id's next epoch after the checks of the client's current
-- producer id and epoch (KIP-360).  The transactional ids' table and the
-- rest of Kafka's transactions: 67_kafka_txn.sql.
--
-- Locking: the transactional id's row of mq.kafka_txn FOR UPDATE, as in
-- 67_kafka_txn.sql, then mq.init_producer's.
-------------------------------------------------------------------------------

-- InitProducerId without a transactional id (KIP-679): a Kafka producer
-- may be idempotent when it may write some topic (Kafka: WRITE on any
-- topic, or IDEMPOTENT_WRITE on the cluster, which mq's grants do not
-- name; a prefixed or wildcard grant counts before its topics exist), or
-- holds EXECUTE on mq.init_producer, what SQL producers need.  Otherwise
-- 42501, which mq-kafka answers CLUSTER_AUTHORIZATION_FAILED.
CREATE FUNCTION mq_internal.kafka_init_producer(p_caller oid, OUT producer_id bigint, OUT producer_epoch integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT (has_function_privilege(p_caller, 'mq.init_producer(text)', 'EXECUTE')
            OR EXISTS (SELECT FROM mq.acl a
                        WHERE a.resource_type OPERATOR(pg_catalog.=) 'topic'
                          AND a.permission OPERATOR(pg_catalog.=) 'allow'
                          AND a.operation OPERATOR(pg_catalog.=) ANY (ARRAY['write', 'all'])
                          AND (a.grantee IS NULL OR pg_has_role(p_caller, a.grantee, 'USAGE')))
            OR EXISTS (SELECT FROM mq.topic t WHERE mq._has_privilege(p_caller, 'topic', t.topic_name, 'write'))) THEN
        RAISE EXCEPTION 'role "%" may write no topic, so it may not produce idempotently', p_caller::regrole
            USING ERRCODE = '42501', HINT = 'Grant it write on the topics it produces to (mq.grant).';
    END IF;
    SELECT i.producer_id, i.producer_epoch INTO producer_id, producer_epoch FROM mq.init_producer() i;
END $$;
CREATE FUNCTION mq.kafka_init_producer(OUT producer_id bigint, OUT producer_epoch integer)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_init_producer() IS
    'mq-kafka API: InitProducerId without a transactional id, for a role that may write some topic (KIP-679) or execute mq.init_producer';

-- InitProducerId's checks on the transactional id's node: the arguments,
-- the caller's right to the id, and the client's current producer id and
-- epoch (v3+, KIP-360; NULL or -1: none, a new instance; so is producer
-- id 0, which mq never issues and @platformatic/kafka sends with epoch 0
-- on every first call), compared as Kafka's transaction coordinator does,
-- on the id's row, locked:
--   the id's pair, none, or a new id: a new epoch is due (NULLs returned);
--   the pair the id's last InitProducerId replaced: a retry of that call,
--     which gets the id's current pair again (returned);
--   any other: MQ012, PRODUCER_FENCED (a newer instance took the id over;
--     before KIP-360 the zombie's call fenced the newer instance instead).
-- mq_internal.kafka_txn_init runs it; in a cluster mq-kafka does first
-- (broker/mq-kafka/h_txn_init.c), before the coordinator's new epoch.
CREATE FUNCTION mq_internal.kafka_txn_init_check(transactional_id text, timeout_ms integer,
                                                 current_producer_id bigint, current_producer_epoch integer,
                                                 p_caller oid, OUT producer_id bigint, OUT producer_epoch integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v mq.kafka_txn;
BEGIN
    IF $1 IS NULL OR $1 OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'transactional_id must not be empty' USING ERRCODE = 'MQ010';
    END IF;
    IF $2 IS NULL OR $2 OPERATOR(pg_catalog.<=) 0 THEN
        RAISE EXCEPTION 'transaction timeout_ms must be positive, not %', $2 USING ERRCODE = 'MQ010';
    END IF;
    IF (coalesce($3, -1) OPERATOR(pg_catalog.=) -1)
       OPERATOR(pg_catalog.<>) (coalesce($4, -1) OPERATOR(pg_catalog.=) -1) THEN
        RAISE EXCEPTION 'current_producer_id and current_producer_epoch must be given together'
            USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._authorize(p_caller, 'transactional_id', $1, 'write');
    SELECT * INTO v FROM mq.kafka_txn t WHERE t.transactional_id OPERATOR(pg_catalog.=) $1 FOR UPDATE;
    IF NOT FOUND OR coalesce($3, -1) OPERATOR(pg_catalog.<=) 0
       OR (v.producer_id OPERATOR(pg_catalog.=) $3 AND v.producer_epoch OPERATOR(pg_catalog.=) $4) THEN
        RETURN;
    END IF;
    IF v.last_producer_id OPERATOR(pg_catalog.=) $3 AND v.last_producer_epoch OPERATOR(pg_catalog.=) $4 THEN
        producer_id := v.producer_id;
        producer_epoch := v.producer_epoch;
        RETURN;
    END IF;
    RAISE EXCEPTION 'producer %, epoch % of transactional id "%" is fenced: the current producer is %, epoch %',
        $3, $4, $1, v.producer_id, v.producer_epoch
        USING ERRCODE = 'MQ012', HINT = 'A newer instance took the id over, or the transaction timed out.';
END $$;
CREATE FUNCTION mq.kafka_txn_init_check(transactional_id text, timeout_ms integer,
                                        current_producer_id bigint, current_producer_epoch integer,
                                        OUT producer_id bigint, OUT producer_epoch integer)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_init_check(text, integer, bigint, integer) IS
    'mq-kafka API: InitProducerId''s checks of a transactional id and the client''s current producer id and epoch (KIP-360); returns the current pair for a retry, NULLs when a new epoch is due';

-- InitProducerId with a transactional id: its producer id and the next
-- epoch, which fences the older one and aborts its transaction; or, for a
-- retry, the pair it got (mq_internal.kafka_txn_init_check).
CREATE FUNCTION mq_internal.kafka_txn_init(transactional_id text, timeout_ms integer,
                                           current_producer_id bigint, current_producer_epoch integer,
                                           p_caller oid, OUT producer_id bigint, OUT producer_epoch integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p_id ALIAS FOR $1;
BEGIN
    SELECT c.producer_id, c.producer_epoch INTO producer_id, producer_epoch
      FROM mq_internal.kafka_txn_init_check($1, $2, $3, $4, p_caller) c;
    IF kafka_txn_init.producer_id IS NOT NULL THEN
        RETURN;         -- a retry
    END IF;
    SELECT i.producer_id, i.producer_epoch INTO producer_id, producer_epoch FROM mq.init_producer(p_id) i;
    PERFORM mq._kafka_txn_install(p_id, $2, kafka_txn_init.producer_id, kafka_txn_init.producer_epoch, $3, $4);
END $$;
CREATE FUNCTION mq.kafka_txn_init(transactional_id text, timeout_ms integer,
                                  current_producer_id bigint DEFAULT NULL, current_producer_epoch integer DEFAULT NULL,
                                  OUT producer_id bigint, OUT producer_epoch integer)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C;
COMMENT ON FUNCTION mq.kafka_txn_init(text, integer, bigint, integer) IS
    'mq-kafka API: a transactional id''s producer id and next epoch, which fences the older epoch and aborts its transaction; a retry (KIP-360) gets the same pair again';
