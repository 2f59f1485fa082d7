-- Record size limits (issue 11, "Size limits"): a topic's max.message.bytes,
-- else the server's mq.message_max_bytes (Kafka's broker message.max.bytes,
-- 1048588 by default), refuses a larger record with MQ040 (Kafka's
-- MESSAGE_TOO_LARGE) in every produce path, and a refused call writes
-- nothing.  Sizes are counted as Kafka counts them (mq.record_size).  A
-- Kafka client's batch counts as a whole, as sent (batch_bytes), and a
-- Kafka transaction's records are refused when staged, not at its commit.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(62);

CREATE FUNCTION pg_temp.leo(t text) RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(log_end_offset)::bigint FROM mq.partitions WHERE topic = t
$$;

-------------------------------------------------------------------------------
-- the size of a record: a Kafka v2 record batch holding it alone
-------------------------------------------------------------------------------
SELECT is(mq.record_size(NULL, NULL), 68::bigint, 'null key and value: 61 bytes of batch header and 7 of record');
SELECT is(mq.record_size('k'::bytea, 'v'::bytea), 70::bigint, 'one-byte key and value');
SELECT is(mq.record_size(NULL, convert_to(repeat('x', 1000), 'UTF8')), 1070::bigint,
          'a 1,000-byte value: its length takes a two-byte varint, so does the record''s');
SELECT is(mq.record_size('k'::bytea, 'v'::bytea, '{"h": "x"}'), 74::bigint, 'a header: key and value with their lengths');
SELECT is(mq.record_size('k'::bytea, 'v'::bytea, '{"h": null}'), 73::bigint, 'a header with a null value');
SELECT is(mq.record_size('k'::bytea, 'v'::bytea, '{"h": 12}'), 75::bigint, 'a header value that is not a string counts as its JSON text');
SELECT is(mq.record_size('k'::bytea, 'v'::bytea, '{}'), 70::bigint, 'no headers');
SELECT is(mq.record_size(NULL, convert_to(repeat('x', 1048516), 'UTF8')), 1048588::bigint,
          'the largest value without key and headers under the default limit');

-------------------------------------------------------------------------------
-- the topic's max.message.bytes
-------------------------------------------------------------------------------
SELECT mq.create_topic('lim', 2, '{"max.message.bytes": 10}');
SELECT throws_ok($$SELECT * FROM mq.send('lim', NULL::bytea, convert_to(repeat('x', 1000), 'UTF8'))$$,
                 'MQ040', 'record of 1070 bytes is larger than max.message.bytes 10 of topic "lim"',
                 'mq.send(bytea) refuses a 1,000-byte record into a topic with max.message.bytes 10');
SELECT throws_ok($$SELECT * FROM mq.send('lim', NULL::bytea, NULL::bytea)$$, 'MQ040', NULL,
                 'even an empty record is larger than 10 bytes');
SELECT throws_ok($$SELECT * FROM mq.send('lim', 'k', 'v')$$, 'MQ040', NULL, 'mq.send(text, text)');
SELECT throws_ok($$SELECT * FROM mq.send('lim', 'k', '{"a": 1}'::jsonb)$$, 'MQ040', NULL, 'mq.send(text, jsonb)');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim', NULL, ARRAY['v'::bytea])$$, 'MQ040', NULL, 'mq.send_batch(bytea[])');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim', NULL, ARRAY['v'])$$, 'MQ040', NULL, 'mq.send_batch(text[])');
-- mq.produce's write (the procedure itself runs outside a transaction block)
SELECT throws_ok($$SELECT * FROM mq.produce_records('lim', NULL, ARRAY['v'::bytea], partition => 0, acks => '1')$$,
                 'MQ040', NULL, 'mq.produce_records (acks=1)');
SELECT throws_ok($$SELECT * FROM mq.produce_records('lim', NULL, ARRAY['v'::bytea], partition => 0, acks => 'all')$$,
                 'MQ040', NULL, 'mq.produce_records (acks=all)');
SELECT is(pg_temp.leo('lim'), 0::bigint, 'nothing was written');

-- the boundary, and alter_topic taking effect at once
SELECT mq.alter_topic('lim', '{"max.message.bytes": 70}');
SELECT lives_ok($$SELECT * FROM mq.send('lim', 'k', 'v')$$, 'a record of exactly max.message.bytes is accepted');
SELECT throws_ok($$SELECT * FROM mq.send('lim', 'k', 'vv')$$, 'MQ040', NULL, 'one byte more is refused');
SELECT throws_ok($$SELECT * FROM mq.send('lim', 'k', 'v', headers => '{"h": null}')$$, 'MQ040', NULL,
                 'headers count');
