-- The streaming scan of mq.fetch and mq.poll (src/fetch_path.c,
-- src/fetch_scan.c): EXPLAIN shows it where the call is in FROM, and it
-- returns exactly what the function scan returns (mq.enable_fetch_scan =
-- off) across segments, compaction gaps, the high watermark, max_bytes,
-- rescans, parameters, PL/pgSQL and cursors; the checks of the function
-- call (EXECUTE, topic rights, the leader) still apply.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(35);

-- the rows of a query, in order, with the streaming scan or without
CREATE FUNCTION pg_temp.rows_of(q text, stream boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    PERFORM set_config('mq.enable_fetch_scan', stream::text, true);
    EXECUTE format('SELECT string_agg(t::text, E''\n'') FROM (%s) t', q) INTO r;
    PERFORM set_config('mq.enable_fetch_scan', 'on', true);
    RETURN r;
END $$;
CREATE FUNCTION pg_temp.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    r text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        r := r || line || E'\n';
    END LOOP;
    RETURN r;
END $$;
-- the queries of t whose rows differ between the two scans
CREATE FUNCTION pg_temp.differing(qs text[]) RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(q), '{}') FROM unnest(qs) q
     WHERE pg_temp.rows_of(q, true) IS DISTINCT FROM pg_temp.rows_of(q, false) $$;

-- 'fs': 35 records over segments of 10 in partition 0, headers on some,
-- LogAppendTime on none; partition 1 empty
SELECT mq.create_topic('fs', 2, '{"segment.records": 10}');
SELECT count(*) FROM mq.send_batch('fs', (SELECT array_agg('k' || i ORDER BY i) FROM generate_series(0, 34) i),
    (SELECT array_agg(repeat('v', i) ORDER BY i) FROM generate_series(0, 34) i),
    (SELECT array_agg(CASE WHEN i % 3 = 0 THEN jsonb_build_object('n', i::text) END ORDER BY i)
       FROM generate_series(0, 34) i),
    partition => 0);

-------------------------------------------------------------------------------
-- 1. Which plan
-------------------------------------------------------------------------------
SELECT matches(pg_temp.plan_of($$SELECT * FROM mq.fetch('fs', 0, 0)$$), '^Custom Scan \(MqFetch\)',
               'mq.fetch in FROM is a streaming custom scan');
SELECT matches(pg_temp.plan_of($$SELECT * FROM mq.poll('fs-plan', 'fs')$$), '^Custom Scan \(MqPoll\)',
               'and so is mq.poll');
SELECT matches(pg_temp.plan_of($$SELECT msg_offset FROM mq.fetch('fs', 0, 0) WHERE msg_offset > 3$$),
               'Function Call: mq."fetch"\(''fs''::text, 0, ''0''::bigint, 1000, 0, 1, NULL::bigint\)',
               'EXPLAIN shows the call with its defaults');
SELECT matches(pg_temp.plan_of($$SELECT * FROM mq.fetch('fs', 0, 0) WITH ORDINALITY$$), '^Function Scan',
               'WITH ORDINALITY stays a function scan');
SELECT matches(pg_temp.plan_of($$SELECT f FROM mq.fetch('fs', 0, 0) f$$), '^Function Scan',
               'so does a whole-row reference to the result');
SET LOCAL mq.enable_fetch_scan = off;
SELECT matches(pg_temp.plan_of($$SELECT * FROM mq.fetch('fs', 0, 0)$$), '^Function Scan',
               'mq.enable_fetch_scan = off: a function scan');
RESET mq.enable_fetch_scan;

-------------------------------------------------------------------------------
-- 2. The same rows as the function scan
-------------------------------------------------------------------------------
SELECT is(pg_temp.rows_of($$SELECT msg_offset FROM mq.fetch('fs', 0, 5, 100)$$, true),
          (SELECT string_agg('(' || i || ')', E'\n') FROM generate_series(5, 34) i),
          'from offset 5 across three segment boundaries, gapless and in order');
SELECT is(pg_temp.differing(ARRAY(
    SELECT format('SELECT * FROM mq.fetch(%L, %s, %s, %s, max_bytes => %s)', 'fs', p, f, m, coalesce(b::text, 'NULL'))
      FROM (VALUES (0), (9), (10), (19), (20), (34)) fr(f), (VALUES (1), (7), (100)) mx(m),
           (VALUES (NULL::int), (1), (300)) by(b), (VALUES (0)) pt(p))),
          '{}', 'every column alike for starts, max_records and max_bytes across segments');
SELECT is(pg_temp.differing(ARRAY[
    $$SELECT msg_offset, header_list FROM mq.fetch('fs', 0, 0) WHERE msg_offset % 3 = 0$$,
    $$SELECT value, timestamp_type FROM mq.fetch('fs', 0, 30, 3)$$,
    $$SELECT count(*) FROM mq.fetch('fs', 1, 0)$$,
    $$SELECT * FROM mq.fetch('fs', 0, 35)$$]),
          '{}', 'header lists, quals, projections, an empty partition, the log end');
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.fetch('fs', 0, 0, max_bytes => 81)), '0,1,2',
          'max_bytes: records while they fit');
