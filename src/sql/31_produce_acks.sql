-------------------------------------------------------------------------------
-- The produce contract: its one owner (docs/design.md#the-produce-contract).
-- mq-kafka's Produce handler, mqctl's producer and mq.produce all call
-- these functions and keep no copy of the rules:
--
--   acks     '0', '1', 'all' or '-1' (Kafka's name for all); anything else
--            is MQ016 (Kafka's INVALID_REQUIRED_ACKS) and nothing is written.
--   before   acks=all needs a partition, and where this node leads it (or
--            holds the one copy of a topic that is not replicated: an ISR
--            of 1, as a Kafka topic of one replica), an ISR smaller than
--            min.insync.replicas is MQ021 (Kafka's NOT_ENOUGH_REPLICAS):
--            nothing is written.
--   batch    batch_bytes, the size of the Kafka record batch the records
--            came in as sent (mq-kafka gives it), is what max.message.bytes
--            limits, as in Kafka: larger is MQ040 (MESSAGE_TOO_LARGE),
--            nothing written.  Without it each record is limited
--            (mq.send_batch, src/record_size.c).
--   floor    acks=0 commits asynchronously (synchronous_commit off for the
--            transaction); acks=1 commits at least with a local flush,
--            whatever the server's default, and so does acks=all where
--            there is no replication to wait for.  acks=all on a leader
--            commits without waiting for the flush, so that the followers
--            fetch the records while the leader's WAL is written: the
--            acknowledgement (mq.produce_await) flushes the commit and
--            waits for the high watermark, which counts the leader's
--            records only once flushed (docs/replication.md, "The
--            acknowledgement path").  Both flushes overlap; nothing is
--            acknowledged, nor visible to consumers, before both.
--   after    acks=all on a replicated partition: once committed, the
--            records are acknowledged when the leader flushed them and
--            the ISR holds them, within
--            timeout_ms (NULL or below 1: 30000).  An ISR that shrank below
--            min.insync.replicas is MQ022 (NOT_ENOUGH_REPLICAS_AFTER_APPEND),
--            the timeout MQ023, a lost leadership MQ020.
--
-- mq.produce_records checks and writes in the caller's transaction
-- (PL/pgSQL, so that its statements' plans are cached per session);
-- mq.produce_await (src/replica.c) waits after the commit.  mq.produce is
-- the two with a COMMIT between them.  The ISR is read without a lock, as
-- Kafka's broker reads it: a shrink between the check and the append is
-- caught by the wait (MQ022).  Everything runs with the caller's rights;
-- no SET clause (a setting made with set_config(..., true) must outlive
-- the function, and a procedure with one cannot COMMIT), so every name is
-- schema-qualified instead.  _produce_state lives in 60_replica_status.sql:
-- PL/pgSQL resolves names when it runs.
-------------------------------------------------------------------------------

-- What mq.produce_records returns per record: its partition and offset,
-- and the wait acks=all owes (await_epoch NULL: none).
CREATE TYPE mq.produced AS (partition integer, msg_offset bigint,
                            await_epoch integer, await_min_isr integer);

-- The write of the contract: the checks before it, the durability floor,
-- then mq.send_batch; returns what mq.produce_await needs once the
-- transaction has committed.
CREATE FUNCTION mq.produce_records(topic text, keys bytea[], vals bytea[], headers jsonb[] DEFAULT NULL,
                                   partition integer DEFAULT NULL,
                                   producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                                   base_sequence integer DEFAULT NULL,
                                   timestamps timestamptz[] DEFAULT NULL, "timestamp" timestamptz DEFAULT NULL,
                                   acks text DEFAULT '1', batch_bytes integer DEFAULT NULL)
    RETURNS SETOF mq.produced
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_epoch integer;
    v_min integer;
    v_role text;
    v_isr integer;
BEGIN
    IF acks IS NULL OR NOT acks OPERATOR(pg_catalog.=) ANY (ARRAY['0', '1', 'all', '-1']) THEN
        RAISE EXCEPTION 'acks must be 0, 1, all or -1, not "%"', acks USING ERRCODE = 'MQ016';
    END IF;
    IF acks OPERATOR(pg_catalog.=) ANY (ARRAY['all', '-1']) THEN
        IF produce_records.partition IS NULL THEN
            RAISE EXCEPTION 'acks=all needs a partition' USING ERRCODE = 'MQ010',
                HINT = 'mq.partition_for gives the partition of a key.';
        END IF;
        SELECT s.leader_epoch, s.role, s.min_isr, s.isr
          INTO v_epoch, v_role, v_min, v_isr
          FROM mq._produce_state(topic, produce_records.partition) s;
        IF v_role OPERATOR(pg_catalog.<>) 'follower' AND v_isr OPERATOR(pg_catalog.<) v_min THEN
            RAISE EXCEPTION 'not enough in-sync replicas for "%" partition %: % in sync, min.insync.replicas is %',
                topic, produce_records.partition, v_isr, v_min
                USING ERRCODE = 'MQ021', DETAIL = 'Nothing was written.',
                      HINT = 'Wait for the followers to catch up, or produce with acks=1.';
        END IF;
        IF v_role IS DISTINCT FROM 'leader' THEN
            -- standalone: acks=1; a follower refuses the write (MQ020)
            v_epoch := NULL;
            v_min := NULL;
        END IF;
    END IF;
    IF acks OPERATOR(pg_catalog.=) '0' OR v_epoch IS NOT NULL THEN
        -- acks=0: nobody waits.  acks=all on a leader: mq.produce_await
        -- flushes this commit while the followers fetch it, and the high
        -- watermark counts it only once flushed here (60_replica.sql)
        PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    ELSIF pg_catalog.current_setting('synchronous_commit') OPERATOR(pg_catalog.=) 'off' THEN
        -- acks=1 and acks=all promise a durable local commit whatever the
        -- server's default: a crash must not take back an acknowledged write
        PERFORM pg_catalog.set_config('synchronous_commit', 'local', true);
    END IF;
    RETURN QUERY
    SELECT s.partition, s.msg_offset, v_epoch, v_min
      FROM mq.send_batch(topic, keys, vals, produce_records.headers, produce_records.partition,
                         producer_id, producer_epoch, base_sequence,
                         produce_records.timestamps, produce_records."timestamp",
                         produce_records.batch_bytes) s;
END $$;

-- The contract's check before a write, alone: acks=all's refusal (MQ021,
-- NOT_ENOUGH_REPLICAS) where produce_records would refuse it, by asking
-- produce_records to write no records.  mq-kafka asks it on the
-- partition's leader before it stages a transactional batch, which
-- EndTxn writes later (Kafka's transactional producers send with
-- acks=all, and a partition short of in-sync replicas refuses them), and
-- in the statement of a replicated offset commit.  The SET clause keeps
-- the durability floor produce_records sets inside the function: the
-- caller's transaction commits with its own.
CREATE FUNCTION mq.produce_check(topic text, partition integer) RETURNS void
LANGUAGE sql VOLATILE SET synchronous_commit = 'local' AS $$
    SELECT FROM mq.produce_records(produce_check.topic, '{}'::bytea[], '{}'::bytea[],
                                   partition => produce_check.partition, acks => 'all')
$$;

-- The acknowledgement of the contract, after the commit: waits until the
-- high watermark passes last_offset while this node leads in await_epoch
-- with at least await_min_isr in sync (MQ022, MQ023, MQ020 otherwise).
-- Returns the high watermark, or NULL at once when await_epoch or
-- last_offset is NULL (nothing to wait for).
CREATE FUNCTION mq.produce_await(topic text, partition integer, last_offset bigint,
                                 await_epoch integer, await_min_isr integer,
                                 timeout_ms integer DEFAULT 30000)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_produce_await' LANGUAGE C VOLATILE;

-------------------------------------------------------------------------------
-- mq.produce: the contract in one call (a procedure, because acks=all
-- commits before it waits).  Call it outside an explicit transaction block
-- (MQ052 inside one).
-------------------------------------------------------------------------------

CREATE FUNCTION mq._produce_outside_block() RETURNS void
    AS 'MODULE_PATHNAME', 'mq_produce_outside_block' LANGUAGE C VOLATILE;

CREATE PROCEDURE mq.produce(topic text, keys bytea[], vals bytea[], partition integer,
                            acks text DEFAULT 'all',
                            producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                            base_sequence integer DEFAULT NULL, timeout_ms integer DEFAULT 30000,
                            INOUT base_offset bigint DEFAULT NULL, INOUT high_watermark bigint DEFAULT NULL,
                            headers jsonb[] DEFAULT NULL, timestamps timestamptz[] DEFAULT NULL,
                            "timestamp" timestamptz DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    v_epoch integer;
    v_min integer;
    v_last bigint;
BEGIN
    PERFORM mq._produce_outside_block();
    SELECT pg_catalog.min(s.msg_offset), pg_catalog.max(s.msg_offset),
           pg_catalog.max(s.await_epoch), pg_catalog.max(s.await_min_isr)
      INTO base_offset, v_last, v_epoch, v_min
      FROM mq.produce_records(topic, keys, vals, produce.headers, produce.partition,
                              producer_id, producer_epoch, base_sequence,
                              produce.timestamps, produce."timestamp", acks) s;
    COMMIT;
    high_watermark := mq.produce_await(topic, produce.partition, v_last, v_epoch, v_min, timeout_ms);
END $$;

-- The same with text keys and values, sent as UTF-8 (as mq.send_batch's
-- text form and Kafka's string serializer): CALL mq.produce('t', NULL,
-- ARRAY['hello'], 0) needs no cast.
CREATE PROCEDURE mq.produce(topic text, keys text[], vals text[], partition integer,
                            acks text DEFAULT 'all',
                            producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                            base_sequence integer DEFAULT NULL, timeout_ms integer DEFAULT 30000,
                            INOUT base_offset bigint DEFAULT NULL, INOUT high_watermark bigint DEFAULT NULL,
                            headers jsonb[] DEFAULT NULL, timestamps timestamptz[] DEFAULT NULL,
                            "timestamp" timestamptz DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    v_keys bytea[];
    v_vals bytea[];
BEGIN
    SELECT CASE WHEN keys IS NOT NULL THEN
               ARRAY(SELECT pg_catalog.convert_to(k.k, 'UTF8')
                       FROM pg_catalog.unnest(keys) WITH ORDINALITY AS k(k, n) ORDER BY k.n) END,
           CASE WHEN vals IS NOT NULL THEN
               ARRAY(SELECT pg_catalog.convert_to(v.v, 'UTF8')
                       FROM pg_catalog.unnest(vals) WITH ORDINALITY AS v(v, n) ORDER BY v.n) END
      INTO v_keys, v_vals;
    CALL mq.produce(topic, v_keys, v_vals, produce.partition, acks, producer_id, producer_epoch, base_sequence,
                    timeout_ms, base_offset, high_watermark, headers, timestamps, produce."timestamp");
END $$;

-- What Kafka's Produce response says of a batch besides its offset, as
-- {log_append_time, log_start_offset}: on a LogAppendTime topic the time
-- the broker stamped its records, here the append time of the record at
-- msg_offset (log.c stamps a call's records with one time), in Unix
-- milliseconds as mq-kafka's Fetch gives it, NULL on a CreateTime topic
-- (the response says -1); and the partition's log start offset (v5+).
-- The record may still be above the high watermark (acks=-1), so this
-- reads the log as the owner behind src/owner.c, for producers of the
-- topic; it runs after the append in the caller's statement, so it is
-- volatile (a new snapshot).
CREATE FUNCTION mq_internal._produce_answer(topic text, partition integer, msg_offset bigint, p_caller oid)
RETURNS bigint[] LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_rel regclass;
    v_start bigint;
    v_stamped boolean;
    v_time timestamptz;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'write');
    SELECT ps.relid, ps.log_start_offset, t.config->>'message.timestamp.type' = 'LogAppendTime'
      INTO v_rel, v_start, v_stamped
      FROM mq.topic t JOIN mq.partition_state ps USING (topic_id)
     WHERE t.topic_name = _produce_answer.topic AND ps.partition = _produce_answer.partition;
    IF v_stamped AND msg_offset IS NOT NULL THEN
        EXECUTE format('SELECT created_at FROM %s WHERE msg_offset OPERATOR(pg_catalog.=) $1', v_rel)
           INTO v_time USING msg_offset;
    END IF;
    RETURN ARRAY[floor(extract(epoch FROM v_time) * 1000)::bigint, v_start];
END $$;
CREATE FUNCTION mq._produce_answer(topic text, partition integer, msg_offset bigint) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