SELECT is(pg_temp.leo('lim'), 1::bigint, 'only the accepted record was written');

-- a batch fails as a whole, across partitions, with the record named
SELECT mq.alter_topic('lim', '{"max.message.bytes": 100}');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim', ARRAY['a', 'b', 'c', 'd'], ARRAY['1', '2', repeat('x', 100), '4'])$$,
                 'MQ040', 'record 3 of the batch, 171 bytes, is larger than max.message.bytes 100 of topic "lim"',
                 'send_batch with one record too large fails');
SELECT is(pg_temp.leo('lim'), 1::bigint, 'and writes nothing, in no partition');
SELECT is((SELECT count(*) FROM mq.send_batch('lim', ARRAY['a', 'b', 'c', 'd'], ARRAY['1', '2', '3', '4'])), 4::bigint,
          'the same batch with small records is written');

-- idempotent producers: a refused batch does not take up sequence numbers
SELECT mq.create_topic('lim-idem', 1, '{"max.message.bytes": 100}');
CREATE TEMP TABLE prod AS SELECT * FROM mq.init_producer();
SELECT throws_ok(format($$SELECT * FROM mq.send_batch('lim-idem', NULL, ARRAY['a', %L], NULL, 0, %s, %s, 0)$$,
                        repeat('x', 200), (SELECT producer_id FROM prod), (SELECT producer_epoch FROM prod)),
                 'MQ040', NULL, 'an idempotent batch with a record too large is refused');
SELECT lives_ok(format($$SELECT * FROM mq.send_batch('lim-idem', NULL, ARRAY['a', 'b'], NULL, 0, %s, %s, 0)$$,
                       (SELECT producer_id FROM prod), (SELECT producer_epoch FROM prod)),
                'the producer goes on at the same sequence');

-------------------------------------------------------------------------------
-- a Kafka client's batch: its size as sent (mq-kafka's batch_bytes)
-------------------------------------------------------------------------------
SELECT mq.create_topic('lim-batch', 1, '{"max.message.bytes": 200}');
SELECT throws_ok($$SELECT * FROM mq.produce_records('lim-batch', NULL, ARRAY['a', 'b']::bytea[], partition => 0,
                                                    batch_bytes => 201)$$,
                 'MQ040', 'record batch of 201 bytes is larger than max.message.bytes 200 of topic "lim-batch"',
                 'a batch one byte over the limit is refused, however small its records');
SELECT is(pg_temp.leo('lim-batch'), 0::bigint, 'and nothing of it is written');
SELECT is((SELECT count(*) FROM mq.produce_records('lim-batch', NULL, ARRAY['a', 'b']::bytea[], partition => 0,
                                                   batch_bytes => 200)), 2::bigint,
          'a batch of exactly the limit is written');
SELECT is((SELECT count(*) FROM mq.produce_records('lim-batch', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 0)),
          3::bigint, 'without batch_bytes (SQL) only each record is limited');
SELECT is((SELECT count(*) FROM mq.send_batch('lim-batch', NULL, ARRAY[convert_to(repeat('x', 1000), 'UTF8')], partition => 0,
                                              batch_bytes => 150)), 1::bigint,
          'a record larger than the limit in a batch that was not (compressed, as sent) is written, as by Kafka');

-- a Kafka transaction's records: refused when staged, as Kafka refuses
-- them at the produce, not when the commit appends them
CREATE TEMP TABLE txp AS SELECT * FROM mq.kafka_txn_init('lim-txn', 60000);
CREATE FUNCTION pg_temp.stage(topic text, keys bytea[], vals bytea[], ts timestamptz[] DEFAULT NULL) RETURNS void
LANGUAGE sql AS $$
    SELECT mq.kafka_txn_stage('lim-txn', (SELECT producer_id FROM txp), 0, topic, 0, 0, keys, vals, NULL, ts)
$$;
SELECT throws_ok($$SELECT pg_temp.stage('lim', ARRAY[NULL]::bytea[], ARRAY[convert_to(repeat('x', 1000), 'UTF8')])$$,
                 'MQ040', 'record of 1070 bytes is larger than max.message.bytes 100 of topic "lim"',
                 'a staged record too large is refused');
