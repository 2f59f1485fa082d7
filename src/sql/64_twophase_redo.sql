-------------------------------------------------------------------------------
-- Exactly-once across nodes: a decided step completes without its client
-- (docs/delivery.md, "Exactly-once in a cluster"; docs/design.md,
-- "Exactly-once across nodes").
--
-- A step's output records are written on their leaders by prepared
-- transactions, which followers cannot copy before COMMIT PREPARED; a
-- leader that dies between the decision and its high watermark passing
-- them loses them.  The client sends them again to the new leader
-- (idempotently: same producer id, epoch and sequence).  So that the step
-- completes when the client is gone too, the decision stores the records
-- of every output partition (mq_coord.txn_output, written by
-- mq_coord.txn_decide in the decision's transaction, so exactly as durable
-- as the decision), and the broker that now leads such a partition sends
-- them to its own node (mq.txn_redo_output) once the partition's
-- leadership moved away from the part that wrote them; when its high
-- watermark passes them it reports the partition durable
-- (mq_coord.txn_output_redone), and the part is durable once each of its
-- partitions is.  The records are deleted once every output is durable
-- (txn_output_durable), or with their decision.
--
-- Kafka's InitProducerId completes a pending transaction before it bumps
-- the epoch; here mq_coord.init_producer (61_coordinator.sql) refuses
-- (MQ056, retriable) while a step of the transactional id is decided and
-- not complete, because a new epoch would fence the redo on the data
-- nodes, and a new run would read offsets a prepared input part still
-- holds.  The broker that commits a step's offsets part marks the step
-- done (mq_coord.txn_part_committed), which ends the refusal, if it still
-- leads the input partition as the part noted; otherwise the input's
-- current leader commits the step's offset again, forward only
-- (txn_offsets_moved, mq.txn_redo_offset, txn_offsets_redone), as the
-- client does, since the offset committed on the old leader is not the
-- new one's, and a new run would process the step again.
--
-- Locking: mq_coord.txn_output rows are written in txn_decide's
-- transaction and changed under the step's mq_coord.txn row lock (FOR
-- UPDATE, as every state change).  mq.txn_redo_output appends under the
-- partition's produce lock, like any send, with a lock_timeout so that a
-- prepared transaction holding it cannot stall the broker's one thread;
-- the idempotent producer check, serialized on that lock, makes the
-- client's redo and the broker's write the records once.
-------------------------------------------------------------------------------

CREATE TABLE mq_coord.txn_output (
    txn_id         text NOT NULL,
    gid            text NOT NULL,       -- the output part that wrote them first
    topic          text NOT NULL,
    partition      integer NOT NULL,
    producer_id    bigint NOT NULL,
    producer_epoch integer NOT NULL,
    base_sequence  integer NOT NULL,
    keys           bytea[] NOT NULL,
    vals           bytea[] NOT NULL,
    durable        boolean NOT NULL DEFAULT false,  -- sent again and on the new leader's ISR
    headers        jsonb[],             -- as keys: each record's headers (NULL: none)
    timestamps     timestamptz[],       -- each record's CreateTime (NULL: the append's time)
    PRIMARY KEY (txn_id, topic, partition)
);
CREATE TRIGGER cascade_to_txn_output AFTER DELETE ON mq_coord.txn
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION mq._cascade_delete('mq_coord.txn_output', 'txn_id');
SELECT pg_catalog.pg_extension_config_dump('mq_coord.txn_output', '');
-- the steps not complete: init_producer's check by owner, and every
-- broker's txn_offsets_moved each tick (done and aborted steps stay a day)
CREATE INDEX txn_unfinished ON mq_coord.txn (owner) WHERE state IN ('commit', 'outputs_durable');

-- Is any step decided and not complete?  Every broker asks each tick before
-- it looks for decided steps to finish (the partial index above answers):
-- with no pipeline running, one statement instead of four.
CREATE FUNCTION mq_coord.txn_any_open() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM mq_coord.txn t WHERE t.state IN ('commit', 'outputs_durable'))
$$;

