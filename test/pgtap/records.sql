-- Kafka record semantics: timestamps (CreateTime, LogAppendTime, the
-- difference check, retention by timestamp, the replica path), lookup by
-- time (offsets_for_times, reset_offsets, auto_offset_reset by_duration),
-- headers as Kafka's ordered list, and duplicates too old to return their
-- offsets (MQ015) versus sequence gaps (MQ011).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SET TIME ZONE 'UTC';
BEGIN;
SELECT plan(56);

---------------------------------------------------------------------------
-- Timestamps
---------------------------------------------------------------------------
SELECT mq.create_topic('ts', 1);
SELECT mq.send('ts', 'a'::bytea, 'v'::bytea);
SELECT results_eq($$SELECT timestamp_type, timestamp = created_at FROM mq.fetch('ts', 0, 0)$$,
                  $$VALUES ('CreateTime', true)$$,
                  'without a timestamp a record gets CreateTime now, as Kafka''s producer sets it');
SELECT mq.send('ts', 'b'::bytea, 'v'::bytea, "timestamp" => '2020-01-02 03:04:05.678+00');
SELECT mq.send('ts', 'c', 'v', "timestamp" => '2020-01-03+00');
SELECT mq.send('ts', 'd', '{"j": 1}'::jsonb, "timestamp" => '2020-01-04+00');
SELECT results_eq($$SELECT msg_offset, timestamp, timestamp_type FROM mq.fetch('ts', 0, 1)$$,
                  $$VALUES (1::bigint, '2020-01-02 03:04:05.678+00'::timestamptz, 'CreateTime'),
                           (2, '2020-01-03+00', 'CreateTime'), (3, '2020-01-04+00', 'CreateTime')$$,
                  'the producer''s timestamp comes back exactly, from every mq.send overload');
SELECT ok((SELECT bool_and(created_at > '2025-01-01') FROM mq.fetch('ts', 0, 1)),
          'created_at stays the append time');
SELECT mq.send_batch('ts', NULL, ARRAY['x', 'y', 'z']::bytea[],
                     timestamps => ARRAY['2019-05-05+00', NULL, '2019-05-06+00']::timestamptz[]);
SELECT results_eq($$SELECT CASE WHEN timestamp = created_at THEN 'now' ELSE timestamp::text END
                      FROM mq.fetch('ts', 0, 4, 3)$$,
                  $$VALUES ('2019-05-05 00:00:00+00'), ('now'), ('2019-05-06 00:00:00+00')$$,
                  'send_batch: a timestamp per record, a NULL element meaning now');
SELECT mq.send_batch('ts', ARRAY['k1', 'k2'], ARRAY['1', '2'], "timestamp" => '2018-01-01+00');
SELECT is((SELECT array_agg(timestamp ORDER BY msg_offset) FROM mq.fetch('ts', 0, 7)),
          ARRAY['2018-01-01+00', '2018-01-01+00']::timestamptz[], 'send_batch: one timestamp for the whole batch');
SELECT throws_ok($$SELECT * FROM mq.send_batch('ts', NULL, ARRAY['x']::bytea[], timestamps => ARRAY[now(), now()])$$,
                 'MQ010', 'timestamps and vals must have the same length', 'timestamps must match the batch');
SELECT throws_ok($$SELECT * FROM mq.send_batch('ts', NULL, ARRAY['x']::bytea[], timestamps => ARRAY[now()], "timestamp" => now())$$,
                 'MQ010', 'give timestamps or timestamp, not both', 'timestamps and timestamp exclude each other');

-- LogAppendTime: the broker's append time whatever the producer said
SELECT mq.create_topic('ts-append', 1, '{"message.timestamp.type": "LogAppendTime"}');
SELECT mq.send('ts-append', 'k', 'v', "timestamp" => '2001-01-01+00');
SELECT mq.send_batch('ts-append', NULL, ARRAY['x']::bytea[], timestamps => ARRAY['2001-01-01+00'::timestamptz]);
SELECT results_eq($$SELECT timestamp_type, timestamp = created_at, timestamp > '2025-01-01' FROM mq.fetch('ts-append', 0, 0)$$,
                  $$VALUES ('LogAppendTime', true, true), ('LogAppendTime', true, true)$$,
                  'LogAppendTime stores the append time, not the producer''s timestamp');
SELECT throws_ok($$SELECT mq.create_topic('ts-bad', 1, '{"message.timestamp.type": "AppendTime"}')$$,
                 'MQ004', NULL, 'message.timestamp.type is CreateTime or LogAppendTime');

