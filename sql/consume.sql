--
-- consume: mq.fetch (stateless read by offset), mq.commit_offset and
-- mq.committed_offset, mq.poll (reads from a group's committed positions).
--
\set SHOW_CONTEXT never
-- err(statement): 'SQLSTATE: message' of the error the statement raises,
-- or 'no error'.
CREATE FUNCTION pg_temp.err(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- 'c1': one partition, 10 records per segment, 25 records 'r0'..'r24'
SELECT mq.create_topic('c1', 1, '{"segment.records": 10}') > 0 AS created;
SELECT count(*) FROM mq.send_batch('c1', NULL,
    (SELECT array_agg(convert_to('r' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 24) i));
SELECT base_offset, end_offset FROM mq.segments WHERE topic = 'c1' AND base_offset < 30 ORDER BY base_offset;
SELECT log_start_offset, log_end_offset, high_watermark FROM mq.partitions WHERE topic = 'c1';
--
-- fetch
--
-- the record type: topic, partition, msg_offset, created_at, key, value, headers
SELECT topic, partition, msg_offset, created_at IS NOT NULL AS has_time, key, convert_from(value, 'UTF8') AS value, headers
  FROM mq.fetch('c1', 0, 0, 3);
-- from an offset, at most max_records, in offset order
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.fetch('c1', 0, 5, 3);
-- across segment boundaries (10 and 20)
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.fetch('c1', 0, 8, 14);
-- the default max_records (1000) returns the rest of the log
SELECT count(*), min(msg_offset), max(msg_offset) FROM mq.fetch('c1', 0, 0);
SELECT count(*), min(msg_offset), max(msg_offset) FROM mq.fetch('c1', 0, 19);
-- max_records larger than what is left; the smallest and largest allowed
SELECT count(*) FROM mq.fetch('c1', 0, 20, 100);
SELECT count(*) FROM mq.fetch('c1', 0, 0, 1);
SELECT count(*) FROM mq.fetch('c1', 0, 0, 1000000);
-- the last record, then exactly at the log end: nothing, and no error
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.fetch('c1', 0, 24);
SELECT count(*) AS at_log_end FROM mq.fetch('c1', 0, 25);
SELECT count(*) AS at_log_end FROM mq.fetch('c1', 0, 25, 1);
-- rows come back in offset order without an ORDER BY, and gapless
SELECT bool_and(msg_offset = n - 1) AS in_order
  FROM (SELECT msg_offset, row_number() OVER () AS n FROM mq.fetch('c1', 0, 0)) x;
-- named arguments
SELECT msg_offset FROM mq.fetch(topic => 'c1', partition => 0, from_offset => 23);
SELECT msg_offset FROM mq.fetch(max_records => 2, from_offset => 10, partition => 0, topic => 'c1');
-- out of range: below the log start, beyond the log end
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, -1)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, -100, 5)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 26)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 1000)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 9223372036854775807)$$);
\set VERBOSITY default
SELECT * FROM mq.fetch('c1', 0, -1);
SELECT * FROM mq.fetch('c1', 0, 26);
\set VERBOSITY terse
-- max_records bounds: 1 .. 1000000
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 0, 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 0, -1)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 0, 1000001)$$);
-- bad max_records is refused even where there is nothing to read
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 25, 0)$$);
-- null arguments
SELECT pg_temp.err($$SELECT * FROM mq.fetch(NULL, 0, 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', NULL, 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 0, 0, NULL)$$);
-- unknown topic and partition
SELECT pg_temp.err($$SELECT * FROM mq.fetch('nosuchtopic', 0, 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', 1, 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c1', -1, 0)$$);
-- an empty partition: offset 0 is its log end
SELECT mq.create_topic('c3', 3) > 0 AS created;
SELECT count(*) AS empty FROM mq.fetch('c3', 2, 0);
SELECT pg_temp.err($$SELECT * FROM mq.fetch('c3', 2, 1)$$);
-- records produced in this transaction are visible to its later statements
BEGIN;
SELECT partition, msg_offset FROM mq.send('c3', NULL::bytea, 'mine'::bytea, NULL, 2);
SELECT msg_offset, value FROM mq.fetch('c3', 2, 0);
SELECT log_end_offset FROM mq.partitions WHERE topic = 'c3' AND partition = 2;
ROLLBACK;
-- and gone with the rollback
SELECT count(*) AS after_rollback FROM mq.fetch('c3', 2, 0);
SELECT log_end_offset FROM mq.partitions WHERE topic = 'c3' AND partition = 2;
--
-- committed offsets
--
-- none yet: null
SELECT mq.committed_offset('g1', 'c1', 0) IS NULL AS none;
-- commit the next offset to read: anything from 0 to the log end
SELECT mq.commit_offset('g1', 'c1', 0, 10);
SELECT mq.committed_offset('g1', 'c1', 0);
SELECT mq.commit_offset('g1', 'c1', 0, 25);
SELECT mq.committed_offset('g1', 'c1', 0);
SELECT mq.commit_offset('g1', 'c1', 0, 0);
SELECT mq.committed_offset('g1', 'c1', 0);
-- moving forward and back again (a rewind) both work
SELECT mq.commit_offset('g1', 'c1', 0, 12, 'processed up to r11');
SELECT mq.committed_offset('g1', 'c1', 0);
SELECT mq.commit_offset(group_id => 'g1', topic => 'c1', partition => 0, next_offset => 7);
SELECT mq.committed_offset(group_id => 'g1', topic => 'c1', partition => 0);
-- groups and partitions are independent
SELECT mq.commit_offset('g2', 'c1', 0, 3);
SELECT mq.committed_offset('g1', 'c1', 0) AS g1, mq.committed_offset('g2', 'c1', 0) AS g2,
       mq.committed_offset('g3', 'c1', 0) IS NULL AS g3_none;
SELECT mq.commit_offset('g1', 'c3', 1, 0);
SELECT p, mq.committed_offset('g1', 'c3', p) FROM generate_series(0, 2) p;
-- out of range: negative; the commit is unchanged (beyond the log end is
-- stored, as Kafka stores it: test/pgtap/commit_beyond_end.sql)
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', 'c1', 0, -1)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('new', 'c1', 0, -5)$$);
\set VERBOSITY default
SELECT mq.commit_offset('g1', 'c1', 0, -1);
\set VERBOSITY terse
SELECT mq.committed_offset('g1', 'c1', 0) AS g1, mq.committed_offset('g1', 'c3', 0) IS NULL AS c3_none,
       mq.committed_offset('new', 'c1', 0) IS NULL AS new_none;
-- the log end includes this transaction's own records
BEGIN;
SELECT count(*) FROM mq.send_batch('c3', NULL, ARRAY['a', 'b']::bytea[], NULL, 0);
SELECT mq.commit_offset('g1', 'c3', 0, 2);
SELECT mq.committed_offset('g1', 'c3', 0);
ROLLBACK;
-- commits are transactional: a rolled-back commit never happened
SELECT mq.committed_offset('g1', 'c3', 0) IS NULL AS c3_none;
BEGIN;
SELECT mq.commit_offset('g1', 'c1', 0, 20);
SELECT mq.committed_offset('g1', 'c1', 0) AS inside;
ROLLBACK;
SELECT mq.committed_offset('g1', 'c1', 0) AS after_rollback;
-- bad arguments
SELECT pg_temp.err($$SELECT mq.commit_offset('', 'c1', 0, 1)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset(NULL, 'c1', 0, 1)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', NULL, 0, 1)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', 'c1', NULL, 1)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', 'c1', 0, NULL)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', 'nosuchtopic', 0, 0)$$);
SELECT pg_temp.err($$SELECT mq.commit_offset('g1', 'c1', 1, 0)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset(NULL, 'c1', 0)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset('g1', NULL, 0)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset('g1', 'c1', NULL)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset('g1', 'nosuchtopic', 0)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset('g1', 'c1', 1)$$);
SELECT pg_temp.err($$SELECT mq.committed_offset('g1', 'c1', -1)$$);
SELECT mq.committed_offset('g1', 'c1', 0) AS unchanged;
--
-- poll: from the group's committed positions; never commits by itself
--
-- a group without commits starts at the log start
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.poll('fresh', 'c1', 3);
SELECT mq.committed_offset('fresh', 'c1', 0) IS NULL AS still_none;
-- polling again without a commit returns the same records
SELECT msg_offset FROM mq.poll('fresh', 'c1', 3);
-- from the committed offset on
SELECT mq.committed_offset('g1', 'c1', 0) AS g1_position;
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.poll('g1', 'c1', 4);
SELECT mq.committed_offset('g1', 'c1', 0) AS g1_unchanged;
-- the default max_records is 100: the rest of the log here
SELECT count(*), min(msg_offset), max(msg_offset) FROM mq.poll('g1', 'c1');
-- a consume loop: poll, process, commit the next offset
SELECT max(msg_offset) + 1 AS next FROM mq.poll('loop', 'c1', 10) \gset
SELECT mq.commit_offset('loop', 'c1', 0, :next);
SELECT max(msg_offset) + 1 AS next FROM mq.poll('loop', 'c1', 10) \gset
SELECT mq.commit_offset('loop', 'c1', 0, :next);
SELECT min(msg_offset), max(msg_offset), count(*) FROM mq.poll('loop', 'c1', 10);
SELECT max(msg_offset) + 1 AS next FROM mq.poll('loop', 'c1', 10) \gset
SELECT mq.commit_offset('loop', 'c1', 0, :next);
-- everything consumed: nothing to poll
SELECT mq.committed_offset('loop', 'c1', 0) AS loop_position;
SELECT count(*) AS nothing FROM mq.poll('loop', 'c1');
-- new records show up for the group
SELECT partition, msg_offset FROM mq.send('c1', NULL::bytea, 'r25'::bytea);
SELECT msg_offset, convert_from(value, 'UTF8') AS value FROM mq.poll('loop', 'c1');
-- several partitions: each read from its own committed position
SELECT count(*) FROM mq.send_batch('c3', NULL, ARRAY['p0-0', 'p0-1', 'p0-2']::bytea[], NULL, 0);
SELECT count(*) FROM mq.send_batch('c3', NULL, ARRAY['p1-0', 'p1-1']::bytea[], NULL, 1);
SELECT count(*) FROM mq.send_batch('c3', NULL, ARRAY['p2-0', 'p2-1', 'p2-2', 'p2-3']::bytea[], NULL, 2);
SELECT topic, partition, msg_offset, convert_from(value, 'UTF8') AS value
  FROM mq.poll('multi', 'c3') ORDER BY partition, msg_offset;
