-- pgTAP: log semantics of mq.
--
-- Runs in a database where `CREATE EXTENSION pgtap; CREATE EXTENSION mq;`
-- already ran.  Everything happens in one transaction that is rolled back;
-- aborted producers are simulated with savepoints and with statements that
-- fail after producing (throws_ok runs its statement in a subtransaction).
--
--   1. gapless offsets across rolled-back savepoints and aborted statements
--   2. segment rolling (segment.records), fetch across segment boundaries,
--      maintenance keeping an empty segment ahead
--   3. keyed records go to mq.partition_for(topic, key)
--   4. order per partition within a batch
--   5. every error condition raises its SQLSTATE
--   6. visibility of records produced earlier in the same transaction
--   7. headers round-trip
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
SELECT plan(157);

-- rows in one log table (ONLY: a segment has no children)
CREATE FUNCTION pg_temp.rows_in(rel regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ONLY %s', rel) INTO n;
    RETURN n;
END $$;
-- rows of a segment outside the offset range it is declared for
CREATE FUNCTION pg_temp.misplaced(rel regclass, base bigint, stop bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ONLY %s WHERE msg_offset < %s OR msg_offset >= %s', rel, base, stop) INTO n;
    RETURN n;
END $$;
-- segments of a partition that do not continue where the previous one ended
CREATE FUNCTION pg_temp.segment_gaps(p_topic text, p_partition int) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (
        SELECT base_offset, end_offset, lag(end_offset) OVER (ORDER BY base_offset) AS prev_end
          FROM mq.segments WHERE topic = p_topic AND partition = p_partition) s
     WHERE (prev_end IS NOT NULL AND base_offset <> prev_end) OR end_offset <= base_offset
$$;

-------------------------------------------------------------------------------
-- 1. Gapless offsets
-------------------------------------------------------------------------------
SELECT mq.create_topic('gl', 1) > 0 AS created \gset
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'a'::bytea)), 0::bigint,
          'first record of a partition gets offset 0');

SAVEPOINT s1;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'b'::bytea)), 1::bigint,
          'a record in a savepoint gets the next offset');
SELECT results_eq($$SELECT msg_offset FROM mq.send_batch('gl', NULL, ARRAY['c', 'd']::bytea[])$$,
                  $$VALUES (2::bigint), (3::bigint)$$,
                  'a batch in the same savepoint continues from there');
ROLLBACK TO SAVEPOINT s1;
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'gl'), 1::bigint,
          'after ROLLBACK TO SAVEPOINT the log end is back at 1');
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'e'::bytea)), 1::bigint,
          'the rolled-back offsets are given out again: no hole');

SAVEPOINT outer_sp;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'f'::bytea)), 2::bigint,
          'offset 2 in the outer savepoint');
SAVEPOINT inner_sp;
SELECT results_eq($$SELECT msg_offset FROM mq.send_batch('gl', NULL, ARRAY['g', 'h']::bytea[])$$,
                  $$VALUES (3::bigint), (4::bigint)$$,
                  'offsets 3 and 4 in the inner savepoint');
ROLLBACK TO SAVEPOINT inner_sp;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'i'::bytea)), 3::bigint,
          'after rolling back the inner savepoint only, the next offset is 3');
RELEASE SAVEPOINT outer_sp;

SAVEPOINT s2;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'x'::bytea)), 4::bigint, 'offset 4, to be rolled back');
ROLLBACK TO SAVEPOINT s2;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'y'::bytea)), 4::bigint, 'offset 4 again, to be rolled back again');
ROLLBACK TO SAVEPOINT s2;
RELEASE SAVEPOINT s2;
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'j'::bytea)), 4::bigint,
          'two rollbacks of the same offset leave no hole');

-- a statement that fails after producing: its records are gone
SELECT throws_ok($q$DO $do$ BEGIN
                       PERFORM mq.send('gl', NULL::bytea, 'lost1'::bytea);
                       PERFORM mq.send_batch('gl', NULL, ARRAY['lost2', 'lost3']::bytea[]);
                       RAISE EXCEPTION 'abort after produce';
                   END $do$$q$, 'P0001', 'abort after produce',
                 'a statement that fails after producing aborts');
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'k'::bytea)), 5::bigint,
          'the aborted statement left no hole');
-- a produce that fails half-way (unknown partition after a good record)
SELECT throws_ok($q$DO $do$ BEGIN
                       PERFORM mq.send('gl', NULL::bytea, 'lost4'::bytea);
                       PERFORM mq.send('gl', NULL::bytea, 'lost5'::bytea, NULL, 1);
                   END $do$$q$, 'MQ006', NULL,
                 'a produce to an unknown partition aborts the statement');
