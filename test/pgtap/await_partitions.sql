-- mq._await_partitions (src/topic_watch.c), what mq-kafka's parked
-- fetches wait on: the high watermarks of many partitions, returned at
-- once when one is not the caller's, else as soon as a commit moves one
-- (read again when notify.c sets the latch of registered watchers) or at
-- max_wait_ms.  A commit to another partition of the topic does not end
-- the wait.  Partitions that do not exist or whose topic the caller may
-- not read have none; bad arguments are MQ010.  A second session is
-- opened with dblink.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(12);
SELECT mq.create_topic('aw1', 1);
SELECT mq.create_topic('aw2', 2);
SELECT mq.send('aw2', NULL::text, 'first', partition => 0);
SELECT dblink_connect('producer', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
CREATE TEMP TABLE t (label text, started timestamptz, ended timestamptz, c bigint[]);

-- nothing seen yet: the high watermarks at once
INSERT INTO t SELECT 'first', clock_timestamp(), NULL,
    mq._await_partitions(ARRAY['aw1', 'aw2', 'aw2', 'no_such_topic'], ARRAY[0, 0, 1, 0],
                         ARRAY[NULL, NULL, NULL, NULL]::bigint[], 20000);
UPDATE t SET ended = clock_timestamp() WHERE label = 'first';
SELECT is((SELECT c[1:3] FROM t WHERE label = 'first'), ARRAY[0, 1, 0]::bigint[],
          'the high watermarks of existing partitions');
SELECT ok((SELECT c[4] IS NULL FROM t WHERE label = 'first'), 'a topic that does not exist has none');
SELECT ok((SELECT ended - started < interval '10 seconds' FROM t WHERE label = 'first'),
          'high watermarks the caller had not seen come back without waiting');

-- nothing changes: the same at max_wait_ms
SELECT is(mq._await_partitions(ARRAY['aw1', 'aw2', 'aw2', 'no_such_topic'], ARRAY[0, 0, 1, 0],
                               (SELECT c FROM t WHERE label = 'first'), 200),
          (SELECT c FROM t WHERE label = 'first'), 'unchanged partitions: the same at the timeout');

-- a commit to aw2/1 0.3 s later, one to aw2/0 0.3 s after that: a wait of
-- up to 60 s on aw1/0 and aw2/0 ends with the second (the latch also wakes
-- for other reasons, a signal such as a sinval catch-up, which is why the
-- bound is that tight)
SELECT is(dblink_send_query('producer', $$DO $x$ BEGIN
    PERFORM pg_sleep(0.3); PERFORM mq.send('aw2', NULL::text, 'other', partition => 1); COMMIT;
    PERFORM pg_sleep(0.3); PERFORM mq.send('aw2', NULL::text, 'late', partition => 0); END $x$ $$), 1, 'the producer session started');
INSERT INTO t SELECT 'woken', clock_timestamp(), NULL,
    mq._await_partitions(ARRAY['aw1', 'aw2'], ARRAY[0, 0], (SELECT c[1:2] FROM t WHERE label = 'first'), 60000);
UPDATE t SET ended = clock_timestamp() WHERE label = 'woken';
SELECT * FROM dblink_get_result('producer') AS r(status text);
SELECT * FROM dblink_get_result('producer') AS r(status text);  -- the empty result that frees the connection
SELECT ok((SELECT ended - started < interval '5 seconds' FROM t WHERE label = 'woken'),
          'the commit woke the wait before its timeout');
SELECT is((SELECT c FROM t WHERE label = 'woken'), ARRAY[0, 2]::bigint[],
          'after the commit to aw2/0 (not before, at the one to aw2/1): aw2/0 moved, aw1/0 did not');

-- a role that may not read aw1 gets nothing for it
CREATE ROLE aw_reader;
GRANT USAGE ON SCHEMA mq TO aw_reader;
SELECT mq.grant('read', 'topic', 'aw2', 'aw_reader');
SET ROLE aw_reader;
SELECT is(mq._await_partitions(ARRAY['aw1', 'aw2'], ARRAY[0, 0], ARRAY[NULL, NULL]::bigint[], 0),
          ARRAY[NULL, 2]::bigint[], 'a topic the caller may not read has no high watermark');
RESET ROLE;

SELECT throws_ok($$SELECT mq._await_partitions(ARRAY['aw1'], ARRAY[0], ARRAY[1, 2]::bigint[], 0)$$, 'MQ010', NULL,
                 'seen of another length: MQ010');
SELECT throws_ok($$SELECT mq._await_partitions(ARRAY['aw1'], ARRAY[0, 1], ARRAY[1]::bigint[], 0)$$, 'MQ010', NULL,
                 'partitions of another length: MQ010');
SELECT throws_ok($$SELECT mq._await_partitions(ARRAY['aw1'], ARRAY[0], ARRAY[1]::bigint[], -1)$$, 'MQ010', NULL,
                 'a negative max_wait_ms: MQ010');
SELECT is(mq._await_partitions(ARRAY[]::text[], ARRAY[]::int[], ARRAY[]::bigint[], 20000), ARRAY[]::bigint[],
          'no partitions: an empty array at once');

SELECT dblink_disconnect('producer');
SELECT * FROM finish();
