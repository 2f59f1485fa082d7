-- mq._await_topics (src/topic_watch.c), what mq-kafka's parked fetches
-- wait on: the change counters of many topics, returned at once when one
-- is not the caller's, else as soon as a commit moves one (the latch
-- notify.c sets for registered watchers) or at max_wait_ms.  Topics that
-- do not exist or that the caller may not read have no counter; bad
-- arguments are MQ010.  A second session is opened with dblink.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(11);
SELECT mq.create_topic('aw1', 1);
SELECT mq.create_topic('aw2', 1);
SELECT dblink_connect('producer', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
CREATE TEMP TABLE t (label text, started timestamptz, ended timestamptz, c bigint[]);

-- nothing seen yet: the counters at once
INSERT INTO t SELECT 'first', clock_timestamp(), NULL,
    mq._await_topics(ARRAY['aw1', 'aw2', 'no_such_topic'], ARRAY[NULL, NULL, NULL]::bigint[], 20000);
UPDATE t SET ended = clock_timestamp() WHERE label = 'first';
SELECT ok((SELECT c[1] IS NOT NULL AND c[2] IS NOT NULL FROM t WHERE label = 'first'),
          'the counters of existing topics');
SELECT ok((SELECT c[3] IS NULL FROM t WHERE label = 'first'), 'a topic that does not exist has none');
SELECT ok((SELECT ended - started < interval '10 seconds' FROM t WHERE label = 'first'),
          'counters the caller had not seen come back without waiting');

-- nothing changes: the same counters at max_wait_ms
SELECT is(mq._await_topics(ARRAY['aw1', 'aw2', 'no_such_topic'], (SELECT c FROM t WHERE label = 'first'), 200),
          (SELECT c FROM t WHERE label = 'first'), 'unchanged topics: the same counters at the timeout');

-- a commit to aw2 0.3 s later wakes a wait of up to 60 s, which returns
-- aw2's new counter (the latch also wakes for other reasons, a signal
-- such as a sinval catch-up, which is why the bound is that tight)
SELECT is(dblink_send_query('producer', $$DO $x$ BEGIN PERFORM pg_sleep(0.3); PERFORM mq.send('aw2', NULL::text, 'late', partition => 0); END $x$ $$), 1, 'the producer session started');
INSERT INTO t SELECT 'woken', clock_timestamp(), NULL,
    mq._await_topics(ARRAY['aw1', 'aw2'], (SELECT c[1:2] FROM t WHERE label = 'first'), 60000);
UPDATE t SET ended = clock_timestamp() WHERE label = 'woken';
SELECT * FROM dblink_get_result('producer') AS r(status text);
SELECT * FROM dblink_get_result('producer') AS r(status text);  -- the empty result that frees the connection
SELECT ok((SELECT ended - started < interval '5 seconds' FROM t WHERE label = 'woken'),
          'the commit woke the wait before its timeout');
SELECT ok((SELECT w.c[2] <> f.c[2] AND w.c[1] = f.c[1] FROM t w, t f WHERE w.label = 'woken' AND f.label = 'first'),
          'aw2''s counter moved, aw1''s did not');

-- a role that may not read aw1 gets no counter for it
CREATE ROLE aw_reader;
GRANT USAGE ON SCHEMA mq TO aw_reader;
SELECT mq.grant('read', 'topic', 'aw2', 'aw_reader');
SET ROLE aw_reader;
SELECT ok((SELECT c[1] IS NULL AND c[2] IS NOT NULL
             FROM (SELECT mq._await_topics(ARRAY['aw1', 'aw2'], ARRAY[NULL, NULL]::bigint[], 0) c) x),
          'a topic the caller may not read has no counter');
RESET ROLE;

SELECT throws_ok($$SELECT mq._await_topics(ARRAY['aw1'], ARRAY[1, 2]::bigint[], 0)$$, 'MQ010', NULL,
                 'topics and seen of different lengths: MQ010');
SELECT throws_ok($$SELECT mq._await_topics(ARRAY['aw1'], ARRAY[1]::bigint[], -1)$$, 'MQ010', NULL,
                 'a negative max_wait_ms: MQ010');
SELECT is(mq._await_topics(ARRAY[]::text[], ARRAY[]::bigint[], 20000), ARRAY[]::bigint[],
          'no topics: an empty array at once');

SELECT dblink_disconnect('producer');
SELECT * FROM finish();
