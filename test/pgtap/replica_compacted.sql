-- A replica copies a compacted range with its offset gaps intact, as
-- Kafka's followers do (issue 13): the leader's fetch of a cleaned range
-- carries each record's offset when they are not consecutive, the
-- follower's append places the records there, and the copy reads, serves
-- and is elected with the same records at the same offsets.  A batch
-- whose offsets are wrong is refused with MQ029 and changes nothing.  A
-- follower that held part of the range before the leader cleaned it ends,
-- after its own pass, with the leader's records.
-- Before, the leader refused such a fetch (MQ007) and a compacted
-- partition could not be moved.  Topics of one database stand for nodes:
-- 'cl' leads, 'cf' and 'cx' follow it.
BEGIN;
SELECT plan(40);

SELECT mq.create_topic(t, 1, '{"cleanup.policy": "compact", "segment.records": 10,
                               "min.cleanable.dirty.ratio": 0, "delete.retention.ms": "1d"}')
  FROM unnest(ARRAY['cl', 'cf', 'cx', 'cg']) t;
SELECT mq.replica_become_leader('cl', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1]);
SELECT mq.replica_become_follower(t, 0, 1, 1) FROM unnest(ARRAY['cf', 'cx']) t;
CREATE TEMP TABLE pr AS SELECT * FROM mq.init_producer();

-- One idempotent batch of 30 records of key a (0-29), a second of 10
-- (30 b with a header and a CreateTime, 31 a, then c and d by turns) and 5
-- records of their own keys without a producer in the segment being
-- written (40-44).  A pass keeps 30, 31, 38, 39 of [0, 40): segments
-- [0, 10), [10, 20) and [20, 30) are left empty.
SELECT count(*) FROM mq.send_batch('cl', (SELECT array_agg('a'::text) FROM generate_series(0, 29)),
                                   (SELECT array_agg('a' || i) FROM generate_series(0, 29) i), partition => 0,
                                   producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 0);
SELECT count(*) FROM mq.send_batch('cl', ARRAY['b', 'a', 'c', 'd', 'c', 'd', 'c', 'd', 'c', 'd'],
                                   ARRAY['b30', 'a31', 'c32', 'd33', 'c34', 'd35', 'c36', 'd37', 'c38', 'd39'],
                                   headers => ARRAY['{"h": "1"}'::jsonb, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, '[["x", "y"]]'::jsonb],
                                   timestamps => ARRAY['2001-02-03 04:05:06+00'::timestamptz, NULL, NULL, NULL, NULL,
                                                       NULL, NULL, NULL, NULL, NULL],
                                   partition => 0,
                                   producer_id => (SELECT producer_id FROM pr), producer_epoch => 0, base_sequence => 30);
SELECT count(*) FROM mq.send_batch('cl', (SELECT array_agg('e' || i) FROM generate_series(40, 44) i),
                                   (SELECT array_agg('e' || i) FROM generate_series(40, 44) i), partition => 0);
SELECT mq.replica_leader_state('cl', 0, 1);     -- the high watermark reaches the log end
SELECT is(mq.compact('cl'), 36::bigint, 'the leader''s pass removes 36 records of [0, 40)');

CREATE FUNCTION pg_temp.log(p_topic text) RETURNS TABLE (msg_offset bigint, created_at timestamptz, key bytea,
                                                          value bytea, headers jsonb, producer_id bigint,
                                                          producer_epoch integer, sequence integer,
                                                          "timestamp" timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT msg_offset, created_at, key, value, headers, producer_id, producer_epoch,
                                        sequence, "timestamp" FROM %s ORDER BY msg_offset',
                                (SELECT ps.relid FROM mq.partition_state ps JOIN mq.topic t USING (topic_id)
                                  WHERE t.topic_name = p_topic));
END $$;
CREATE FUNCTION pg_temp.offsets(p_topic text) RETURNS text
LANGUAGE sql AS $$ SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM pg_temp.log(p_topic) $$;
SELECT is(pg_temp.offsets('cl'), '30,31,38,39,40,41,42,43,44', 'the leader''s log has the gaps');

-------------------------------------------------------------------------------
-- the fetch
-------------------------------------------------------------------------------
CREATE TEMP TABLE f1 AS SELECT mq.replica_fetch('cl', 0, 1, 2, 0, 3, 0) AS b;
SELECT is((SELECT (b).base_offset FROM f1), 0::bigint, 'a fetch of a cleaned range starts at the fetch offset');
SELECT is((SELECT (b).offsets FROM f1), '{30,31,38,39}'::bigint[],
          'it carries the offsets of its records (three asked, the whole producer batch of four given)');
SELECT is((SELECT (b).vals FROM f1), ARRAY['b30', 'a31', 'c38', 'd39']::bytea[], 'and the records');
SELECT is((SELECT (b).batch_offset FROM f1), '{0,30}'::bigint[],
          'and the producer batches ending in it, the emptied one too');