SELECT is((SELECT msg_offset FROM mq.send('gl', NULL::bytea, 'l'::bytea)), 6::bigint,
          'the failed produce left no hole');
SELECT results_eq($$SELECT msg_offset, value FROM mq.fetch('gl', 0, 0)$$,
                  $$VALUES (0::bigint, 'a'::bytea), (1, 'e'), (2, 'f'), (3, 'i'), (4, 'j'), (5, 'k'), (6, 'l')$$,
                  'the log holds exactly the surviving records, offsets 0..6 without gaps');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'gl'), 7::bigint,
          'log end offset = number of surviving records');

-- several partitions in one rolled-back batch
SELECT mq.create_topic('gl3', 3) > 0 AS created \gset
SAVEPOINT s4;
SELECT is((SELECT count(*)::int FROM generate_series(0, 2) p, mq.send_batch('gl3', NULL, ARRAY['a', 'b', 'c']::bytea[], NULL, p)),
          9, 'three records to each of three partitions, to be rolled back');
ROLLBACK TO SAVEPOINT s4;
SELECT is((SELECT sum(log_end_offset)::int FROM mq.partitions WHERE topic = 'gl3'), 0,
          'the rollback empties all three partitions again');
SELECT results_eq($$SELECT s.partition, s.msg_offset
                      FROM mq.send_batch('gl3', ARRAY['foobar', 'abc', 'a-little-bit-long-string', 'foobar']::bytea[],
                                         ARRAY['1', '2', '3', '4']::bytea[]) s$$,
                  $$SELECT mq.partition_for('gl3', k::bytea), o::bigint
                      FROM (VALUES ('foobar', 0), ('abc', 1), ('a-little-bit-long-string', 0), ('foobar', 2)) v(k, o)$$,
                  'after the rollback each partition starts at offset 0 again');

-------------------------------------------------------------------------------
-- 2. Segment rolling
-------------------------------------------------------------------------------
SELECT mq.create_topic('seg', 1, '{"segment.records": 10}') > 0 AS created \gset
SELECT is((SELECT count(*)::int FROM mq.segments WHERE topic = 'seg' AND base_offset = 0 AND end_offset = 10), 1,
          'a new topic with segment.records 10 starts with segment [0, 10)');
SELECT is((SELECT count(*)::int FROM mq.send_batch('seg', NULL,
                  (SELECT array_agg(convert_to('s' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 19) i))), 20,
          '20 records in one batch');
SELECT is((SELECT count(*)::int FROM generate_series(20, 34) i, mq.send('seg', NULL::bytea, convert_to('s' || i, 'UTF8'))), 15,
          '15 more records one by one');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'seg'), 35::bigint, 'log end offset 35');
SELECT is((SELECT count(*)::int FROM mq.segments WHERE topic = 'seg' AND base_offset < 35), 4,
          '35 records at 10 per segment live in 4 segments');
SELECT is(pg_temp.segment_gaps('seg', 0), 0::bigint, 'segment ranges are contiguous');
SELECT is((SELECT min(base_offset) FROM mq.segments WHERE topic = 'seg'), 0::bigint, 'the first segment starts at offset 0');
SELECT is((SELECT count(*)::int FROM mq.segments WHERE topic = 'seg' AND end_offset - base_offset <> 10), 0,
          'every segment spans segment.records = 10 offsets');
SELECT results_eq($$SELECT base_offset, pg_temp.rows_in(relid) FROM mq.segments
                     WHERE topic = 'seg' AND base_offset < 35 ORDER BY base_offset$$,
                  $$VALUES (0::bigint, 10::bigint), (10, 10), (20, 10), (30, 5)$$,
                  'each segment table holds the records of its range');
SELECT is((SELECT sum(pg_temp.misplaced(relid, base_offset, end_offset))::int FROM mq.segments WHERE topic = 'seg'), 0,
          'no record lies outside its segment''s range');
SELECT results_eq($$SELECT msg_offset, value FROM mq.fetch('seg', 0, 5, 20)$$,
                  $$SELECT i::bigint, convert_to('s' || i, 'UTF8') FROM generate_series(5, 24) i$$,
                  'fetch across two segment boundaries returns the records in order');
SELECT results_eq($$SELECT msg_offset, value FROM mq.fetch('seg', 0, 0)$$,
                  $$SELECT i::bigint, convert_to('s' || i, 'UTF8') FROM generate_series(0, 34) i$$,
                  'fetch of the whole log returns all 35 records in order');
