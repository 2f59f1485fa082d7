-- Long polling: fetch and poll wait for commits instead of returning empty,
-- wake when records commit, honour min_records and the timeout, and do not
-- wait under REPEATABLE READ.  A second session is opened with dblink.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(12);
SELECT mq.create_topic('lp', 1);
SELECT dblink_connect('producer', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
CREATE TEMP TABLE t (label text, started timestamptz, ended timestamptz, n bigint);

-- a record committed 0.3 s later wakes a fetch waiting up to 20 s
SELECT is(dblink_send_query('producer', $$DO $x$ BEGIN PERFORM pg_sleep(0.3); PERFORM mq.send('lp', NULL::text, 'late', partition => 0); END $x$ $$), 1, 'the producer session started');
INSERT INTO t SELECT 'fetch', clock_timestamp(), NULL, (SELECT count(*) FROM mq.fetch('lp', 0, 0, 10, max_wait_ms => 20000));
UPDATE t SET ended = clock_timestamp() WHERE label = 'fetch';
SELECT * FROM dblink_get_result('producer') AS r(status text);
SELECT * FROM dblink_get_result('producer') AS r(status text);  -- the empty result that frees the connection
SELECT is((SELECT n FROM t WHERE label = 'fetch'), 1::bigint, 'the waiting fetch returned the record');
SELECT ok((SELECT ended - started < interval '10 seconds' FROM t WHERE label = 'fetch'),
          'it returned when the record committed, not at its timeout');

-- min_records: three records from three commits
SELECT is(dblink_send_query('producer', $$DO $x$ BEGIN
    PERFORM pg_sleep(0.1); PERFORM mq.send('lp', NULL::text, 'a', partition => 0); COMMIT;
    PERFORM pg_sleep(0.1); PERFORM mq.send('lp', NULL::text, 'b', partition => 0); COMMIT;
    PERFORM pg_sleep(0.1); PERFORM mq.send('lp', NULL::text, 'c', partition => 0); COMMIT; END $x$ $$), 1, 'the producer session started');
SELECT is((SELECT count(*) FROM mq.fetch('lp', 0, 1, 10, max_wait_ms => 20000, min_records => 3)), 3::bigint,
          'min_records: the fetch waited for three records');
SELECT * FROM dblink_get_result('producer') AS r(status text);
SELECT * FROM dblink_get_result('producer') AS r(status text);  -- the empty result that frees the connection

-- poll waits too
SELECT mq.commit_offset('lpg', 'lp', 0, 4);
SELECT is(dblink_send_query('producer', $$DO $x$ BEGIN PERFORM pg_sleep(0.2); PERFORM mq.send('lp', NULL::text, 'polled', partition => 0); END $x$ $$), 1, 'the producer session started');
INSERT INTO t SELECT 'poll', clock_timestamp(), NULL,
    (SELECT count(*) FROM mq.poll('lpg', 'lp', 10, max_wait_ms => 20000));
UPDATE t SET ended = clock_timestamp() WHERE label = 'poll';
SELECT * FROM dblink_get_result('producer') AS r(status text);
SELECT * FROM dblink_get_result('producer') AS r(status text);  -- the empty result that frees the connection
SELECT is((SELECT n FROM t WHERE label = 'poll'), 1::bigint, 'the waiting poll returned the new record');
SELECT ok((SELECT ended - started < interval '10 seconds' FROM t WHERE label = 'poll'), 'as soon as it committed');

-- nothing arrives: the wait ends at max_wait_ms with no records
INSERT INTO t SELECT 'timeout', clock_timestamp(), NULL, (SELECT count(*) FROM mq.fetch('lp', 0, 5, 10, max_wait_ms => 300));
UPDATE t SET ended = clock_timestamp() WHERE label = 'timeout';
SELECT is((SELECT n FROM t WHERE label = 'timeout'), 0::bigint, 'no record: nothing returned');
SELECT ok((SELECT ended - started >= interval '290 milliseconds' FROM t WHERE label = 'timeout'),
          'it waited for max_wait_ms');

-- REPEATABLE READ cannot see later commits, so it does not wait
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO t SELECT 'rr', clock_timestamp(), NULL, (SELECT count(*) FROM mq.fetch('lp', 0, 5, 10, max_wait_ms => 20000));
UPDATE t SET ended = clock_timestamp() WHERE label = 'rr';
COMMIT;
SELECT is((SELECT n FROM t WHERE label = 'rr'), 0::bigint, 'REPEATABLE READ: no record');
SELECT ok((SELECT ended - started < interval '10 seconds' FROM t WHERE label = 'rr'), 'REPEATABLE READ: returned without waiting');

SELECT dblink_disconnect('producer');
SELECT * FROM finish();
