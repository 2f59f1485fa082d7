-- Log compaction (cleanup.policy = compact): the latest record per key in
-- closed segments, tombstones after delete.retention.ms, the dirty ratio,
-- the compaction lag, the high watermark bound; offsets never rewritten,
-- and fetch, poll, commit and lag across the gaps compaction leaves.
-- No wrapping transaction: a pass and the rewrite of what it removed run
-- in different transactions, as under the maintenance worker.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(62);

CREATE FUNCTION pg_temp.offsets(p_topic text, p_from bigint DEFAULT 0, p_max integer DEFAULT 1000) RETURNS text
LANGUAGE sql AS $$ SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset) FROM mq.fetch(p_topic, 0, p_from, p_max) $$;
CREATE FUNCTION pg_temp.cleaner_point(p_topic text) RETURNS bigint
LANGUAGE sql AS $$ SELECT cleaner_point FROM mq.compaction WHERE topic = p_topic AND partition = 0 $$;

-- configuration
SELECT is(mq.validate_config('{"cleanup.policy": "delete,compact"}'), '{"cleanup.policy": "compact,delete"}',
          'compact and delete in either order, stored as compact,delete');
SELECT is(mq.validate_config('{"cleanup.policy": "compact"}'), '{"cleanup.policy": "compact"}', 'compact alone');
SELECT is(mq.validate_config('{"cleanup.policy": ["delete", "compact"]}'), '{"cleanup.policy": "compact,delete"}',
          'or as a JSON array');
SELECT throws_ok($$SELECT mq.validate_config('{"cleanup.policy": ["compact", 1]}')$$, 'MQ004', NULL, 'an array of non-strings');
SELECT is(mq.validate_config('{"cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.25",
                               "min.compaction.lag.ms": "1h", "delete.retention.ms": "1d"}'),
          '{"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": 0.25,
            "min.compaction.lag.ms": 3600000, "delete.retention.ms": 86400000}', 'the compaction keys, normalised');
SELECT throws_ok($$SELECT mq.validate_config('{"cleanup.policy": "compact,foo"}')$$, 'MQ004', NULL, 'an unknown policy');
SELECT throws_ok($$SELECT mq.validate_config('{"cleanup.policy": ""}')$$, 'MQ004', NULL, 'an empty policy');
SELECT throws_ok($$SELECT mq.validate_config('{"cleanup.policy": "Compact"}')$$, 'MQ004', NULL, 'policies are case sensitive');
SELECT throws_ok($$SELECT mq.validate_config('{"min.cleanable.dirty.ratio": 1.5}')$$, 'MQ004', NULL, 'a ratio above 1');
SELECT throws_ok($$SELECT mq.validate_config('{"min.cleanable.dirty.ratio": -0.1}')$$, 'MQ004', NULL, 'a negative ratio');
SELECT throws_ok($$SELECT mq.validate_config('{"min.compaction.lag.ms": -1}')$$, 'MQ004', NULL, 'a negative lag');
SELECT throws_ok($$SELECT mq.validate_config('{"delete.retention.ms": "1 week"}')$$, 'MQ004', NULL, 'a bad unit');

-- one pass: segments of 10; offsets 0..29 over keys k0..k2 (29 is a
-- tombstone for k2); 30..34 in the segment being written
SELECT mq.create_topic('cmp', 1, '{"cleanup.policy": "compact", "segment.records": 10,
                                    "min.cleanable.dirty.ratio": 0, "delete.retention.ms": "1d"}');
SELECT count(*) FROM mq.send_batch('cmp',
    (SELECT array_agg(CASE WHEN i < 30 THEN 'k' || i % 3 ELSE (ARRAY['a','b','a','b','c'])[i - 29] END ORDER BY i)
       FROM generate_series(0, 34) i),
    (SELECT array_agg(CASE WHEN i = 29 THEN NULL ELSE 'v' || i END ORDER BY i) FROM generate_series(0, 34) i),
    partition => 0);