SELECT results_eq($$SELECT msg_offset FROM mq.fetch('seg', 0, 9, 2)$$, $$VALUES (9::bigint), (10::bigint)$$,
                  'a fetch of two records straddling a boundary');
SELECT results_eq($$SELECT msg_offset FROM mq.fetch('seg', 0, 30)$$, $$SELECT generate_series(30, 34)::bigint$$,
                  'a fetch from the start of the active segment');
-- maintenance keeps one empty segment ahead of the log end
SELECT cmp_ok(mq.run_maintenance(), '>=', 1, 'maintenance creates the missing segment ahead');
SELECT ok(EXISTS (SELECT 1 FROM mq.segments s JOIN mq.partitions p USING (topic, partition)
                   WHERE s.topic = 'seg' AND s.base_offset > p.log_end_offset),
          'after maintenance a segment lies wholly beyond the log end');
SELECT is((SELECT sum(pg_temp.rows_in(relid))::int FROM mq.segments WHERE topic = 'seg' AND base_offset >= 35), 0,
          'the segments ahead are empty');
SELECT is(pg_temp.segment_gaps('seg', 0), 0::bigint, 'still contiguous after maintenance');
SELECT is(mq.run_maintenance(), 0, 'a second maintenance run has nothing to do');
SELECT count(*) AS segs_before FROM mq.segments WHERE topic = 'seg' \gset
SELECT results_eq($$SELECT msg_offset FROM mq.send_batch('seg', NULL, ARRAY['s35', 's36', 's37', 's38', 's39', 's40']::bytea[])$$,
                  $$SELECT generate_series(35, 40)::bigint$$,
                  'a batch that fills the active segment and spills into the next one');
SELECT is((SELECT count(*) FROM mq.segments WHERE topic = 'seg'), :segs_before::bigint,
          'producing into the prepared segment created no segment (no DDL on the hot path)');
SELECT results_eq($$SELECT base_offset, pg_temp.rows_in(relid) FROM mq.segments
                     WHERE topic = 'seg' AND base_offset IN (30, 40) ORDER BY base_offset$$,
                  $$VALUES (30::bigint, 10::bigint), (40, 1)$$,
                  'offsets 35..39 completed segment [30, 40), offset 40 went to [40, 50)');
-- a changed segment.records applies to segments created afterwards
SELECT lives_ok($$SELECT mq.alter_topic('seg', '{"segment.records": 4}')$$, 'alter segment.records to 4');
SELECT cmp_ok(mq.run_maintenance(), '>=', 1, 'maintenance creates the next segment');
SELECT is((SELECT end_offset - base_offset FROM mq.segments WHERE topic = 'seg' ORDER BY base_offset DESC LIMIT 1), 4::bigint,
          'the new segment spans 4 offsets');
SELECT is(pg_temp.segment_gaps('seg', 0), 0::bigint, 'contiguous across the change of span');
SELECT is((SELECT count(*)::int FROM mq.send_batch('seg', NULL, array_fill('t'::bytea, ARRAY[25]))), 25,
          '25 more records: through the last prepared segment and into new ones');
SELECT is(pg_temp.segment_gaps('seg', 0), 0::bigint, 'segments created on the produce path are contiguous too');
SELECT is((SELECT sum(pg_temp.misplaced(relid, base_offset, end_offset))::int FROM mq.segments WHERE topic = 'seg'), 0,
          'no record lies outside its segment''s range');
SELECT results_eq($$SELECT count(*), min(msg_offset), max(msg_offset) FROM mq.fetch('seg', 0, 0)$$,
                  $$VALUES (66::bigint, 0::bigint, 65::bigint)$$,
                  'all 66 records are fetched, offsets 0..65');
SELECT is((SELECT sum(pg_temp.rows_in(relid))::int FROM mq.segments WHERE topic = 'seg'), 66,
          'the segment tables hold exactly the 66 records');
-- rolling inside a rolled-back savepoint
SAVEPOINT s5;
SELECT is((SELECT count(*)::int FROM mq.send_batch('seg', NULL, array_fill('u'::bytea, ARRAY[30]))), 30,
          '30 records in a savepoint, rolling over several new segments');
ROLLBACK TO SAVEPOINT s5;
SELECT results_eq($$SELECT msg_offset FROM mq.send_batch('seg', NULL, ARRAY['v', 'w']::bytea[])$$,
                  $$VALUES (66::bigint), (67::bigint)$$,
                  'after rolling back records and their new segments, offsets continue at 66');
