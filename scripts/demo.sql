-- mq demo: a topic, keyed and batched produce, fetch by offset, and a
-- consumer group that commits its position in the same transaction as
-- its own table writes.
\set ON_ERROR_STOP on
\echo '== create a topic with 3 partitions and 7-day retention'
SELECT mq.create_topic('orders', 3, '{"retention.ms": "7d"}');
SELECT topic, partitions, config FROM mq.topics;

\echo '== produce: keyed records land where a Kafka client would put them'
SELECT * FROM mq.send('orders', 'customer-42', '{"item": "book", "qty": 1}'::jsonb);
SELECT * FROM mq.send('orders', 'customer-42', '{"item": "pen", "qty": 3}'::jsonb);
SELECT * FROM mq.send_batch('orders',
    ARRAY['customer-7', 'customer-8', 'customer-9', 'customer-42'],
    ARRAY['{"item": "lamp"}', '{"item": "desk"}', '{"item": "mug"}', '{"item": "ink"}']);
SELECT mq.partition_for('orders', 'customer-42') AS partition_of_customer_42;

\echo '== the log of each partition: gapless offsets'
SELECT topic, partition, log_start_offset, log_end_offset, high_watermark FROM mq.partitions;

\echo '== fetch by offset: everything customer-42 ordered, in order'
SELECT msg_offset, convert_from(key, 'UTF8') AS key, convert_from(value, 'UTF8') AS value
  FROM mq.fetch('orders', mq.partition_for('orders', 'customer-42'), 0);

\echo '== a consumer group: poll, write our own table, commit the offsets, one transaction'
CREATE TABLE order_lines (customer text, item text);
BEGIN;
CREATE TEMP TABLE batch ON COMMIT DROP AS SELECT * FROM mq.poll('billing', 'orders', 100);
INSERT INTO order_lines
SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8')::jsonb->>'item' FROM batch;
SELECT mq.commit_offset('billing', topic, partition, max(msg_offset) + 1)
  FROM batch GROUP BY topic, partition;
COMMIT;
SELECT * FROM order_lines ORDER BY customer, item;

\echo '== the group has consumed everything: the next poll is empty'
SELECT count(*) AS records_left FROM mq.poll('billing', 'orders', 100);
SELECT partition, mq.committed_offset('billing', 'orders', partition) AS committed
  FROM generate_series(0, 2) AS partition;
