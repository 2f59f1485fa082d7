-------------------------------------------------------------------------------
-- Administration
-------------------------------------------------------------------------------

-- Kafka's topic name rule: 1 to 249 characters of [A-Za-z0-9._-], not
-- "." or "..".  mq-kafka's Metadata asks it of the names a client sends
-- (INVALID_TOPIC_EXCEPTION), as the caller; its config APIs, which refuse
-- a name before any statement, with Kafka's messages, hold a twin in C
-- (broker/mq-kafka/topic_name.c): a change here goes there too;
-- test/kafka/topic_names.sh checks that the two agree.
CREATE FUNCTION mq._topic_name_valid(topic text) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT topic ~ '^[A-Za-z0-9._-]{1,249}$' AND topic NOT IN ('.', '..')
$$;

CREATE FUNCTION mq._check_topic_name(topic text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF topic IS NULL OR NOT mq._topic_name_valid(topic) THEN
        RAISE EXCEPTION 'invalid topic name "%"', left(topic, 300)
            USING ERRCODE = 'MQ003',
                  HINT = 'A topic name has 1 to 249 characters from [A-Za-z0-9._-] and is not "." or "..".';
    END IF;
END $$;

-- Kafka's collision rule: names that differ only in '.' against '_' would
-- have one metric name, so a new topic may not have another's key.  The
-- key is indexed (mq.topic here, mq_coord.topic on the coordinator), so
-- a creation finds a colliding name in a probe, however many topics.
CREATE FUNCTION mq._topic_collision_key(topic text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT pg_catalog.translate(topic, '.', '_') $$;

CREATE INDEX topic_collision_key ON mq.topic (mq._topic_collision_key(topic_name));

-- A topic's Kafka id (KIP-516), the MD5 of its name in hex (mq-kafka's
-- topic_id.h), indexed, so that mq-kafka finds the topic of an id through
-- mq.topics in a probe: a leakproof C function, which the view's security
-- barrier lets in (src/kafka_topic_id.c).
CREATE FUNCTION mq._kafka_topic_id(topic text) RETURNS text
    AS 'MODULE_PATHNAME', 'mq_kafka_topic_id' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE INDEX topic_kafka_id ON mq.topic (mq._kafka_topic_id(topic_name));

-- colliding: an existing topic with topic's key (its caller's lookup), or NULL
CREATE FUNCTION mq._refuse_topic_collision(topic text, colliding text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF colliding IS NOT NULL THEN
        RAISE EXCEPTION 'topic "%" collides with existing topic "%"', topic, colliding
            USING ERRCODE = 'MQ003',
                  HINT = 'Kafka refuses names that differ only in "." against "_"; use one of the two.';
    END IF;
END $$;

-- Every log table (topic, partition, segment) refuses direct writes: rows
-- come only from the produce path, which bypasses triggers.
CREATE FUNCTION mq._protect_log_table(p_rel regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER mq_log_immutable BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION mq._refuse_log_change()', p_rel);
END $$;

-- Records of one segment.  Declared offset range [base, end_offset); the
-- produce path picks the segment itself, so no routing happens on insert.
CREATE FUNCTION mq._create_segment(p_topic_id integer, p_partition integer,
                                   p_base bigint, p_end bigint) RETURNS regclass
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_part regclass;
    v_name text := format('topic_%s_p%s_%s', p_topic_id, p_partition, p_base);
    v_rel  regclass;
    v_space text := '';
BEGIN
    SELECT relid INTO STRICT v_part FROM mq.partition_state
     WHERE topic_id = p_topic_id AND partition = p_partition;
    -- in the partition's tablespace, if mq.move_partition gave it one
    SELECT format(' TABLESPACE %I', t.spcname) INTO v_space
      FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid = v_part;
    -- CREATE TABLE ... PARTITION OF would lock the partition's table in
    -- ACCESS EXCLUSIVE mode and so wait for every reader of it; ATTACH of
    -- an empty table needs only SHARE UPDATE EXCLUSIVE and scans nothing.
    EXECUTE format('CREATE TABLE mq_log.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)%s',
                   v_name, v_part, coalesce(v_space, ''));
    v_rel := format('mq_log.%I', v_name)::regclass;
    EXECUTE format('CREATE UNIQUE INDEX %I ON %s (msg_offset)%s', v_name || '_msg_offset_idx', v_rel,
                   coalesce(v_space, ''));
    -- the offset identifies a row to logical decoding: compaction and a
    -- follower's truncation delete rows, and a publication FOR ALL TABLES
    -- (Debezium's default) refuses that on a table without an identity
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY USING INDEX %I', v_rel, v_name || '_msg_offset_idx');
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)',
                   v_part, v_rel, p_base, p_end);
    PERFORM mq._protect_log_table(v_rel);
    INSERT INTO mq.segment (topic_id, partition, base_offset, end_offset, relid)
    VALUES (p_topic_id, p_partition, p_base, p_end, v_rel);
    RETURN v_rel;
END $$;

-- Offsets a new segment should cover: segment.records when set, otherwise
-- segment.bytes divided by the bytes per record seen in the newest segment
-- (256 bytes before there is any).
CREATE FUNCTION mq._segment_span(p_topic_id integer, p_partition integer) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_config jsonb;
    v_rel regclass;
    v_rows bigint;
    v_per_row float8 := 256;
BEGIN
    SELECT config INTO STRICT v_config FROM mq.topic WHERE topic_id = p_topic_id;
    IF v_config ? 'segment.records' THEN
        RETURN (v_config->>'segment.records')::bigint;
    END IF;
    SELECT s.relid, s.end_offset - s.base_offset INTO v_rel, v_rows
      FROM mq.segment s
     WHERE s.topic_id = p_topic_id AND s.partition = p_partition
       AND s.end_offset <= mq._log_end_offset(p_topic_id, p_partition)
     ORDER BY s.base_offset DESC LIMIT 1;
    IF v_rel IS NOT NULL AND v_rows > 0 THEN
        v_per_row := greatest(pg_total_relation_size(v_rel)::float8 / v_rows, 32);
    END IF;
    RETURN greatest(1000, least(1000000000,
        (coalesce((v_config->>'segment.bytes')::bigint, 1073741824) / v_per_row)::bigint));
END $$;

-- Keep one empty segment ahead of the one being written, so that the
-- produce path never runs DDL.  Returns the number of segments created.
-- Is there a whole empty segment beyond the log end (nothing to create)?
CREATE FUNCTION mq._segment_ahead(p_topic_id integer, p_partition integer) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM mq.segment s
                    WHERE s.topic_id = p_topic_id AND s.partition = p_partition
                      AND s.base_offset > e.log_end)
      FROM (SELECT mq._log_end_offset(p_topic_id, p_partition) AS log_end) e