-- a reader whose snapshot is older than the pass
SELECT dblink_connect('reader', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
SELECT dblink_exec('reader', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT * FROM dblink('reader', 'SELECT 1') AS t(n int);   -- takes the snapshot, locks no segment
SELECT is(mq.compact('cmp'), 27::bigint, 'the pass removed every superseded record of the closed segments');
SELECT is(mq.compact('cmp'), 0::bigint, 'nothing dirty: no pass');
SELECT is((SELECT removed_awaiting_rewrite FROM mq.compaction WHERE topic = 'cmp'), 27::numeric,
          'no rewrite while a snapshot older than the pass is open');
SELECT is((SELECT n FROM dblink('reader', 'SELECT count(*) FROM mq.fetch(''cmp'', 0, 0, 1000)') AS t(n bigint)), 35::bigint,
          'that snapshot still sees every record');
SELECT dblink_exec('reader', 'COMMIT');
SELECT dblink_disconnect('reader');
SELECT is(pg_temp.offsets('cmp'), '27,28,29,30,31,32,33,34',
          'survivors keep their offsets; the segment being written is untouched');
SELECT is(pg_temp.cleaner_point('cmp'), 30::bigint, 'the cleaner point is the end of the cleaned segments');
SELECT is((SELECT log_start_offset || '-' || log_end_offset FROM mq.partitions WHERE topic = 'cmp'), '0-35',
          'log start and log end do not move');
SELECT is(pg_temp.offsets('cmp', 5, 2), '27,28', 'a fetch inside a removed range returns the next surviving records');
SELECT is(pg_temp.offsets('cmp', 29, 3), '29,30,31', 'a fetch across the cleaner point');
SELECT is((SELECT value IS NULL FROM mq.fetch('cmp', 0, 29, 1)), true, 'the tombstone stays within delete.retention.ms');
SELECT is((SELECT string_agg(convert_from(key, 'UTF8') || '=' || coalesce(convert_from(value, 'UTF8'), 'null'), ',' ORDER BY key)
             FROM (SELECT DISTINCT ON (key) key, value FROM mq.fetch('cmp', 0, 0, 1000)
                    WHERE key IS NOT NULL ORDER BY key, msg_offset DESC) l),
          'a=v32,b=v33,c=v34,k0=v27,k1=v28,k2=null', 'reading from the start gives the latest value of every key');

-- poll, commit and lag across the gaps
SELECT mq.commit_offset('g', 'cmp', 0, 5);
BEGIN;
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.poll('g', 'cmp', 2)), '27,28', 'poll from inside a gap');
SELECT is(mq.commit_polled('g', 'cmp'), 1, 'commit what was polled');
COMMIT;
SELECT is(mq.committed_offset('g', 'cmp', 0), 29::bigint, 'the committed offset is after the last record polled');
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.poll('g', 'cmp', 3)), '29,30,31', 'the next poll goes on from there');
SELECT mq.commit_offset('lagger', 'cmp', 0, 5);
SELECT is((SELECT lag FROM mq.consumer_lag WHERE group_id = 'lagger'), 30::bigint,
          'lag is log end minus committed offset, in offsets, as in Kafka');
SELECT ok((SELECT oldest_unconsumed_age IS NOT NULL FROM mq.consumer_lag WHERE group_id = 'lagger'),
          'the age of a position in a gap is that of the next record');

-- the rewrite gives the space back (in the next pass, once the removal committed)
CREATE FUNCTION pg_temp.cleaned_bytes() RETURNS bigint LANGUAGE sql AS
    $$ SELECT sum(pg_relation_size(relid)) FROM mq.segments WHERE topic = 'cmp' AND end_offset <= 30 $$;
SELECT pg_temp.cleaned_bytes() AS before_rewrite \gset
SELECT is((SELECT removed_awaiting_rewrite FROM mq.compaction WHERE topic = 'cmp'), 27::numeric, 'removed records await the rewrite');
SELECT is(mq.compact('cmp'), 0::bigint, 'nothing dirty: no pass');
SELECT is((SELECT removed_awaiting_rewrite FROM mq.compaction WHERE topic = 'cmp'), 0::numeric, 'the next pass rewrote them');
SELECT ok(pg_temp.cleaned_bytes() < :before_rewrite, 'the rewritten segments are smaller');
SELECT is(pg_temp.offsets('cmp'), '27,28,29,30,31,32,33,34', 'the rewrite kept the records');