SELECT is((SELECT (mq.replica_fetch('cl', 0, 1, 2, 38, 2, 0)).offsets), NULL,
          'records at consecutive offsets from the fetch offset carry no offsets, in a cleaned range too');
SELECT is((SELECT (mq.replica_fetch('cl', 0, 1, 2, 40, 100, 0)).offsets), NULL,
          'nor do records above the cleaner point');
SELECT is((SELECT (b).offsets FROM (SELECT mq.replica_fetch('cl', 0, 1, 2, 31, 1, 0) AS b) f), '{31,38,39}'::bigint[],
          'the limit counts records in a cleaned range (one asked from inside a batch: the rest of it)');
SELECT is((SELECT (b).offsets FROM (SELECT mq.replica_fetch('cl', 0, 1, 2, 32, 1, 0) AS b) f), '{38,39}'::bigint[],
          'a fetch from inside a gap starts at the next record');
SELECT is((SELECT (b).offsets FROM (SELECT mq.replica_fetch('cl', 0, 1, 2, 38, 3, 0) AS b) f), NULL,
          'and one from a record with its successors at consecutive offsets carries none');

-------------------------------------------------------------------------------
-- the append
-------------------------------------------------------------------------------
SELECT is(mq.replica_append('cf', 0, 1, (SELECT b FROM f1)), 40::bigint,
          'the follower places the records at their offsets; its log end follows the last');
SELECT is(pg_temp.offsets('cf'), '30,31,38,39', 'with the leader''s gaps');
SELECT is((SELECT count(*) FROM mq.segments WHERE topic = 'cf' AND base_offset < 40), 4::bigint,
          'the segments of the emptied range are made');
SELECT is(mq.replica_append('cf', 0, 1, mq.replica_fetch('cl', 0, 1, 2, 40, 100, 0)), 45::bigint,
          'the rest follows without offsets');
SELECT results_eq('SELECT * FROM pg_temp.log(''cf'')', 'SELECT * FROM pg_temp.log(''cl'')',
                  'the copy is the leader''s log: offsets, keys, values, headers, timestamps, producer fields');
SELECT results_eq($$SELECT producer_epoch, batch_first, batch_last, batch_offset FROM mq.producer_state
                     WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'cf')$$,
                  $$SELECT producer_epoch, batch_first, batch_last, batch_offset FROM mq.producer_state
                     WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'cl')$$,
                  'and its producer state the leader''s');
SELECT is((SELECT high_watermark FROM mq.replica_status WHERE topic = 'cf'), 45::bigint,
          'the high watermark follows the leader''s');
SELECT is((SELECT cleaner_point FROM mq.compaction WHERE topic = 'cf'), 0::bigint,
          'the copy is not this node''s pass: its own cleaner point stays');
SELECT is(mq.compact('cf'), 0::bigint, 'its own pass over the copy removes nothing more');

-------------------------------------------------------------------------------
-- the copy elected: it reads, serves and takes writes as the leader did
-------------------------------------------------------------------------------
SELECT mq.replica_become_leader('cf', 0, 2, 2, ARRAY[2, 3], ARRAY[2]);
SELECT is((SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM mq.fetch('cf', 0, 0, 100)),
          (SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM mq.fetch('cl', 0, 0, 100)),
          'elected, it serves the same records at the same offsets, skipping the gaps');
SELECT is((SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM mq.fetch('cf', 0, 5, 2)), '30,31',
          'a fetch from inside a gap returns the next records');
SELECT is((SELECT (mq.replica_fetch('cf', 0, 2, 3, 0, 100, 0)).offsets), '{30,31,38,39,40,41,42,43,44}'::bigint[],
          'its own followers get the gaps with the offsets');
SELECT mq.replica_become_follower('cg', 0, 2, 2);
SELECT is(mq.replica_append('cg', 0, 2, mq.replica_fetch('cf', 0, 2, 3, 0, 100, 0)), 45::bigint,
          'and copy them');
SELECT results_eq('SELECT * FROM pg_temp.log(''cg'')', 'SELECT * FROM pg_temp.log(''cl'')',
                  'a copy of the copy is the leader''s log');
SELECT mq.replica_become_leader('cg', 0, 3, 3, ARRAY[3], ARRAY[3]);
SELECT is((SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM mq.fetch('cg', 0, 0, 100)),
          '30,31,38,39,40,41,42,43,44', 'elected before any pass of its own, it reads over the copied gaps');
SELECT results_eq($$SELECT msg_offset FROM mq.send('cf', 'z', 'z', partition => 0)$$, ARRAY[45::bigint],
                  'the next record goes at the log end');