$$;

-- Where the next segment starts: at the end of the last one, or, when
-- mq.delete_records or retention dropped every segment (the log end was
-- a segment's end, with none made ahead yet), at the log start, which
-- they left at that end: offsets never restart below it.
CREATE FUNCTION mq._segments_end(p_topic_id integer, p_partition integer) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT max(sg.end_offset) FROM mq.segment sg
                      WHERE sg.topic_id OPERATOR(pg_catalog.=) p_topic_id
                        AND sg.partition OPERATOR(pg_catalog.=) p_partition),
                    ps.log_start_offset)
      FROM mq.partition_state ps
     WHERE ps.topic_id OPERATOR(pg_catalog.=) p_topic_id
       AND ps.partition OPERATOR(pg_catalog.=) p_partition
$$;

CREATE FUNCTION mq._ensure_segments(p_topic_id integer, p_partition integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_last bigint;
    v_created integer := 0;
BEGIN
    -- enough when a whole empty segment lies beyond the log end
    WHILE NOT mq._segment_ahead(p_topic_id, p_partition) LOOP
        v_last := mq._segments_end(p_topic_id, p_partition);
        PERFORM mq._create_segment(p_topic_id, p_partition, v_last,
                                   v_last + mq._segment_span(p_topic_id, p_partition));
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END $$;

-- The produce path and a follower's append (src/log.c) note a record
-- landing in a partition's empty last segment, under the partition's
-- produce lock: the next maintenance pass makes another segment ahead
-- (mq._maintain_segments).  Once per segment, so it costs producers
-- nothing measurable.  Returns 1 when noted now, 0 when it already was.
CREATE FUNCTION mq._note_last_segment_written(p_topic_id integer, p_partition integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO mq.last_segment_written (topic_id, partition) VALUES (p_topic_id, p_partition)
    ON CONFLICT DO NOTHING;
    RETURN CASE WHEN FOUND THEN 1 ELSE 0 END;
EXCEPTION WHEN serialization_failure THEN
    -- REPEATABLE READ: noted by a transaction that committed after this
    -- one's snapshot, which ON CONFLICT refuses to pass over
    RETURN 0;
END $$;

-- A batch running past the partition's last segment (the produce path,
-- or a follower placing records past a gap that compaction left on the
-- leader: mq.replica_append): segments from p_from, where the last one
-- ends, through p_offset, the batch's last offset, and one more ahead
-- when only one was needed (the produce path writes up to p_from first,
-- so the second begins past what it has written).  The caller, under the
-- partition's produce lock, knows p_from from its view of the segments,
-- which is the newest committed one: mq.segment read here would be the
-- transaction's snapshot, which under REPEATABLE READ missed segments
-- made since it began and so made them again (42P07).  Segments cover a
-- segment's span each, but the 32nd one a batch makes covers the rest of
-- it: each segment is a table, whose locks the batch holds until it
-- commits, and a batch of thousands of records into a topic with
-- segment.records 1 ran out of PostgreSQL's lock table (Kafka, which
-- rolls segments only between batches, never splits one).  Returns the
-- number created.
CREATE FUNCTION mq._ensure_segments_to(p_topic_id integer, p_partition integer, p_from bigint,
                                       p_offset bigint) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_span bigint := mq._segment_span(p_topic_id, p_partition);
    v_last bigint := p_from;
    v_end bigint;
    v_created integer := 0;
