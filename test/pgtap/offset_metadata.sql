-- An offset commit's metadata (Kafka's offset.metadata.max.bytes, 4096 by
-- default): mq.commit_offset and a Kafka transaction's staged offset
-- (mq.kafka_txn_offset) take up to 4096 bytes and refuse more with MQ038
-- (Kafka's OFFSET_METADATA_TOO_LARGE), storing nothing.  mq-kafka's
-- OffsetFetch reads a partition's offset and metadata together with
-- mq._committed_position, which answers as mq.committed_offset does.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(12);

SELECT mq.create_topic('omd', 1);
SELECT mq.send('omd', NULL, 'v'::bytea, NULL, 0) FROM generate_series(1, 3);

SELECT lives_ok($$SELECT mq.commit_offset('omd-g', 'omd', 0, 1, repeat('m', 4096))$$,
                'metadata of 4096 bytes is stored');
SELECT throws_ok($$SELECT mq.commit_offset('omd-g', 'omd', 0, 2, repeat('m', 4097))$$, 'MQ038',
                 'offset metadata of 4097 bytes is over the limit of 4096 bytes',
                 'one byte more is MQ038');
SELECT throws_ok($$SELECT mq.commit_offset('omd-g', 'omd', 0, 2, repeat('é', 2049))$$, 'MQ038', NULL,
                 'the limit counts bytes: 2049 two-byte characters are over it');
SELECT is((SELECT next_offset || ':' || length(metadata) FROM mq.committed_offsets('omd-g')), '1:4096',
          'the refused commits stored nothing');
SELECT lives_ok($$SELECT mq.commit_offset('omd-g', 'omd', 0, 3)$$, 'no metadata is fine');

CREATE TEMP TABLE p AS SELECT * FROM mq.kafka_txn_init('omd-txn', 60000);
SELECT throws_ok($$SELECT mq.kafka_txn_offset('omd-txn', (SELECT producer_id FROM p), 0, 'omd-t', 'omd', 0, 1,
                                              repeat('m', 4097))$$, 'MQ038', NULL,
                 'a Kafka transaction''s staged offset with too much metadata is MQ038');
SELECT lives_ok($$SELECT mq.kafka_txn_offset('omd-txn', (SELECT producer_id FROM p), 0, 'omd-t', 'omd', 0, 1,
                                             repeat('m', 4096))$$,
                'and 4096 bytes are staged');

-- mq._committed_position: the offset and its metadata, null when none,
-- and mq.committed_offset's errors
SELECT lives_ok($$SELECT mq.commit_offset('omd-g', 'omd', 0, 2, 'meta-2')$$, 'a commit with metadata');
SELECT is((SELECT c.next_offset || ':' || c.metadata FROM mq._committed_position('omd-g', 'omd', 0) c), '2:meta-2',
          '_committed_position reads the offset and its metadata');
SELECT is((SELECT row(c.next_offset, c.metadata)::text FROM mq._committed_position('omd-none', 'omd', 0) c), '(,)',
          'one row of nulls for a group without an offset there');
SELECT throws_ok($$SELECT * FROM mq._committed_position('omd-g', 'omd-missing', 0)$$, 'MQ001', NULL,
                 'an unknown topic is MQ001, as from committed_offset');
SELECT throws_ok($$SELECT * FROM mq._committed_position('omd-g', 'omd', 5)$$, 'MQ006', NULL,
                 'and an unknown partition MQ006');

SELECT * FROM finish();
ROLLBACK;
