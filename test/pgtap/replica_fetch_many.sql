-- A follower's fetch of many partitions at once (mq.replica_fetch_many,
-- src/sql/60_replica_fetch.sql), the statement of the broker's fetch
-- session per leader (broker/mq-broker/fetch_session.c): each partition
-- answered as mq.replica_fetch answers it, a refusal answered for its
-- partition alone, the follower's progress recorded (the high watermark
-- moves as with single fetches), idle partitions left out once recorded,
-- answered together when their progress is due, and a cap on the records
-- of one answer.  The wait itself is
-- test/isolation/specs/replica-fetch-many.spec's.
BEGIN;
SELECT plan(23);

SELECT mq.create_topic('fm', 12);
SELECT mq.replica_become_leader('fm', p, 1, 1, ARRAY[1, 2], ARRAY[1, 2]) FROM generate_series(0, 11) p;
SELECT mq.send_batch('fm', NULL, ARRAY[('p' || p || '-a')::bytea, ('p' || p || '-b')::bytea], partition => p)
  FROM generate_series(0, 2) p;
CREATE TEMP VIEW ov AS
SELECT array_agg(mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'fm'), p) ORDER BY p) AS v
  FROM generate_series(0, 2) p;

-- three partitions, no wait: each answered with its records
SELECT results_eq(
    $$SELECT i, (batch).vals, sqlstate FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2],
          ARRAY[1, 1, 1], ARRAY[0, 0, 1]::bigint[], (SELECT v FROM ov), 100, 0) ORDER BY i$$,
    $$VALUES (1, ARRAY['p0-a', 'p0-b']::bytea[], NULL::text), (2, ARRAY['p1-a', 'p1-b']::bytea[], NULL),
             (3, ARRAY['p2-b']::bytea[], NULL)$$,
    'each partition is answered with its records from its fetch offset');
SELECT is((SELECT high_watermark FROM mq.partitions WHERE topic = 'fm' AND partition = 0), 0::bigint,
          'the high watermark waits for the follower''s next fetch offset');

-- the acknowledging fetch (at the log ends) moves the high watermarks
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2], ARRAY[1, 1, 1],
                                           ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov), 100, 0);
SELECT is((SELECT array_agg(high_watermark ORDER BY partition) FROM mq.partitions WHERE topic = 'fm' AND partition < 3),
          ARRAY[2, 2, 2]::bigint[], 'its progress moves each high watermark, as single fetches do');

-- a refusal is its partition's alone
SELECT results_eq(
    $$SELECT i, sqlstate, batch IS NULL FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'nope'], ARRAY[0, 1, 0],
          ARRAY[1, 7, 1], ARRAY[2, 2, 0]::bigint[], (SELECT v FROM ov), 100, 0) ORDER BY i$$,
    $$VALUES (1, NULL::text, false), (2, 'MQ025', true), (3, 'MQ001', true)$$,
    'an unknown epoch and an unknown topic are answered for their partitions, the other is fetched');
SELECT matches((SELECT message FROM mq.replica_fetch_many(2, ARRAY['fm'], ARRAY[0], ARRAY[1],
                                     ARRAY[5]::bigint[], ARRAY[(SELECT v[1] FROM ov)], 100, 0)),
               '^fetch offset 5 of replica 2 is outside', 'with its message (beyond the log end: MQ007)');

-- caught up and recorded: with a wait, partitions whose progress is not
-- due are left out (no row); without one, every partition is answered
SELECT is((SELECT count(*)::integer FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2],
               ARRAY[1, 1, 1], ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov), 100, 0)), 3,
          'without a wait, idle partitions are answered too');
-- remembered idle (replica_fetch_cache.c) and due (no wait), they are
-- answered again without a look: mq._replica_fetch_refresh records them
SET LOCAL track_functions = 'all';
CREATE TEMP VIEW looks AS
SELECT coalesce(sum(calls), 0)::integer AS n FROM pg_stat_xact_user_functions
 WHERE schemaname = 'mq' AND funcname = '_replica_fetch_look';