-- p_outputs: one object per output partition, {gid, topic, partition,
-- producer_id, producer_epoch, base_sequence, count}, whose records are
-- the next count elements of p_keys and p_vals (and of p_headers and
-- p_timestamps, when given), in the order of p_outputs.
CREATE FUNCTION mq_coord._txn_check_outputs(p_txn text, p_participants jsonb, p_outputs jsonb,
                                            p_keys bytea[], p_vals bytea[],
                                            p_headers jsonb[], p_timestamps timestamptz[]) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_outputs IS NULL AND p_keys IS NULL AND p_vals IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_outputs) IS DISTINCT FROM 'array' OR p_keys IS NULL OR p_vals IS NULL
       OR coalesce(array_ndims(p_keys), 1) <> 1 OR coalesce(array_ndims(p_vals), 1) <> 1
       OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(p_outputs) o
         WHERE jsonb_typeof(o) <> 'object'
            OR jsonb_typeof(o->'topic') IS DISTINCT FROM 'string'
            OR jsonb_typeof(o->'partition') IS DISTINCT FROM 'number'
            OR jsonb_typeof(o->'producer_id') IS DISTINCT FROM 'number'
            OR jsonb_typeof(o->'producer_epoch') IS DISTINCT FROM 'number'
            OR jsonb_typeof(o->'base_sequence') IS DISTINCT FROM 'number'
            OR jsonb_typeof(o->'count') IS DISTINCT FROM 'number'
            OR (o->>'partition')::numeric < 0 OR (o->>'producer_id')::numeric < 1
            OR (o->>'producer_epoch')::numeric < 0 OR (o->>'base_sequence')::numeric < 0
            OR (o->>'count')::numeric < 1
            OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_participants) e
                            WHERE e->>'kind' = 'output' AND e->>'gid' = o->>'gid'))
       OR (SELECT count(*) <> count(DISTINCT (o->>'topic', o->>'partition'))
             FROM jsonb_array_elements(p_outputs) o)
       OR (SELECT coalesce(sum((o->>'count')::numeric), 0) FROM jsonb_array_elements(p_outputs) o)
          IS DISTINCT FROM coalesce(cardinality(p_keys), 0)
       OR cardinality(p_keys) <> cardinality(p_vals)
       OR coalesce(array_ndims(p_headers), 1) <> 1 OR coalesce(array_ndims(p_timestamps), 1) <> 1
       OR cardinality(p_headers) <> cardinality(p_keys) OR cardinality(p_timestamps) <> cardinality(p_keys) THEN
        RAISE EXCEPTION 'invalid outputs of transaction "%"', p_txn USING ERRCODE = 'MQ055',
            HINT = 'An array of {gid, topic, partition, producer_id, producer_epoch, base_sequence, count}, '
                   'one per output partition of an output participant, the counts adding up to the keys, '
                   'values, and headers and timestamps if given.';
    END IF;
END $$;