BEGIN
    WHILE v_last <= p_offset OR v_created = 1 LOOP
        v_end := CASE WHEN v_created < 31 THEN v_last + v_span ELSE greatest(v_last + v_span, p_offset + 1) END;
        PERFORM mq._create_segment(p_topic_id, p_partition, v_last, v_end);
        v_last := v_end;
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END $$;

-- How long a segment is written before it is closed by time: segment.ms,
-- or on a compacted topic max.compaction.lag.ms when that is shorter, so
-- that its records become cleanable in time (Kafka's maxSegmentMs,
-- KIP-354); NULL when neither is set.  Limits beyond what an interval
-- holds (Kafka's default, the int8 maximum) mean none.
CREATE FUNCTION mq._segment_roll_ms(p_config jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN coalesce(p_config->>'cleanup.policy', 'delete') IN ('compact', 'compact,delete')
                     AND (p_config->>'max.compaction.lag.ms')::bigint <= 31557600000000
                THEN least(mq._config_ms(p_config, 'segment.ms'), (p_config->>'max.compaction.lag.ms')::bigint)
                WHEN (p_config->>'segment.ms')::bigint <= 31557600000000
                THEN (p_config->>'segment.ms')::bigint END
$$;

-- segment.ms: close the segment being written at the log end once its first
-- record is older than segment.ms, so that time-based retention can drop
-- it.  Segments cover fixed offset ranges, so closing one early means
-- shrinking its range to [base, log end): under the partition's produce
-- lock, a CHECK constraint proves the new range (one scan of the segment),
-- which lets the detach and re-attach skip their own scan; the empty
-- segments after it are recreated from the new boundary.  Maintenance
-- runs it, so it waits for nothing producers could queue behind: the
-- produce lock and the tables' locks are taken only if free now (a
-- producer at work, a reader of the segment or pg_dump: the next pass).

-- The segment a roll would close now: base and end of the one holding the
-- log end, if its first record is older than p_ms; NULL otherwise.
CREATE FUNCTION mq._segment_to_roll(p_topic_id integer, p_partition integer, p_ms bigint,
                                    OUT base_offset bigint, OUT end_offset bigint, OUT log_end bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    log_end := mq._log_end_offset(p_topic_id, p_partition);
    SELECT sg.base_offset, sg.end_offset INTO base_offset, end_offset FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
       AND sg.base_offset < log_end AND log_end < sg.end_offset;
    IF base_offset IS NULL OR mq_internal._offset_time(p_topic_id, p_partition, base_offset, NULL)
                              >= clock_timestamp() - p_ms * interval '1 millisecond' THEN
        base_offset := NULL;
    END IF;
END $$;

CREATE FUNCTION mq._roll_segment_by_time(p_topic_id integer, p_partition integer) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_ms bigint;
    v_part regclass;
    v_rel regclass;
    s record;
    f record;
BEGIN
    SELECT mq._segment_roll_ms(t.config) INTO v_ms FROM mq.topic t WHERE t.topic_id = p_topic_id;
    IF v_ms IS NULL OR (mq._segment_to_roll(p_topic_id, p_partition, v_ms)).base_offset IS NULL
       OR NOT mq._try_lock_partition(p_topic_id, p_partition) THEN
        RETURN false;
    END IF;
    s := mq._segment_to_roll(p_topic_id, p_partition, v_ms);    -- again, under the lock
    IF s.base_offset IS NULL THEN
        RETURN false;
    END IF;
    SELECT ps.relid INTO v_part FROM mq.partition_state ps
     WHERE ps.topic_id = p_topic_id AND ps.partition = p_partition;
    BEGIN
        EXECUTE format('LOCK TABLE ONLY %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_part);
        FOR f IN SELECT sg.relid FROM mq.segment sg
                  WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition
                    AND sg.base_offset >= s.base_offset ORDER BY sg.base_offset LOOP
            EXECUTE format('LOCK TABLE ONLY %s IN ACCESS EXCLUSIVE MODE NOWAIT', f.relid);
        END LOOP;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
    SELECT sg.relid INTO v_rel FROM mq.segment sg
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset = s.base_offset;
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT mq_segment_range CHECK (msg_offset >= %s AND msg_offset < %s)',
                   v_rel, s.base_offset, s.log_end);
    EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', v_part, v_rel);
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)',
                   v_part, v_rel, s.base_offset, s.log_end);
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT mq_segment_range', v_rel);
    UPDATE mq.segment sg SET end_offset = s.log_end
     WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset = s.base_offset;
    FOR f IN SELECT sg.base_offset, sg.relid FROM mq.segment sg
              WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset > s.base_offset
    LOOP
        DELETE FROM mq.segment sg
         WHERE sg.topic_id = p_topic_id AND sg.partition = p_partition AND sg.base_offset = f.base_offset;
        EXECUTE format('DROP TABLE %s', f.relid);
    END LOOP;
    PERFORM mq._ensure_segments(p_topic_id, p_partition);
    RETURN true;
