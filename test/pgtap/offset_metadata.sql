-- An offset commit's metadata (Kafka's offset.metadata.max.bytes, 4096 by
-- default): mq.commit_offset and a Kafka transaction's staged offset
-- (mq.kafka_txn_offset) take up to 4096 bytes and refuse more with MQ038
-- (Kafka's OFFSET_METADATA_TOO_LARGE), storing nothing.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(7);

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

SELECT * FROM finish();
ROLLBACK;
