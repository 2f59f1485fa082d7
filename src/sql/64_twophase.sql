-------------------------------------------------------------------------------
-- Exactly-once across nodes: two-phase commit (docs/delivery.md,
-- "Exactly-once in a cluster"; docs/design.md, "Cluster guarantees").
--
-- One step of a consume-transform-produce pipeline is a local transaction
-- on each node it touches, each prepared (PREPARE TRANSACTION) with a gid
-- 'mq:' || txn_id || ':' || n.  Participants are of two kinds:
--   output   the records sent to output partitions led by one node;
--   offsets  the input partition's committed offsets and the
--            application's rows, on the input partition's leader.
-- The commit decision is a row of mq_coord.txn on the coordinator,
-- written durably once every participant is prepared.  Its states:
--   commit           decided: every part commits;
--   outputs_durable  every output is on its partitions' ISR: now the
--                    offsets participant may commit;
--   done             the offsets are on their ISR too (the client), or
--                    the offsets part committed (a broker's recovery:
--                    mq_coord.txn_part_committed, 64_twophase_redo.sql);
--   abort            decided against (by the client, or by recovery for a
--                    part prepared longer than txn.timeout.ms without any
--                    decision): every part rolls back.
-- The decision also stores the records of every output partition
-- (mq_coord.txn_output, 64_twophase_redo.sql), which recovery sends again
-- when an output's leader changed and the client is gone.
-- A decision is never changed from commit to abort or back: txn_decide
-- refuses (MQ051) once recovery has aborted, and recovery aborts only
-- where no decision exists (one INSERT ... ON CONFLICT decides the race).
--
-- On the data nodes: mq.txn_finish (src/twophase.c, SECURITY DEFINER)
-- commits or rolls back an mq: gid; mq.txn_notes shows what the
-- transaction wrote to replicated partitions (for the decision);
-- mq.txn_in_doubt lists the node's mq: prepared transactions;
-- mq.txn_output_replicated says whether this node, leading a partition in
-- an epoch, has its high watermark past an end.
--
-- Locking: mq_coord.txn rows are changed under their row lock, one
-- statement each; decisions (commit and abort) commit with
-- synchronous_commit = on whatever the session's setting, and so does
-- outputs_durable; done (for people and tests) does not wait for a flush.
-------------------------------------------------------------------------------

CREATE FUNCTION mq.txn_finish(gid text, commit boolean) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_txn_finish' LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION mq.txn_notes() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'mq_txn_notes' LANGUAGE C VOLATILE;

CREATE FUNCTION mq.txn_in_doubt()
    RETURNS TABLE (gid text, prepared timestamptz, age_ms bigint, owner name)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT x.gid, x.prepared,
           (extract(epoch FROM clock_timestamp() - x.prepared) * 1000)::bigint, x.owner
      FROM pg_catalog.pg_prepared_xacts x
     WHERE x.database = pg_catalog.current_database() AND x.gid LIKE 'mq:%'
     ORDER BY x.prepared
$$;

-- Is the partition led by this node in epoch with its high watermark at
-- least records_end?  (Records this leader committed in that epoch below its
-- high watermark are on every in-sync replica.)
CREATE FUNCTION mq.txn_output_replicated(topic text, partition integer, epoch integer,
                                         records_end bigint) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(bool_and(s.role = 'leader' AND s.leader_epoch = txn_output_replicated.epoch
                             AND s.high_watermark >= txn_output_replicated.records_end), false)
      FROM mq.replica_status s
     WHERE s.topic = txn_output_replicated.topic AND s.partition = txn_output_replicated.partition
$$;

CREATE TABLE mq_coord.txn (
    txn_id       text PRIMARY KEY CHECK (txn_id <> '' AND strpos(txn_id, ':') = 0),
    owner        text,                  -- the pipeline's transactional id
    state        text NOT NULL CHECK (state IN ('commit', 'outputs_durable', 'done', 'abort')),
    participants jsonb NOT NULL DEFAULT '[]',
    reason       text,                  -- why it was aborted
    decided_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
SELECT pg_catalog.pg_extension_config_dump('mq_coord.txn', '');
-- every broker reads the decided, unfinished ones each tick
CREATE INDEX txn_open ON mq_coord.txn (decided_at) WHERE state = 'commit';

CREATE FUNCTION mq_coord._txn_durably() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
END $$;

CREATE FUNCTION mq_coord._txn_check_participants(p_txn text, p_participants jsonb) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF jsonb_typeof(p_participants) IS DISTINCT FROM 'array' OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(p_participants) e
         WHERE jsonb_typeof(e) <> 'object'
            OR NOT (e->>'gid') LIKE 'mq:' || p_txn || ':%'
            OR (e->>'kind') IS DISTINCT FROM 'output' AND (e->>'kind') IS DISTINCT FROM 'offsets') THEN
        RAISE EXCEPTION 'invalid participants of transaction "%"', p_txn USING ERRCODE = 'MQ054',
            HINT = 'An array of objects, each with a gid "mq:<txn_id>:<n>" and a kind (output or offsets).';
    END IF;