-- message.timestamp.difference.max.ms (Kafka's InvalidTimestampException)
SELECT mq.create_topic('ts-diff', 1, '{"message.timestamp.difference.max.ms": "1h"}');
SELECT throws_ok($$SELECT * FROM mq.send('ts-diff', 'k', 'v', "timestamp" => clock_timestamp() - interval '2 hours')$$,
                 'MQ041', NULL, 'a timestamp older than the allowed difference is refused');
SELECT throws_ok($$SELECT * FROM mq.send_batch('ts-diff', NULL, ARRAY['a', 'b']::bytea[],
                       timestamps => ARRAY[clock_timestamp(), clock_timestamp() + interval '2 hours'])$$,
                 'MQ041', NULL, 'one timestamp too far in the future refuses the batch');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'ts-diff'), 0::bigint, 'nothing was written');
SELECT lives_ok($$SELECT * FROM mq.send('ts-diff', 'k', 'v', "timestamp" => clock_timestamp() - interval '30 minutes')$$,
                'a timestamp within the difference is accepted');
SELECT lives_ok($$SELECT * FROM mq.send('ts-diff', 'k', 'v')$$, 'no timestamp (now) is always within it');
SELECT mq.alter_topic('ts-diff', '{"message.timestamp.type": "LogAppendTime"}');
SELECT lives_ok($$SELECT * FROM mq.send('ts-diff', 'k', 'v', "timestamp" => '2001-01-01+00')$$,
                'LogAppendTime does not check the producer''s timestamp');

-- retention.ms follows the largest timestamp of a segment, as Kafka's does
SELECT mq.create_topic('ts-ret', 1, '{"segment.records": 2, "retention.ms": "1d"}');
SELECT mq.send_batch('ts-ret', NULL, ARRAY['a', 'b', 'c', 'd', 'e']::bytea[],
                     timestamps => ARRAY[now() - interval '3 days', now() - interval '2 days',
                                         now() - interval '3 days', now(), now() - interval '3 days']);
SELECT is(mq.apply_retention('ts-ret'), 1, 'the closed segment whose records are all older than retention.ms goes');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'ts-ret'), 2::bigint,
          'the segment holding a recent timestamp stays, though its first record is old');

---------------------------------------------------------------------------
-- offsets_for_times: the first offset whose timestamp is >= ts, else the log end
---------------------------------------------------------------------------
SELECT mq.create_topic('ft', 1, '{"segment.records": 4}');
-- timestamps out of order within and across segments (CreateTime)
SELECT mq.send_batch('ft', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 10)),
                     timestamps => ARRAY['2020-01-01 10:00+00', '2020-01-01 09:00+00', '2020-01-01 11:00+00',
                                         '2020-01-01 10:30+00', '2020-01-01 08:00+00', '2020-01-01 12:00+00',
                                         '2020-01-01 12:00+00', '2020-01-01 13:00+00', '2020-01-01 12:30+00',
                                         '2020-01-01 14:00+00']::timestamptz[]);
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 07:00+00'), 0::bigint, 'before every record: the first offset');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 09:30+00'), 0::bigint, 'the first record at or after ts, not the closest');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 10:15+00'), 2::bigint, 'a later record with a smaller timestamp is skipped');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 11:00+00'), 2::bigint, 'an equal timestamp matches');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 11:30+00'), 5::bigint, 'found in the second segment');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 12:15+00'), 7::bigint, 'found across equal timestamps');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 13:30+00'), 9::bigint, 'found in the segment being written');
SELECT is(mq.offsets_for_times('ft', 0, '2020-01-01 15:00+00'), 10::bigint, 'after every record: the log end offset');
SELECT throws_ok($$SELECT mq.offsets_for_times('ft', 1, now())$$, 'MQ006', NULL, 'an unknown partition is refused');
SELECT is(mq.offsets_for_times('ts-append', 0, '2001-01-01+00'), 0::bigint, 'LogAppendTime records are found by append time');

-- the same answer as the definition, over many random timestamps
SELECT mq.create_topic('ft-rand', 1, '{"segment.records": 50}');
SELECT setseed(0.42);
SELECT mq.send_batch('ft-rand', NULL, (SELECT array_agg('x'::bytea) FROM generate_series(1, 500)),
                     timestamps => (SELECT array_agg('2020-01-01+00'::timestamptz + (random() * 1000)::int * interval '1 minute')
                                      FROM generate_series(1, 500)));
SELECT is((SELECT count(*) FROM generate_series(0, 1010, 7) m
            WHERE mq.offsets_for_times('ft-rand', 0, '2020-01-01+00'::timestamptz + m * interval '1 minute')
                  IS DISTINCT FROM coalesce((SELECT min(msg_offset) FROM mq.fetch('ft-rand', 0, 0, 1000)
                                              WHERE timestamp >= '2020-01-01+00'::timestamptz + m * interval '1 minute'), 500)),
          0::bigint, 'offsets_for_times agrees with the first matching offset for 145 times');