SELECT mq.create_topic('lim-compact', 1, '{"cleanup.policy": "compact"}');
SELECT throws_ok($$SELECT pg_temp.stage('lim-compact', ARRAY['k', NULL]::bytea[], ARRAY['a', 'b']::bytea[])$$,
                 'MQ008', NULL, 'a staged record without a key on a compacted topic is refused');
SELECT mq.create_topic('lim-time', 1, '{"message.timestamp.before.max.ms": 60000}');
SELECT throws_ok($$SELECT pg_temp.stage('lim-time', ARRAY[NULL]::bytea[], ARRAY['a']::bytea[], ARRAY[now() - interval '1 hour'])$$,
                 'MQ041', NULL, 'a staged record with a timestamp out of range is refused');
SELECT throws_ok($$SELECT pg_temp.stage('__consumer_offsets', ARRAY[NULL]::bytea[], ARRAY['a']::bytea[])$$,
                 NULL, NULL, 'nothing is staged for __consumer_offsets');
SELECT is((SELECT count(*) FROM mq.kafka_txn_record WHERE transactional_id = 'lim-txn'), 0::bigint,
          'none of them was staged');
SELECT lives_ok($$SELECT pg_temp.stage('lim-compact', ARRAY['k', 'l']::bytea[], ARRAY['a', 'b']::bytea[])$$,
                'records that pass are staged');

-------------------------------------------------------------------------------
-- the server-wide default, mq.message_max_bytes (Kafka's message.max.bytes)
-------------------------------------------------------------------------------
SELECT is(current_setting('mq.message_max_bytes'), '1048588B', 'mq.message_max_bytes defaults to Kafka''s 1048588');
SELECT mq.create_topic('lim-default', 1);
SELECT lives_ok($$SELECT * FROM mq.send('lim-default', NULL::bytea, convert_to(repeat('x', 1048516), 'UTF8'))$$,
                'without max.message.bytes a record of 1048588 bytes is accepted');
SELECT throws_ok($$SELECT * FROM mq.send('lim-default', NULL::bytea, convert_to(repeat('x', 1048517), 'UTF8'))$$,
                 'MQ040', 'record of 1048589 bytes is larger than mq.message_max_bytes 1048588',
                 'one byte more is refused');
SET LOCAL mq.message_max_bytes = 100;
SELECT throws_ok($$SELECT * FROM mq.send('lim-default', NULL, repeat('x', 100))$$, 'MQ040', NULL,
                 'a lower mq.message_max_bytes applies to topics without max.message.bytes');
SELECT lives_ok($$SELECT * FROM mq.send('lim', NULL, repeat('x', 20))$$,
                'a topic''s max.message.bytes overrides it, also upwards');
RESET mq.message_max_bytes;

-------------------------------------------------------------------------------
-- replication: the leader checks; replica_append is only for followers
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.batch(base bigint, val bytea) RETURNS mq.replica_batch LANGUAGE sql AS $$
    SELECT ROW(base, base + 1, base + 1, NULL, 0, ARRAY[now()], ARRAY[NULL::bytea], ARRAY[val], ARRAY[NULL::jsonb],
               ARRAY[NULL::bigint], ARRAY[NULL::integer], ARRAY[NULL::integer],
               NULL, NULL, NULL, NULL, NULL, ARRAY[1], ARRAY[base], NULL, NULL, NULL, NULL, NULL, NULL)::mq.replica_batch
$$;
SELECT mq.create_topic('lim-rep', 1, '{"max.message.bytes": 100}');
SELECT throws_ok($$SELECT mq.replica_append('lim-rep', 0, 0, pg_temp.batch(0, convert_to(repeat('x', 1000), 'UTF8')))$$,
                 'MQ024', NULL, 'replica_append cannot write into a partition this node does not follow');
SELECT mq.replica_become_leader('lim-rep', 0, 1, 1, ARRAY[1], ARRAY[1]);
SELECT throws_ok($$SELECT mq.replica_append('lim-rep', 0, 1, pg_temp.batch(0, convert_to(repeat('x', 1000), 'UTF8')))$$,
                 'MQ024', NULL, 'nor into a partition it leads');
SELECT throws_ok($$SELECT * FROM mq.send('lim-rep', NULL::bytea, convert_to(repeat('x', 1000), 'UTF8'), partition => 0)$$,
                 'MQ040', NULL, 'the leader refuses a record too large');
SELECT mq.replica_become_follower('lim-rep', 0, 2, 2);
SELECT is(mq.replica_append('lim-rep', 0, 2, pg_temp.batch(0, convert_to(repeat('x', 1000), 'UTF8'))), 1::bigint,
          'a follower appends what its leader accepted, whatever its own copy of the config says');

-------------------------------------------------------------------------------
-- arguments Kafka cannot carry (an audit of bad input): MQ010, or MQ041
-- for a timestamp, and nothing written
-------------------------------------------------------------------------------
SELECT mq.create_topic('lim-arg', 1);
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim-arg', NULL, ARRAY['a']::bytea[], batch_bytes => 0)$$,
                 'MQ010', 'batch_bytes must be positive, not 0', 'send_batch: batch_bytes 0 is refused');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim-arg', NULL, ARRAY['a']::bytea[], batch_bytes => -1)$$,
                 'MQ010', 'batch_bytes must be positive, not -1', 'send_batch: a negative batch_bytes too');