SELECT is(pg_temp.segment_gaps('seg', 0), 0::bigint, 'segments are contiguous after the rollback');

-------------------------------------------------------------------------------
-- 3. Keyed records go to partition_for(topic, key)
-------------------------------------------------------------------------------
SELECT mq.create_topic('kp', 5) > 0 AS created \gset
SELECT is((SELECT count(*)::int FROM mq.send_batch('kp',
              (SELECT array_agg('key-' || (i % 37) ORDER BY i) FROM generate_series(1, 200) i),
              (SELECT array_agg('val-' || i ORDER BY i) FROM generate_series(1, 200) i))), 200,
          '200 keyed records in one batch');
SELECT is((SELECT count(*)::int FROM generate_series(1, 30) i,
                  mq.send('kp', convert_to('key-' || (i % 37), 'UTF8'), convert_to('single-' || i, 'UTF8'))), 30,
          '30 keyed records one by one');
SELECT is((SELECT count(*)::int FROM generate_series(0, 4) p, mq.fetch('kp', p, 0) r), 230,
          'all 230 records are in the log');
SELECT is((SELECT count(*)::int FROM generate_series(0, 4) p, mq.fetch('kp', p, 0) r
            WHERE r.partition <> mq.partition_for('kp', r.key)), 0,
          'every keyed record is in the partition partition_for gives for its key');
SELECT is((SELECT count(DISTINCT r.partition)::int FROM generate_series(0, 4) p, mq.fetch('kp', p, 0) r), 5,
          '37 keys use all 5 partitions');
SELECT is((SELECT count(*)::int FROM generate_series(0, 4) p, mq.fetch('kp', p, 0) r
            WHERE r.partition <> (mq.murmur2(r.key) & 2147483647) % 5), 0,
          'partition = (murmur2(key) & 0x7fffffff) % partitions for every record');
SELECT is((SELECT partition FROM mq.send('kp', 'foobar'::bytea, 'v'::bytea)), (-790332482 & 2147483647) % 5,
          'key "foobar" lands where Kafka puts it');
SELECT is((SELECT partition FROM mq.send('kp', 'foobar', 'v')), (-790332482 & 2147483647) % 5,
          'a text key lands where its UTF-8 bytes do');
-- records of one key stay in order
SELECT is((SELECT count(*)::int FROM (
              SELECT r.key, r.msg_offset, r.value,
                     lag(substring(convert_from(r.value, 'UTF8') FROM '[0-9]+$')::int)
                         OVER (PARTITION BY r.key ORDER BY r.msg_offset) AS prev_n,
                     substring(convert_from(r.value, 'UTF8') FROM '[0-9]+$')::int AS n
                FROM generate_series(0, 4) p, mq.fetch('kp', p, 0) r
               WHERE convert_from(r.value, 'UTF8') LIKE 'val-%') x
            WHERE prev_n >= n), 0,
          'within a key, records of the batch are in the order they were sent');

-------------------------------------------------------------------------------
-- 4. Order per partition within a batch
-------------------------------------------------------------------------------
SELECT mq.create_topic('ord', 3) > 0 AS created \gset
CREATE TEMP TABLE ord_sent ON COMMIT DROP AS
SELECT s.partition, s.msg_offset, row_number() OVER () AS n
  FROM mq.send_batch('ord',
                     (SELECT array_agg(('k' || (i % 7))::bytea ORDER BY i) FROM generate_series(1, 60) i),
                     (SELECT array_agg(convert_to(lpad(i::text, 3, '0'), 'UTF8') ORDER BY i) FROM generate_series(1, 60) i)) s;
SELECT is((SELECT count(*)::int FROM ord_sent), 60, 'send_batch returns one row per record');
SELECT is((SELECT count(*)::int FROM ord_sent o, generate_series(1, 60) i
            WHERE o.n = i AND o.partition <> mq.partition_for('ord', ('k' || (i % 7))::bytea)), 0,
          'returned row n has the partition of input record n');
SELECT is((SELECT count(*)::int FROM (
              SELECT msg_offset, lag(msg_offset) OVER (PARTITION BY partition ORDER BY n) AS prev
                FROM ord_sent) x WHERE msg_offset <> prev + 1), 0,
          'within a partition, input order gets consecutive offsets');
SELECT is((SELECT count(*)::int FROM (SELECT partition, min(msg_offset) AS first FROM ord_sent GROUP BY partition) x
            WHERE first <> 0), 0, 'each partition starts at offset 0');
