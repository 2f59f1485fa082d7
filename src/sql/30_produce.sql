-------------------------------------------------------------------------------
-- Produce
-------------------------------------------------------------------------------

-- timestamp: the record's CreateTime (NULL: now); header_list: Kafka
-- headers, instead of headers (docs/sql.md#timestamps, #headers).
CREATE FUNCTION mq.send(topic text, key bytea, value bytea, headers jsonb DEFAULT NULL,
                        partition integer DEFAULT NULL,
                        producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                        base_sequence integer DEFAULT NULL,
                        "timestamp" timestamptz DEFAULT NULL, header_list mq.header[] DEFAULT NULL)
    RETURNS TABLE (partition integer, msg_offset bigint)
    AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C VOLATILE ROWS 1;

CREATE FUNCTION mq.send(topic text, key text, value text, headers jsonb DEFAULT NULL,
                        partition integer DEFAULT NULL,
                        producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                        base_sequence integer DEFAULT NULL,
                        "timestamp" timestamptz DEFAULT NULL, header_list mq.header[] DEFAULT NULL)
    RETURNS TABLE (partition integer, msg_offset bigint)
    AS 'MODULE_PATHNAME', 'mq_send_text' LANGUAGE C VOLATILE ROWS 1;

CREATE FUNCTION mq.send(topic text, key text, value jsonb, headers jsonb DEFAULT NULL,
                        partition integer DEFAULT NULL,
                        producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                        base_sequence integer DEFAULT NULL,
                        "timestamp" timestamptz DEFAULT NULL, header_list mq.header[] DEFAULT NULL)
    RETURNS TABLE (partition integer, msg_offset bigint)
    AS 'MODULE_PATHNAME', 'mq_send_text' LANGUAGE C VOLATILE ROWS 1;

-- timestamps: one CreateTime per record (a NULL element: now), or one
-- timestamp for all; headers: per record, an object or a list of pairs;
-- batch_bytes: the size of the Kafka record batch the records came in, as
-- sent, which max.message.bytes then limits instead of each record
-- (src/record_size.c).
CREATE FUNCTION mq.send_batch(topic text, keys bytea[], vals bytea[], headers jsonb[] DEFAULT NULL,
                              partition integer DEFAULT NULL,
                              producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                              base_sequence integer DEFAULT NULL,
                              timestamps timestamptz[] DEFAULT NULL, "timestamp" timestamptz DEFAULT NULL,
                              batch_bytes integer DEFAULT NULL)
    RETURNS TABLE (partition integer, msg_offset bigint)
    AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C VOLATILE;

CREATE FUNCTION mq.send_batch(topic text, keys text[], vals text[], headers jsonb[] DEFAULT NULL,
                              partition integer DEFAULT NULL,
                              producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                              base_sequence integer DEFAULT NULL,
                              timestamps timestamptz[] DEFAULT NULL, "timestamp" timestamptz DEFAULT NULL)
    RETURNS TABLE (partition integer, msg_offset bigint)
    AS 'MODULE_PATHNAME', 'mq_send_batch_text' LANGUAGE C VOLATILE;

-- The checks mq.send_batch makes before it writes, without writing (the
-- records of a Kafka transaction, staged until it commits: 67_kafka_txn.sql).
CREATE FUNCTION mq._check_records(topic text, keys bytea[], vals bytea[], headers jsonb[] DEFAULT NULL,
                                  partition integer DEFAULT NULL,
                                  producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                                  base_sequence integer DEFAULT NULL,
                                  timestamps timestamptz[] DEFAULT NULL, "timestamp" timestamptz DEFAULT NULL,
                                  batch_bytes integer DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'mq_check_records' LANGUAGE C STABLE;

-- The size max.message.bytes (or mq.message_max_bytes) limits: the Kafka
-- record batch holding this record alone (src/record_size.c).
CREATE FUNCTION mq.record_size(key bytea, value bytea, headers jsonb DEFAULT NULL) RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_record_size_sql' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION mq._lock_producer(producer_id bigint) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_lock_producer' LANGUAGE C STRICT;
CREATE FUNCTION mq._try_lock_producer(producer_id bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_try_lock_producer' LANGUAGE C STRICT;

-- The node's next own producer id, past ids that batches registered (a
-- batch of an id mq does not know registers it, as Kafka takes any
-- producer: src/idempotence.c), so that no two producers share one.
CREATE FUNCTION mq._next_local_producer_id() RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    LOOP
        v_id := nextval(pg_get_serial_sequence('mq.producer', 'producer_id'));
        EXIT WHEN NOT EXISTS (SELECT 1 FROM mq.producer p WHERE p.producer_id = v_id);
    END LOOP;
    RETURN v_id;
END $$;

-- A new producer id (epoch 0), or for a known transactional id the same id
-- with the next epoch.  Waits until transactions of the older epoch have
-- ended; from then on they are fenced (MQ012).  On a node whose broker
-- attached, a new id comes from the coordinator's blocks
-- (63_producer_ids.sql; MQ027 when none is left) and the transaction
-- commits with at least a local flush, so that the id is never issued twice.
CREATE FUNCTION mq.init_producer(transactional_id text DEFAULT NULL)
    RETURNS TABLE (producer_id bigint, producer_epoch integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id bigint;
    v_epoch integer;
BEGIN
    IF transactional_id = '' THEN
        RAISE EXCEPTION 'transactional_id must not be empty' USING ERRCODE = 'MQ010',
            HINT = 'Pass NULL for an idempotent producer without a transactional id.';
    END IF;
    IF mq._cluster_producer_ids() THEN
        -- not in this function's SET list, so it lasts until the commit
        IF current_setting('synchronous_commit') = 'off' THEN
            PERFORM set_config('synchronous_commit', 'local', true);
        END IF;
        -- a known transactional id keeps its id: only its first call draws one
        UPDATE mq.producer AS p SET producer_epoch = p.producer_epoch + 1, last_used = now()
         WHERE p.transactional_id = init_producer.transactional_id
        RETURNING p.producer_id, p.producer_epoch INTO v_id, v_epoch;
        IF v_id IS NULL THEN
            INSERT INTO mq.producer AS p (producer_id, transactional_id)
            VALUES (mq._next_producer_id(), init_producer.transactional_id)
            ON CONFLICT ON CONSTRAINT producer_transactional_id_key DO UPDATE
                SET producer_epoch = p.producer_epoch + 1, last_used = now()
            RETURNING p.producer_id, p.producer_epoch INTO v_id, v_epoch;
        END IF;
    ELSE
        INSERT INTO mq.producer AS p (producer_id, transactional_id)
        VALUES (mq._next_local_producer_id(), init_producer.transactional_id)
        ON CONFLICT ON CONSTRAINT producer_transactional_id_key DO UPDATE
            SET producer_epoch = p.producer_epoch + 1, last_used = now()
        RETURNING p.producer_id, p.producer_epoch INTO v_id, v_epoch;
    END IF;
    IF v_epoch > 32766 THEN
        SELECT r.producer_id, r.producer_epoch INTO v_id, v_epoch FROM mq._rotate_producer(v_id) r;
    END IF;
    PERFORM mq._lock_producer(v_id);
    producer_id := v_id;
    producer_epoch := v_epoch;
    RETURN NEXT;
END $$;

-- Kafka's epoch is an int16, and Kafka gives a transactional id whose
-- epoch reached 32766 a new producer id at epoch 0.  The old id stays,
-- without its transactional id, at epoch 32767, which no instance that
-- used it has: they are fenced (MQ012) until maintenance expires it.
-- Waits for the old id's open transactions first, as an epoch bump does.
CREATE FUNCTION mq._rotate_producer(p_old bigint, OUT producer_id bigint, OUT producer_epoch integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_txn text;
BEGIN
    PERFORM mq._lock_producer(p_old);
    SELECT p.transactional_id INTO v_txn FROM mq.producer p WHERE p.producer_id OPERATOR(pg_catalog.=) p_old;
    UPDATE mq.producer AS p SET transactional_id = NULL, producer_epoch = 32767
     WHERE p.producer_id OPERATOR(pg_catalog.=) p_old;
    INSERT INTO mq.producer AS p (producer_id, transactional_id)
    VALUES (CASE WHEN mq._cluster_producer_ids() THEN mq._next_producer_id() ELSE mq._next_local_producer_id() END,
            v_txn)
    RETURNING p.producer_id, p.producer_epoch INTO producer_id, producer_epoch;
END $$;
