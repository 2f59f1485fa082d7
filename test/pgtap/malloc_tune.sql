-- mq.malloc_trim_threshold (src/malloc_tune.c): a backend keeps the memory
-- a batch of records freed for the next batch, instead of giving it back
-- to the kernel and faulting it in again page by page.  Counted with the
-- backend's minor page faults (/proc/<pid>/stat, field 10) over a
-- follower's fetches of the same 1,000 records of 100 bytes (pages of
-- shared buffers this backend has mapped already, so every fault is its
-- own memory), in kB (faults times the kernel's page size, which is not
-- 4 kB on every machine): with the setting none once the heap has grown,
-- at 0 (glibc's 128 kB thresholds) about 600 kB a fetch.
BEGIN;
SELECT plan(7);

CREATE FUNCTION pg_temp.minor_faults() RETURNS bigint LANGUAGE sql AS $$
    SELECT pg_catalog.split_part(pg_catalog.pg_read_file('/proc/' || pg_catalog.pg_backend_pid() || '/stat'),
                                 ' ', 10)::bigint
$$;
CREATE FUNCTION pg_temp.page_kb() RETURNS bigint LANGUAGE sql AS $$
    SELECT (pg_catalog.regexp_match(pg_catalog.pg_read_file('/proc/' || pg_catalog.pg_backend_pid() || '/smaps'),
                                    'KernelPageSize:\s+(\d+) kB'))[1]::bigint
$$;
-- the kB faulted in by n fetches of the topic's 1,000 records
CREATE FUNCTION pg_temp.fetch_faults(n integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    before bigint := pg_temp.minor_faults();
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM mq.replica_fetch('mt', 0, 1, 2, 0, 1000, 0, NULL);
    END LOOP;
    RETURN (pg_temp.minor_faults() - before) * pg_temp.page_kb();
END $$;
-- the fewest and the most kB faulted in over three rounds of n fetches.
-- With the setting: one run, right after the whole test command on this
-- machine, faulted more than 400 kB in a round (faults no setting
-- prevents: the kernel's, or shared buffers first touched), so the
-- fewest.  At 0: one CI run, with the multi-node and Kafka lanes beside
-- it, faulted less than 2 MB (6.3 MB in every round of every run here,
-- with DDL or busy cores beside it or not), so the most.  A trimmed heap
-- faults megabytes in most rounds, a kept one almost nothing in most.
CREATE FUNCTION pg_temp.fewest_faults(n integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT min(pg_temp.fetch_faults(n)) FROM generate_series(1, 3)
$$;
CREATE FUNCTION pg_temp.most_faults(n integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT max(pg_temp.fetch_faults(n)) FROM generate_series(1, 3)
$$;

SELECT mq.create_topic('mt', 1);
-- after mq's first call: without shared_preload_libraries it loads here
SELECT is(current_setting('mq.malloc_trim_threshold'), '16MB', 'the default keeps 16 MB');
SELECT mq.replica_become_leader('mt', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT count(*) FROM mq.send_batch('mt', NULL,
    (SELECT array_agg(convert_to(repeat('x', 100), 'UTF8')) FROM generate_series(1, 1000)), partition => 0);
SELECT pg_temp.fetch_faults(10);     -- warm: the heap grows once

SELECT cmp_ok(pg_temp.fewest_faults(10), '<', 400::bigint,
              'with the setting, ten fetches fault in almost no memory');

SET mq.malloc_trim_threshold = 0;
SELECT cmp_ok(pg_temp.most_faults(10), '>', 2000::bigint,
              'at 0, each fetch faults its memory in again');

RESET mq.malloc_trim_threshold;
SELECT pg_temp.fetch_faults(10);
SELECT cmp_ok(pg_temp.fewest_faults(10), '<', 400::bigint,
              'RESET keeps the memory again in this backend');

SELECT throws_ok($$SET mq.malloc_trim_threshold = -1$$, '22023', NULL,
                 'a negative threshold is refused');

CREATE ROLE mq_malloc_user;
SET ROLE mq_malloc_user;
SELECT throws_ok($$SET mq.malloc_trim_threshold = 0$$, '42501', NULL,
                 'only superusers change it');
RESET ROLE;
SELECT is(current_setting('mq.malloc_trim_threshold'), '16MB', 'the refused SET changed nothing');

SELECT * FROM finish();
ROLLBACK;