SELECT results_eq($$SELECT r.partition, r.msg_offset, r.value
                      FROM generate_series(0, 2) p, mq.fetch('ord', p, 0) r ORDER BY 1, 2$$,
                  $$SELECT o.partition, o.msg_offset, convert_to(lpad(o.n::text, 3, '0'), 'UTF8') FROM ord_sent o ORDER BY 1, 2$$,
                  'fetch returns each record at the offset send_batch reported');
SELECT is((SELECT count(*)::int FROM (
              SELECT r.value, lag(r.value) OVER (PARTITION BY r.partition ORDER BY r.msg_offset) AS prev
                FROM generate_series(0, 2) p, mq.fetch('ord', p, 0) r) x
            WHERE convert_from(prev, 'UTF8') >= convert_from(value, 'UTF8')), 0,
          'in every partition the batch''s records appear in input order');
SELECT results_eq($$SELECT partition, msg_offset FROM mq.send_batch('ord', NULL, ARRAY['n1', 'n2', 'n3']::bytea[], NULL, 2)$$,
                  $$SELECT 2, o FROM generate_series((SELECT count(*) FROM ord_sent WHERE partition = 2),
                                                     (SELECT count(*) FROM ord_sent WHERE partition = 2) + 2) o$$,
                  'a batch to an explicit partition continues after the earlier batch, in input order');
-- a large batch (more than one multi-insert round) keeps its order
SELECT mq.create_topic('big', 1) > 0 AS created \gset
SELECT results_eq($$SELECT count(*), min(msg_offset), max(msg_offset) FROM mq.send_batch('big', NULL,
                      (SELECT array_agg(int4send(i) ORDER BY i) FROM generate_series(0, 2999) i))$$,
                  $$VALUES (3000::bigint, 0::bigint, 2999::bigint)$$,
                  '3000 records in one batch get offsets 0..2999');
SELECT is((SELECT count(*)::int FROM mq.fetch('big', 0, 0, 1000000) r WHERE r.value <> int4send(r.msg_offset::int)), 0,
          'the 3000 records are stored in input order');
SELECT is((SELECT count(*)::int FROM mq.fetch('big', 0, 0, 1000000)), 3000, 'all 3000 are fetched');

-------------------------------------------------------------------------------
-- 5. Error conditions and their SQLSTATEs
-------------------------------------------------------------------------------
-- MQ001 unknown topic
SELECT throws_ok($$SELECT * FROM mq.send('nosuch', NULL::bytea, 'v'::bytea)$$, 'MQ001',
                 'topic "nosuch" does not exist', 'send to an unknown topic: MQ001');
SELECT throws_ok($$SELECT * FROM mq.send_batch('nosuch', NULL, ARRAY['v']::bytea[])$$, 'MQ001', NULL,
                 'send_batch to an unknown topic: MQ001');
