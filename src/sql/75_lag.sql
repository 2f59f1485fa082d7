-------------------------------------------------------------------------------
-- Lag: how far each group is behind, how long until retention deletes what
-- it has not read, what it already lost, and where the trend leads.
-------------------------------------------------------------------------------

-- Samples of end and committed offsets, taken by mq.sample_lag (which
-- maintenance calls on every run; it samples at most once per its
-- min_interval, 10 s by default) and kept for an hour.
CREATE TABLE mq.lag_sample (
    group_id    text NOT NULL,
    topic_id    integer NOT NULL,
    partition   integer NOT NULL,
    sampled_at  timestamptz NOT NULL,
    end_offset  bigint NOT NULL,
    committed   bigint NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition, sampled_at),
    FOREIGN KEY (topic_id, partition) REFERENCES mq.partition_state ON DELETE CASCADE
);

CREATE FUNCTION mq.sample_lag(min_interval interval DEFAULT '10 seconds') RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    IF (SELECT max(sampled_at) FROM mq.lag_sample) > clock_timestamp() - min_interval THEN
        RETURN 0;
    END IF;
    INSERT INTO mq.lag_sample (group_id, topic_id, partition, sampled_at, end_offset, committed)
    SELECT o.group_id, o.topic_id, o.partition, clock_timestamp(),
           coalesce(ps.high_watermark, mq._log_end_offset(o.topic_id, o.partition)), o.next_offset
      FROM mq.consumer_offset o JOIN mq.partition_state ps USING (topic_id, partition);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mq.lag_sample WHERE sampled_at < clock_timestamp() - interval '1 hour';
    RETURN v_n;
END $$;

-- The lag views call _offset_time and _retention_headroom for the rows
-- they show their caller, and so does whoever may read those views: the
-- public functions (C wrappers, src/owner.c) run the implementations here
-- as the owner with the caller's role last, and the implementations answer
-- NULL for a topic the caller may not describe, so that an id tells
-- nothing of a hidden topic (as mq._log_end_offset).  mq's own callers
-- (maintenance) call the implementations with no caller.
CREATE FUNCTION mq_internal._shows_topic(p_topic_id integer, p_caller oid) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p_caller IS NULL
        OR coalesce(mq._has_privilege(p_caller, 'topic',
                                      (SELECT t.topic_name FROM mq.topic t WHERE t.topic_id = p_topic_id),
                                      'describe'), false)
$$;

-- Time a record was appended (NULL outside the log).
CREATE FUNCTION mq_internal._offset_time(p_topic_id integer, p_partition integer, p_offset bigint,
                                         p_caller oid) RETURNS timestamptz
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_rel regclass;
    v_time timestamptz;
BEGIN
    IF NOT mq_internal._shows_topic(p_topic_id, p_caller) THEN
        RETURN NULL;
    END IF;
    -- the record at p_offset, or on a compacted partition the next one left
    FOR v_rel IN SELECT s.relid FROM mq.segment s
                  WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND p_offset < s.end_offset
                  ORDER BY s.base_offset LOOP
        EXECUTE format('SELECT created_at FROM %s WHERE msg_offset >= $1 ORDER BY msg_offset LIMIT 1', v_rel)
           INTO v_time USING p_offset;
        IF v_time IS NOT NULL THEN
            RETURN v_time;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- The shortest time in which retention.ms can delete the segment holding a
-- group's next record (NULL without time retention).  Retention drops only
-- closed segments, once their newest record is older than retention.ms:
--   a closed segment: until its newest record is older than retention.ms,
--     zero once it is (the next maintenance drops it), never negative;
--   the segment being written: it must close first.  Filled by new
--     records, its newest record is then at least as new as now: at least
--     retention.ms.  Rolled by segment.ms (at its first record's time plus
--     segment.ms) with no new record: once that time has come and its
--     newest record is older than retention.ms.  The smaller of the two.
CREATE FUNCTION mq_internal._retention_headroom(p_topic_id integer, p_partition integer, p_offset bigint,
                                                p_caller oid)
RETURNS interval
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_ms bigint;
    v_segment_ms bigint;
    v_rel regclass;
    v_base bigint;
    v_end bigint;
    v_expiry timestamptz;      -- when its newest record is older than retention.ms
    v_headroom interval;
BEGIN
    IF NOT mq_internal._shows_topic(p_topic_id, p_caller) THEN
        RETURN NULL;
    END IF;
    SELECT mq._config_ms(t.config, 'retention.ms'), mq._segment_roll_ms(t.config) INTO v_ms, v_segment_ms
      FROM mq.topic t WHERE t.topic_id = p_topic_id;
    IF v_ms IS NULL OR v_ms < 0 THEN
        RETURN NULL;
    END IF;
    SELECT s.relid, s.base_offset, s.end_offset INTO v_rel, v_base, v_end FROM mq.segment s
     WHERE s.topic_id = p_topic_id AND s.partition = p_partition
       AND s.base_offset <= p_offset AND p_offset < s.end_offset;
    IF v_rel IS NULL THEN
        RETURN NULL;
    END IF;
    v_expiry := mq._segment_last_time(v_rel) + v_ms * interval '1 millisecond';
    IF v_end <= mq._log_end_offset(p_topic_id, p_partition) THEN
        v_headroom := v_expiry - clock_timestamp();
    ELSE
        v_headroom := v_ms * interval '1 millisecond';
        IF v_segment_ms IS NOT NULL THEN
            v_headroom := least(v_headroom,
                                greatest(mq_internal._offset_time(p_topic_id, p_partition, v_base, NULL)
                                         + v_segment_ms * interval '1 millisecond', v_expiry)
                                - clock_timestamp());
        END IF;
    END IF;
    RETURN greatest(v_headroom, interval '0');
