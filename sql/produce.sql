--
-- produce: mq.send and mq.send_batch (bytea, text and jsonb overloads,
-- positional and named calls), the returned (partition, msg_offset), the
-- partition argument, Kafka's default partitioner (murmur2) and argument
-- errors.
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
    SELECT md5(coalesce(string_agg(format('%s/%s/%s/%s/%s', r.partition, r.msg_offset, r.key, r.value, r.headers),
                                   ',' ORDER BY r.partition, r.msg_offset), ''))
      FROM mq.partitions p, mq.fetch(p.topic, p.partition, 0, 1000000) r
     WHERE p.topic = p_topic
$$;
--
-- murmur2: Kafka's published test vectors (bytes of the UTF-8 string)
--
SELECT s, mq.murmur2(convert_to(s, 'UTF8')) AS murmur2, expected,
       mq.murmur2(convert_to(s, 'UTF8')) = expected AS ok
  FROM (VALUES ('21', -973932308),
               ('foobar', -790332482),
               ('a-little-bit-long-string', -985981536),
               ('a-little-bit-longer-string', -1486304829),
               ('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971),
               ('abc', 479470107)) AS v(s, expected);
-- null in, null out
SELECT mq.murmur2(NULL) IS NULL AS null_hash;
--
-- partition_for = (murmur2(key) & 0x7fffffff) % partitions
--
SELECT mq.create_topic('p7', 7) > 0 AS created, mq.create_topic('p10', 10) > 0 AS created,
       mq.create_topic('p1', 1) > 0 AS created;
SELECT s, mq.partition_for('p7', convert_to(s, 'UTF8')) AS p7,
       mq.partition_for('p10', convert_to(s, 'UTF8')) AS p10,
       mq.partition_for('p1', convert_to(s, 'UTF8')) AS p1
  FROM unnest(ARRAY['21', 'foobar', 'a-little-bit-long-string', 'a-little-bit-longer-string',
                    'lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', 'abc']) AS s;
-- the formula holds for many keys, also binary ones and the empty key
SELECT count(*) AS keys,
       count(*) FILTER (WHERE mq.partition_for('p7', k) <> (mq.murmur2(k) & 2147483647) % 7) AS wrong_p7,
       count(*) FILTER (WHERE mq.partition_for('p10', k) <> (mq.murmur2(k) & 2147483647) % 10) AS wrong_p10,
       count(DISTINCT mq.partition_for('p7', k)) AS p7_partitions_used
  FROM (SELECT convert_to('key-' || i, 'UTF8') AS k FROM generate_series(1, 2000) i
        UNION ALL SELECT sha256(int4send(i)) FROM generate_series(1, 500) i
        UNION ALL SELECT ''::bytea) keys;
-- the text overload hashes the UTF-8 bytes
SELECT mq.partition_for('p7', 'abc'::text) = mq.partition_for('p7', 'abc'::bytea) AS text_is_bytes,
       mq.partition_for('p10', 'ключ'::text) = mq.partition_for('p10', convert_to('ключ', 'UTF8')) AS utf8;
-- a null key has no fixed partition
SELECT mq.partition_for('p7', NULL::bytea) IS NULL AS null_key_bytea,
       mq.partition_for('p7', NULL::text) IS NULL AS null_key_text;
SELECT pg_temp.err($$SELECT mq.partition_for('nosuchtopic', 'abc'::bytea)$$);
SELECT pg_temp.err($$SELECT mq.partition_for(NULL, 'abc'::bytea)$$);
--
-- send: (topic, key bytea, value bytea, headers, partition), positional
--
SELECT mq.create_topic('prod', 3) > 0 AS created;
SELECT partition, msg_offset FROM mq.send('prod', NULL::bytea, '\x00ff'::bytea, NULL, 0);
SELECT partition, msg_offset FROM mq.send('prod', NULL::bytea, '\x01'::bytea, '{"h": 1}', 0);
SELECT partition, msg_offset FROM mq.send('prod', 'k1'::bytea, '\x02'::bytea, NULL, 2);
SELECT * FROM mq.send('prod', NULL::bytea, NULL::bytea, NULL, 1);
-- a keyed record without a partition goes where partition_for says
SELECT s.partition = mq.partition_for('prod', 'foobar'::bytea) AS by_key, s.msg_offset
  FROM mq.send('prod', 'foobar'::bytea, 'v'::bytea) s;
SELECT mq.partition_for('prod', 'foobar'::bytea) AS foobar_partition;
-- the same key always goes to the same partition
SELECT count(DISTINCT s.partition) AS partitions_used, count(*) AS records
  FROM generate_series(1, 20) i, mq.send('prod', 'same-key'::bytea, int4send(i)) s;
SELECT count(DISTINCT s.partition) = 1 AND min(s.partition) = mq.partition_for('prod', 'same-key'::bytea) AS keyed
  FROM generate_series(1, 5) i, mq.send('prod', 'same-key'::bytea, int4send(i)) s;
-- the explicit partition wins over the key
SELECT partition FROM mq.send('prod', 'foobar'::bytea, 'x'::bytea, NULL,
                              (mq.partition_for('prod', 'foobar'::bytea) + 1) % 3);
SELECT (mq.partition_for('prod', 'foobar'::bytea) + 1) % 3 AS expected_partition;
--
-- text and jsonb overloads: keys and values are sent as UTF-8 bytes
--
SELECT mq.create_topic('textual', 1) > 0 AS created;
SELECT partition, msg_offset FROM mq.send('textual', 'k', 'plain text');
SELECT partition, msg_offset FROM mq.send('textual', 'ключ'::text, 'значение'::text);
SELECT partition, msg_offset FROM mq.send('textual', 'j', '{"b": [1, 2], "a": {"c": null}}'::jsonb);
SELECT partition, msg_offset FROM mq.send('textual', NULL::text, '"just a string"'::jsonb, '{"ct": "json"}');
SELECT partition, msg_offset FROM mq.send('textual', NULL::text, NULL::text);
SELECT msg_offset, key, value, headers FROM mq.fetch('textual', 0, 0) ORDER BY msg_offset;
SELECT msg_offset, convert_from(key, 'UTF8') AS key, convert_from(value, 'UTF8') AS value
  FROM mq.fetch('textual', 0, 0) ORDER BY msg_offset;
SELECT convert_from(value, 'UTF8')::jsonb = '{"a": {"c": null}, "b": [1, 2]}'::jsonb AS jsonb_round_trip
  FROM mq.fetch('textual', 0, 2, 1);
-- a text key lands where the same bytes as bytea would
SELECT s.partition = mq.partition_for('prod', 'foobar'::bytea) AS text_key_by_bytes
  FROM mq.send('prod', 'foobar'::text, 'v'::text) s;
--
-- named arguments
--
SELECT partition, msg_offset FROM mq.send(topic => 'textual', key => 'named'::bytea, value => 'n1'::bytea);
SELECT partition, msg_offset FROM mq.send(value => 'n2'::bytea, key => NULL::bytea, topic => 'textual',
                                          headers => '{"trace": "t-1"}');
SELECT partition, msg_offset FROM mq.send('prod', NULL::bytea, 'n3'::bytea, partition => 2);
SELECT partition, msg_offset FROM mq.send('textual', 'named', 'n4', headers => '[{"k": "v"}]');
SELECT msg_offset, key, value, headers FROM mq.fetch('textual', 0, 5) ORDER BY msg_offset;
SELECT partition, msg_offset FROM mq.send_batch(topic => 'prod', keys => NULL::bytea[],
                                                vals => ARRAY['b1', 'b2']::bytea[], partition => 1);
SELECT partition, msg_offset FROM mq.fetch(topic => 'prod', partition => 1, from_offset => 1, max_records => 5);
--
-- send_batch: one row per record, in input order
--
SELECT mq.create_topic('batch', 4) > 0 AS created, mq.create_topic('keyed', 4) > 0 AS created;
SELECT partition, msg_offset FROM mq.send_batch('batch', NULL, ARRAY['a', 'b', 'c']::bytea[], NULL, 2);
SELECT partition, msg_offset FROM mq.send_batch('batch', NULL, ARRAY['d', 'e']::bytea[], NULL, 2);
SELECT msg_offset, value FROM mq.fetch('batch', 2, 0) ORDER BY msg_offset;
-- keyed batches: each record goes to partition_for(key); within a partition
-- the records keep their order in the batch and get consecutive offsets
WITH input AS (
    SELECT ARRAY['foobar', 'abc', '21', 'foobar', 'abc', 'x', 'foobar']::bytea[] AS keys,
           ARRAY['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7']::bytea[] AS vals
), sent AS (
    SELECT s.*, row_number() OVER () AS n
      FROM input, mq.send_batch('keyed', input.keys, input.vals) s
)
SELECT sent.n, convert_from(input.keys[sent.n], 'UTF8') AS key,
       sent.partition = mq.partition_for('keyed', input.keys[sent.n]) AS by_key,
       sent.partition, sent.msg_offset
  FROM sent, input ORDER BY sent.n;
SELECT r.partition, r.msg_offset, convert_from(r.key, 'UTF8') AS key, convert_from(r.value, 'UTF8') AS value
  FROM mq.partitions p, mq.fetch('keyed', p.partition, 0) r
 WHERE p.topic = 'keyed' ORDER BY r.partition, r.msg_offset;
-- text arrays
SELECT partition, msg_offset FROM mq.send_batch('batch', ARRAY['t1', 't2'], ARRAY['x', 'y'], NULL, 3);
SELECT partition, msg_offset FROM mq.send_batch('batch', NULL::text[], ARRAY['z'], NULL, 3);
SELECT msg_offset, key, value FROM mq.fetch('batch', 3, 0) ORDER BY msg_offset;
-- null elements: null key, null value, null headers for that record only
SELECT partition, msg_offset
  FROM mq.send_batch('batch', ARRAY['k', NULL, 'k']::bytea[], ARRAY['1', '2', NULL]::bytea[],
                     ARRAY['{"a": 1}', NULL, '{"c": 3}']::jsonb[], 0);
SELECT msg_offset, key, value, headers FROM mq.fetch('batch', 0, 0) ORDER BY msg_offset;
-- the batch's headers array may be null: no record gets headers
SELECT count(*) FROM mq.send_batch('batch', NULL, ARRAY['h']::bytea[], NULL, 0);
SELECT msg_offset, headers IS NULL AS no_headers FROM mq.fetch('batch', 0, 3);
-- a big batch (several multi-insert rounds) keeps its order
SELECT count(*) AS records, min(msg_offset) AS first, max(msg_offset) AS last,
       bool_and(partition = 0) AS all_in_0
  FROM mq.send_batch('p1', NULL, (SELECT array_agg(int4send(i) ORDER BY i) FROM generate_series(1, 2500) i));
SELECT count(*) AS fetched,
       count(*) FILTER (WHERE value <> int4send((msg_offset + 1)::int)) AS out_of_order
  FROM mq.fetch('p1', 0, 0, 5000);
-- an empty batch sends nothing and returns no rows
SELECT pg_temp.log_digest('batch') AS batch_digest \gset
SELECT count(*) AS rows FROM mq.send_batch('batch', NULL::bytea[], '{}'::bytea[]);
SELECT count(*) AS rows FROM mq.send_batch('batch', '{}'::bytea[], '{}'::bytea[], '{}'::jsonb[]);
SELECT count(*) AS rows FROM mq.send_batch('batch', NULL::text[], '{}'::text[], NULL, 2);
SELECT pg_temp.log_digest('batch') = :'batch_digest' AS unchanged;
--
-- null keys spread evenly over the partitions
--
SELECT mq.create_topic('spread', 3) > 0 AS created;
SELECT count(*) FROM generate_series(1, 600) i, mq.send('spread', NULL::bytea, int4send(i)) s;
SELECT partition, log_end_offset BETWEEN 150 AND 250 AS even
  FROM mq.partitions WHERE topic = 'spread' ORDER BY partition;
SELECT sum(log_end_offset) AS total FROM mq.partitions WHERE topic = 'spread';
--
-- errors
--
SELECT pg_temp.log_digest('prod') AS prod_digest \gset
-- unknown topic, null topic
SELECT pg_temp.err($$SELECT * FROM mq.send('nosuchtopic', NULL::bytea, 'v'::bytea)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('nosuchtopic', 'k', 'v')$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('nosuchtopic', NULL, ARRAY['v']::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('nosuchtopic', NULL, '{}'::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send(NULL, NULL::bytea, 'v'::bytea)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch(NULL, NULL, ARRAY['v']::bytea[])$$);
SELECT pg_temp.err(format('SELECT * FROM mq.send(%L, NULL::bytea, %L::bytea)', repeat('q', 300), 'v'));
-- unknown partition
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, NULL, 3)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, NULL, -1)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', 'k', 'v', partition => 99)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('p1', NULL::bytea, 'v'::bytea, NULL, 1)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', NULL, ARRAY['v', 'w']::bytea[], NULL, 7)$$);
-- the detail says how many partitions there are
\set VERBOSITY default
SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, NULL, 3);
SELECT * FROM mq.send('p1', NULL::bytea, 'v'::bytea, NULL, 1);
\set VERBOSITY terse
-- array lengths must match
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY['a', 'b']::bytea[], ARRAY['v']::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY['a']::bytea[], ARRAY['v', 'w']::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', '{}'::bytea[], ARRAY['v']::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', NULL, ARRAY['v', 'w']::bytea[], ARRAY['{}']::jsonb[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY['a', 'b'], ARRAY['v'])$$);
\set VERBOSITY default
SELECT * FROM mq.send_batch('prod', ARRAY['a', 'b', 'c']::bytea[], ARRAY['v']::bytea[], ARRAY['{}', '{}']::jsonb[]);
\set VERBOSITY terse
-- vals must not be null (an empty array sends nothing)
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', NULL::bytea[], NULL::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY['k']::bytea[], NULL::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', NULL::text[], NULL::text[])$$);
-- arrays are one-dimensional
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', NULL, ARRAY[['a', 'b'], ['c', 'd']]::bytea[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY[['a', 'b'], ['c', 'd']]::bytea[], ARRAY['a', 'b', 'c', 'd']::bytea[])$$);
-- producer identity: all three or none, never negative, one partition per batch
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, producer_id => 1)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, producer_id => 1, producer_epoch => 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.send('prod', NULL::bytea, 'v'::bytea, producer_id => -1, producer_epoch => 0, base_sequence => 0)$$);
SELECT mq.partition_for('prod', 'foobar'::bytea) AS p_foobar, mq.partition_for('prod', 'a-little-bit-long-string'::bytea) AS p_long;
SELECT pg_temp.err($$SELECT * FROM mq.send_batch('prod', ARRAY['foobar', 'a-little-bit-long-string']::bytea[], ARRAY['a', 'b']::bytea[], producer_id => 1, producer_epoch => 0, base_sequence => 0)$$);
-- none of the failed calls wrote anything
SELECT pg_temp.log_digest('prod') = :'prod_digest' AS prod_unchanged;
SELECT partition, log_end_offset FROM mq.partitions WHERE topic = 'prod' ORDER BY partition;
-- clean up
SELECT count(*) > 0 AS dropped
  FROM (SELECT mq.drop_topic(t) FROM unnest(ARRAY['p7', 'p10', 'p1', 'prod', 'textual', 'batch', 'keyed', 'spread']) t) d;
SELECT count(*) AS topics FROM mq.topics;