SELECT throws_ok($$SELECT * FROM mq.fetch('nosuch', 0, 0)$$, 'MQ001', NULL, 'fetch from an unknown topic: MQ001');
SELECT throws_ok($$SELECT * FROM mq.poll('g', 'nosuch')$$, 'MQ001', NULL, 'poll of an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'nosuch', 0, 0)$$, 'MQ001', NULL, 'commit_offset on an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.committed_offset('g', 'nosuch', 0)$$, 'MQ001', NULL, 'committed_offset on an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.partition_for('nosuch', 'k'::bytea)$$, 'MQ001', NULL, 'partition_for on an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.drop_topic('nosuch')$$, 'MQ001', NULL, 'drop_topic of an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.alter_topic('nosuch', '{}')$$, 'MQ001', NULL, 'alter_topic of an unknown topic: MQ001');
SELECT throws_ok($$SELECT mq.add_partitions('nosuch', 1)$$, 'MQ001', NULL, 'add_partitions of an unknown topic: MQ001');
-- MQ002 topic exists
SELECT throws_ok($$SELECT mq.create_topic('gl')$$, 'MQ002', 'topic "gl" already exists', 'create an existing topic: MQ002');
-- MQ003 invalid topic name
SELECT throws_ok($$SELECT mq.create_topic('')$$, 'MQ003', NULL, 'empty topic name: MQ003');
SELECT throws_ok($$SELECT mq.create_topic('.')$$, 'MQ003', NULL, 'topic name ".": MQ003');
SELECT throws_ok($$SELECT mq.create_topic('..')$$, 'MQ003', NULL, 'topic name "..": MQ003');
SELECT throws_ok(format('SELECT mq.create_topic(%L)', repeat('a', 250)), 'MQ003', NULL, '250-character topic name: MQ003');
SELECT lives_ok(format('SELECT mq.create_topic(%L)', repeat('a', 249)), '249-character topic name is fine');
SELECT throws_ok($$SELECT mq.create_topic('bad name')$$, 'MQ003', NULL, 'topic name with a space: MQ003');
SELECT throws_ok($$SELECT mq.create_topic(NULL)$$, 'MQ010', 'topic must not be null', 'null topic name: MQ010');
-- Kafka's collision rule: '.' and '_' would give two topics one metric name
SELECT lives_ok($$SELECT mq.create_topic('co_ll')$$, 'a name with an underscore');
SELECT throws_ok($$SELECT mq.create_topic('co.ll')$$, 'MQ003', 'topic "co.ll" collides with existing topic "co_ll"',
                 'a name differing only in "." against "_": MQ003');
SELECT is((SELECT count(*) FROM mq.topics WHERE topic = 'co.ll'), 0::bigint, 'and no topic made');
SELECT lives_ok($$SELECT mq.create_topic('co.lx')$$, 'a name differing in another character is fine');
SELECT is(array[mq._topic_name_valid('a.b-C_9'), mq._topic_name_valid('a b'), mq._topic_name_valid('..'),
                mq._topic_name_valid(repeat('x', 250))],
          array[true, false, false, false], '_topic_name_valid is the rule create_topic checks');
-- MQ004 invalid config
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"no.such.key": 1}')$$, 'MQ004',
                 'unknown topic config key "no.such.key"', 'unknown config key: MQ004');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"retention.ms": "forever"}')$$, 'MQ004', NULL, 'bad config value: MQ004');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"retention.ms": "3 weeks"}')$$, 'MQ004', NULL, 'bad config unit: MQ004');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"segment.bytes": 13}')$$, 'MQ004',
                 'invalid value 13 for "segment.bytes": the minimum is 14', 'segment.bytes below Kafka''s minimum: MQ004');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"segment.records": 0}')$$, 'MQ004', NULL,
                 'segment.records below its minimum: MQ004');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '{"retention.ms": -2}')$$, 'MQ004', NULL, 'retention.ms below -1: MQ004');
SELECT lives_ok($$SELECT mq.create_topic('misr', 1, '{"min.insync.replicas": 3, "replication.factor": 2}')$$,
                'min.insync.replicas above replication.factor is taken, as by Kafka (acks=all is then refused: produce_contract.sql)');
SELECT throws_ok($$SELECT mq.create_topic('c', 1, '[]')$$, 'MQ004', NULL, 'config that is not an object: MQ004');
SELECT lives_ok($$SELECT mq.create_topic('rf2', 1, '{"replication.factor": 2, "min.insync.replicas": 1}')$$,
                'a topic with replication.factor 2');
SELECT throws_ok($$SELECT mq.alter_topic('rf2', '{"replication.factor": 3}')$$, 'MQ004', NULL,
                 'changing replication.factor: MQ004');
SELECT throws_ok($$SELECT mq.alter_topic('rf2', '{"replication.factor": null}')$$, 'MQ004', NULL,
                 'resetting replication.factor: MQ004');
SELECT lives_ok($$SELECT mq.alter_topic('rf2', '{"min.insync.replicas": 3}')$$,
                'alter_topic raising min.insync.replicas above replication.factor is taken, as by Kafka');
SELECT is((SELECT config FROM mq.topics WHERE topic = 'rf2'), '{"replication.factor": 2, "min.insync.replicas": 3}'::jsonb,
          'refused alter_topic calls left the config unchanged; the taken one changed it');
-- MQ005 invalid partitions
SELECT throws_ok($$SELECT mq.create_topic('c', 0)$$, 'MQ005', 'invalid partition count 0', 'zero partitions: MQ005');
SELECT throws_ok($$SELECT mq.create_topic('c', 10001)$$, 'MQ005', NULL, '10001 partitions: MQ005');
SELECT throws_ok($$SELECT mq.add_partitions('gl', 0)$$, 'MQ005', NULL, 'adding zero partitions: MQ005');
SELECT throws_ok($$SELECT mq.add_partitions('gl', 10000)$$, 'MQ005', NULL, 'more than 10000 partitions in all: MQ005');
-- MQ006 unknown partition
SELECT throws_ok($$SELECT * FROM mq.send('gl', NULL::bytea, 'v'::bytea, NULL, 1)$$, 'MQ006',
                 'partition 1 of topic "gl" does not exist', 'send to an unknown partition: MQ006');
