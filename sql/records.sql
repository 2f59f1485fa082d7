--
-- records: mq.produce (a procedure that commits, so not in a pgTAP
-- transaction) carries Kafka timestamps and headers like send_batch.
-- test/pgtap/records.sql covers the rest of the record semantics.
--
SET TIME ZONE 'UTC';
SELECT mq.create_topic('rec-produce', 1) > 0 AS created;
CALL mq.produce('rec-produce', ARRAY['k1', 'k2']::bytea[], ARRAY['v1', 'v2']::bytea[], 0, acks => '1',
                timestamps => ARRAY['2020-03-04 05:06:07+00', '2020-03-04 05:06:08+00']::timestamptz[],
                headers => ARRAY['[["h", "1"], ["h", null]]', '{"a": "b"}']::jsonb[]);
CALL mq.produce('rec-produce', ARRAY['k3']::bytea[], ARRAY['v3']::bytea[], 0, acks => 'all',
                "timestamp" => '2021-01-01+00');
SELECT msg_offset, timestamp, timestamp_type, headers, header_list
  FROM mq.fetch('rec-produce', 0, 0) ORDER BY msg_offset;
SELECT mq.offsets_for_times('rec-produce', 0, '2020-03-04 05:06:07.5+00');
-- a refused timestamp writes nothing and commits nothing
SELECT mq.alter_topic('rec-produce', '{"message.timestamp.difference.max.ms": 60000}');
\set VERBOSITY terse
CALL mq.produce('rec-produce', ARRAY['k4']::bytea[], ARRAY['v4']::bytea[], 0, "timestamp" => '2020-01-01+00');
\set VERBOSITY default
SELECT log_end_offset FROM mq.partitions WHERE topic = 'rec-produce';
SELECT mq.drop_topic('rec-produce');