-- reset a group to a time, and poll from a duration ago
SELECT mq.commit_offset('ft-group', 'ft', 0, 10);
SELECT results_eq($$SELECT partition, next_offset FROM mq.reset_offsets('ft-group', 'ft', '2020-01-01 11:30+00')$$,
                  $$VALUES (0, 5::bigint)$$, 'reset_offsets returns the new positions');
SELECT is(mq.committed_offset('ft-group', 'ft', 0), 5::bigint, 'and commits them');
CREATE ROLE rec_reader;
SELECT mq.grant('read', 'topic', 'ft', 'rec_reader');
SELECT mq.grant('read', 'group', 'ft-reader', 'rec_reader');
SET ROLE rec_reader;
SELECT results_eq($$SELECT partition, next_offset FROM mq.reset_offsets('ft-reader', 'ft', '2020-01-01 12:15+00')$$,
                  $$VALUES (0, 7::bigint)$$, 'a role with READ on the topic and the group may reset it');
SELECT throws_ok($$SELECT * FROM mq.reset_offsets('ft-group', 'ft', now())$$, '42501', NULL,
                 'but not a group it may not read');
RESET ROLE;
SELECT mq.create_topic('ft-poll', 1);
SELECT mq.send_batch('ft-poll', NULL, ARRAY['old', 'new', 'newer']::bytea[],
                     timestamps => ARRAY[now() - interval '2 hours', now() - interval '10 minutes', now()]);
SELECT is((SELECT array_agg(msg_offset ORDER BY msg_offset) FROM mq.poll('by-duration', 'ft-poll', auto_offset_reset => 'by_duration:PT1H')),
          ARRAY[1, 2]::bigint[], 'auto_offset_reset by_duration starts at the first record of the last hour');
SELECT throws_ok($$SELECT * FROM mq.poll('x', 'ft-poll', auto_offset_reset => 'by_duration:1h')$$, 'MQ010', NULL,
                 'by_duration takes an ISO 8601 duration');
SELECT throws_ok($$SELECT * FROM mq.poll('x', 'ft-poll', auto_offset_reset => 'by_duration:PTxH')$$, 'MQ010', NULL,
                 'a malformed duration is MQ010, not a datetime error');
SELECT throws_ok($$SELECT * FROM mq.poll('x', 'ft-poll', auto_offset_reset => 'by_duration:P9999999999Y')$$, 'MQ010', NULL,
                 'so is a duration out of range');

---------------------------------------------------------------------------
-- Headers: an ordered list of (key, value or null), keys may repeat
---------------------------------------------------------------------------
SELECT mq.create_topic('hd', 1);
SELECT mq.send('hd', 'k'::bytea, 'v'::bytea,
               header_list => ARRAY[('trace', 'a'), ('trace', 'b'), ('empty', ''), ('none', NULL),
                                    ('bin', '\x00ff'::bytea)]::mq.header[]);
SELECT is((SELECT header_list FROM mq.fetch('hd', 0, 0)),
          ARRAY[('trace', 'a'), ('trace', 'b'), ('empty', ''), ('none', NULL), ('bin', '\x00ff'::bytea)]::mq.header[],
          'header_list comes back in order, with repeated keys, empty and null values and bytes');
SELECT is((SELECT headers FROM mq.fetch('hd', 0, 0)),
          '[["trace", "a"], ["trace", "b"], ["empty", ""], ["none", null], ["bin", {"base64": "AP8="}]]'::jsonb,
          'its jsonb form is an array of pairs, bytes that are not text in base64');
SELECT is((SELECT (header_list[4]).value IS NULL AND (header_list[3]).value = '' FROM mq.fetch('hd', 0, 0)), true,
          'a null value differs from an empty one');
SELECT mq.send('hd', 'k', 'v', headers => '{"b": "2", "a": "1", "n": null, "num": 7}');
SELECT is((SELECT header_list FROM mq.fetch('hd', 0, 1)),
          ARRAY[('a', '1'), ('b', '2'), ('n', NULL), ('num', '7')]::mq.header[],
          'jsonb object headers read as a list (jsonb key order, non-strings as their JSON text)');
SELECT is((SELECT headers FROM mq.fetch('hd', 0, 1)), '{"b": "2", "a": "1", "n": null, "num": 7}'::jsonb,
          'and still come back as the jsonb given');
SELECT mq.send_batch('hd', NULL, ARRAY['x', 'y', 'z']::bytea[],
                     headers => ARRAY['[["h", "1"], ["h", {"base64": "AAE="}]]', NULL, '[]']::jsonb[]);
SELECT is((SELECT array_agg(coalesce(header_list::text, 'NULL') ORDER BY msg_offset) FROM mq.fetch('hd', 0, 2)),
          ARRAY[ARRAY[('h', '1'), ('h', '\x0001')]::mq.header[]::text, 'NULL', '{}'],
          'send_batch: per-record lists as jsonb pairs, a null element, an empty list');