END $$;

-- The commit decision: every participant is prepared.  Returns the state
-- (commit, or later if it was decided before: a retry).  With
-- p_producer_epoch, the owner's transactional id must still have that
-- epoch (mq_coord.init_producer): a newer run of the same pipeline fences
-- an older one here, where each of its steps must pass (MQ012).  With
-- p_outputs, the records of every output partition (keys, values, and
-- headers and CreateTimes if given) are stored with the decision (mq_coord.txn_output, 64_twophase_redo.sql), so that recovery
-- can send them again when the client is gone.
CREATE FUNCTION mq_coord.txn_decide(txn_id text, owner text, participants jsonb,
                                    producer_epoch integer DEFAULT NULL,
                                    outputs jsonb DEFAULT NULL, keys bytea[] DEFAULT NULL,
                                    vals bytea[] DEFAULT NULL, headers jsonb[] DEFAULT NULL,
                                    timestamps timestamptz[] DEFAULT NULL)
    RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    p_owner ALIAS FOR $2;
    p_participants ALIAS FOR $3;
    p_producer_epoch ALIAS FOR $4;
    p_outputs ALIAS FOR $5;
    p_keys ALIAS FOR $6;
    p_vals ALIAS FOR $7;
    p_headers ALIAS FOR $8;
    p_timestamps ALIAS FOR $9;
    v_state text;
    v_epoch integer;
BEGIN
    IF p_txn IS NULL OR p_txn = '' OR strpos(p_txn, ':') > 0 THEN
        RAISE EXCEPTION 'invalid transaction id "%"', p_txn USING ERRCODE = 'MQ050',
            HINT = 'A transaction id is not empty and holds no ":".';
    END IF;
    IF p_producer_epoch IS NOT NULL THEN
        -- the row lock orders this against init_producer's epoch bump
        SELECT t.producer_epoch INTO v_epoch FROM mq_coord.transactional_producer t
         WHERE t.transactional_id = p_owner FOR SHARE;
        IF v_epoch IS DISTINCT FROM p_producer_epoch THEN
            RAISE EXCEPTION 'transactional id "%" is fenced: epoch % is not the current %',
                p_owner, p_producer_epoch, v_epoch USING ERRCODE = 'MQ012',
                HINT = 'A newer run of the same pipeline took over; this one must stop.';
        END IF;
    END IF;
    PERFORM mq_coord._txn_check_participants(p_txn, p_participants);
    PERFORM mq_coord._txn_check_outputs(p_txn, p_participants, p_outputs, p_keys, p_vals,
                                         p_headers, p_timestamps);
    PERFORM mq_coord._txn_durably();
    -- decisions a day old are of no use to anyone
    DELETE FROM mq_coord.txn t
     WHERE t.state IN ('done', 'abort') AND t.updated_at < clock_timestamp() - interval '1 day';
    INSERT INTO mq_coord.txn AS t (txn_id, owner, state, participants)
    VALUES (p_txn, p_owner, 'commit', p_participants)
    ON CONFLICT (txn_id) DO NOTHING
    RETURNING t.state INTO v_state;
    IF v_state IS NULL THEN
        SELECT t.state INTO v_state FROM mq_coord.txn t WHERE t.txn_id = p_txn;
    ELSE
        PERFORM mq_coord._txn_store_outputs(p_txn, p_outputs, p_keys, p_vals, p_headers, p_timestamps);
    END IF;
    IF v_state = 'abort' THEN
        RAISE EXCEPTION 'transaction "%" was aborted', p_txn USING ERRCODE = 'MQ051',
            DETAIL = 'A part of it stayed prepared without a decision longer than txn.timeout.ms, or the client aborted it.',
            HINT = 'Nothing of it is kept: run the step again.';
    END IF;
    RETURN v_state;
END $$;

