-- The leader's records read (mq._replica_fetch_records, src/replica_fetch.c)
-- keeps its plans per partition table for the session: they must follow
-- the table as segments are added and dropped, and a topic dropped and
-- made again under the same name (a new table) must be read, not the old
-- one.  One session throughout, so every fetch after the first uses the
-- kept plans.
BEGIN;
SELECT plan(6);

SELECT mq.create_topic('pl', 1, '{"segment.records": 10, "retention.bytes": 0}');
SELECT mq.replica_become_leader('pl', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.send_batch('pl', NULL, array_agg(('a' || i)::bytea), partition => 0) FROM generate_series(0, 4) i;
SELECT is((mq.replica_fetch('pl', 0, 1, 2, 0, 100, 0, NULL)).vals,
          ARRAY['a0', 'a1', 'a2', 'a3', 'a4']::bytea[], 'the first fetch reads the records');

-- new segments: the kept plan must see them
SELECT mq.send_batch('pl', NULL, array_agg(('b' || i)::bytea), partition => 0) FROM generate_series(5, 34) i;
SELECT is((mq.replica_fetch('pl', 0, 1, 2, 28, 100, 0, NULL)).vals,
          ARRAY['b28', 'b29', 'b30', 'b31', 'b32', 'b33', 'b34']::bytea[],
          'a fetch after new segments were added reads them');

-- segments dropped by retention: the kept plan must not read them
SELECT is(mq.apply_retention('pl'), 3, 'retention drops three closed segments');
SELECT is((mq.replica_fetch('pl', 0, 1, 2, 30, 3, 0, NULL)).vals,
          ARRAY['b30', 'b31', 'b32']::bytea[], 'a fetch after retention reads what is left');

-- the topic dropped and made again: a new table of the same name
SELECT mq.replica_drop_topic('pl', NULL);    -- as its broker drops a deleted replicated topic
SELECT mq.create_topic('pl', 1);
SELECT mq.replica_become_leader('pl', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.send_batch('pl', NULL, ARRAY['new0', 'new1']::bytea[], partition => 0);
SELECT is((mq.replica_fetch('pl', 0, 1, 2, 0, 100, 0, NULL)).vals,
          ARRAY['new0', 'new1']::bytea[], 'a topic made again is read from its new table');
SELECT is((mq.replica_fetch('pl', 0, 1, 2, 0, 100, 0, NULL)).base_offset, 0::bigint,
          'from its start');

SELECT * FROM finish();
ROLLBACK;
