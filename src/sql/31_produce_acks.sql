-------------------------------------------------------------------------------
-- Producing with acks: mq.produce (a procedure, because acks=all commits
-- before it waits).  Call it outside an explicit transaction block.
-- It reads mq.replica_partition (60_replica.sql): PL/pgSQL resolves names
-- when it runs, so the order of the install script does not matter here.
-------------------------------------------------------------------------------

CREATE PROCEDURE mq.produce(topic text, keys bytea[], vals bytea[], partition integer,
                            acks text DEFAULT 'all',
                            producer_id bigint DEFAULT NULL, producer_epoch integer DEFAULT NULL,
                            base_sequence integer DEFAULT NULL, timeout_ms integer DEFAULT 30000,
                            INOUT base_offset bigint DEFAULT NULL, INOUT high_watermark bigint DEFAULT NULL,
                            headers jsonb[] DEFAULT NULL, timestamps timestamptz[] DEFAULT NULL,
                            "timestamp" timestamptz DEFAULT NULL)
-- No SET clause: a procedure with one cannot COMMIT.  Every name is
-- schema-qualified instead, and it runs with the caller's rights.
LANGUAGE plpgsql AS $$
DECLARE
    v_epoch integer;
    v_role text;
    v_min integer;
    v_isr integer;
    v_last bigint;
BEGIN
    IF acks IS NULL OR acks NOT IN ('0', '1', 'all', '-1') THEN
        RAISE EXCEPTION 'acks must be 0, 1 or all, not "%"', acks USING ERRCODE = 'MQ010';
    END IF;
    IF acks IN ('all', '-1') THEN
        SELECT s.leader_epoch, s.role, s.min_isr, s.isr
          INTO v_epoch, v_role, v_min, v_isr
          FROM mq._produce_state(topic, produce.partition) s;
        IF v_role = 'leader' AND COALESCE(v_isr, 0) < v_min THEN
            RAISE EXCEPTION 'not enough in-sync replicas for "%" partition %: % in sync, min.insync.replicas is %',
                topic, produce.partition, COALESCE(v_isr, 0), v_min
                USING ERRCODE = 'MQ021', DETAIL = 'Nothing was written.',
                      HINT = 'Wait for the followers to catch up, or produce with acks=1.';
        END IF;
    END IF;
    IF acks = '0' THEN
        PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    ELSIF pg_catalog.current_setting('synchronous_commit') OPERATOR(pg_catalog.=) 'off' THEN
        -- acks=1 and acks=all promise a durable local commit whatever the
        -- server's default: a crash must not take back an acknowledged write
        PERFORM pg_catalog.set_config('synchronous_commit', 'local', true);
    END IF;
    SELECT pg_catalog.min(s.msg_offset), pg_catalog.max(s.msg_offset) INTO base_offset, v_last
      FROM mq.send_batch(topic, keys, vals, produce.headers, produce.partition,
                         producer_id, producer_epoch, base_sequence,
                         produce.timestamps, produce."timestamp") s;
    COMMIT;
    IF acks IN ('all', '-1') AND v_role IS DISTINCT FROM 'standalone' AND v_last IS NOT NULL THEN
        high_watermark := mq._replica_await_hwm(topic, produce.partition, v_last OPERATOR(pg_catalog.+) 1,
                                                v_epoch, v_min, timeout_ms);
    END IF;
END $$;
