-- Kafka semantics checked against Kafka's behaviour (issue 23, point 5):
-- compaction never moves the log start, and a segment it emptied ages by
-- its last modification under compact,delete; a compacted segment's
-- largest timestamp counts only the records that remain; the Kafka 3.6+
-- keys message.timestamp.before.max.ms / after.max.ms (KIP-937) and
-- max.compaction.lag.ms (KIP-354).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(33);

CREATE FUNCTION pg_temp.seg(p_topic text, p_base bigint) RETURNS regclass
LANGUAGE sql AS $$ SELECT relid FROM mq.segments WHERE topic = p_topic AND base_offset = p_base $$;

-------------------------------------------------------------------------------
-- 1. compact,delete: a segment compaction emptied is not dropped at once
-------------------------------------------------------------------------------
-- offsets 0..9 keys k0..k9, 10..19 the same keys again (segment 0-10 is
-- emptied by compaction), 20..24 in the segment being written
SELECT mq.create_topic('cd', 1, '{"cleanup.policy": "compact,delete", "segment.records": 10,
                                   "min.cleanable.dirty.ratio": 0, "retention.ms": "1h"}');
SELECT count(*) FROM mq.send_batch('cd',
    (SELECT array_agg(convert_to('k' || i % 10, 'UTF8') ORDER BY i) FROM generate_series(0, 24) i),
    (SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 24) i));
SELECT mq.commit_offset('in-gap', 'cd', 0, 5);
CREATE TEMP TABLE cd_first AS
    SELECT max(created_at) AS appended FROM mq.fetch('cd', 0, 0, 10) WHERE msg_offset < 10;
SELECT is(mq.compact('cd'), 10::bigint, 'the pass emptied the first segment');
SELECT is((SELECT count(*) FROM mq.fetch('cd', 0, 0, 10) WHERE msg_offset < 10), 0::bigint,
          'no record is left below offset 10');
SELECT is(mq._segment_last_time(pg_temp.seg('cd', 0)), (SELECT appended FROM cd_first),
          'an emptied segment''s age is its last modification: the latest append of what it held');
SELECT is(mq.apply_retention('cd'), 0, 'retention.ms does not drop an emptied segment younger than it');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'cd'), 0::bigint,
          'compaction did not move the log start');
SELECT is((SELECT min(msg_offset) FROM mq.poll('in-gap', 'cd', 100, auto_offset_reset => 'none')), 10::bigint,
          'a group committed inside the compaction gap resumes at the next record, no MQ007');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'in-gap' AND topic = 'cd'), 0::bigint,
          'nothing counted as lost');

-- once older than retention.ms the emptied segment goes, and the group
-- that had read nothing lost the 10 records that were still there, not
-- the 20 offsets the two segments spanned
SELECT mq.commit_offset('behind', 'cd', 0, 0);
SELECT mq.alter_topic('cd', '{"retention.ms": 1}');
SELECT pg_sleep(0.02);
SELECT is(mq.apply_retention('cd'), 2, 'once older than retention.ms, both closed segments go');
SELECT is((SELECT log_start_offset FROM mq.partitions WHERE topic = 'cd'), 20::bigint, 'retention moved the log start');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'behind' AND topic = 'cd'), 10::bigint,
          'records_lost counts the records retention removed, not the offsets compaction had removed');

-------------------------------------------------------------------------------
-- 2. a compacted segment's largest timestamp: the records that remain
-------------------------------------------------------------------------------
-- offset 0 (key x) carries the newest timestamp of segment 0-10 and is
-- superseded by offset 9; offsets 1..9 are two days old
SELECT mq.create_topic('cts', 1, '{"cleanup.policy": "compact,delete", "segment.records": 10,
                                    "min.cleanable.dirty.ratio": 0}');
SELECT count(*) FROM mq.send_batch('cts',
    (SELECT array_agg(convert_to(CASE WHEN i IN (0, 9) THEN 'x' ELSE 'y' || i END, 'UTF8') ORDER BY i)
       FROM generate_series(0, 14) i),
    (SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 14) i),
    timestamps => (SELECT array_agg(CASE WHEN i BETWEEN 1 AND 9 THEN now() - interval '2 days' ELSE now() END ORDER BY i)
                     FROM generate_series(0, 14) i));
SELECT mq.commit_offset('ts-behind', 'cts', 0, 0);
SELECT is(mq._segment_last_time(pg_temp.seg('cts', 0)), now(), 'before the pass: the newest record counts');
SELECT is(mq.compact('cts'), 1::bigint, 'the pass removed the superseded record');
SELECT is(mq._segment_last_time(pg_temp.seg('cts', 0)), now() - interval '2 days',
          'after it, the largest timestamp of the records that remain');
SELECT is((SELECT mq.offsets_for_times('cts', 0, now() - interval '1 day')), 10::bigint,
          'the time lookup no longer lands in the segment for the removed record''s time');
SELECT mq.alter_topic('cts', '{"retention.ms": "1d"}');
SELECT is(mq.apply_retention('cts'), 1, 'retention.ms drops it as Kafka would');
SELECT is((SELECT records_lost FROM mq.consumer_lag WHERE group_id = 'ts-behind' AND topic = 'cts'), 9::bigint,
          'a lagging group lost its nine remaining records');

-------------------------------------------------------------------------------
-- 3. Kafka 3.6+ keys
-------------------------------------------------------------------------------
SELECT is(mq.validate_config('{"message.timestamp.before.max.ms": "1h", "message.timestamp.after.max.ms": "5min",
                               "max.compaction.lag.ms": "1d"}'),
          '{"message.timestamp.before.max.ms": 3600000, "message.timestamp.after.max.ms": 300000,
            "max.compaction.lag.ms": 86400000}', 'before, after and max.compaction.lag.ms are known and normalised');