SELECT is((SELECT array[count(*) FILTER (WHERE partition = 0), count(*) FILTER (WHERE partition = 1)]
             FROM mq.poll('fs-listed', 'fs', 100, partitions => ARRAY[1])), ARRAY[0, 0]::bigint[],
          'a poll of the partitions named reads only those');
SELECT is((SELECT count(*)::int FROM mq.fetch('fs', 0, 34, max_bytes => 1)), 1,
          'max_bytes: at least one whole record (KIP-74)');
SELECT throws_ok($$SELECT * FROM mq.fetch('fs', 0, 36)$$, 'MQ007', NULL, 'beyond the log end: MQ007');
SELECT throws_ok($$SELECT * FROM mq.fetch('fs', 0, 0, 0)$$, 'MQ010', NULL, 'max_records 0: MQ010');

-------------------------------------------------------------------------------
-- 3. Compaction gaps (src/sql/72_compaction.sql)
-------------------------------------------------------------------------------
SELECT mq.create_topic('fs-cmp', 1, '{"cleanup.policy": "compact", "segment.records": 10,
                                       "min.cleanable.dirty.ratio": 0, "delete.retention.ms": "1d"}');
SELECT count(*) FROM mq.send_batch('fs-cmp',
    (SELECT array_agg('k' || i % 3 ORDER BY i) FROM generate_series(0, 34) i),
    (SELECT array_agg('v' || i ORDER BY i) FROM generate_series(0, 34) i), partition => 0);
SELECT mq.compact('fs-cmp') > 0 AS compacted;
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.fetch('fs-cmp', 0, 0)),
          '27,28,29,30,31,32,33,34', 'the streaming scan reads over the gaps compaction left');
SELECT is(pg_temp.differing(ARRAY(
    SELECT format('SELECT * FROM mq.fetch(%L, 0, %s, %s)', 'fs-cmp', f, m)
      FROM generate_series(0, 34, 3) f, (VALUES (1), (2), (100)) mx(m))),
          '{}', 'and returns what the function scan returns from every start');

-------------------------------------------------------------------------------
-- 4. The high watermark and the leader (replica.c)
-------------------------------------------------------------------------------
SELECT mq.create_topic('fs-lead', 1);
SELECT mq.create_topic('fs-follow', 1);
SELECT mq.replica_become_leader('fs-lead', 0, 3, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('fs-follow', 0, 3, 1);
SELECT count(*) FROM mq.send_batch('fs-lead', NULL, (SELECT array_agg(('r' || i)::bytea) FROM generate_series(1, 10) i),
                                   partition => 0);
-- replica 2 reports offset 4: the high watermark moves to 4
SELECT count(*) FROM (SELECT mq.replica_fetch('fs-lead', 0, 3, 2, 0, 100, 0, NULL)) s;
SELECT count(*) FROM (SELECT mq.replica_fetch('fs-lead', 0, 3, 2, 4, 100, 0, NULL)) s;
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.fetch('fs-lead', 0, 0)), '0,1,2,3',
          'a leader serves only records below the high watermark');
SELECT is(pg_temp.differing(ARRAY[$$SELECT * FROM mq.fetch('fs-lead', 0, 2)$$,
                                  $$SELECT * FROM mq.poll('fs-hw-' || current_setting('mq.enable_fetch_scan'), 'fs-lead', 100)$$]),
          '{}', 'as the function scan does, for fetch and poll');
SELECT throws_ok($$SELECT * FROM mq.fetch('fs-follow', 0, 0)$$, 'MQ020', NULL, 'a follower refuses the read: MQ020');

-------------------------------------------------------------------------------
-- 5. Rescans
-------------------------------------------------------------------------------
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_material = off;
SELECT mq.create_topic('fs-one', 1);
SELECT count(*) FROM mq.send_batch('fs-one', NULL, (SELECT array_agg(('o' || i)::bytea) FROM generate_series(0, 19) i));
SELECT matches(pg_temp.plan_of($$SELECT * FROM generate_series(1, 3) g CROSS JOIN mq.fetch('fs', 0, 0, 5) f$$),
               'Nested Loop\n.*Function Scan on generate_series g\n.*Custom Scan \(MqFetch\)',
               'the inner side of a nested loop, rescanned without new parameters');
SELECT is(pg_temp.rows_of($$SELECT g, f.msg_offset FROM generate_series(1, 3) g CROSS JOIN mq.fetch('fs', 0, 0, 5) f$$, true),
          pg_temp.rows_of($$SELECT g, f.msg_offset FROM generate_series(1, 3) g CROSS JOIN mq.fetch('fs', 0, 0, 5) f$$, false),
          'a rescanned fetch returns its rows again');
