-------------------------------------------------------------------------------
-- Moving a partition's log to another tablespace (Kafka's
-- AlterReplicaLogDirs, mq-kafka's API 34: DescribeLogDirs names each
-- segment's tablespace as its log directory).  Every segment table of the
-- partition moves with its indexes (ALTER TABLE / ALTER INDEX ... SET
-- TABLESPACE, which copy the files, WAL-logged, in this transaction), and
-- so do the segments made later: the partition's own table takes the
-- tablespace, and mq._create_segment makes new segments there.  The move
-- is this node's: a replica on another node stays where it is.
--
-- Locking: the partition's produce lock (mq._lock_partition), then ACCESS
-- EXCLUSIVE on each segment until the transaction ends, so the partition's
-- producers and readers wait for the copy; a segment already in the
-- tablespace is not touched.
-------------------------------------------------------------------------------

-- The public mq.move_partition is a C wrapper (src/owner.c) that calls
-- this as the owner with the caller's role last; it needs ALTER on the
-- topic and CREATE on the tablespace.  Returns how many segments moved.
CREATE FUNCTION mq_internal.move_partition(topic text, partition integer, tablespace name,
                                           p_caller oid) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_part regclass;
    v_ts oid;
    v_default oid;
    v_moved integer := 0;
    s record;
    i record;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'alter');
    v_id := mq._topic_id(topic);
    IF move_partition.partition IS NULL OR move_partition.tablespace IS NULL THEN
        RAISE EXCEPTION '% must not be null',
            CASE WHEN move_partition.partition IS NULL THEN 'partition' ELSE 'tablespace' END
            USING ERRCODE = 'MQ010';
    END IF;
    SELECT t.oid INTO v_ts FROM pg_tablespace t WHERE t.spcname OPERATOR(pg_catalog.=) move_partition.tablespace;
    IF v_ts IS NULL THEN
        RAISE EXCEPTION 'tablespace "%" does not exist', move_partition.tablespace
            USING ERRCODE = 'MQ064', HINT = 'List the tablespaces with SELECT spcname FROM pg_tablespace.';
    END IF;
    IF NOT has_tablespace_privilege(p_caller, v_ts, 'CREATE') THEN
        RAISE EXCEPTION 'permission denied for tablespace %', move_partition.tablespace
            USING ERRCODE = '42501', HINT = 'The caller needs CREATE on the tablespace.';
    END IF;
    SELECT ps.relid INTO v_part FROM mq.partition_state ps
     WHERE ps.topic_id OPERATOR(pg_catalog.=) v_id AND ps.partition OPERATOR(pg_catalog.=) move_partition.partition;
    IF v_part IS NULL THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', move_partition.partition, topic
            USING ERRCODE = 'MQ006';
    END IF;
    PERFORM mq._lock_partition(v_id, move_partition.partition);
    SELECT d.dattablespace INTO v_default FROM pg_database d WHERE d.datname OPERATOR(pg_catalog.=) current_database();
    -- a partitioned table has no storage: its tablespace is the next segments'
    EXECUTE format('ALTER TABLE %s SET TABLESPACE %I', v_part, move_partition.tablespace);
    FOR s IN SELECT sg.relid FROM mq.segment sg JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) sg.relid
              WHERE sg.topic_id OPERATOR(pg_catalog.=) v_id AND sg.partition OPERATOR(pg_catalog.=) move_partition.partition
                AND CASE WHEN c.reltablespace OPERATOR(pg_catalog.=) 0 THEN v_default ELSE c.reltablespace END
                    OPERATOR(pg_catalog.<>) v_ts
              ORDER BY sg.base_offset LOOP
        EXECUTE format('ALTER TABLE %s SET TABLESPACE %I', s.relid, move_partition.tablespace);
        FOR i IN SELECT x.indexrelid::regclass AS idx FROM pg_index x WHERE x.indrelid OPERATOR(pg_catalog.=) s.relid LOOP
            EXECUTE format('ALTER INDEX %s SET TABLESPACE %I', i.idx, move_partition.tablespace);
        END LOOP;
        v_moved := v_moved + 1;
    END LOOP;
    RETURN v_moved;
END $$;

CREATE FUNCTION mq.move_partition(topic text, partition integer, tablespace name) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