SELECT mq.commit_offset('multi', 'c3', 0, 2), mq.commit_offset('multi', 'c3', 1, 2),
       mq.commit_offset('multi', 'c3', 2, 1);
SELECT partition, msg_offset, convert_from(value, 'UTF8') AS value
  FROM mq.poll('multi', 'c3', 10) ORDER BY partition, msg_offset;
-- max_records caps the total over all partitions
SELECT count(*) AS capped FROM mq.poll('multi', 'c3', 2);
SELECT count(*) AS capped FROM mq.poll('other', 'c3', 5);
SELECT count(*) AS all_of_it FROM mq.poll('other', 'c3', 1000);
-- bad arguments
SELECT pg_temp.err($$SELECT * FROM mq.poll('', 'c1')$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll(NULL, 'c1')$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll('g1', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll('g1', 'c1', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll('g1', 'c1', 0)$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll('g1', 'c1', 1000001)$$);
SELECT pg_temp.err($$SELECT * FROM mq.poll('g1', 'nosuchtopic')$$);
--
-- committed offsets go with their topic
--
SELECT mq.drop_topic('c3');
SELECT pg_temp.err($$SELECT mq.committed_offset('multi', 'c3', 0)$$);
SELECT mq.create_topic('c3', 3) > 0 AS recreated;
SELECT p, mq.committed_offset('multi', 'c3', p) IS NULL AS none FROM generate_series(0, 2) p;
SELECT count(*) AS nothing FROM mq.poll('multi', 'c3');
-- clean up
SELECT mq.drop_topic('c1'), mq.drop_topic('c3');
SELECT count(*) AS topics FROM mq.topics;
