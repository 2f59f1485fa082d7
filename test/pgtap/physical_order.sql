-- Fetch reads the heap in physical order while offsets follow on, and goes
-- back to the index when they do not.  Here the heap is put out of order on
-- purpose: an aborted batch leaves dead rows at the start of the segment,
-- VACUUM frees them, and a new backend (no cached target page) inserts into
-- that free space, before records with lower offsets.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(5);
SELECT mq.create_topic('phys', 1);
BEGIN;
SELECT count(*) FROM mq.send_batch('phys', NULL, (SELECT array_agg(convert_to(repeat('d', 200), 'UTF8')) FROM generate_series(1, 500)));
ROLLBACK;
SELECT count(*) FROM mq.send_batch('phys', NULL, (SELECT array_agg(convert_to('a' || i, 'UTF8')) FROM generate_series(0, 99) i));
SELECT relid AS seg FROM mq.segments WHERE topic = 'phys' ORDER BY base_offset LIMIT 1 \gset
VACUUM :seg;
SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
SELECT * FROM dblink('other', $$SELECT count(*) FROM mq.send_batch('phys', NULL,
    (SELECT array_agg(convert_to('b' || i, 'UTF8')) FROM generate_series(100, 149) i))$$) AS t(n bigint);
SELECT dblink_disconnect('other');

SELECT ok((SELECT min(ctid) FROM :seg WHERE msg_offset >= 100) < (SELECT min(ctid) FROM :seg WHERE msg_offset < 100),
          'the later records were placed before the earlier ones in the heap');
SELECT is((SELECT count(*) FROM mq.fetch('phys', 0, 0, 1000)), 150::bigint, 'fetch returns every record');
SELECT is((SELECT bool_and(msg_offset = rn - 1) FROM (SELECT msg_offset, row_number() OVER () AS rn
             FROM mq.fetch('phys', 0, 0, 1000)) f), true, 'in offset order, gapless');
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.fetch('phys', 0, 98, 4)), 'a98,a99,b100,b101',
          'across the place where physical order breaks');
SELECT is((SELECT count(*) FROM mq.poll('phys-group', 'phys', 1000)), 150::bigint, 'poll reads them all too');
SELECT * FROM finish();
