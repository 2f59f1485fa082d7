-- __consumer_offsets (issue 23, item 3; src/consumer_offsets.c): created
-- by mq.ensure_consumer_offsets with the commits known then; each later
-- commit that changes a position (commit_offset, commit_polled, an
-- auto-commit poll) appends a record in Kafka's format, on Kafka's
-- partition for the group, in the committing transaction when it commits
-- (a rolled-back commit, or subtransaction, leaves none); delete_group writes tombstones; produce,
-- delete_records, add_partitions and create_topic on it are MQ070 and
-- change nothing; it is compacted.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(30);

SELECT mq.create_topic('co', 2);
SELECT mq.send('co', NULL::bytea, ('r' || i)::bytea, partition => i % 2) FROM generate_series(0, 19) i;
SELECT mq.commit_offset('early', 'co', 0, 3, 'before');

-- the records of __consumer_offsets, decoded (offset commit key v1, value v3).
-- A transaction appends its records when it commits, and this test is one
-- transaction: before reading them, mq._consumer_offsets_flush() appends
-- what it has queued (a statement of its own, so that the next sees them).
CREATE TEMP VIEW coff AS
SELECT f.partition AS at, f.msg_offset,
       get_byte(f.key, 1) AS key_version,
       convert_from(substr(f.key, 5, (get_byte(f.key, 2) << 8) + get_byte(f.key, 3)), 'UTF8') COLLATE "default" AS grp,
       convert_from(substr(f.key, 7 + (get_byte(f.key, 2) << 8) + get_byte(f.key, 3),
                           (get_byte(f.key, 4 + (get_byte(f.key, 2) << 8) + get_byte(f.key, 3)) << 8)
                           + get_byte(f.key, 5 + (get_byte(f.key, 2) << 8) + get_byte(f.key, 3))), 'UTF8') COLLATE "default" AS topic,
       ('x' || encode(substr(f.key, length(f.key) - 3, 4), 'hex'))::bit(32)::integer AS part,
       get_byte(f.value, 1) AS value_version,
       ('x' || encode(substr(f.value, 3, 8), 'hex'))::bit(64)::bigint AS next_offset,
       ('x' || encode(substr(f.value, 11, 4), 'hex'))::bit(32)::integer AS leader_epoch,
       convert_from(substr(f.value, 17, (get_byte(f.value, 14) << 8) + get_byte(f.value, 15)), 'UTF8') COLLATE "default" AS metadata,
       f.value IS NULL AS tombstone
  FROM generate_series(0, 9) p, LATERAL mq.fetch('__consumer_offsets', p, 0) f;

SELECT is((SELECT count(*) FROM mq.topics WHERE topic = '__consumer_offsets'), 0::bigint,
          'no __consumer_offsets before it is asked for');
SELECT throws_ok($$SELECT mq.ensure_consumer_offsets(0)$$, 'MQ005', NULL, 'creating it with 0 partitions is MQ005');
SELECT is(mq.ensure_consumer_offsets(), 10, 'ensure_consumer_offsets creates it with 10 partitions');
SELECT is(mq.ensure_consumer_offsets(50), 10, 'and then returns the partitions it has');
SELECT is((SELECT config->>'cleanup.policy' FROM mq.topics WHERE topic = '__consumer_offsets'), 'compact',
          'it is compacted');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT at, key_version, grp, topic, part, value_version, next_offset, leader_epoch, metadata
                      FROM coff$$,
                  $$VALUES (1, 1, 'early', 'co', 0, 3, 3::bigint, -1, 'before')$$,
                  'the commit made before is its first record, on Kafka''s partition for the group (abs(hashCode) % 10)');

-- each commit queues its record, which its transaction appends when it commits
SELECT mq.commit_offset('grp-a', 'co', 1, 4, 'm1');
SELECT mq.commit_offset('grp-a', 'co', 1, 6);
SELECT is((SELECT count(*) FROM coff WHERE grp = 'grp-a'), 0::bigint,
          'the records of commits wait for the transaction''s commit');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT at, msg_offset, grp, part, next_offset, metadata FROM coff WHERE at = 1 ORDER BY msg_offset$$,
                  $$VALUES (1, 0::bigint, 'early', 0, 3::bigint, 'before'), (1, 1::bigint, 'grp-a', 1, 4::bigint, 'm1'),
                           (1, 2::bigint, 'grp-a', 1, 6::bigint, '')$$,
                  'commit_offset appends each commit at the next offset of the group''s partition (null metadata: Kafka''s empty string)');
SAVEPOINT s;
SELECT mq.commit_offset('grp-a', 'co', 1, 7);
ROLLBACK TO SAVEPOINT s;
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT count(*) FROM coff WHERE grp = 'grp-a'), 2::bigint, 'a rolled-back commit leaves no record');
SAVEPOINT s2;
SELECT mq.commit_offset('grp-a', 'co', 1, 8);
RELEASE SAVEPOINT s2;
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT max(next_offset) FROM coff WHERE grp = 'grp-a'), 8::bigint,
          'a released subtransaction''s commit is appended with its transaction');