SELECT throws_ok($$SELECT * FROM mq.send('gl', NULL::bytea, 'v'::bytea, NULL, -1)$$, 'MQ006', NULL,
                 'send to partition -1: MQ006');
SELECT throws_ok($$SELECT * FROM mq.send_batch('gl', NULL, ARRAY['v']::bytea[], NULL, 5)$$, 'MQ006', NULL,
                 'send_batch to an unknown partition: MQ006');
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 1, 0)$$, 'MQ006', NULL, 'fetch from an unknown partition: MQ006');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'gl', 1, 0)$$, 'MQ006', NULL, 'commit_offset on an unknown partition: MQ006');
SELECT throws_ok($$SELECT mq.committed_offset('g', 'gl', 1)$$, 'MQ006', NULL, 'committed_offset on an unknown partition: MQ006');
-- MQ007 offset out of range
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 0, -1)$$, 'MQ007',
                 'offset -1 is below the log start offset 0 of topic "gl" partition 0', 'fetch below the log start: MQ007');
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 0, 8)$$, 'MQ007',
                 'offset 8 is beyond the log end offset 7 of topic "gl" partition 0', 'fetch beyond the log end: MQ007');
SELECT is((SELECT count(*)::int FROM mq.fetch('gl', 0, 7)), 0, 'fetch at exactly the log end returns nothing');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'gl', 0, -1)$$, 'MQ007', NULL, 'commit of a negative offset: MQ007');
-- MQ009 log immutable
SELECT throws_ok(format('UPDATE %s SET value = NULL', (SELECT relid FROM mq.segments WHERE topic = 'gl' ORDER BY base_offset LIMIT 1)),
                 'MQ009', 'records of an mq log cannot be updated', 'UPDATE of a segment: MQ009');
SELECT throws_ok(format('DELETE FROM %s', (SELECT relid FROM mq.partitions WHERE topic = 'gl')),
                 'MQ009', 'records of an mq log cannot be deleted', 'DELETE from a partition: MQ009');
SELECT throws_ok(format('TRUNCATE %s', (SELECT pg_partition_root(relid) FROM mq.partitions WHERE topic = 'gl')),
                 'MQ009', 'records of an mq log cannot be truncated', 'TRUNCATE of a topic table: MQ009');
SELECT results_eq($$SELECT msg_offset, value FROM mq.fetch('gl', 0, 0)$$,
                  $$VALUES (0::bigint, 'a'::bytea), (1, 'e'), (2, 'f'), (3, 'i'), (4, 'j'), (5, 'k'), (6, 'l')$$,
                  'the refused statements left the log unchanged');
-- MQ010 invalid argument
SELECT throws_ok($$SELECT * FROM mq.send(NULL, NULL::bytea, 'v'::bytea)$$, 'MQ010', 'topic must not be null',
                 'send with a null topic: MQ010');
SELECT throws_ok($$SELECT * FROM mq.send_batch('gl', ARRAY['k1', 'k2']::bytea[], ARRAY['v']::bytea[])$$, 'MQ010',
                 'keys, vals and headers must have the same length', 'keys and vals of different lengths: MQ010');
SELECT throws_ok($$SELECT * FROM mq.send_batch('gl', NULL, ARRAY['v']::bytea[], ARRAY['{}', '{}']::jsonb[])$$, 'MQ010', NULL,
                 'headers and vals of different lengths: MQ010');
SELECT throws_ok($$SELECT * FROM mq.send_batch('gl', NULL::bytea[], NULL::bytea[])$$, 'MQ010', 'vals must not be null',
                 'null vals array: MQ010');
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 0, 0, 0)$$, 'MQ010', NULL, 'max_records 0: MQ010');
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 0, 0, 1000001)$$, 'MQ010', NULL, 'max_records above 1000000: MQ010');
SELECT throws_ok($$SELECT * FROM mq.fetch('gl', 0, NULL)$$, 'MQ010', NULL, 'null from_offset: MQ010');
SELECT throws_ok($$SELECT * FROM mq.poll('', 'gl')$$, 'MQ010', 'group_id must not be empty', 'empty group id: MQ010');
SELECT throws_ok($$SELECT mq.commit_offset('', 'gl', 0, 0)$$, 'MQ010', NULL, 'commit with an empty group id: MQ010');
SELECT throws_ok($$SELECT * FROM mq.send('gl', NULL::bytea, 'v'::bytea, producer_id => 1)$$, 'MQ010', NULL,
                 'producer_id without epoch and sequence: MQ010');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'gl'), 7::bigint, 'no failed call wrote a record');