CREATE TEMP TABLE looks0 AS SELECT n FROM looks;
SELECT results_eq(
    $$SELECT i, (batch).vals IS NULL, (batch).base_offset FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'],
          ARRAY[0, 1, 2], ARRAY[1, 1, 1], ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov), 100, 0) ORDER BY i$$,
    $$VALUES (1, true, 2::bigint), (2, true, 2::bigint), (3, true, 2::bigint)$$,
    'remembered idle partitions whose progress is due are answered with their headers');
SELECT is((SELECT n FROM looks) - (SELECT n FROM looks0), 0, 'without looking at them again');
-- remembered idle, not due yet: the fetch waits, and its wait looks only
-- at partitions whose counters moved since the fetch's own looks (none
-- here: the wait ends when the progress falls due), not at all of them
-- (each look of the wait reads the offsets version)
CREATE TEMP VIEW wait_looks AS
SELECT coalesce(sum(calls), 0)::integer AS n FROM pg_stat_xact_user_functions
 WHERE schemaname = 'mq' AND funcname = '_offsets_version';
CREATE TEMP TABLE ov_now AS SELECT v FROM ov;
CREATE TEMP TABLE wait_looks0 AS SELECT n FROM wait_looks;
CREATE TEMP TABLE waited AS SELECT clock_timestamp() AS t;
SELECT results_eq(
    $$SELECT i, (batch).vals IS NULL FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2],
          ARRAY[1, 1, 1], ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov_now), 100, 300) ORDER BY i$$,
    $$VALUES (1, true), (2, true), (3, true)$$,
    'remembered idle partitions are answered with their headers once their progress falls due');
SELECT ok(clock_timestamp() - (SELECT t FROM waited) >= interval '150 ms', 'after waiting for it');
SELECT is((SELECT n FROM wait_looks) - (SELECT n FROM wait_looks0) + (SELECT n FROM looks) - (SELECT n FROM looks0),
          0, 'the wait looked at no partition whose counter stood still, nor did the fetch');
-- news moves a partition's counter at its commit, which this transaction
-- never reaches: the backend forgets its looks as that commit would make
-- it look again
SELECT mq._replica_fetch_remember(2, array_fill((SELECT topic_id FROM mq.topic WHERE topic_name = 'fm'), ARRAY[3]),
                                  ARRAY[0, 1, 2], ARRAY[1, 1, 1], ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov),
                                  ARRAY[0, 0, 0]::bigint[], ARRAY[false, false, false], (SELECT v FROM ov),
                                  array_fill(now(), ARRAY[3]));
SELECT mq.send_batch('fm', NULL, ARRAY['p1-c']::bytea[], partition => 1);
-- the idle ones' progress falls due in 20 s, within half the wait: a
-- fetch without news would stamp them with the ones due, one with news
-- leaves them for later (stamped with every fetch under load, each was
-- recorded twice a wait)
UPDATE mq.replica_progress SET last_fetch_at = clock_timestamp() - interval '40 s'
 WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'fm') AND replica_id = 2;
SELECT results_eq(
    $$SELECT i, (batch).vals FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2], ARRAY[1, 1, 1],
          ARRAY[2, 2, 2]::bigint[], (SELECT v FROM ov), 100, 60000)$$,
    $$VALUES (2, ARRAY['p1-c']::bytea[])$$,
    'with a wait and news on one partition: only that one, at once, not the idle ones not yet due');