-- polls: commit_polled, and auto-commit only when the position moves
SELECT count(*) FROM mq.poll('poller', 'co', 20);
SELECT is(mq.commit_polled('poller', 'co'), 2, 'commit_polled commits two partitions');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT part, next_offset FROM coff WHERE grp = 'poller' ORDER BY part$$,
                  $$VALUES (0, 10::bigint), (1, 10::bigint)$$,
                  'commit_polled appends one record per partition');
SELECT mq.commit_offset('auto', 'co', 0, 9);
SELECT count(*) FROM mq.poll('auto', 'co', 1, auto_commit => true, partitions => ARRAY[0]);
SELECT mq.commit_offset('auto', 'co', 0, 10);
SELECT count(*) FROM mq.poll('auto', 'co', 1, auto_commit => true, partitions => ARRAY[0]);
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT next_offset FROM coff WHERE grp = 'auto' ORDER BY msg_offset$$,
                  $$VALUES (9::bigint), (10::bigint)$$,
                  'an auto-commit that would move a position back writes nothing, and no record');

-- bad writes: MQ070, nothing changed
CREATE TEMP TABLE ends AS SELECT partition, log_end_offset FROM mq.partitions WHERE topic = '__consumer_offsets';
CREATE TEMP VIEW unchanged AS
SELECT NOT EXISTS (SELECT 1 FROM mq.partitions p JOIN ends e USING (partition)
                    WHERE p.topic = '__consumer_offsets' AND p.log_end_offset <> e.log_end_offset)
       AND (SELECT partitions FROM mq.topics WHERE topic = '__consumer_offsets') = 10 AS ok;
SELECT throws_ok($$SELECT mq.send('__consumer_offsets', 'k'::bytea, 'v'::bytea)$$, 'MQ070', NULL,
                 'mq.send to it is MQ070');
SELECT throws_ok($$SELECT mq.send('__consumer_offsets', NULL::bytea, 'v'::bytea)$$, 'MQ070', NULL,
                 'mq.send without a key too (MQ070 before the compacted topic''s MQ008)');
SELECT throws_ok($$SELECT mq.send_batch('__consumer_offsets', ARRAY['k'::bytea], ARRAY['v'::bytea])$$, 'MQ070', NULL,
                 'mq.send_batch to it is MQ070');
SELECT throws_ok($$SELECT * FROM mq.produce_records('__consumer_offsets', ARRAY['k'::bytea], ARRAY['v'::bytea], partition => 0)$$,
                 'MQ070', NULL, 'mq.produce_records to it is MQ070');
SELECT throws_ok($$SELECT mq.delete_records('__consumer_offsets', 0, -1)$$, 'MQ070', NULL,
                 'mq.delete_records on it is MQ070');
SELECT throws_ok($$SELECT mq.add_partitions('__consumer_offsets', 1)$$, 'MQ070', NULL,
                 'mq.add_partitions on it is MQ070 (its partitions place the groups)');
SELECT throws_ok($$SELECT mq.drop_topic('__consumer_offsets'), mq.create_topic('__consumer_offsets', 3)$$, 'MQ070', NULL,
                 'mq.create_topic of it is MQ070');
SELECT ok((SELECT ok FROM unchanged), 'the refused calls changed nothing');
SELECT throws_ok($$SELECT mq.create_topic('__consumer_offsets', 3)$$, 'MQ002', NULL,
                 'creating it again is MQ002, as for any existing topic');
SELECT is(mq.ensure_consumer_offsets(0), 10, 'ensure_consumer_offsets returns an existing topic whatever the count');

-- delete_group: tombstones for its offsets
SELECT is(mq.delete_group('grp-a'), 1, 'delete_group deletes grp-a''s one offset');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT part, tombstone FROM coff WHERE grp = 'grp-a' ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES (1, true)$$, 'and appends its tombstone (key, null value)');

-- the partition is Kafka's: Java's String.hashCode over UTF-16 code units
SELECT mq.commit_offset(g, 'co', 0, 1) FROM unnest(ARRAY['gk', 'ünï😀code-group', 'polygenelubricants']) g;
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT grp, at FROM coff WHERE grp IN ('gk', 'ünï😀code-group', 'polygenelubricants') ORDER BY 1$$,
                  $$VALUES ('gk', 0), ('polygenelubricants', 0), ('ünï😀code-group', 1)$$,
                  'abs(hashCode) % 10, a character beyond U+FFFF counting as its surrogate pair, and Integer.MIN_VALUE as 0');

-- a Kafka STRING holds at most 32767 bytes: a longer one is MQ010, not smallint's overflow
SELECT throws_ok($$SELECT mq._kafka_string(repeat('x', 40000))$$, 'MQ010',
                 'a string of 40000 bytes does not fit a __consumer_offsets record', 'mq._kafka_string refuses it');
SELECT throws_ok($$SELECT * FROM mq.join_group('long-instance', ARRAY['co'], instance_id => repeat('i', 40000))$$,
                 'MQ010', NULL, 'so does a join whose instance id the group''s record cannot hold');

-- a role without rights commits nothing, and so appends nothing
CREATE ROLE co_nobody;
SET LOCAL ROLE co_nobody;
SELECT throws_ok($$SELECT mq.commit_offset('x', 'co', 0, 1)$$, '42501', NULL, 'a role without rights cannot commit');
RESET ROLE;
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT count(*) FROM coff WHERE grp = 'x'), 0::bigint, 'and appends nothing');

SELECT * FROM finish();
ROLLBACK;