SELECT throws_ok($$SELECT mq.validate_config('{"message.timestamp.after.max.ms": -1}')$$, 'MQ004', NULL,
                 'a negative window side');
SELECT throws_ok($$SELECT mq.validate_config('{"max.compaction.lag.ms": 0}')$$, 'MQ004', NULL,
                 'max.compaction.lag.ms is at least 1, as in Kafka');
SELECT throws_ok($$SELECT mq.validate_config('{"min.compaction.lag.ms": "2h", "max.compaction.lag.ms": "1h"}')$$,
                 'MQ004', NULL, 'min.compaction.lag.ms above max.compaction.lag.ms is refused, as in Kafka');

SELECT mq.create_topic('win', 1, '{"message.timestamp.before.max.ms": "1h", "message.timestamp.after.max.ms": "1min"}');
SELECT throws_ok($$SELECT * FROM mq.send('win', 'k', 'v', "timestamp" => clock_timestamp() - interval '2 hours')$$,
                 'MQ041', NULL, 'before.max.ms: a timestamp too far in the past is refused');
SELECT lives_ok($$SELECT * FROM mq.send('win', 'k', 'v', "timestamp" => clock_timestamp() - interval '30 minutes')$$,
                'a timestamp within before.max.ms is accepted');
SELECT throws_ok($$SELECT * FROM mq.send('win', 'k', 'v', "timestamp" => clock_timestamp() + interval '30 minutes')$$,
                 'MQ041', NULL, 'after.max.ms: a timestamp too far in the future is refused');
SELECT is((SELECT log_end_offset FROM mq.partitions WHERE topic = 'win'), 1::bigint, 'nothing refused was written');
-- each side falls back to message.timestamp.difference.max.ms while unset
SELECT mq.create_topic('win-mixed', 1, '{"message.timestamp.difference.max.ms": "1h",
                                         "message.timestamp.before.max.ms": "1d"}');
SELECT lives_ok($$SELECT * FROM mq.send('win-mixed', 'k', 'v', "timestamp" => clock_timestamp() - interval '2 hours')$$,
                'a set before.max.ms overrides the difference for the past');
SELECT throws_ok($$SELECT * FROM mq.send('win-mixed', 'k', 'v', "timestamp" => clock_timestamp() + interval '2 hours')$$,
                 'MQ041', NULL, 'the unset after.max.ms falls back to the difference');
SELECT mq.alter_topic('win-mixed', '{"message.timestamp.before.max.ms": 9223372036854775807}');
SELECT throws_ok($$SELECT * FROM mq.send('win-mixed', 'k', 'v', "timestamp" => clock_timestamp() - interval '2 hours')$$,
                 'MQ041', NULL, 'before.max.ms at Kafka''s default counts as unset: the difference applies');
SELECT mq.alter_topic('win-mixed', '{"message.timestamp.type": "LogAppendTime"}');
SELECT lives_ok($$SELECT * FROM mq.send('win-mixed', 'k', 'v', "timestamp" => '2001-01-01+00')$$,
                'LogAppendTime ignores the window');

-- max.compaction.lag.ms: below min.cleanable.dirty.ratio, a pass runs
-- once the oldest dirty record waited that long (by its timestamp: these
-- are two days old)
SELECT mq.create_topic('lag', 1, '{"cleanup.policy": "compact", "segment.records": 10,
                                    "min.cleanable.dirty.ratio": 1}');
SELECT count(*) FROM mq.send_batch('lag',
    (SELECT array_agg(convert_to('k' || i % 10, 'UTF8') ORDER BY i) FROM generate_series(0, 10) i),
    (SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 10) i),
    timestamps => (SELECT array_agg(now() - interval '2 days') FROM generate_series(0, 10)));
SELECT is(mq.compact('lag'), 0::bigint, 'a first pass over the first segment (nothing superseded yet)');
SELECT count(*) FROM mq.send_batch('lag',
    (SELECT array_agg(convert_to('k' || i % 10, 'UTF8') ORDER BY i) FROM generate_series(11, 20) i),
    (SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(11, 20) i),
    timestamps => (SELECT array_agg(now() - interval '2 days') FROM generate_series(11, 20)));
SELECT mq.compact('lag');
SELECT is((SELECT cleaner_point FROM mq.compaction WHERE topic = 'lag'), 10::bigint,
          'below the dirty ratio: no pass');
SELECT mq.alter_topic('lag', '{"max.compaction.lag.ms": "1d"}');
SELECT is(mq.compact('lag'), 10::bigint, 'dirty records older than max.compaction.lag.ms force a pass');

-- and the segment being written is closed by max.compaction.lag.ms, as
-- by segment.ms (Kafka's maxSegmentMs), so that its records can be cleaned
SELECT mq.create_topic('lag-roll', 1, '{"cleanup.policy": "compact", "max.compaction.lag.ms": 50}');
SELECT count(*) FROM mq.send_batch('lag-roll', ARRAY['a', 'b', 'a']::bytea[], ARRAY['1', '2', '3']::bytea[]);
SELECT pg_sleep(0.1);
SELECT mq.run_maintenance();
SELECT is((SELECT base_offset || '-' || end_offset FROM mq.segments WHERE topic = 'lag-roll' ORDER BY base_offset LIMIT 1),
          '0-3', 'max.compaction.lag.ms closed the segment being written');
SELECT is(mq._segment_roll_ms('{"cleanup.policy": "delete", "max.compaction.lag.ms": 50, "segment.ms": 100}'), 100::bigint,
          'on a topic that does not compact, only segment.ms closes segments');

SELECT * FROM finish();
ROLLBACK;
