-- mq.malloc_trim_threshold (src/malloc_tune.c): a backend keeps the memory
-- a batch of records freed for the next batch, instead of giving it back
-- to the kernel and faulting it in again page by page.  Counted with the
-- backend's minor page faults (/proc/<pid>/stat, field 10), in kB (faults
-- times the kernel's page size, which is not 4 kB on every machine), over
-- a follower's fetches of the same 1,000 records of 100 bytes (pages of
-- shared buffers this backend has mapped already, so every fault is its
-- own memory) and over allocations of 1 MB: with the setting, neither
-- faults once the heap has grown.  At 0 (glibc's 128 kB thresholds) each
-- 1 MB allocation is a mapping of its own, faulted in every time; how
-- much of a fetch's memory goes back depends on the heap's layout (6.3 MB
-- in ten fetches in every round of every run here, 0.3 MB in one CI run
-- with the multi-node and Kafka lanes beside it), so the check at 0 is
-- the allocation's.
BEGIN;
SELECT plan(8);

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
-- the kB faulted in by n allocations of 1 MB, freed after each (a
-- parameter, so that the planner does not fold the call into a constant)
CREATE FUNCTION pg_temp.alloc_faults(n integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    before bigint := pg_temp.minor_faults();
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM pg_catalog.length(pg_catalog.repeat('x', 1000000 + i % 1));
    END LOOP;
    RETURN (pg_temp.minor_faults() - before) * pg_temp.page_kb();
END $$;
-- the fewest kB faulted in over three rounds of n fetches: one run, right
-- after the whole test command on this machine, faulted more than 400 kB
-- in a round with the setting (faults no setting prevents: the kernel's,
-- or shared buffers first touched)
CREATE FUNCTION pg_temp.fewest_faults(n integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT min(pg_temp.fetch_faults(n)) FROM generate_series(1, 3)
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
SELECT pg_temp.alloc_faults(10);     -- warm
SELECT cmp_ok(pg_temp.alloc_faults(10), '<', 400::bigint,
              'nor do ten allocations of 1 MB');

SET mq.malloc_trim_threshold = 0;
SELECT cmp_ok(pg_temp.alloc_faults(10), '>', 5000::bigint,
              'at 0, each allocation of 1 MB is faulted in again');

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