SELECT is((SELECT array[count(*), count(DISTINCT msg_offset)]
             FROM generate_series(1, 3) g CROSS JOIN mq.poll('fs-rescan', 'fs-one', 5) f),
          ARRAY[15, 5]::bigint[], 'a rescanned poll replays its five records: no second poll');
SELECT is((SELECT min(msg_offset) FROM mq.poll('fs-rescan', 'fs-one', 5)), 5::bigint,
          'and moved the group''s position once');
SELECT is((SELECT array_agg((SELECT min(msg_offset) FROM mq.fetch('fs', 0, x, 3)) ORDER BY x) FROM generate_series(0, 4) x),
          ARRAY[0, 1, 2, 3, 4]::bigint[], 'a new parameter on a rescan is a new call');
-- a poll left early (LIMIT), rescanned: as the function scan, all of it is
-- polled once and the same first rows come back
SELECT is(pg_temp.rows_of($$SELECT x, (SELECT string_agg(msg_offset::text, ',') FROM
                              (SELECT * FROM mq.poll('fs-limit-' || current_setting('mq.enable_fetch_scan'), 'fs-one', 5) LIMIT 2) s
                              WHERE x > 0) FROM generate_series(1, 3) x$$, true),
          E'(1,"0,1")\n(2,"0,1")\n(3,"0,1")', 'a poll under LIMIT, rescanned, returns its first rows again');
SELECT is((SELECT min(msg_offset) FROM mq.poll('fs-limit-on', 'fs-one', 5)), 5::bigint,
          'its group''s position moved past all it polled, as with the function scan');
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-------------------------------------------------------------------------------
-- 6. Parameters: prepared statements, PL/pgSQL, cursors
-------------------------------------------------------------------------------
PREPARE fs_page(integer, bigint, integer) AS SELECT msg_offset FROM mq.fetch('fs', $1, $2, $3);
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of('EXECUTE fs_page(0, 10, 3)'), 'Custom Scan \(MqFetch\)\n.*\$1, \$2, \$3',
               'a generic plan streams with the parameters');
SELECT results_eq('EXECUTE fs_page(0, 10, 3)', $$VALUES (10::bigint), (11), (12)$$, 'and reads the page asked for');
SELECT results_eq('EXECUTE fs_page(0, 33, 3)', $$VALUES (33::bigint), (34)$$, 'and the next one');
RESET plan_cache_mode;
CREATE FUNCTION pg_temp.read_all(t text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    off bigint := 0;
    n bigint;
    total bigint := 0;
BEGIN
    LOOP
        SELECT count(*), max(msg_offset) + 1 INTO n, off FROM mq.fetch(t, 0, off, 4) HAVING count(*) > 0;
        EXIT WHEN n IS NULL;
        total := total + n;
    END LOOP;
    RETURN total;
END $$;
SELECT is(pg_temp.read_all('fs'), 35::bigint, 'PL/pgSQL pages through the partition with a variable');
DECLARE fs_cur CURSOR FOR SELECT msg_offset FROM mq.fetch('fs', 0, 0, 10);
FETCH 2 FROM fs_cur;
SELECT results_eq('FETCH 3 FROM fs_cur', $$VALUES (2::bigint), (3), (4)$$, 'a cursor fetches on where it stopped');
SAVEPOINT back;
SELECT throws_ok('FETCH BACKWARD 1 FROM fs_cur', '55000', 'cursor can only scan forward',
                 'a cursor without SCROLL refuses to go back');
ROLLBACK TO back;
DECLARE fs_scroll SCROLL CURSOR FOR SELECT msg_offset FROM mq.fetch('fs', 0, 0, 10);
FETCH 3 FROM fs_scroll;
SELECT results_eq('FETCH BACKWARD 2 FROM fs_scroll', $$VALUES (1::bigint), (0)$$,
                  'a SCROLL cursor goes back (the planner puts a Material node above)');

-------------------------------------------------------------------------------
-- 7. Rights: EXECUTE on the function, READ on the topic
-------------------------------------------------------------------------------
CREATE ROLE fs_reader;
SET LOCAL ROLE fs_reader;
SELECT throws_ok($$SELECT * FROM mq.fetch('fs', 0, 0)$$, '42501', NULL, 'a role without READ on the topic: refused');
RESET ROLE;
SELECT mq.grant('read', 'topic', 'fs', 'fs_reader');
REVOKE EXECUTE ON FUNCTION mq.fetch(text, integer, bigint, integer, integer, integer, bigint) FROM PUBLIC;
SET LOCAL ROLE fs_reader;
SELECT throws_ok($$SELECT * FROM mq.fetch('fs', 0, 0)$$, '42501', 'permission denied for function fetch',
                 'without EXECUTE on mq.fetch: refused as the function call would be');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