SELECT throws_ok($$SELECT * FROM mq.produce_records('lim-arg', NULL, ARRAY['a']::bytea[], batch_bytes => -1)$$,
                 'MQ010', 'batch_bytes must be positive, not -1', 'produce_records: likewise');
SELECT throws_ok($$SELECT * FROM mq.send('lim-arg', NULL::text, 'v', producer_id => 424242, producer_epoch => 32768,
                                         base_sequence => 0)$$,
                 'MQ010', 'producer_epoch must be from 0 to 32767, not 32768', 'an epoch beyond Kafka''s int16 is refused');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim-arg', NULL, ARRAY['a']::bytea[], producer_id => 424242,
                                               producer_epoch => 2147483647, base_sequence => 0)$$,
                 'MQ010', NULL, 'so is the int4 maximum');
SELECT throws_ok($$SELECT mq.commit_offset('lim-g', 'lim-arg', 0, 0, producer_id => 424242, producer_epoch => 32768)$$,
                 'MQ010', 'producer_epoch must be from 0 to 32767, not 32768', 'and in a fenced offset commit');
SELECT is((SELECT count(*) FROM mq.producer WHERE producer_id = 424242), 0::bigint, 'no producer was registered');
SELECT throws_ok($$SELECT * FROM mq.send('lim-arg', NULL::text, 'v', "timestamp" => 'infinity')$$,
                 'MQ041', 'timestamp infinity of record 1 is out of range for topic "lim-arg"',
                 'an infinite timestamp is refused (Kafka''s INVALID_TIMESTAMP)');
SELECT throws_ok($$SELECT * FROM mq.send('lim-arg', NULL::text, 'v', "timestamp" => '-infinity')$$,
                 'MQ041', NULL, 'so is -infinity');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim-arg', NULL, ARRAY['a']::bytea[], "timestamp" => '0044-03-15 BC')$$,
                 'MQ041', NULL, 'and a BC date');
SELECT throws_ok($$SELECT * FROM mq.send_batch('lim-arg', NULL, ARRAY['a', 'b']::bytea[],
                                               timestamps => ARRAY[now(), '1969-12-31 23:59:59.999Z'::timestamptz])$$,
                 'MQ041', NULL, 'and any time before 1970 (Kafka''s timestamps are milliseconds since 1970)');
SELECT is(pg_temp.leo('lim-arg'), 0::bigint, 'none of these wrote anything');
SELECT lives_ok($$SELECT * FROM mq.send('lim-arg', NULL::text, 'v', "timestamp" => '1970-01-01 00:00Z')$$,
                'timestamp 0 is accepted');
SELECT throws_ok($$SELECT * FROM mq.fetch('lim-arg', 0, 0, max_wait_ms => -1)$$,
                 'MQ010', 'max_wait_ms must not be negative, not -1', 'fetch names the argument that is wrong');
SELECT throws_ok($$SELECT * FROM mq.poll('lim-g', 'lim-arg', min_records => 0)$$,
                 'MQ010', 'min_records must be at least 1, not 0', 'so does poll');
SELECT throws_ok($$SELECT * FROM mq.poll('lim-g', 'lim-arg', partitions => ARRAY[0, NULL])$$,
                 'MQ010', 'partitions must not contain null', 'a null among poll''s partitions is MQ010, not partition -1');

SELECT * FROM finish();
ROLLBACK;