-------------------------------------------------------------------------------
-- 6. Visibility within the producing transaction
-------------------------------------------------------------------------------
SELECT mq.create_topic('vis', 2) > 0 AS created \gset
SELECT results_eq($$SELECT partition, msg_offset FROM mq.send('vis', 'k'::bytea, 'first'::bytea, NULL, 1)$$,
                  $$VALUES (1, 0::bigint)$$, 'produce one record');
SELECT results_eq($$SELECT partition, msg_offset, value FROM mq.fetch('vis', 1, 0)$$,
                  $$VALUES (1, 0::bigint, 'first'::bytea)$$,
                  'a later statement of the same transaction fetches it');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'vis' AND partition = 1), 1::bigint,
          'mq.partitions counts it in the log end offset');
SELECT is((SELECT high_watermark FROM mq.partitions WHERE topic = 'vis' AND partition = 1), 1::bigint,
          'and in the high watermark of the unreplicated partition');
SELECT results_eq($$SELECT partition, msg_offset FROM mq.poll('vis-group', 'vis')$$,
                  $$VALUES (1, 0::bigint)$$, 'poll sees it');
SELECT lives_ok($$SELECT mq.commit_offset('vis-group', 'vis', 1, 1)$$, 'its offset can be committed');
SELECT is(mq.committed_offset('vis-group', 'vis', 1), 1::bigint, 'the commit is visible in the transaction');
SELECT is((SELECT count(*)::int FROM mq.poll('vis-group', 'vis')), 0, 'after the commit poll returns nothing');
SELECT is((SELECT count(*)::int FROM mq.send_batch('vis', NULL, ARRAY['2', '3']::bytea[], NULL, 1)), 2, 'produce two more');
SELECT results_eq($$SELECT msg_offset FROM mq.poll('vis-group', 'vis')$$, $$VALUES (1::bigint), (2::bigint)$$,
                  'poll returns the new records from the committed position');
SELECT is((SELECT count(*)::int FROM mq.fetch('vis', 0, 0)), 0, 'the other partition stays empty');

-------------------------------------------------------------------------------
-- 7. Headers round-trip
-------------------------------------------------------------------------------
SELECT mq.create_topic('hdr', 1) > 0 AS created \gset
SELECT lives_ok($$SELECT mq.send('hdr', 'k'::bytea, 'v'::bytea,
                                 '{"trace-id": "abc-123", "retries": 3, "tags": ["a", "b"], "nested": {"x": null}, "ünï": "cödé"}')$$,
                'send with headers (bytea overload)');
SELECT lives_ok($$SELECT mq.send('hdr', 'k', 'v', '[{"key": "ct", "value": "text/plain"}, {"key": "ct", "value": "dup"}]')$$,
                'send with a list of header pairs (text overload)');
SELECT lives_ok($$SELECT mq.send('hdr', 'k', '{"v": 1}'::jsonb, headers => '{"schema": 7}')$$,
                'send with headers (jsonb overload, named)');
SELECT lives_ok($$SELECT mq.send('hdr', 'k'::bytea, 'v'::bytea)$$, 'send without headers');
SELECT lives_ok($$SELECT mq.send_batch('hdr', NULL, ARRAY['1', '2', '3']::bytea[],
                                       ARRAY['{"n": 1}', NULL, '{"n": 3}']::jsonb[])$$,
                'send_batch with per-record headers, one null');
SELECT lives_ok($$SELECT mq.send_batch('hdr', ARRAY['a'], ARRAY['b'], ARRAY['{"text": true}']::jsonb[])$$,
                'send_batch (text) with headers');
SELECT results_eq($$SELECT msg_offset, headers FROM mq.fetch('hdr', 0, 0)$$,
                  $$VALUES (0::bigint, '{"trace-id": "abc-123", "retries": 3, "tags": ["a", "b"], "nested": {"x": null}, "ünï": "cödé"}'::jsonb),
                           (1, '[{"key": "ct", "value": "text/plain"}, {"key": "ct", "value": "dup"}]'::jsonb),
                           (2, '{"schema": 7}'::jsonb),
                           (3, NULL::jsonb),
                           (4, '{"n": 1}'::jsonb),
                           (5, NULL::jsonb),
                           (6, '{"n": 3}'::jsonb),
                           (7, '{"text": true}'::jsonb)$$,
                  'headers come back exactly as sent, null where none were given');
SELECT is((SELECT headers->'nested'->'x' FROM mq.fetch('hdr', 0, 0, 1)), 'null'::jsonb,
          'a JSON null inside headers is kept (not stripped)');

SELECT * FROM finish();
ROLLBACK;