-- a partition the backend remembers idle (replica_fetch_cache.c) is
-- looked at again when asked another way: here without an offsets
-- version (a restarted follower), which must be answered at once
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2], ARRAY[1, 1, 1],
                                           ARRAY[2, 3, 2]::bigint[], (SELECT v FROM ov), 100, 0);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT results_eq(
    $$SELECT i, (batch).offset_groups IS NOT NULL, clock_timestamp() - (SELECT t FROM t0) < interval '10 s'
        FROM mq.replica_fetch_many(2, ARRAY['fm', 'fm', 'fm'], ARRAY[0, 1, 2], ARRAY[1, 1, 1],
          ARRAY[2, 3, 2]::bigint[], ARRAY[NULL, (SELECT v[2] FROM ov), (SELECT v[3] FROM ov)], 100, 60000)$$,
    $$VALUES (1, true, true)$$,
    'a remembered idle partition asked without an offsets version is answered at once, with the offsets');

-- the cap: 10 x max_records records per answer, the rest next time
SELECT mq.send_batch('fm', NULL, ARRAY['x']::bytea[], partition => p) FROM generate_series(3, 11) p;
SELECT is((SELECT count(*)::integer FROM mq.replica_fetch_many(2, array_fill('fm'::text, ARRAY[12]),
               ARRAY(SELECT generate_series(0, 11)), array_fill(1, ARRAY[12]),
               array_fill(0::bigint, ARRAY[12]), NULL, 1, 0) WHERE sqlstate IS NULL), 10,
          'max_records 1: ten partitions are fetched, the two others wait for the next call');

-- idle partitions (caught up, recorded, the follower holding the high
-- watermark) whose progress is due are answered with their headers alone
-- and their progress stamped, in one statement (mq._replica_fetch_refresh)
SELECT mq.create_topic('fh', 2);
SELECT mq.replica_become_leader('fh', p, 1, 1, ARRAY[1, 2], ARRAY[1, 2]) FROM generate_series(0, 1) p;
SELECT mq.send_batch('fh', NULL, ARRAY['a']::bytea[], partition => p) FROM generate_series(0, 1) p;
CREATE TEMP VIEW fh AS
SELECT (SELECT topic_id FROM mq.topic WHERE topic_name = 'fh') AS id,
       array_agg(mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'fh'), p) ORDER BY p) AS v
  FROM generate_series(0, 1) p;
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fh', 'fh'], ARRAY[0, 1], ARRAY[1, 1], ARRAY[0, 0]::bigint[],
                                           (SELECT v FROM fh), 100, 0);
SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fh', 'fh'], ARRAY[0, 1], ARRAY[1, 1], ARRAY[1, 1]::bigint[],
                                           (SELECT v FROM fh), 100, 0);
SELECT results_eq(
    $$SELECT i, (batch).base_offset, (batch).log_end_offset, (batch).high_watermark, (batch).vals IS NULL
        FROM mq.replica_fetch_many(2, ARRAY['fh', 'fh'], ARRAY[0, 1], ARRAY[1, 1], ARRAY[1, 1]::bigint[],
                                   (SELECT v FROM fh), 100, 0) ORDER BY i$$,
    $$VALUES (1, 1::bigint, 1::bigint, 1::bigint, true), (2, 1::bigint, 1::bigint, 1::bigint, true)$$,
    'idle partitions due are answered with their headers alone');
SELECT mq.send_batch('fh', NULL, ARRAY['b']::bytea[], partition => 1);
CREATE TEMP TABLE fh_before AS
SELECT max(last_fetch_at) AS t FROM mq.replica_progress WHERE topic_id = (SELECT id FROM fh) AND replica_id = 2;
SELECT results_eq(
    $$SELECT k FROM mq._replica_fetch_refresh(2, ARRAY[(SELECT id FROM fh), (SELECT id FROM fh)], ARRAY[0, 1],
                                               ARRAY[1, 1], ARRAY[1, 1]::bigint[], (SELECT v FROM fh), ARRAY[1, 2])$$,
    $$VALUES (1)$$,
    'a partition with records since it was looked at is left to the full fetch');
SELECT ok((SELECT last_fetch_at > (SELECT t FROM fh_before) AND caught_up_at = last_fetch_at
             FROM mq.replica_progress WHERE topic_id = (SELECT id FROM fh) AND partition = 0 AND replica_id = 2),
          'the idle one''s progress is stamped: fetched and caught up now');

