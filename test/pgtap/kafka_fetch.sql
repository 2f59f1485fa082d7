-- mq.kafka_fetch: partitions' records as Kafka record batches (v2).  The
-- bytes themselves are compared with mq-kafka's own encoder by
-- test/kafka/fetch_batch.sh; here: the batch layout, the byte limits, a
-- row per partition, every check mq.fetch makes, with its SQLSTATE, and
-- the high watermark of a replicated partition.
BEGIN;
SELECT plan(30);

SELECT mq.create_topic('kf', 2);
SELECT count(*) FROM mq.send_batch('kf', ARRAY['a', NULL, 'c'], ARRAY['va', 'vb', NULL], partition => 0);
SELECT count(*) FROM mq.send_batch('kf', NULL::text[], ARRAY(SELECT repeat('x', 100) FROM generate_series(1, 10)),
                                   partition => 1);

CREATE FUNCTION pg_temp.i32(b bytea, at integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT ((get_byte(b, at) << 24) | (get_byte(b, at + 1) << 16) | (get_byte(b, at + 2) << 8)
            | get_byte(b, at + 3))::bigint $$;

-- one partition: one batch of 3 records
CREATE TEMP TABLE r0 AS
    SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], ARRAY[1048576]);
SELECT is((SELECT count(*) FROM r0), 1::bigint, 'a row per partition');
SELECT is((SELECT (item, next_offset, records) FROM r0), (1, 3::bigint, 3), 'its item, next offset and record count');
SELECT is((SELECT pg_temp.i32(batches, 8) + 12 FROM r0), (SELECT octet_length(batches)::bigint FROM r0),
          'one batch: its batchLength covers the rest');
SELECT is((SELECT get_byte(batches, 16) FROM r0), 2, 'magic 2');
SELECT is((SELECT pg_temp.i32(batches, 57) FROM r0), 3::bigint, 'record count 3');
SELECT is((SELECT pg_temp.i32(batches, 23) FROM r0), 2::bigint, 'lastOffsetDelta 2');
SELECT is((SELECT substr(batches, 44, 14) FROM r0), '\xffffffffffffffffffffffffffff'::bytea,
          'no producer: id, epoch and base sequence -1');
SELECT is((SELECT bytes FROM r0), (61 + 3 * 24 + 6)::bigint,
          'bytes as the limits count them: 61 a batch, 24 a record, keys and values');

-- byte limits (KIP-74)
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[1], ARRAY[0::bigint], ARRAY[100], ARRAY[1])),
          1, 'the first record always comes, however small max_bytes');
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[1], ARRAY[0::bigint], ARRAY[100],
                                              ARRAY[61 + 124 * 4])),
          4, 'then records while they fit: 61 + 4 x 124 bytes');
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[1], ARRAY[0::bigint], ARRAY[3], ARRAY[1048576])),
          3, 'max_records bounds it');
SELECT is((SELECT array_agg(records ORDER BY item)
             FROM mq.kafka_fetch(ARRAY['kf', 'kf'], ARRAY[0, 1], ARRAY[0::bigint, 0], ARRAY[100, 100],
                                 ARRAY[1048576, 1048576], response_max_bytes => 61 + 3 * 24 + 6 + 61 + 124 * 2)),
          ARRAY[3, 2], 'response_max_bytes spans the partitions, in order');
SELECT is((SELECT array_agg(records ORDER BY item)
             FROM mq.kafka_fetch(ARRAY['kf', 'kf'], ARRAY[0, 1], ARRAY[0::bigint, 0], ARRAY[100, 100],
                                 ARRAY[1048576, 1048576], response_max_bytes => 1)),
          ARRAY[1, 0], 'only the first record of the call passes every limit');
SELECT is((SELECT array_agg(item ORDER BY item)
             FROM mq.kafka_fetch(ARRAY['kf', NULL, 'kf'], ARRAY[0, NULL, 1], ARRAY[0::bigint, NULL, 10],
                                 ARRAY[100, NULL, 100], ARRAY[100, NULL, 100])),
          ARRAY[1, 3], 'no row for a null topic; an empty one at the log end');
SELECT is((SELECT (next_offset, records, octet_length(batches))
             FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[1], ARRAY[10::bigint], ARRAY[1], ARRAY[1]))::text,
          '(10,0,0)', 'at the log end: no records, the offset as given');

-- bad input: MQ010, as mq.fetch
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(NULL, ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ010', 'topics must not be null', 'null array');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0, 1], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ010', NULL, 'arrays of different lengths');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[NULL::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ010', 'from_offset 1 must not be null', 'a null offset of a partition read');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[0]) $$,
                 'MQ010', NULL, 'max_bytes must be positive');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[1], 0) $$,
                 'MQ010', NULL, 'response_max_bytes must be positive');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[0], ARRAY[1]) $$,
                 'MQ010', NULL, 'max_records out of range, as mq.fetch');

-- what mq.fetch refuses, with its SQLSTATE
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['nope'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ001', NULL, 'unknown topic');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[5], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ006', NULL, 'unknown partition');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[4::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ007', NULL, 'an offset beyond the log end');
CREATE ROLE mqkf_reader;
CREATE ROLE mqkf_writer;
SELECT mq.grant('read', 'topic', 'kf', 'mqkf_reader');
SELECT mq.grant('write', 'topic', 'kf', 'mqkf_writer');
SET ROLE mqkf_writer;
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 '42501', NULL, 'WRITE does not give READ: 42501, as mq.fetch');
SET ROLE mqkf_reader;
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['kf'], ARRAY[0], ARRAY[0::bigint], ARRAY[10], ARRAY[1000])),
          3, 'READ on the topic: its records');
RESET ROLE;

-- a replicated partition: only below the high watermark, only on its leader
-- (topics of one database stand for nodes: 'krl' leads, 'krf' follows)
SELECT mq.create_topic(t, 1) FROM unnest(ARRAY['krl', 'krf']) t;
SELECT mq.replica_become_leader('krl', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('krf', 0, 1, 1);
SELECT count(*) FROM mq.send_batch('krl', NULL::text[], ARRAY['a', 'b', 'c', 'd', 'e']);
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['krl'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], ARRAY[100000])),
          0, 'nothing while the follower in the ISR has not fetched');
SELECT count(*) FROM (SELECT mq.replica_fetch('krl', 0, 1, 2, 0, 3, 0)) f;
SELECT count(*) FROM (SELECT mq.replica_fetch('krl', 0, 1, 2, 3, 3, 0)) f;   -- the follower is at 3
SELECT is((SELECT (next_offset, records)
             FROM mq.kafka_fetch(ARRAY['krl'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], ARRAY[100000])),
          (3::bigint, 3), 'then up to the high watermark');
SELECT is((SELECT records FROM mq.kafka_fetch(ARRAY['krl'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], ARRAY[100000])),
          (SELECT count(*)::int FROM mq.fetch('krl', 0, 0, 100)), 'as mq.fetch');
SELECT throws_ok($$ SELECT * FROM mq.kafka_fetch(ARRAY['krf'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], ARRAY[1]) $$,
                 'MQ020', NULL, 'a follower refuses: MQ020, as mq.fetch');

SELECT * FROM finish();
ROLLBACK;