END $$;

CREATE FUNCTION mq._offset_time(p_topic_id integer, p_partition integer, p_offset bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
CREATE FUNCTION mq._retention_headroom(p_topic_id integer, p_partition integer, p_offset bigint) RETURNS interval
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;

CREATE VIEW mq.consumer_lag WITH (security_barrier) AS
SELECT o.group_id, t.topic_name AS topic, o.partition,
       e.end_offset,
       o.next_offset AS committed_offset,
       greatest(e.end_offset - greatest(o.next_offset, ps.log_start_offset), 0) AS lag,
       CASE WHEN e.end_offset > greatest(o.next_offset, ps.log_start_offset)
            THEN now() - mq._offset_time(o.topic_id, o.partition, greatest(o.next_offset, ps.log_start_offset))
       END AS oldest_unconsumed_age,
       CASE WHEN e.end_offset > greatest(o.next_offset, ps.log_start_offset)
            THEN mq._retention_headroom(o.topic_id, o.partition, greatest(o.next_offset, ps.log_start_offset))
       END AS retention_headroom,
       coalesce(l.records_lost, 0) AS records_lost,
       tr.produce_rate, tr.consume_rate,
       -- when the lag, growing at its sampled rate, exceeds what retention
       -- keeps: retention.bytes over the bytes per record, or retention.ms
       -- times the produce rate, whichever is smaller
       CASE WHEN tr.produce_rate > tr.consume_rate AND cap.records IS NOT NULL
            THEN now() + greatest(cap.records - (e.end_offset - o.next_offset), 0)
                         / (tr.produce_rate - tr.consume_rate) * interval '1 second'
       END AS projected_loss_at
  FROM mq.consumer_offset o
  JOIN mq.topic t USING (topic_id)
  JOIN mq.partition_state ps USING (topic_id, partition)
  LEFT JOIN mq.retention_loss l USING (group_id, topic_id, partition)
 CROSS JOIN LATERAL (SELECT coalesce(ps.high_watermark, mq._log_end_offset(o.topic_id, o.partition)) AS end_offset) e
  LEFT JOIN LATERAL (
       SELECT regr_slope(s.end_offset, extract(epoch FROM s.sampled_at)) AS produce_rate,
              regr_slope(s.committed, extract(epoch FROM s.sampled_at)) AS consume_rate
         FROM mq.lag_sample s
        WHERE s.group_id = o.group_id AND s.topic_id = o.topic_id AND s.partition = o.partition
          AND s.sampled_at > now() - interval '15 minutes') tr ON true
  LEFT JOIN LATERAL (
       SELECT least(
                CASE WHEN (t.config->>'retention.bytes')::bigint >= 0 AND e.end_offset > ps.log_start_offset
                     THEN (t.config->>'retention.bytes')::numeric
                          / greatest((SELECT sum(pg_total_relation_size(sg.relid)) FROM mq.segment sg
                                       WHERE sg.topic_id = o.topic_id AND sg.partition = o.partition)::numeric
                                     / (e.end_offset - ps.log_start_offset), 1) END,
                CASE WHEN (t.config->>'retention.ms')::bigint >= 0 AND tr.produce_rate > 0
                     THEN tr.produce_rate * (t.config->>'retention.ms')::numeric / 1000 END) AS records) cap ON true
 WHERE mq._describable('group', o.group_id) AND mq._describable('topic', t.topic_name);

CREATE VIEW mq.partition_stats WITH (security_barrier) AS
SELECT t.topic_name AS topic, ps.partition, ps.log_start_offset, e.log_end_offset,
       coalesce(ps.high_watermark, e.log_end_offset) AS high_watermark,
       e.log_end_offset - ps.log_start_offset AS records,
       (SELECT count(*) FROM mq.segment sg WHERE sg.topic_id = ps.topic_id AND sg.partition = ps.partition) AS segments,
       (SELECT sum(pg_total_relation_size(sg.relid)) FROM mq.segment sg
         WHERE sg.topic_id = ps.topic_id AND sg.partition = ps.partition) AS bytes,
       mq._offset_time(ps.topic_id, ps.partition, ps.log_start_offset) AS oldest_record_at,
       mq._offset_time(ps.topic_id, ps.partition, e.log_end_offset - 1) AS newest_record_at,
       ps.leader_epoch, ps.role
  FROM mq.partition_state ps
  JOIN mq.topic t USING (topic_id)
 CROSS JOIN LATERAL (SELECT mq._log_end_offset(ps.topic_id, ps.partition) AS log_end_offset) e
 WHERE mq._describable('topic', t.topic_name);