-- Abort unless decided: returns the state that holds (abort, or the
-- commit decision that came first).
CREATE FUNCTION mq_coord.txn_abort(txn_id text, reason text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    p_reason ALIAS FOR $2;
    v_state text;
BEGIN
    IF p_txn IS NULL THEN
        RAISE EXCEPTION 'txn_id must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq_coord._txn_durably();
    INSERT INTO mq_coord.txn AS t (txn_id, state, reason)
    VALUES (p_txn, 'abort', p_reason)
    ON CONFLICT (txn_id) DO NOTHING
    RETURNING t.state INTO v_state;
    IF v_state IS NULL THEN
        SELECT t.state INTO v_state FROM mq_coord.txn t WHERE t.txn_id = p_txn;
    END IF;
    RETURN v_state;
END $$;

CREATE FUNCTION mq_coord.txn_state(txn_id text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.state FROM mq_coord.txn t WHERE t.txn_id = txn_state.txn_id
$$;

-- An output participant's records are on their ISR.  p_broker (a broker's
-- check) additionally requires that the coordinator still names it leader
-- of every partition of the part in the epoch it was written in.
-- Returns the transaction's state: outputs_durable once every output is.
CREATE FUNCTION mq_coord.txn_output_durable(txn_id text, gid text, broker_id integer DEFAULT NULL)
    RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    p_gid ALIAS FOR $2;
    p_broker ALIAS FOR $3;
    v_row mq_coord.txn;
    v_parts jsonb;
BEGIN
    -- durable: the input part commits once this returned, and a state lost
    -- in a coordinator crash could not always be reported again (the
    -- output's leader may have changed meanwhile)
    PERFORM mq_coord._txn_durably();
    SELECT * INTO v_row FROM mq_coord.txn t WHERE t.txn_id = p_txn FOR UPDATE;
    IF NOT FOUND OR v_row.state = 'abort' THEN
        RAISE EXCEPTION 'transaction "%" has no commit decision', p_txn USING ERRCODE = 'MQ053';
    END IF;
    IF v_row.state <> 'commit' THEN
        RETURN v_row.state;
    END IF;
    IF p_broker IS NOT NULL AND EXISTS (
        SELECT 1 FROM jsonb_array_elements(v_row.participants) e,
                      jsonb_array_elements(e->'partitions') w
          LEFT JOIN mq_coord.partition c
                 ON c.topic = w->>'topic' AND c.partition = (w->>'partition')::integer
         WHERE e->>'gid' = p_gid
           AND (c.leader IS DISTINCT FROM p_broker OR c.leader_epoch <> (w->>'epoch')::integer)) THEN
        RETURN v_row.state;
    END IF;
    SELECT jsonb_agg(CASE WHEN e->>'gid' = p_gid THEN e || '{"durable": true}' ELSE e END
                     ORDER BY n)
      INTO v_parts
      FROM jsonb_array_elements(v_row.participants) WITH ORDINALITY AS x(e, n);
    UPDATE mq_coord.txn t
       SET participants = v_parts, updated_at = clock_timestamp(),
           state = CASE WHEN EXISTS (
                            SELECT 1 FROM jsonb_array_elements(v_parts) e
                             WHERE e->>'kind' = 'output' AND NOT coalesce((e->>'durable')::boolean, false))
                        THEN 'commit'
                        -- without an offsets part (a Kafka transaction that
                        -- sent no offsets) nothing is left to do
                        WHEN NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_parts) e
                                          WHERE e->>'kind' = 'offsets')
                        THEN 'done' ELSE 'outputs_durable' END
     WHERE t.txn_id = p_txn
    RETURNING t.state INTO v_row.state;
    IF v_row.state IN ('outputs_durable', 'done') THEN
        -- nobody sends them again now
        DELETE FROM mq_coord.txn_output o WHERE o.txn_id = p_txn;
    END IF;
    RETURN v_row.state;
END $$;