-- a later pass deduplicates the clean part against the new dirty part
SELECT count(*) FROM mq.send_batch('cmp', (SELECT array_agg('k0'::text) FROM generate_series(35, 44)),
                                   (SELECT array_agg('v' || i ORDER BY i) FROM generate_series(35, 44) i), partition => 0);
SELECT is(mq.compact('cmp'), 7::bigint, 'the second pass removed k0@27, a@30, b@31 and k0@35..38');
SELECT is(pg_temp.offsets('cmp'), '28,29,32,33,34,39,40,41,42,43,44', 'k0 keeps only its latest record below 40');

-- records without a key: refused at produce (Kafka's InvalidRecordException);
-- those written before the topic was compacted stay
SELECT throws_ok($$SELECT * FROM mq.send('cmp', NULL::text, 'v', partition => 0)$$, 'MQ008', NULL,
                 'a compacted topic refuses a record without a key');
SELECT throws_ok($$SELECT * FROM mq.send_batch('cmp', ARRAY['a', NULL], ARRAY['1', '2'], partition => 0)$$, 'MQ008', NULL,
                 'a batch with one record without a key is refused');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'cmp'), 45::bigint, 'and nothing of it was written');
SELECT mq.create_topic('nokey', 1, '{"segment.records": 5}');
SELECT count(*) FROM mq.send_batch('nokey', ARRAY[NULL, 'k', NULL, 'k', 'k', 'k'], ARRAY['a', 'b', 'c', 'd', 'e', 'f'], partition => 0);
SELECT mq.alter_topic('nokey', '{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0}');
SELECT throws_ok($$SELECT * FROM mq.send('nokey', NULL::text, 'v', partition => 0)$$, 'MQ008', NULL,
                 'a topic altered to compact refuses them from then on');
SELECT mq.compact('nokey');
SELECT is(pg_temp.offsets('nokey'), '0,2,4,5', 'records without a key are never compacted away');

-- tombstones go delete.retention.ms after the pass that first cleaned them
SELECT mq.create_topic('tomb', 1, '{"cleanup.policy": "compact", "segment.records": 5,
                                     "min.cleanable.dirty.ratio": 0, "delete.retention.ms": 0}');
SELECT mq.create_topic('tombkeep', 1, '{"cleanup.policy": "compact", "segment.records": 5,
                                         "min.cleanable.dirty.ratio": 0, "delete.retention.ms": "1d"}');
SELECT (SELECT count(*) FROM mq.send_batch(t, ARRAY['k1','k2','k1','k3','k3','z'], ARRAY['v0','v1',NULL,'v3','v4','v5'], partition => 0))
  FROM unnest(ARRAY['tomb', 'tombkeep']) t;
SELECT mq.compact('tomb'), mq.compact('tombkeep');
SELECT is(pg_temp.offsets('tomb'), '1,2,4,5', 'a first pass keeps the tombstone');
SELECT (SELECT count(*) FROM mq.send_batch(t, ARRAY['y','y','y','y','y'], ARRAY['a','b','c','d','e'], partition => 0))
  FROM unnest(ARRAY['tomb', 'tombkeep']) t;
SELECT mq.compact('tomb'), mq.compact('tombkeep');
SELECT is(pg_temp.offsets('tomb'), '1,4,5,9,10', 'the next pass after delete.retention.ms removed it');
SELECT is(pg_temp.offsets('tombkeep'), '1,2,4,5,9,10', 'within delete.retention.ms it stays');

-- min.compaction.lag.ms and min.cleanable.dirty.ratio
SELECT mq.create_topic('young', 1, '{"cleanup.policy": "compact", "segment.records": 5,
                                      "min.cleanable.dirty.ratio": 0, "min.compaction.lag.ms": "1h"}');
