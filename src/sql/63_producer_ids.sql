-------------------------------------------------------------------------------
-- Producer ids in a cluster (docs/replication.md, "Producer ids").
--
-- A node without a broker issues producer ids from the identity of
-- mq.producer, as it always did.  Once a broker has attached
-- (mq.replica_broker has a row), ids are cluster-wide: mq.init_producer
-- issues them only from the blocks the node's broker fetched from the
-- coordinator (mq_coord.allocate_producer_ids) and added here with
-- mq.replica_add_producer_ids; with none left it raises MQ027 (retriable)
-- rather than fall back to local ids, which another node may issue too.
--
-- mq.producer_id_block keeps every block the node was given, also used
-- up ones, so that a block can never be added twice.  Issuing an id
-- updates its block's row under the row lock (concurrent init_producer
-- calls queue there) in init_producer's transaction, which commits with
-- at least a local flush: an id once returned is never issued again, also
-- after a crash of the node.
-------------------------------------------------------------------------------

CREATE TABLE mq.producer_id_block (
    first_id bigint PRIMARY KEY CHECK (first_id > 0),
    last_id  bigint NOT NULL CHECK (last_id >= first_id),
    next_id  bigint NOT NULL,                  -- the next id to issue; last_id + 1 when used up
    added_at timestamptz NOT NULL DEFAULT now(),
    CHECK (next_id BETWEEN first_id AND last_id + 1)
);
SELECT pg_catalog.pg_extension_config_dump('mq.producer_id_block', '');

-- Does this node issue producer ids from coordinator blocks (has a broker
-- ever attached)?
CREATE FUNCTION mq._cluster_producer_ids() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM mq.replica_broker);
$$;

-- The broker adds a block it got from the coordinator.  Returns how many
-- ids the node has left.  A block that overlaps one the node has (or had)
-- is refused.
CREATE FUNCTION mq.replica_add_producer_ids(first_id bigint, last_id bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_first ALIAS FOR $1;
    p_last ALIAS FOR $2;
BEGIN
    IF p_first IS NULL OR p_last IS NULL OR p_first < 1 OR p_last < p_first THEN
        RAISE EXCEPTION 'invalid block of producer ids % .. %', p_first, p_last USING ERRCODE = 'MQ010';
    END IF;
    LOCK TABLE mq.producer_id_block IN SHARE ROW EXCLUSIVE MODE;    -- one adder at a time
    IF EXISTS (SELECT 1 FROM mq.producer_id_block b
                WHERE b.first_id <= p_last AND b.last_id >= p_first) THEN
        RAISE EXCEPTION 'the block of producer ids % .. % overlaps one this node was given', p_first, p_last
            USING ERRCODE = 'MQ010', HINT = 'Blocks come from mq_coord.allocate_producer_ids, each once.';
    END IF;
    INSERT INTO mq.producer_id_block (first_id, last_id, next_id) VALUES (p_first, p_last, p_first);
    RETURN mq.replica_producer_ids_left();
END $$;

-- How many ids the node can still issue from its blocks.
CREATE FUNCTION mq.replica_producer_ids_left() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(sum(b.last_id - b.next_id + 1), 0)::bigint FROM mq.producer_id_block b;
$$;

-- The next id of the node's blocks (oldest block first), skipping ids
-- mq.producer already holds (issued locally before the broker attached);
-- MQ027 when none is left.
CREATE FUNCTION mq._next_producer_id() RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_first bigint;
    v_id bigint;
BEGIN
    LOOP
        SELECT b.first_id INTO v_first FROM mq.producer_id_block b
         WHERE b.next_id <= b.last_id ORDER BY b.first_id LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'this node has no producer ids left: its mq-broker has not added a block from the coordinator'
                USING ERRCODE = 'MQ027',
                      DETAIL = 'In a cluster producer ids come from blocks the coordinator hands out, so that no two nodes issue the same id.',
                      HINT = 'Retry shortly; if this persists, check that the node''s mq-broker runs and reaches the coordinator.';
        END IF;
        -- after waiting for a concurrent issuer, the WHERE is checked again
        -- on the block's newest row version
        UPDATE mq.producer_id_block b SET next_id = b.next_id + 1
         WHERE b.first_id = v_first AND b.next_id <= b.last_id
        RETURNING b.next_id - 1 INTO v_id;
        IF v_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM mq.producer p WHERE p.producer_id = v_id) THEN
            RETURN v_id;
        END IF;
    END LOOP;
END $$;