-- The offsets are on their ISR too: the transaction is complete.
CREATE FUNCTION mq_coord.txn_done(txn_id text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    v_state text;
BEGIN
    -- for people and tests only: no flush needed
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT t.state INTO v_state FROM mq_coord.txn t WHERE t.txn_id = p_txn FOR UPDATE;
    IF v_state IS NULL OR v_state = 'abort' THEN
        RAISE EXCEPTION 'transaction "%" has no commit decision', p_txn USING ERRCODE = 'MQ053';
    END IF;
    IF v_state = 'commit' THEN
        RAISE EXCEPTION 'transaction "%" still has outputs that are not durable', p_txn
            USING ERRCODE = 'MQ054';
    END IF;
    UPDATE mq_coord.txn t SET state = 'done', updated_at = clock_timestamp() WHERE t.txn_id = p_txn;
END $$;

-- Recovery (mq-broker, each tick, for every mq: gid prepared on its node):
-- what to do with p_gid, prepared p_age_ms ago on broker p_broker's node.
--   rollback  no decision after p_timeout_ms (the abort is recorded
--             first), an abort, a gid the decision does not list, or an
--             output whose partitions this broker no longer leads in the
--             epoch the records were written in (they must not be
--             committed there; the client sends them again to the new
--             leader, idempotently);
--   commit    an output still led as written; the offsets participant
--             once every output is durable (also on a node that no
--             longer leads the input partition: its application rows
--             belong to the step; followers replace the offsets);
--   wait      otherwise.
CREATE FUNCTION mq_coord.txn_resolve(gid text, broker_id integer, age_ms bigint,
                                     timeout_ms integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_gid ALIAS FOR $1;
    p_broker ALIAS FOR $2;
    p_age_ms ALIAS FOR $3;
    p_timeout_ms ALIAS FOR $4;
    v_txn text := substring(p_gid FROM '^mq:(.*):[^:]*$');
    v_row mq_coord.txn;
    v_part jsonb;
BEGIN
    IF v_txn IS NULL THEN
        RAISE EXCEPTION 'prepared transaction "%" is not an mq transaction', p_gid USING ERRCODE = 'MQ050';
    END IF;
    SELECT * INTO v_row FROM mq_coord.txn t WHERE t.txn_id = v_txn;
    IF NOT FOUND THEN
        IF p_age_ms < p_timeout_ms THEN
            RETURN 'wait';
        END IF;
        IF mq_coord.txn_abort(v_txn, pg_catalog.format('%s prepared on broker %s for %s ms without a decision',
                                                       p_gid, p_broker, p_age_ms)) <> 'abort' THEN
            RETURN 'wait';      -- the client decided meanwhile: look again
        END IF;
        INSERT INTO mq_coord.event (kind, broker_id, detail)
        VALUES ('txn_abort', p_broker, jsonb_build_object('txn', v_txn, 'gid', p_gid, 'age_ms', p_age_ms));
        RETURN 'rollback';
    END IF;
    IF v_row.state = 'abort' THEN
        RETURN 'rollback';
    END IF;
    SELECT e INTO v_part FROM jsonb_array_elements(v_row.participants) e WHERE e->>'gid' = p_gid;
    IF v_part IS NULL THEN
        RETURN 'rollback';
    END IF;
    IF v_part->>'kind' = 'offsets' THEN
        RETURN CASE WHEN v_row.state IN ('outputs_durable', 'done') THEN 'commit' ELSE 'wait' END;
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_part->'partitions') w
                 LEFT JOIN mq_coord.partition c
                        ON c.topic = w->>'topic' AND c.partition = (w->>'partition')::integer
                WHERE c.leader IS DISTINCT FROM p_broker
                   OR c.leader_epoch <> (w->>'epoch')::integer) THEN
        RETURN 'rollback';
    END IF;
    RETURN 'commit';
END $$;

-- Output participants of this broker that are decided but not known to be
-- durable: the broker checks its node's high watermark for them and calls
-- txn_output_durable (the client may have gone after the decision).
CREATE FUNCTION mq_coord.txn_outputs_pending(broker_id integer)
    RETURNS TABLE (txn_id text, gid text, topic text, partition integer, epoch integer,
                   records_end bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.txn_id, e->>'gid', w->>'topic', (w->>'partition')::integer,
           (w->>'epoch')::integer, (w->>'records_end')::bigint
      FROM mq_coord.txn t, jsonb_array_elements(t.participants) e,
           jsonb_array_elements(e->'partitions') w
     WHERE t.state = 'commit' AND e->>'kind' = 'output'
       AND (e->>'broker')::integer = txn_outputs_pending.broker_id
       AND NOT coalesce((e->>'durable')::boolean, false)
     ORDER BY t.decided_at, 2
$$;

-- What a pipeline client's role needs (docs/delivery.md): on each data
-- node, finishing mq's prepared transactions and the notes of its own
-- transaction; on the coordinator, the decisions, routing
-- (mq_coord.route, 65_cluster_groups.sql) and its transactional producer
-- id.  SECURITY INVOKER, like mq.grant_broker.
CREATE FUNCTION mq.grant_pipeline(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION mq.txn_finish(text, boolean), mq.txn_notes() TO %s',
                              role);
END $$;

CREATE FUNCTION mq_coord.grant_pipeline(role regrole) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'MQ010';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA mq_coord TO %s', role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION mq_coord.init_producer(text), mq_coord.route(text), '
        'mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[]), '
        'mq_coord.txn_abort(text, text), mq_coord.txn_state(text), '
        'mq_coord.txn_output_durable(text, text, integer), mq_coord.txn_done(text) TO %s', role);
END $$;