SELECT count(*) FROM mq.send_batch('young', (SELECT array_agg('k'::text) FROM generate_series(1, 12)),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 12)), partition => 0);
SELECT is(mq.compact('young'), 0::bigint, 'records younger than min.compaction.lag.ms are not compacted');
SELECT is(pg_temp.cleaner_point('young'), 0::bigint, 'and the cleaner point stays');
SELECT mq.create_topic('ratio', 1, '{"cleanup.policy": "compact", "segment.records": 5, "min.cleanable.dirty.ratio": 1}');
SELECT count(*) FROM mq.send_batch('ratio', (SELECT array_agg('k' || i % 2) FROM generate_series(1, 12) i),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 12)), partition => 0);
SELECT is(mq.compact('ratio'), 8::bigint, 'with no clean part the dirty ratio is 1');
SELECT count(*) FROM mq.send_batch('ratio', (SELECT array_agg('k' || i % 2) FROM generate_series(1, 10) i),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 10)), partition => 0);
SELECT is(mq.compact('ratio'), 0::bigint, 'below min.cleanable.dirty.ratio no pass runs');

-- never above the high watermark (a follower may be truncated there)
SELECT mq.create_topic('hw', 1, '{"cleanup.policy": "compact", "segment.records": 5, "min.cleanable.dirty.ratio": 0}');
SELECT count(*) FROM mq.send_batch('hw', (SELECT array_agg('k'::text) FROM generate_series(1, 17)),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 17)), partition => 0);
UPDATE mq.partition_state SET high_watermark = 7 WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'hw');
SELECT mq.compact('hw');
SELECT is(pg_temp.cleaner_point('hw'), 5::bigint, 'only segments below the high watermark are cleaned');
UPDATE mq.partition_state SET high_watermark = NULL WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'hw');

-- the segment holding the last record is never cleaned, even when full:
-- the log end is read from it
SELECT mq.create_topic('full', 1, '{"cleanup.policy": "compact", "segment.records": 5, "min.cleanable.dirty.ratio": 0}');
SELECT count(*) FROM mq.send_batch('full', (SELECT array_agg('k'::text) FROM generate_series(1, 10)),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 10)), partition => 0);
SELECT mq.compact('full');
SELECT is(pg_temp.offsets('full'), '4,5,6,7,8,9', 'a full last segment is not cleaned');
SELECT is((SELECT msg_offset FROM mq.send('full', 'k', 'w', partition => 0)), 10::bigint, 'the log end did not move back');

-- retention: compact alone keeps old segments, compact,delete drops them
SELECT mq.create_topic('keep', 1, '{"cleanup.policy": "compact", "segment.records": 5, "retention.ms": 0}');
SELECT mq.create_topic('both', 1, '{"cleanup.policy": "delete,compact", "segment.records": 5, "retention.ms": 0}');
SELECT (SELECT count(*) FROM mq.send_batch(t, (SELECT array_agg('k' || i) FROM generate_series(1, 12) i),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 12)), partition => 0))
  FROM unnest(ARRAY['keep', 'both']) t;
SELECT is(mq.apply_retention('keep'), 0, 'retention drops nothing under cleanup.policy compact');
SELECT is(mq.apply_retention('both'), 2, 'under compact,delete retention drops old segments');

-- the maintenance worker's round compacts
SELECT mq.create_topic('maint', 1, '{"cleanup.policy": "compact", "segment.records": 5, "min.cleanable.dirty.ratio": 0}');
SELECT count(*) FROM mq.send_batch('maint', (SELECT array_agg('k'::text) FROM generate_series(1, 12)),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 12)), partition => 0);
SELECT mq.run_maintenance();
SELECT is(pg_temp.offsets('maint'), '9,10,11', 'mq.run_maintenance compacts');

-- a failed pass does not undo the rest of the topic's maintenance
SELECT mq.create_topic('broken', 1, '{"cleanup.policy": "compact,delete", "segment.records": 5,
                                       "min.cleanable.dirty.ratio": 0}');
SELECT count(*) FROM mq.send_batch('broken', (SELECT array_agg('k'::text) FROM generate_series(1, 17)),
                                   (SELECT array_agg('v'::text) FROM generate_series(1, 17)), partition => 0);
