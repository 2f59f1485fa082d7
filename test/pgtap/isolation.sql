-- Produce, poll and commit under each isolation level; consumers never see
-- uncommitted records; concurrent pollers get disjoint partitions without
-- waiting; init_producer waits for the old epoch's open transaction and
-- fences it.  A second session is opened with dblink.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(23);

SELECT mq.create_topic('iso', 2);
SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
SELECT dblink_connect('third', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));

-- each isolation level: produce, poll, commit the offset
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT is((SELECT msg_offset FROM mq.send('iso', NULL::text, 'rc', partition => 0)), 0::bigint, 'READ COMMITTED: produce');
SELECT is((SELECT count(*) FROM mq.poll('g-rc', 'iso', 10)), 1::bigint, 'READ COMMITTED: poll sees own record');
SELECT lives_ok($$SELECT mq.commit_offset('g-rc', 'iso', 0, 1)$$, 'READ COMMITTED: commit offset');
COMMIT;

BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT is((SELECT count(*) FROM mq.fetch('iso', 0, 0)), 1::bigint, 'REPEATABLE READ: snapshot taken');
SELECT * FROM dblink('other', $$SELECT msg_offset FROM mq.send('iso', NULL::text, 'other', partition => 0)$$) AS t(o bigint);
SELECT is((SELECT msg_offset FROM mq.send('iso', NULL::text, 'rr', partition => 0)), 2::bigint,
          'REPEATABLE READ: produce after a record committed since the snapshot gets the next offset');
SELECT is((SELECT count(*) FROM mq.fetch('iso', 0, 0)), 1::bigint,
          'REPEATABLE READ: fetch still reads the snapshot (own record not yet visible to this statement''s snapshot)');
SELECT lives_ok($$SELECT mq.commit_offset('g-rr', 'iso', 0, 1)$$, 'REPEATABLE READ: commit offset');
COMMIT;
SELECT is((SELECT string_agg(msg_offset || ':' || convert_from(value, 'UTF8'), ',' ORDER BY msg_offset)
             FROM mq.fetch('iso', 0, 0)),
          '0:rc,1:other,2:rr', 'all three records, gapless, in offset order');

BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT is((SELECT msg_offset FROM mq.send('iso', NULL::text, 'ser', partition => 0)), 3::bigint, 'SERIALIZABLE: produce');
SELECT is((SELECT count(*) FROM mq.poll('g-ser', 'iso', 10)), 4::bigint, 'SERIALIZABLE: poll sees the committed records and its own');
SELECT lives_ok($$SELECT mq.commit_offset('g-ser', 'iso', 0, 4)$$, 'SERIALIZABLE: commit offset');
COMMIT;
SELECT is(mq.committed_offset('g-ser', 'iso', 0), 4::bigint, 'SERIALIZABLE: the offset commit is durable');

-- uncommitted records are invisible to consumers
SELECT dblink_exec('other', 'BEGIN');
SELECT * FROM dblink('other', $$SELECT msg_offset FROM mq.send('iso', NULL::text, 'pending', partition => 1)$$) AS t(o bigint);
SELECT is((SELECT count(*) FROM mq.fetch('iso', 1, 0)), 0::bigint, 'fetch does not see an uncommitted record');
SELECT is((SELECT count(*) FROM mq.poll('g-unc', 'iso', 10) WHERE partition = 1), 0::bigint, 'poll does not see it');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'iso' AND partition = 1), 0::bigint,
          'the log end offset does not count it');
SELECT dblink_exec('other', 'COMMIT');
SELECT is((SELECT count(*) FROM mq.fetch('iso', 1, 0)), 1::bigint, 'after commit it is visible');

-- concurrent pollers of one group: disjoint partitions, no waiting
SELECT dblink_exec('other', 'BEGIN');
CREATE TEMP TABLE first_poll AS
    SELECT * FROM dblink('other', $$SELECT partition FROM mq.poll('g-claim', 'iso', 1)$$) AS t(partition int);
SELECT is((SELECT count(*) FROM first_poll), 1::bigint, 'the first poller reads one record and claims its partition');
SELECT set_eq($$SELECT DISTINCT partition FROM mq.poll('g-claim', 'iso', 100)$$,
              $$SELECT 1 - partition FROM first_poll$$,
              'the second poller gets only the other partition, without waiting');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT set_eq($$SELECT DISTINCT partition FROM mq.poll('g-claim', 'iso', 100)$$, ARRAY[0, 1],
              'once the first poller''s transaction ended, both partitions are available');

-- init_producer waits for the old epoch's open transaction, then fences it
CREATE TEMP TABLE old AS SELECT * FROM mq.init_producer('tx-iso');
SELECT dblink_exec('other', 'BEGIN');
SELECT * FROM dblink('other', format($$SELECT msg_offset FROM mq.send('iso', NULL::text, 'old epoch', partition => 0,
    producer_id => %s, producer_epoch => 0, base_sequence => 0)$$, (SELECT producer_id FROM old))) AS t(o bigint);
SELECT dblink_send_query('third', $$SELECT producer_epoch FROM mq.init_producer('tx-iso')$$);
SELECT pg_sleep(0.3);
SELECT is(dblink_is_busy('third'), 1, 'init_producer waits while the old epoch has an open transaction');
SELECT dblink_exec('other', 'COMMIT');
SELECT is((SELECT e FROM dblink_get_result('third') AS t(e int)), 1, 'and returns the new epoch once it ended');
SELECT is((SELECT count(*) FROM mq.fetch('iso', 0, 0) WHERE convert_from(value, 'UTF8') = 'old epoch'), 1::bigint,
          'the old epoch''s transaction committed before the new epoch took over');
SELECT throws_ok(format($$SELECT * FROM mq.send('iso', NULL::text, 'zombie', partition => 0,
    producer_id => %s, producer_epoch => 0, base_sequence => 1)$$, (SELECT producer_id FROM old)),
    'MQ012', NULL, 'afterwards the old epoch is fenced');

SELECT dblink_disconnect('other');
SELECT dblink_disconnect('third');
SELECT * FROM finish();
