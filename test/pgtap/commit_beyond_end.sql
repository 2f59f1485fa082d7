\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- A commit beyond the log end is stored, as Kafka's coordinator stores
-- any offset a client commits (mq.commit_offset, src/offsets.c), and a
-- poll from there resets as auto_offset_reset says, as a Kafka consumer
-- does when its fetch gets OFFSET_OUT_OF_RANGE (mq.poll, src/poll.c).
-- Kafka clients: test/kafka/commit_beyond_end.sh.
BEGIN;
SELECT plan(14);

SELECT mq.create_topic('cbe', 1);
SELECT count(*) FROM mq.send_batch('cbe', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 0);

SELECT lives_ok($$SELECT mq.commit_offset('g', 'cbe', 0, 10, 'far')$$, 'a commit beyond the log end is taken');
SELECT is(mq.committed_offset('g', 'cbe', 0), 10::bigint, 'and stored as committed');
SELECT is((SELECT lag FROM mq.consumer_lag WHERE group_id = 'g'), 0::bigint, 'lag counts it 0 behind, not negative');
SELECT throws_ok($$SELECT mq.commit_offset('g', 'cbe', 0, -1)$$, 'MQ007', NULL, 'a negative commit is still MQ007');

SELECT throws_ok($$SELECT * FROM mq.poll('g', 'cbe', 10, false, auto_offset_reset => 'none')$$, 'MQ007',
                 'the group''s committed offset 10 for topic "cbe" partition 0 is beyond the log end 3',
                 'auto_offset_reset none: MQ007 naming the log end');
SELECT is((SELECT array_agg(msg_offset) FROM mq.poll('g', 'cbe', 10, false, auto_offset_reset => 'latest')), NULL,
          'latest: nothing before the next record');
SELECT mq.send('cbe', NULL, 'd'::bytea, partition => 0);
SELECT is((SELECT array_agg(msg_offset) FROM mq.poll('g', 'cbe', 10, false)), ARRAY[3]::bigint[],
          'within the transaction the reset position holds: the next poll reads the new record');
SELECT is(mq.commit_polled('g', 'cbe'), 1, 'commit_polled stores the position after it');
SELECT is(mq.committed_offset('g', 'cbe', 0), 4::bigint, 'moving the offset back from 10');

-- earliest (the default), and auto-commit moving the offset back
SELECT mq.commit_offset('g', 'cbe', 0, 10);
SELECT is((SELECT array_agg(msg_offset ORDER BY msg_offset) FROM mq.poll('g', 'cbe', 10, true)), ARRAY[0, 1, 2, 3]::bigint[],
          'earliest: a poll reads from the log start at once');
SELECT is((SELECT array_agg(msg_offset) FROM mq.poll('g', 'cbe', 10, true)), NULL, 'the next poll finds nothing new');
SELECT is(mq.committed_offset('g', 'cbe', 0), 4::bigint, 'and its auto-commit stored the reset position past what it read');

-- an auto-commit after a reset moves back only from the offset it reset:
-- a commit another consumer made meanwhile stays
SELECT mq.commit_offset('g2', 'cbe', 0, 10);
SELECT count(*) FROM mq.poll('g2', 'cbe', 2, true);
SELECT mq.commit_offset('g2', 'cbe', 0, 20);
SELECT count(*) FROM mq.poll('g2', 'cbe', 2, true);
SELECT is(mq.committed_offset('g2', 'cbe', 0), 20::bigint, 'a later commit of another consumer is not moved back');
SELECT count(*) FROM mq.poll('g2', 'cbe', 2, true);
SELECT is(mq.committed_offset('g2', 'cbe', 0), 2::bigint, 'the reset from it is, by the next auto-commit');

SELECT * FROM finish();
ROLLBACK;