-- retention.bytes that drops exactly the oldest segment
SELECT mq.alter_topic('broken', jsonb_build_object('retention.bytes',
    (SELECT sum(bytes) FROM mq.segments WHERE topic = 'broken')
    - (SELECT bytes FROM mq.segments WHERE topic = 'broken' AND base_offset = 0)));
ALTER FUNCTION mq._compact_delete(regclass, bigint, bigint, bigint, bigint) RENAME TO _compact_delete_gone;
SET client_min_messages = error;
SELECT mq.run_maintenance();
SET client_min_messages = warning;
ALTER FUNCTION mq._compact_delete_gone(regclass, bigint, bigint, bigint, bigint) RENAME TO _compact_delete;
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'broken'), 5::bigint,
          'retention still ran in the round where compaction failed');
SELECT is((SELECT count(*) FROM mq.cleaner_pass c JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'broken'),
          0::bigint, 'and the pass did not happen');

-- fetch reads in physical order and goes back to the index at gaps and
-- where physical order breaks (as in physical_order.sql: an aborted batch
-- freed by VACUUM, refilled by another backend before lower offsets)
SELECT mq.create_topic('phys', 1, '{"cleanup.policy": "compact", "segment.records": 1000, "min.cleanable.dirty.ratio": 0}');
BEGIN;
SELECT count(*) FROM mq.send_batch('phys', (SELECT array_agg(convert_to('dead', 'UTF8')) FROM generate_series(1, 500)),
                                   (SELECT array_agg(convert_to(repeat('d', 200), 'UTF8')) FROM generate_series(1, 500)));
ROLLBACK;
SELECT count(*) FROM mq.send_batch('phys', (SELECT array_agg('p' || i / 2 ORDER BY i) FROM generate_series(0, 99) i),
                                   (SELECT array_agg('a' || i ORDER BY i) FROM generate_series(0, 99) i), partition => 0);
SELECT relid AS pseg FROM mq.segments WHERE topic = 'phys' ORDER BY base_offset LIMIT 1 \gset
VACUUM :pseg;
SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s',
    split_part(current_setting('unix_socket_directories'), ',', 1),
    current_setting('port'), current_database(), current_user));
SELECT * FROM dblink('other', $$SELECT count(*) FROM mq.send_batch('phys',
    (SELECT array_agg('p' || i / 2 ORDER BY i) FROM generate_series(100, 149) i),
    (SELECT array_agg('b' || i ORDER BY i) FROM generate_series(100, 149) i), partition => 0)$$) AS t(n bigint);
SELECT dblink_disconnect('other');
SELECT count(*) FROM mq.send_batch('phys', (SELECT array_agg('f' || i ORDER BY i) FROM generate_series(150, 1000) i),
                                   (SELECT array_agg('f' || i ORDER BY i) FROM generate_series(150, 1000) i), partition => 0);
SELECT ok((SELECT min(ctid) FROM :pseg WHERE msg_offset >= 100) < (SELECT min(ctid) FROM :pseg WHERE msg_offset < 100),
          'the heap is out of offset order');
SELECT is(mq.compact('phys'), 75::bigint, 'every even offset below 150 is superseded');
SELECT is((SELECT string_agg(msg_offset::text, ',') FROM mq.fetch('phys', 0, 96, 6)), '97,99,101,103,105,107',
          'fetch across gaps and the physical break, in offset order');
SELECT is((SELECT count(*) FROM mq.fetch('phys', 0, 0, 1000)), 926::bigint, 'every survivor once');
SELECT is((SELECT bool_and(msg_offset = CASE WHEN rn <= 75 THEN 2 * rn - 1 ELSE rn + 74 END)
             FROM (SELECT msg_offset, row_number() OVER () AS rn FROM mq.fetch('phys', 0, 0, 1000)) f), true,
          'visible in offset order, gapless above the cleaner point');
SELECT throws_ok($$SELECT mq.compact('phys-nosuch')$$, 'MQ001', NULL, 'compact of a topic that does not exist: MQ001');
SELECT * FROM finish();