SELECT mq.send('hd', 'k', 'v', headers => '[{"k": "v"}]');
SELECT is((SELECT header_list FROM mq.fetch('hd', 0, 5)), NULL, 'jsonb that is not an object or pairs has no list');
SELECT throws_ok($$SELECT * FROM mq.send('hd', 'k', 'v', headers => '{}', header_list => '{}')$$,
                 'MQ010', 'give headers or header_list, not both', 'headers and header_list exclude each other');
SELECT throws_ok($$SELECT * FROM mq.send('hd', 'k', 'v', header_list => ARRAY[(NULL, 'x')]::mq.header[])$$,
                 'MQ010', NULL, 'a header key is never null');
SELECT is(mq.header_list(mq.headers_jsonb(ARRAY[('a', '\xc3a9'), ('a', NULL), ('z', '\x00')]::mq.header[])),
          ARRAY[('a', '\xc3a9'), ('a', NULL), ('z', '\x00')]::mq.header[], 'headers_jsonb and header_list round-trip');
SELECT is(mq.headers_jsonb(ARRAY[('a', '\xc3a9')]::mq.header[]), '[["a", "é"]]'::jsonb, 'UTF-8 values read as text');

---------------------------------------------------------------------------
-- The replica path copies timestamps and headers exactly
---------------------------------------------------------------------------
SELECT mq.create_topic('rl', 1);
SELECT mq.create_topic('rf', 1);
SELECT mq.replica_become_leader('rl', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.replica_become_follower('rf', 0, 1, 1);
SELECT mq.send('rl', 'k'::bytea, 'v'::bytea, "timestamp" => '2020-02-02+00',
               header_list => ARRAY[('h', 'x'), ('h', NULL)]::mq.header[]);
SELECT mq.send('rl', 'k', 'v');
CREATE TEMP TABLE rb AS SELECT mq.replica_fetch('rl', 0, 1, 2, 0) AS b;
SELECT is(mq.replica_append('rf', 0, 1, (SELECT b FROM rb)), 2::bigint, 'the follower appends the batch');
DO $$ BEGIN
    EXECUTE format('CREATE TEMP VIEW rf_log AS SELECT * FROM %s',
                   (SELECT ps.relid FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rf'));
    EXECUTE format('CREATE TEMP VIEW rl_log AS SELECT * FROM %s',
                   (SELECT ps.relid FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rl'));
END $$;
SELECT results_eq($$SELECT msg_offset, created_at, "timestamp", headers FROM rf_log ORDER BY msg_offset$$,
                  $$SELECT msg_offset, created_at, "timestamp", headers FROM rl_log ORDER BY msg_offset$$,
                  'the follower has the leader''s timestamps and headers');
SELECT is((SELECT "timestamp" FROM rf_log WHERE msg_offset = 0), '2020-02-02+00'::timestamptz,
          'the CreateTime was copied');

---------------------------------------------------------------------------
-- Idempotence: a duplicate older than the five remembered batches (MQ015)
-- is not a sequence gap (MQ011)
---------------------------------------------------------------------------
SELECT mq.create_topic('dup', 1);
CREATE TEMP TABLE pr AS SELECT * FROM mq.init_producer();
SELECT mq.send('dup', NULL::bytea, 'x'::bytea, partition => 0, producer_id => (SELECT producer_id FROM pr),
               producer_epoch => 0, base_sequence => i)
  FROM generate_series(0, 6) i;
SELECT results_eq($$SELECT msg_offset FROM mq.send('dup', NULL::bytea, 'x'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 2)$$,
                  ARRAY[2::bigint], 'a retry of the fifth-newest batch returns its original offset');
SELECT throws_ok($$SELECT * FROM mq.send('dup', NULL::bytea, 'x'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 1)$$,
                 'MQ015', NULL, 'a retry of an older batch is a duplicate too old to return its offsets');
SELECT throws_ok($$SELECT * FROM mq.send_batch('dup', NULL, ARRAY['a', 'b']::bytea[], partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 0)$$,
                 'MQ015', NULL, 'so is a batch wholly before the remembered ones');
SELECT throws_ok($$SELECT * FROM mq.send('dup', NULL::bytea, 'x'::bytea, partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 8)$$,
                 'MQ011', NULL, 'a gap stays out of order');
SELECT throws_ok($$SELECT * FROM mq.send_batch('dup', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 0,
                      producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 1)$$,
                 'MQ011', NULL, 'a batch overlapping the remembered ones is out of order');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'dup'), 7::bigint, 'none of them wrote anything');

SELECT * FROM finish();
ROLLBACK;