-- a partition whose progress the fetch recorded without a look
-- (mq._replica_fetch_refresh) stays remembered idle, with the new time
CREATE TEMP TABLE rc AS
SELECT * FROM mq._replica_fetch_recall(7, ARRAY['fh'], ARRAY[0], ARRAY[1], ARRAY[1]::bigint[],
                                       ARRAY[(SELECT v[1] FROM fh)]);
SELECT mq._replica_fetch_remember(7, ids, ARRAY[0], ARRAY[1], ARRAY[1]::bigint[], ARRAY[(SELECT v[1] FROM fh)],
                                  counters, ARRAY[true], ARRAY[(SELECT v[1] FROM fh)],
                                  ARRAY[clock_timestamp() - interval '1 s'])
  FROM rc;
SELECT mq._replica_fetch_restamp(7, (SELECT ids FROM rc), ARRAY[0], '2026-01-02 03:04:05+00');
SELECT results_eq($$SELECT known, recorded_at FROM mq._replica_fetch_recall(7, ARRAY['fh'], ARRAY[0], ARRAY[1],
                        ARRAY[1]::bigint[], ARRAY[(SELECT v[1] FROM fh)])$$,
          $$VALUES (ARRAY[true], ARRAY['2026-01-02 03:04:05+00'::timestamptz])$$,
          'a restamped partition stays remembered idle, recorded when the refresh stamped it');

-- a remembered idle partition whose high watermark waits for another
-- follower cannot be stamped (mq._replica_fetch_refresh wants the high
-- watermark at the follower's log end): fetched in full, it is forgotten,
-- so that the next fetch looks at it and waits from its new progress
-- (kept, it stayed due and every fetch answered at once)
SELECT mq.create_topic('fw', 1);
SELECT mq.replica_become_leader('fw', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2, 3]);
SELECT mq.send_batch('fw', NULL, ARRAY['a']::bytea[], partition => 0);
CREATE TEMP VIEW fw AS
SELECT mq._offsets_version((SELECT topic_id FROM mq.topic WHERE topic_name = 'fw'), 0) AS v;
SELECT (SELECT count(*) FROM mq.replica_fetch_many(2, ARRAY['fw'], ARRAY[0], ARRAY[1], ARRAY[o]::bigint[],
                                                   ARRAY[(SELECT v FROM fw)], 100, 0))
  FROM generate_series(0, 1) o;
SELECT is((SELECT (batch).high_watermark FROM mq.replica_fetch_many(2, ARRAY['fw'], ARRAY[0], ARRAY[1],
               ARRAY[1]::bigint[], ARRAY[(SELECT v FROM fw)], 100, 0)), 0::bigint,
          'found idle and due, it is fetched in full: the high watermark waits for replica 3');
SELECT is((SELECT known FROM mq._replica_fetch_recall(2, ARRAY['fw'], ARRAY[0], ARRAY[1], ARRAY[1]::bigint[],
                                                      ARRAY[(SELECT v FROM fw)])),
          ARRAY[false], 'and forgotten: the next fetch looks at it again');

-- bad arrays
SELECT throws_ok($$SELECT * FROM mq.replica_fetch_many(2, ARRAY['fm'], ARRAY[0, 1], ARRAY[1], ARRAY[0]::bigint[], NULL)$$,
                 'MQ010', NULL, 'arrays of different lengths are refused');
SELECT is((SELECT count(*)::integer FROM mq.replica_fetch_many(2, '{}', '{}', '{}', '{}', '{}', 100, 0)), 0,
          'no partitions: no rows');
SELECT ok(has_function_privilege('public', 'mq.replica_fetch_many(integer, text[], integer[], integer[], bigint[], bigint[], integer, integer)', 'EXECUTE') = false,
          'PUBLIC may not call it (mq.grant_broker grants it)');

SELECT * FROM finish();
ROLLBACK;
