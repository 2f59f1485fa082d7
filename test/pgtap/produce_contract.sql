-- The produce contract (src/sql/31_produce_acks.sql): mq.produce_records
-- checks acks, refuses acks=all before writing when the ISR is below
-- min.insync.replicas (MQ021, nothing written), applies the durability
-- floor, and says which wait acks=all owes; mq.produce_await raises
-- MQ022 when the ISR shrank after the write.  The ISR is set up by hand
-- on this one node (replica_become_leader / replica_set_isr, as the
-- broker would); test/cli/produce_contract.sh and
-- test/kafka/produce_acks.sh run the same cases through mq.produce,
-- mqctl and mq-kafka, with commits and concurrent waits.
BEGIN;
SELECT plan(26);

SELECT mq.create_topic('pc', 1, '{"replication.factor": 3, "min.insync.replicas": 2}');
SELECT mq.create_topic('pc_plain', 1);
CREATE TEMP VIEW log_end AS SELECT log_end_offset FROM mq.partitions WHERE topic = 'pc';

-- acks: 0, 1, all or -1; anything else is MQ016 and writes nothing
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], partition => 0, acks => '2')$$,
                 'MQ016', 'acks must be 0, 1, all or -1, not "2"', 'acks 2 is refused');
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], partition => 0, acks => NULL)$$,
                 'MQ016', NULL, 'acks NULL is refused');
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], acks => 'all')$$,
                 'MQ010', 'acks=all needs a partition', 'acks=all without a partition is refused');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'pc_plain'), 0::bigint,
          'and nothing was written');

-- a partition that is not replicated: acks=all owes no wait (it is acks=1)
SELECT is((SELECT row(msg_offset, await_epoch, await_min_isr)::text
             FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], partition => 0, acks => 'all')),
          '(0,,)', 'unreplicated: acks=all writes and owes no wait');
SELECT is(mq.produce_await('pc_plain', 0, 0, NULL, NULL), NULL, 'produce_await with nothing owed returns NULL at once');

-- a topic that is not replicated has an ISR of one: with min.insync.replicas
-- 2, acks=all is refused, as on a Kafka topic of one replica; acks=1 writes
SELECT mq.create_topic('pc_misr', 1, '{"min.insync.replicas": 2}');
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc_misr', NULL, ARRAY['x']::bytea[], partition => 0, acks => 'all')$$,
                 'MQ021', 'not enough in-sync replicas for "pc_misr" partition 0: 1 in sync, min.insync.replicas is 2',
                 'unreplicated, min.insync.replicas 2: acks=all is refused');
SELECT is((SELECT count(*) FROM mq.produce_records('pc_misr', NULL, ARRAY['x']::bytea[], partition => 0, acks => '1')),
          1::bigint, 'acks=1 is written');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'pc_misr'), 1::bigint, 'only the acks=1 record');

-- the durability floor, for the transaction of the write
SET LOCAL synchronous_commit = off;
SELECT count(*) FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], acks => '1');
SELECT is(current_setting('synchronous_commit'), 'local', 'acks=1 raises synchronous_commit off to local');
SET LOCAL synchronous_commit = off;
SELECT count(*) FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], partition => 0, acks => 'all');
SELECT is(current_setting('synchronous_commit'), 'local', 'so does acks=all');
SET LOCAL synchronous_commit = on;
SELECT count(*) FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], acks => '1');
SELECT is(current_setting('synchronous_commit'), 'on', 'a stronger setting is kept');
SELECT count(*) FROM mq.produce_records('pc_plain', NULL, ARRAY['x']::bytea[], acks => '0');
SELECT is(current_setting('synchronous_commit'), 'off', 'acks=0 commits asynchronously');
SET LOCAL synchronous_commit = on;

-- led here in epoch 1 with replicas 1, 2, 3 and ISR {1}: below min.insync.replicas 2
SELECT mq.replica_become_leader('pc', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1]);
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc', NULL, ARRAY['a']::bytea[], partition => 0, acks => 'all')$$,
                 'MQ021', 'not enough in-sync replicas for "pc" partition 0: 1 in sync, min.insync.replicas is 2',
                 'short ISR: acks=all is refused before the write');
SELECT throws_ok($$SELECT * FROM mq.produce_records('pc', NULL, ARRAY['a']::bytea[], partition => 0, acks => '-1')$$,
                 'MQ021', NULL, 'and so is acks=-1');
SELECT is((SELECT log_end_offset FROM log_end), 0::bigint, 'nothing was written');
SELECT is((SELECT row(msg_offset, await_epoch, await_min_isr)::text
             FROM mq.produce_records('pc', NULL, ARRAY['b']::bytea[], partition => 0, acks => '1')),
          '(0,,)', 'acks=1 is written with the short ISR and owes no wait');
SELECT is((SELECT log_end_offset FROM log_end), 1::bigint, 'the acks=1 record is in the log');

-- the follower 2 catches up and joins: the ISR is full again
SELECT mq.replica_fetch('pc', 0, 1, 2, 0, 100, 0, mq._offsets_version(topic_id, 0)) FROM mq.topic WHERE topic_name = 'pc';
SELECT mq.replica_fetch('pc', 0, 1, 2, 1, 100, 0, mq._offsets_version(topic_id, 0)) FROM mq.topic WHERE topic_name = 'pc';
SELECT mq.replica_set_isr('pc', 0, 1, ARRAY[1, 2]);
CREATE TEMP TABLE w AS
SELECT * FROM mq.produce_records('pc', NULL, ARRAY['c']::bytea[], partition => 0, acks => 'all');
SELECT is((SELECT row(msg_offset, await_epoch, await_min_isr)::text FROM w), '(1,1,2)',
          'full ISR: acks=all is written and owes a wait in epoch 1 for 2 replicas');
-- the leader commits it without its own flush: mq.produce_await flushes it
-- while the followers fetch, and the high watermark waits for that flush
SELECT is(current_setting('synchronous_commit'), 'off',
          'acks=all on a leader commits without waiting for its flush (the wait flushes)');
SET LOCAL synchronous_commit = on;
SELECT is((SELECT log_end_offset FROM log_end), 2::bigint, 'the record is in the log');

-- the ISR shrinks after the write: the wait ends with MQ022
SELECT mq.replica_set_isr('pc', 0, 1, ARRAY[1]);
SELECT throws_ok($$SELECT mq.produce_await('pc', 0, (SELECT msg_offset FROM w), 1, 2, 2000)$$,
                 'MQ022', NULL, 'an ISR that shrank after the write: not enough replicas after append');
SELECT is((SELECT convert_from(value, 'UTF8') FROM mq.fetch('pc', 0, 1, 1)), 'c',
          'and the record stays written');
SELECT throws_ok($$SELECT mq.produce_await('pc', 0, 9223372036854775807, 1, 1, 10)$$, 'MQ010', NULL,
                 'a last offset no record can have is refused, not waited past');
SELECT throws_ok($$SELECT mq.produce_await('pc', 0, -5, 1, 1, 10)$$, 'MQ010', NULL, 'so is a negative one');
-- the procedure commits before it waits: inside BEGIN it says so first
SELECT throws_ok($$CALL mq.produce('pc', NULL, ARRAY['d']::bytea[], 0, acks => '1')$$, 'MQ052',
                 'mq.produce cannot run inside a transaction block', 'mq.produce inside a transaction block: MQ052');

SELECT * FROM finish();
ROLLBACK;