END $$;

CREATE FUNCTION mq._create_partition(p_topic_id integer, p_partition integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_parent regclass;
    v_rel regclass;
BEGIN
    SELECT relid INTO STRICT v_parent FROM mq.topic WHERE topic_id = p_topic_id;
    EXECUTE format('CREATE TABLE mq_log.%I PARTITION OF %s FOR VALUES IN (%s) PARTITION BY RANGE (msg_offset)',
                   format('topic_%s_p%s', p_topic_id, p_partition), v_parent, p_partition);
    v_rel := format('mq_log.%I', format('topic_%s_p%s', p_topic_id, p_partition))::regclass;
    PERFORM mq._protect_log_table(v_rel);
    INSERT INTO mq.partition_state (topic_id, partition, relid) VALUES (p_topic_id, p_partition, v_rel);
    PERFORM mq._ensure_segments(p_topic_id, p_partition);
END $$;

-- The public mq.create_topic, drop_topic, alter_topic and add_partitions
-- are C wrappers (src/owner.c) that call these as the owner, passing the
-- caller's role last; each checks the caller's right first.
CREATE FUNCTION mq_internal.create_topic(topic text, partitions integer,
                                         config jsonb, p_caller oid) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_config jsonb;
    v_rel regclass;
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._authorize(p_caller, 'topic', topic, 'create');
    PERFORM mq._check_topic_name(topic);
    IF partitions IS NULL OR partitions < 1 OR partitions > 10000 THEN
        RAISE EXCEPTION 'invalid partition count %', coalesce(partitions::text, 'NULL')
            USING ERRCODE = 'MQ005', HINT = 'A topic has between 1 and 10000 partitions.';
    END IF;
    v_config := mq.validate_config(coalesce(config, '{}'));
    -- serialise topic creation so that two creators of one name get a clear error
    PERFORM pg_advisory_xact_lock(hashtext('mq.create_topic'));
    IF EXISTS (SELECT 1 FROM mq.topic t WHERE t.topic_name = topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic USING ERRCODE = 'MQ002';
    END IF;
    PERFORM mq._refuse_topic_collision(topic,
        (SELECT t.topic_name FROM mq.topic t
          WHERE mq._topic_collision_key(t.topic_name) = mq._topic_collision_key(topic)
            AND t.topic_name <> topic LIMIT 1));
    -- mq.ensure_consumer_offsets creates it (without a caller)
    IF topic = '__consumer_offsets' AND p_caller IS NOT NULL THEN
        PERFORM mq._refuse_internal_topic(topic);
    END IF;
    INSERT INTO mq.topic (topic_name, partitions, config, owner)
    VALUES (topic, partitions, v_config, p_caller) RETURNING topic_id INTO v_id;
    EXECUTE format('CREATE TABLE mq_log.%I (
                        partition      integer NOT NULL,
                        msg_offset     bigint NOT NULL,
                        created_at     timestamptz NOT NULL,
                        key            bytea,
                        value          bytea,
                        headers        jsonb,
                        producer_id    bigint,
                        producer_epoch integer,
                        sequence       integer,
                        -- the Kafka record timestamp: NULL for LogAppendTime
                        -- (then it is created_at), the CreateTime otherwise;
                        -- max_timestamp: NULL unless an earlier record of
                        -- the segment has a later timestamp, then the running
                        -- maximum of the segment (the Kafka time index)
                        timestamp      timestamptz,
                        max_timestamp  timestamptz
                    ) PARTITION BY LIST (partition)', 'topic_' || v_id);
    v_rel := format('mq_log.%I', 'topic_' || v_id)::regclass;
    EXECUTE format('COMMENT ON TABLE %s IS %L', v_rel, 'mq topic ' || topic);
    PERFORM mq._protect_log_table(v_rel);
    UPDATE mq.topic SET relid = v_rel WHERE topic_id = v_id;
    FOR p IN 0 .. partitions - 1 LOOP
        PERFORM mq._create_partition(v_id, p);
    END LOOP;
    RETURN v_id;
END $$;

CREATE FUNCTION mq._topic_id(topic text) RETURNS integer
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be null' USING ERRCODE = 'MQ010';
    END IF;
    SELECT t.topic_id INTO v_id FROM mq.topic t WHERE t.topic_name = topic;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'MQ001';
    END IF;
    RETURN v_id;
END $$;

-- A topic replicated in a cluster gets or loses partitions on the
-- coordinator only, whose brokers bring every node to it: dropping or
-- growing one node's copy would break its partitions (MQ039).  The
-- brokers' own calls (p_caller NULL: mq.replica_drop_topic,
-- mq._replica_add_partitions) are what carries the coordinator's change.
CREATE FUNCTION mq._refuse_replicated_topic(p_id integer, p_topic text, p_caller oid, p_change text)
    RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_caller IS NOT NULL AND EXISTS (SELECT 1 FROM mq.replica_partition r WHERE r.topic_id = p_id) THEN
        RAISE EXCEPTION 'topic "%" is replicated: % it on the cluster''s coordinator', p_topic, p_change
            USING ERRCODE = 'MQ039',
                  HINT = 'Connect to the coordinator (mq_coord.delete_topic, mq_coord.add_partitions, mqctl -d COORDINATOR), or use Kafka''s DeleteTopics or CreatePartitions.';
    END IF;
END $$;

CREATE FUNCTION mq_internal.drop_topic(topic text, p_caller oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_rel regclass;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'delete');
    v_id := mq._topic_id(topic);
    PERFORM mq._refuse_replicated_topic(v_id, topic, p_caller, 'delete');
    SELECT relid INTO v_rel FROM mq.topic WHERE topic_id = v_id FOR UPDATE;
    EXECUTE format('DROP TABLE %s', v_rel);
    DELETE FROM mq.topic WHERE topic_id = v_id;
    -- the grants its owner made on it go with it, so that nobody plants
    -- grants for whoever creates the name next; an administrator's stay,
    -- as Kafka keeps the ACLs of a deleted topic
    DELETE FROM mq.acl a
     WHERE a.resource_type = 'topic' AND a.pattern_type = 'literal' AND a.resource_name = topic
       AND (a.grantor IS NULL
            OR NOT mq._has_privilege(a.grantor::oid, 'cluster', 'kafka-cluster', 'alter'));
END $$;

CREATE FUNCTION mq_internal.alter_topic(topic text, config jsonb, p_caller oid) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_old jsonb;
    v_config jsonb;
    v_rel regclass;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'alter');
    v_id := mq._topic_id(topic);
    IF alter_topic.config IS NULL THEN
        RAISE EXCEPTION 'config must not be null' USING ERRCODE = 'MQ010',
            HINT = 'Give the keys to change; a key given as JSON null returns to its default.';
    END IF;
    -- a key given as JSON null returns to its default: a known key only
    PERFORM mq._config_key(k.key)
       FROM jsonb_each(CASE WHEN jsonb_typeof(alter_topic.config) = 'object' THEN alter_topic.config END) k
      WHERE jsonb_typeof(k.value) = 'null';
    SELECT t.config, t.relid INTO v_old, v_rel FROM mq.topic t WHERE t.topic_id = v_id FOR UPDATE;
    -- validate the merged config, so that checks between keys see both old
    -- and new values
    v_config := jsonb_strip_nulls(v_old || alter_topic.config);
    IF (v_config->'replication.factor') IS DISTINCT FROM (v_old->'replication.factor') THEN
        RAISE EXCEPTION 'replication.factor cannot be changed with alter_topic'
            USING ERRCODE = 'MQ004', HINT = 'Reassigning replicas is done with the broker.';
    END IF;
    v_config := mq.validate_config(v_config);
    UPDATE mq.topic SET config = v_config WHERE topic_id = v_id;
    PERFORM mq._invalidate(v_rel);
    RETURN v_config;
