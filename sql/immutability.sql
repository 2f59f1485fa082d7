--
-- immutability: the log tables (per topic, per partition, per segment)
-- refuse UPDATE, DELETE and TRUNCATE with MQ009, and the log is unchanged
-- afterwards.
--
-- Storage table names contain ids, so the statements are built from the
-- relids in mq.partitions and mq.segments and run through err(); the
-- output names the table by its role only.
--
\set SHOW_CONTEXT never
-- err(statement): 'SQLSTATE: message' of the error the statement raises,
-- or 'no error'.
CREATE FUNCTION pg_temp.err(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- the whole content of a topic, as one comparable value
CREATE FUNCTION pg_temp.log_digest(p_topic text) RETURNS text LANGUAGE sql AS $$
    SELECT md5(coalesce(string_agg(format('%s/%s/%s/%s/%s/%s', r.partition, r.msg_offset, r.created_at,
                                          r.key, r.value, r.headers),
                                   ',' ORDER BY r.partition, r.msg_offset), ''))
      FROM mq.partitions p, mq.fetch(p.topic, p.partition, 0, 1000000) r
     WHERE p.topic = p_topic
$$;
-- every log table of a topic, with a stable name for the output
CREATE FUNCTION pg_temp.log_tables(p_topic text)
RETURNS TABLE (name text, rel regclass) LANGUAGE sql AS $$
    SELECT 'topic', pg_partition_root(p.relid)::regclass
      FROM mq.partitions p WHERE p.topic = p_topic AND p.partition = 0
    UNION ALL
    SELECT 'partition ' || p.partition, p.relid
      FROM mq.partitions p WHERE p.topic = p_topic
    UNION ALL
    SELECT format('segment %s [%s, %s)', s.partition, s.base_offset, s.end_offset), s.relid
      FROM mq.segments s WHERE s.topic = p_topic
$$;
-- two partitions, 5 records per segment: partition 0 gets 12 records over
-- three segments, partition 1 gets 3
SELECT mq.create_topic('imm', 2, '{"segment.records": 5}') > 0 AS created;
SELECT count(*) FROM mq.send_batch('imm', ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'],
                                   ARRAY['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11'],
                                   NULL, 0);
SELECT count(*) FROM mq.send_batch('imm', NULL::bytea[], ARRAY['x', 'y', 'z']::bytea[],
                                   ARRAY['{"h": 1}', '{"h": 2}', '{"h": 3}']::jsonb[], 1);
SELECT mq.run_maintenance() >= 0 AS maintained;
SELECT partition, base_offset, end_offset FROM mq.segments WHERE topic = 'imm' AND base_offset < 15
 ORDER BY partition, base_offset;
SELECT pg_temp.log_digest('imm') AS digest_before \gset
SELECT partition, log_end_offset FROM mq.partitions WHERE topic = 'imm' ORDER BY partition;
--
-- UPDATE, DELETE and TRUNCATE on every log table: all refused
--
SELECT t.name, pg_temp.err(format('UPDATE %s SET value = %L', t.rel, 'changed')) AS "update"
  FROM pg_temp.log_tables('imm') t WHERE t.name NOT LIKE 'segment%' OR t.name LIKE '% [0, %' ORDER BY 1;
SELECT t.name, pg_temp.err(format('DELETE FROM %s', t.rel)) AS "delete"
  FROM pg_temp.log_tables('imm') t WHERE t.name NOT LIKE 'segment%' OR t.name LIKE '% [0, %' ORDER BY 1;
SELECT t.name, pg_temp.err(format('TRUNCATE %s', t.rel)) AS "truncate"
  FROM pg_temp.log_tables('imm') t WHERE t.name NOT LIKE 'segment%' OR t.name LIKE '% [0, %' ORDER BY 1;
-- every segment, including the empty ones ahead of the log end
SELECT count(*) >= 5 AS several_segments,
       bool_and(pg_temp.err(format('UPDATE %s SET key = NULL', t.rel)) = 'MQ009: records of an mq log cannot be updated') AS update_refused,
       bool_and(pg_temp.err(format('DELETE FROM %s', t.rel)) = 'MQ009: records of an mq log cannot be deleted') AS delete_refused,
       bool_and(pg_temp.err(format('TRUNCATE %s', t.rel)) = 'MQ009: records of an mq log cannot be truncated') AS truncate_refused
  FROM pg_temp.log_tables('imm') t WHERE t.name LIKE 'segment%';
-- refused even when no row would change
SELECT t.name, pg_temp.err(format('UPDATE %s SET value = value WHERE false', t.rel)) AS "update",
       pg_temp.err(format('DELETE FROM %s WHERE msg_offset < 0', t.rel)) AS "delete"
  FROM pg_temp.log_tables('imm') t WHERE t.name IN ('topic', 'partition 1') ORDER BY 1;
-- one row by offset, through every level
SELECT t.name, pg_temp.err(format('UPDATE %s SET value = NULL WHERE partition = 0 AND msg_offset = 7', t.rel)) AS "update",
       pg_temp.err(format('DELETE FROM %s WHERE partition = 0 AND msg_offset = 7', t.rel)) AS "delete"
  FROM pg_temp.log_tables('imm') t WHERE t.name IN ('topic', 'partition 0', 'segment 0 [5, 10)') ORDER BY 1;
-- other ways to the same statements
SELECT pg_temp.err(format('TRUNCATE %s, %s', t.rel, u.rel)) AS truncate_two
  FROM pg_temp.log_tables('imm') t, pg_temp.log_tables('imm') u
 WHERE t.name = 'partition 1' AND u.name = 'segment 0 [0, 5)';
SELECT pg_temp.err(format('TRUNCATE %s CASCADE', t.rel)) AS truncate_cascade
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'topic';
SELECT pg_temp.err(format('WITH d AS (DELETE FROM %s RETURNING 1) SELECT count(*) FROM d', t.rel)) AS delete_in_cte
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'topic';
SELECT pg_temp.err(format('UPDATE %s SET msg_offset = msg_offset + 100', t.rel)) AS renumber
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'partition 0';
SELECT pg_temp.err(format('MERGE INTO %s l USING (SELECT 3::bigint AS o) s ON l.msg_offset = s.o
                           WHEN MATCHED THEN DELETE', t.rel)) AS merge_delete
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'topic';
SELECT pg_temp.err(format('MERGE INTO %s l USING (SELECT 3::bigint AS o) s ON l.msg_offset = s.o
                           WHEN MATCHED THEN UPDATE SET value = NULL', t.rel)) AS merge_update
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'segment 0 [0, 5)';
-- inside a transaction that produced to the partition, too
BEGIN;
SELECT partition, msg_offset FROM mq.send('imm', NULL::bytea, 'tx'::bytea, NULL, 1);
SELECT pg_temp.err(format('DELETE FROM %s WHERE msg_offset = 3', t.rel)) AS delete_own_record
  FROM pg_temp.log_tables('imm') t WHERE t.name = 'partition 1';
ROLLBACK;
-- the error as a client sees it
\set VERBOSITY terse
SELECT relid::text AS p0 FROM mq.partitions WHERE topic = 'imm' AND partition = 0 \gset
SELECT relid::text AS seg FROM mq.segments WHERE topic = 'imm' AND partition = 0 AND base_offset = 0 \gset
UPDATE :p0 SET value = NULL;
DELETE FROM :seg WHERE msg_offset = 0;
TRUNCATE :seg;
\set VERBOSITY default
--
-- the log is unchanged
--
SELECT pg_temp.log_digest('imm') = :'digest_before' AS log_unchanged;
SELECT partition, log_end_offset FROM mq.partitions WHERE topic = 'imm' ORDER BY partition;
SELECT partition, msg_offset, key, convert_from(value, 'UTF8') AS value, headers
  FROM mq.fetch('imm', 0, 0) ORDER BY msg_offset;
SELECT partition, msg_offset, key, convert_from(value, 'UTF8') AS value, headers
  FROM mq.fetch('imm', 1, 0) ORDER BY msg_offset;
-- and still takes records at the next offsets
SELECT partition, msg_offset FROM mq.send('imm', NULL::bytea, '12'::bytea, NULL, 0);
SELECT partition, msg_offset FROM mq.send('imm', NULL::bytea, 'w'::bytea, NULL, 1);
-- dropping the topic is the way records leave (besides retention)
SELECT mq.drop_topic('imm');
SELECT count(*) AS topics FROM mq.topics;
