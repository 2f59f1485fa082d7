-- mq.fetch(max_bytes): a fetch bounded by bytes as it reads (Kafka's
-- fetch.max.bytes / max.partition.fetch.bytes, KIP-74): a record costs its
-- key and value sizes plus 24 bytes; the first record always comes, later
-- ones only while they fit.
BEGIN;
SELECT plan(7);

SELECT mq.create_topic('fb', 1, '{"segment.records": 10}');
SELECT mq.send('fb', NULL::bytea, convert_to(repeat('x', 100), 'UTF8')) FROM generate_series(1, 30);
SELECT mq.send('fb', 'k'::bytea, convert_to(repeat('y', 1000), 'UTF8'));

SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 0, 1000, max_bytes => 1000)), 8::bigint,
          'records of 124 bytes: 8 fit in 1000 bytes');
SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 0, 1000, max_bytes => 124 * 25)), 25::bigint,
          'the budget spans segments (10 records each)');
SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 0, 1000, max_bytes => 1)), 1::bigint,
          'the first record always comes, however small the budget');
SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 30, 1000, max_bytes => 10)), 1::bigint,
          'also when it alone is larger than the budget');
SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 0, 5, max_bytes => 100000)), 5::bigint,
          'max_records still bounds it');
SELECT is((SELECT count(*) FROM mq.fetch('fb', 0, 0, 1000)), 31::bigint, 'without max_bytes, no byte limit');
SELECT throws_ok($$SELECT * FROM mq.fetch('fb', 0, 0, 1000, max_bytes => 0)$$, 'MQ010', NULL,
                 'max_bytes must be positive');

SELECT * FROM finish();
ROLLBACK;