END $$;

CREATE FUNCTION mq_internal.add_partitions(topic text, count integer, p_caller oid) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id integer;
    v_old integer;
BEGIN
    PERFORM mq._authorize(p_caller, 'topic', topic, 'alter');
    v_id := mq._topic_id(topic);
    PERFORM mq._refuse_internal_topic(topic);
    PERFORM mq._refuse_replicated_topic(v_id, topic, p_caller, 'add partitions to');
    IF count IS NULL OR count < 1 THEN
        RAISE EXCEPTION 'invalid partition count increase %', coalesce(count::text, 'NULL')
            USING ERRCODE = 'MQ005', HINT = 'Partitions can be added, never removed: give a positive number to add.';
    END IF;
    SELECT partitions INTO v_old FROM mq.topic WHERE topic_id = v_id FOR UPDATE;
    IF count > 10000 - v_old THEN
        RAISE EXCEPTION 'a topic cannot have more than 10000 partitions' USING ERRCODE = 'MQ005';
    END IF;
    UPDATE mq.topic SET partitions = v_old + count WHERE topic_id = v_id;
    FOR p IN v_old .. v_old + count - 1 LOOP
        PERFORM mq._create_partition(v_id, p);
    END LOOP;
    RETURN v_old + count;
END $$;


CREATE FUNCTION mq.create_topic(topic text, partitions integer DEFAULT 1,
                                config jsonb DEFAULT '{}') RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.drop_topic(topic text) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.alter_topic(topic text, config jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.add_partitions(topic text, count integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