-- The records of each output partition, with the decision just inserted.
CREATE FUNCTION mq_coord._txn_store_outputs(p_txn text, p_outputs jsonb, p_keys bytea[], p_vals bytea[],
                                            p_headers jsonb[], p_timestamps timestamptz[]) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO mq_coord.txn_output (txn_id, gid, topic, partition, producer_id, producer_epoch,
                                     base_sequence, keys, vals, headers, timestamps)
    SELECT p_txn, o->>'gid', o->>'topic', (o->>'partition')::integer, (o->>'producer_id')::bigint,
           (o->>'producer_epoch')::integer, (o->>'base_sequence')::integer,
           p_keys[x.first : x.first + (o->>'count')::integer - 1],
           p_vals[x.first : x.first + (o->>'count')::integer - 1],
           p_headers[x.first : x.first + (o->>'count')::integer - 1],
           p_timestamps[x.first : x.first + (o->>'count')::integer - 1]
      FROM (SELECT o, 1 + coalesce(sum((o->>'count')::integer)
                                   OVER (ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
                      AS first
              FROM jsonb_array_elements(p_outputs) WITH ORDINALITY AS e(o, n)) x
$$;

-- Output partitions broker broker_id leads now that need their records
-- sent again: of a step decided and not yet outputs_durable, of an output
-- part not known durable, and the part's partitions are not all led any
-- more by the part's broker in the epoch they were written in (that part
-- is rolled back or was lost with its node: txn_resolve).  epoch is the
-- partition's current leader epoch.
CREATE FUNCTION mq_coord.txn_outputs_moved(broker_id integer)
    RETURNS TABLE (txn_id text, gid text, topic text, partition integer, epoch integer,
                   producer_id bigint, producer_epoch integer, base_sequence integer,
                   keys bytea[], vals bytea[], headers jsonb[], timestamps timestamptz[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT o.txn_id, o.gid, o.topic, o.partition, c.leader_epoch, o.producer_id, o.producer_epoch,
           o.base_sequence, o.keys, o.vals, o.headers, o.timestamps
      FROM mq_coord.txn t
      JOIN mq_coord.txn_output o ON o.txn_id = t.txn_id
      JOIN mq_coord.partition c ON c.topic = o.topic AND c.partition = o.partition
      CROSS JOIN LATERAL (SELECT e FROM jsonb_array_elements(t.participants) e
                           WHERE e->>'gid' = o.gid) p
     WHERE t.state = 'commit' AND NOT o.durable AND c.leader = txn_outputs_moved.broker_id
       AND NOT coalesce((p.e->>'durable')::boolean, false)
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(p.e->'partitions') w
                     LEFT JOIN mq_coord.partition m
                            ON m.topic = w->>'topic' AND m.partition = (w->>'partition')::integer
                    WHERE m.leader IS DISTINCT FROM (p.e->>'broker')::integer
                       OR m.leader_epoch <> (w->>'epoch')::integer)
     ORDER BY t.decided_at, o.topic, o.partition
$$;

-- Broker p_broker sent an output partition's records again on its node and
-- its high watermark in epoch p_epoch passed them: the partition is
-- durable if the coordinator still names that broker its leader in that
-- epoch; the part is durable once each of its partitions is
-- (txn_output_durable).  Returns the step's state.
CREATE FUNCTION mq_coord.txn_output_redone(txn_id text, topic text, partition integer,
                                           broker_id integer, epoch integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    p_topic ALIAS FOR $2;
    p_partition ALIAS FOR $3;
    p_broker ALIAS FOR $4;
    p_epoch ALIAS FOR $5;
    v_state text;
    v_gid text;
BEGIN
    PERFORM mq_coord._txn_durably();
    SELECT t.state INTO v_state FROM mq_coord.txn t WHERE t.txn_id = p_txn FOR UPDATE;
    IF v_state IS NULL OR v_state = 'abort' THEN
        RAISE EXCEPTION 'transaction "%" has no commit decision', p_txn USING ERRCODE = 'MQ053';
    END IF;
    IF v_state <> 'commit' OR NOT EXISTS (
        SELECT 1 FROM mq_coord.partition c
         WHERE c.topic = p_topic AND c.partition = p_partition
           AND c.leader = p_broker AND c.leader_epoch = p_epoch) THEN
        RETURN v_state;
    END IF;
    UPDATE mq_coord.txn_output o SET durable = true
     WHERE o.txn_id = p_txn AND o.topic = p_topic AND o.partition = p_partition
    RETURNING o.gid INTO v_gid;
    IF v_gid IS NULL OR EXISTS (SELECT 1 FROM mq_coord.txn_output o
                                 WHERE o.txn_id = p_txn AND o.gid = v_gid AND NOT o.durable) THEN
        RETURN v_state;
    END IF;
    RETURN mq_coord.txn_output_durable(p_txn, v_gid);
END $$;

-- A broker committed prepared part p_gid on its node: if it is the offsets
-- part of a step whose outputs are durable, and that broker still leads
-- the input partition in the epoch the part noted, the step is done
-- (nothing of it is prepared any more; a new run of its pipeline may
-- start).  Otherwise the offset committed there is not the input's
-- current leader's: txn_offsets_moved has the leader commit it again.
CREATE FUNCTION mq_coord.txn_part_committed(gid text, broker_id integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_gid ALIAS FOR $1;
    p_broker ALIAS FOR $2;
    v_txn text := substring(p_gid FROM '^mq:(.*):[^:]*$');
    v_state text;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);  -- as txn_done: no flush needed
    UPDATE mq_coord.txn t SET state = 'done', updated_at = clock_timestamp()
     WHERE t.txn_id = v_txn AND t.state = 'outputs_durable'
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(t.participants) e
                    WHERE e->>'gid' = p_gid AND e->>'kind' = 'offsets'
                      AND NOT mq_coord._txn_offsets_moved(e, p_broker));
    SELECT t.state INTO v_state FROM mq_coord.txn t WHERE t.txn_id = v_txn;
    RETURN v_state;
END $$;

-- Offsets parts of broker broker_id's node whose steps' outputs are durable:
-- one no longer prepared there was committed (after outputs_durable
-- nothing rolls it back), by the broker or by a client that died before
-- txn_done; the broker reports it (txn_part_committed), which completes
-- the step.
CREATE FUNCTION mq_coord.txn_offsets_pending(broker_id integer) RETURNS TABLE (txn_id text, gid text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.txn_id, e->>'gid'
      FROM mq_coord.txn t, jsonb_array_elements(t.participants) e
     WHERE t.state = 'outputs_durable' AND e->>'kind' = 'offsets'
       AND (e->>'broker')::integer = txn_offsets_pending.broker_id
     ORDER BY t.decided_at
$$;

-- Has an offsets participant's input partition left it: another leader
-- than p_broker (the part's), or a leader epoch other than the one noted?
CREATE FUNCTION mq_coord._txn_offsets_moved(p_part jsonb, p_broker integer) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (
        SELECT 1 FROM jsonb_array_elements(p_part->'offsets') o
          LEFT JOIN mq_coord.partition c
                 ON c.topic = o->>'topic' AND c.partition = (o->>'partition')::integer
         WHERE c.leader IS DISTINCT FROM p_broker
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_part->'partitions') w
                        WHERE w->>'topic' = o->>'topic' AND w->>'partition' = o->>'partition'
                          AND (w->>'epoch')::integer <> c.leader_epoch))
$$;

-- Offsets of steps whose outputs are durable, whose input partition broker
-- p_broker leads now while their offsets part was prepared on another
-- node or in an older epoch (the client is gone, and the offset that part
-- commits would not be the leader's): the broker commits the offset on
-- its node, forward only (mq.txn_redo_offset), and reports it
-- (txn_offsets_redone) once its ISR has it.  epoch: the current one.  An
-- offset reported is not listed again; the others of its step still are.
CREATE FUNCTION mq_coord.txn_offsets_moved(broker_id integer)
    RETURNS TABLE (txn_id text, group_id text, topic text, partition integer, next_offset bigint,
                   epoch integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.txn_id, o->>'group', o->>'topic', (o->>'partition')::integer, (o->>'next')::bigint,
           c.leader_epoch
      FROM mq_coord.txn t
     CROSS JOIN LATERAL jsonb_array_elements(t.participants) e
     CROSS JOIN LATERAL jsonb_array_elements(e->'offsets') o
      JOIN mq_coord.partition c ON c.topic = o->>'topic' AND c.partition = (o->>'partition')::integer
     WHERE t.state = 'outputs_durable' AND e->>'kind' = 'offsets' AND c.leader = txn_offsets_moved.broker_id
       AND NOT coalesce((o->>'redone')::boolean, false)
       AND mq_coord._txn_offsets_moved(e, (e->>'broker')::integer)
     ORDER BY t.decided_at
$$;

-- Broker p_broker has a step's offset of group p_group on input partition
-- p_topic/p_partition on its ISR, leading that partition in p_epoch as
-- the coordinator says: that offset is redone (marked in the step's
-- offsets parts).  The step is done once every offset of its offsets
-- parts is: the group's partitions may have different leaders, each
-- reporting its own.  Returns the step's state.
CREATE FUNCTION mq_coord.txn_offsets_redone(txn_id text, group_id text, topic text, partition integer,
                                            broker_id integer, epoch integer)
    RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_txn ALIAS FOR $1;
    p_group ALIAS FOR $2;
    p_topic ALIAS FOR $3;
    p_partition ALIAS FOR $4;
    p_broker ALIAS FOR $5;
    p_epoch ALIAS FOR $6;
    v_row mq_coord.txn;
    v_parts jsonb;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);  -- as txn_done: no flush needed
    SELECT * INTO v_row FROM mq_coord.txn t WHERE t.txn_id = p_txn FOR UPDATE;
    IF NOT FOUND OR v_row.state <> 'outputs_durable' OR NOT EXISTS (
        SELECT 1 FROM mq_coord.partition c
         WHERE c.topic = p_topic AND c.partition = p_partition
           AND c.leader = p_broker AND c.leader_epoch = p_epoch) THEN
        RETURN v_row.state;
    END IF;
    SELECT jsonb_agg(CASE WHEN e->>'kind' = 'offsets' THEN jsonb_set(e, '{offsets}', (
                         SELECT coalesce(jsonb_agg(CASE WHEN o->>'group' = p_group AND o->>'topic' = p_topic
                                                             AND (o->>'partition')::integer = p_partition
                                                        THEN o || '{"redone": true}' ELSE o END
                                                   ORDER BY m), '[]')
                           FROM jsonb_array_elements(e->'offsets') WITH ORDINALITY AS y(o, m)))
                          ELSE e END ORDER BY n)
      INTO v_parts
      FROM jsonb_array_elements(v_row.participants) WITH ORDINALITY AS x(e, n);
    UPDATE mq_coord.txn t
       SET participants = v_parts, updated_at = clock_timestamp(),
           state = CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(v_parts) e,
                                                   jsonb_array_elements(e->'offsets') o
                                      WHERE e->>'kind' = 'offsets'
                                        AND NOT coalesce((o->>'redone')::boolean, false))
                        THEN t.state ELSE 'done' END
     WHERE t.txn_id = p_txn
    RETURNING t.state INTO v_row.state;
    RETURN v_row.state;
END $$;

-- Recovery acts on a partition only where this node leads it in p_epoch.
CREATE FUNCTION mq._txn_check_leads(p_topic text, p_partition integer, p_epoch integer) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_topic IS NULL OR p_partition IS NULL OR p_epoch IS NULL THEN
        RAISE EXCEPTION 'topic, partition and epoch must not be null' USING ERRCODE = 'MQ010';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mq.replica_status s
                    WHERE s.topic = p_topic AND s.partition = p_partition
                      AND s.role = 'leader' AND s.leader_epoch = p_epoch) THEN
        RAISE EXCEPTION 'this node does not lead "%" partition % in epoch %', p_topic, p_partition, p_epoch
            USING ERRCODE = 'MQ020';
    END IF;
END $$;

-- On a data node: a decided step's offset on the input partition's leader
-- in p_epoch (MQ020 otherwise), committed forward only.  True once it is
-- committed and every in-sync replica has the partition's offsets as of
-- then (the next call after the commit tells).
CREATE FUNCTION mq.txn_redo_offset(group_id text, topic text, partition integer, epoch integer,
                                   next_offset bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '2s' AS $$
#variable_conflict use_column
DECLARE
    p_group ALIAS FOR $1;
    p_topic ALIAS FOR $2;
    p_partition ALIAS FOR $3;
    p_epoch ALIAS FOR $4;
    p_next ALIAS FOR $5;
    v_topic_id integer;
BEGIN
    PERFORM mq._txn_check_leads(p_topic, p_partition, p_epoch);
    IF coalesce(mq.committed_offset(p_group, p_topic, p_partition), -1) < p_next THEN
        PERFORM mq.commit_offset(p_group, p_topic, p_partition, p_next);
        RETURN false;
    END IF;
    SELECT t.topic_id INTO v_topic_id FROM mq.topic t WHERE t.topic_name = p_topic;
    RETURN mq._offsets_acked_version(v_topic_id, p_partition, p_epoch)
           >= mq._offsets_version(v_topic_id, p_partition);
END $$;

-- On a data node: send a decided step's records of one output partition
-- again (recovery, for a client that is gone), as the producer that
-- first wrote them, with their headers and CreateTimes (a LogAppendTime
-- topic stamps the append's time).  Only on the partition's leader in p_epoch (MQ020
-- otherwise).  A retry of records the partition already holds is not
-- written again (the idempotent producer check): either way it returns
-- the end of the records (last offset + 1), for mq.txn_output_replicated.
-- SECURITY DEFINER: brokers have no produce rights on topics.
CREATE FUNCTION mq.txn_redo_output(topic text, partition integer, epoch integer,
                                   producer_id bigint, producer_epoch integer,
                                   base_sequence integer, keys bytea[], vals bytea[],
                                   headers jsonb[] DEFAULT NULL, timestamps timestamptz[] DEFAULT NULL)
    RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '2s' AS $$
#variable_conflict use_column
DECLARE
    p_topic ALIAS FOR $1;
    p_partition ALIAS FOR $2;
    p_epoch ALIAS FOR $3;
    p_producer_id ALIAS FOR $4;
    p_producer_epoch ALIAS FOR $5;
    p_base_sequence ALIAS FOR $6;
    p_keys ALIAS FOR $7;
    p_vals ALIAS FOR $8;
    p_headers ALIAS FOR $9;
    p_timestamps ALIAS FOR $10;
    v_last bigint;
BEGIN
    PERFORM mq._txn_check_leads(p_topic, p_partition, p_epoch);
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
    SELECT max(s.msg_offset) INTO v_last
      FROM mq.send_batch(p_topic, p_keys, p_vals, p_headers, p_partition, p_producer_id, p_producer_epoch,
                         p_base_sequence, p_timestamps) s;
    RETURN v_last + 1;
END $$;