-------------------------------------------------------------------------------
-- bad offsets: MQ029, nothing written
-------------------------------------------------------------------------------
CREATE TEMP TABLE f2 AS SELECT mq.replica_fetch('cl', 0, 1, 3, 40, 100, 0) AS b;
CREATE FUNCTION pg_temp.with_offsets(p_batch mq.replica_batch, p_offsets bigint[]) RETURNS mq.replica_batch
LANGUAGE plpgsql AS $$ BEGIN p_batch.offsets := p_offsets; RETURN p_batch; END $$;
CREATE FUNCTION pg_temp.state(p_topic text) RETURNS text
LANGUAGE sql AS $$
    SELECT concat_ws(' / ', pg_temp.offsets(p_topic),
                     (SELECT high_watermark FROM mq.replica_status WHERE topic = p_topic),
                     (SELECT string_agg(clean_end || ':' || copied, ',') FROM mq.cleaner_pass c
                        JOIN mq.topic t USING (topic_id) WHERE t.topic_name = p_topic),
                     (SELECT string_agg(array_to_string(batch_offset, ','), ';') FROM mq.producer_state s
                        JOIN mq.topic t USING (topic_id) WHERE t.topic_name = p_topic),
                     (SELECT count(*) FROM mq.segments WHERE topic = p_topic))
$$;
SELECT mq.replica_append('cx', 0, 1, (SELECT b FROM f1));
CREATE TEMP TABLE before AS SELECT pg_temp.state('cx') AS s;
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{40,42,41,43,44}'))$$,
                 'MQ029', NULL, 'offsets out of order are refused');
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{40,41,41,42,43}'))$$,
                 'MQ029', NULL, 'two records at one offset are refused');
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{39,41,42,43,44}'))$$,
                 'MQ029', NULL, 'an offset below the log end is refused');
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{40,41,42,43,45}'))$$,
                 'MQ029', NULL, 'an offset at the leader''s log end is refused');
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{40,41,42}'))$$,
                 'MQ029', NULL, 'fewer offsets than records are refused');
SELECT throws_ok($$SELECT mq.replica_append('cx', 0, 1, pg_temp.with_offsets((SELECT b FROM f2), '{40,NULL,42,43,44}'))$$,
                 'MQ029', NULL, 'a record without an offset is refused');
SELECT is(pg_temp.state('cx'), (SELECT s FROM before),
          'nothing changed: records, high watermark, gaps, producer state, segments');

-- a follower that cuts its log cuts the gaps it copied there too
SELECT mq.replica_truncate('cx', 0, 1, 35);
SELECT is((SELECT string_agg(clean_end || ':' || copied, ',') FROM mq.cleaner_pass c JOIN mq.topic t USING (topic_id)
            WHERE t.topic_name = 'cx'), '32:true', 'truncation ends the copied gaps at the new log end');

-- A follower that held part of the range uncleaned when its leader
-- cleaned it copies the rest with the gaps, and its own pass (which
-- counts the copy dirty) removes what the leader removed, no more.
SELECT mq.create_topic(t, 1, '{"cleanup.policy": "compact", "segment.records": 10,
                               "min.cleanable.dirty.ratio": 0, "delete.retention.ms": "1d"}')
  FROM unnest(ARRAY['ml', 'mf']) t;
SELECT mq.replica_become_leader('ml', 0, 1, 1, ARRAY[1, 2], ARRAY[1]);
SELECT mq.replica_become_follower('mf', 0, 1, 1);
SELECT count(*) FROM mq.send_batch('ml', (SELECT array_agg('k' || i % 3 ORDER BY i) FROM generate_series(0, 34) i),
                                   (SELECT array_agg('v' || i ORDER BY i) FROM generate_series(0, 34) i), partition => 0);
SELECT mq.replica_append('mf', 0, 1, mq.replica_fetch('ml', 0, 1, 2, 0, 12, 0));
SELECT mq.replica_leader_state('ml', 0, 1);
SELECT mq.compact('ml');
SELECT is(mq.replica_append('mf', 0, 1, mq.replica_fetch('ml', 0, 1, 2, 12, 100, 0)), 35::bigint,
          'a follower holding 0-11 uncleaned copies the cleaned rest');
SELECT is(pg_temp.offsets('mf'), '0,1,2,3,4,5,6,7,8,9,10,11,27,28,29,30,31,32,33,34', 'with its gaps');
SELECT is(mq.compact('mf'), 12::bigint, 'its own pass removes the records the copy supersedes');
SELECT results_eq('SELECT * FROM pg_temp.log(''mf'')', 'SELECT * FROM pg_temp.log(''ml'')',
                  'and it holds the leader''s records at the leader''s offsets');

-- a pass that commits between the leader's look at its passes and its
-- read of the records (here: the passes not seen at all) still ships
-- the offsets: a range found not to be consecutive is read again with them
DELETE FROM mq.cleaner_pass WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'cl');
SELECT is((SELECT (mq.replica_fetch('cl', 0, 1, 2, 31, 9, 0)).offsets), '{31,38,39}'::bigint[],
          'records found at gaps are shipped with their offsets, whatever the passes said');

SELECT * FROM finish();
ROLLBACK;
