-- mq.committed_offsets (what mq-kafka's OffsetFetch reads, as the client's
-- role under SASL): a group's committed positions with their metadata,
-- only with describe on the group (42501 otherwise), and only in the
-- topics the caller may describe.
BEGIN;
SELECT plan(17);

SELECT mq.create_topic('go_a', 2);
SELECT mq.create_topic('go_b', 1);
SELECT mq.send_batch('go_a', NULL, ARRAY['a', 'b', 'c', 'd', 'e']::bytea[], partition => 0);
SELECT mq.send_batch('go_a', NULL, ARRAY['a', 'b', 'c', 'd', 'e']::bytea[], partition => 1);
SELECT mq.send_batch('go_b', NULL, ARRAY['a']::bytea[], partition => 0);
SELECT mq.commit_offset('go-g', 'go_a', 0, 2, 'meta');
SELECT mq.commit_offset('go-g', 'go_a', 1, 5);
SELECT mq.commit_offset('go-g', 'go_b', 0, 1, 'b');

SELECT results_eq($$SELECT topic, partition, next_offset, metadata FROM mq.committed_offsets('go-g')$$,
                  $$VALUES ('go_a', 0, 2::bigint, 'meta'), ('go_a', 1, 5::bigint, NULL), ('go_b', 0, 1::bigint, 'b')$$,
                  'the owner sees every committed position, metadata included, in order');
SELECT is_empty($$SELECT * FROM mq.committed_offsets('go-none')$$, 'a group without commits has none');

CREATE ROLE go_reader;
SET ROLE go_reader;
SELECT throws_ok($$SELECT * FROM mq.committed_offsets('go-g')$$, '42501', NULL,
                 'a role without describe on the group is refused');
RESET ROLE;
SELECT mq.grant('read', 'group', 'go-g', 'go_reader');
SELECT mq.grant('describe', 'topic', 'go_a', 'go_reader');
SET ROLE go_reader;
SELECT results_eq($$SELECT topic, partition, next_offset FROM mq.committed_offsets('go-g')$$,
                  $$VALUES ('go_a', 0, 2::bigint), ('go_a', 1, 5::bigint)$$,
                  'with describe on the group, it sees the topics it may describe');
SELECT throws_ok($$SELECT * FROM mq.consumer_offset$$, '42501', NULL, 'but not the table itself');
RESET ROLE;

-- committed_offsets refuses what committed_offset refuses (an audit)
SELECT throws_ok($$SELECT * FROM mq.committed_offsets(NULL)$$, 'MQ010', 'group_id must not be null',
                 'a null group id is MQ010, as mq.committed_offset says, not an empty list');
SELECT throws_ok($$SELECT * FROM mq.committed_offsets('')$$, 'MQ010', 'group_id must not be empty',
                 'an empty group id likewise');
-- a group id too long to be stored (over 255 bytes) has no offsets: a Kafka
-- consumer's OffsetFetch reads none and starts by auto.offset.reset
SELECT is_empty($$SELECT * FROM mq.committed_offsets(repeat('g', 300))$$,
                'a group id over 255 bytes has no committed offsets, not an error');
SELECT is(mq.committed_offset(repeat('g', 300), 'go_a', 0), NULL, 'nor a committed offset');
SELECT throws_ok($$SELECT mq.commit_offset(repeat('g', 300), 'go_a', 0, 1)$$, 'MQ010',
                 'group_id is longer than 255 bytes', 'but a commit for it is refused');

-- mq.reset_offsets: its own parameters named; refused while live members
-- read the topic (Kafka resets only an inactive group), as delete_offsets
SELECT throws_ok($$SELECT * FROM mq.reset_offsets('go-g', NULL, now())$$, 'MQ010', 'topic must not be null',
                 'reset_offsets names its own parameter');
SELECT throws_ok($$SELECT * FROM mq.reset_offsets(NULL, 'go_a', now())$$, 'MQ010', 'group_id must not be null',
                 'a null group id too');
SELECT throws_ok($$SELECT * FROM mq.reset_offsets('go-g', 'go_a', NULL)$$, 'MQ010', 'to_timestamp must not be null',
                 'and a null time');
SELECT mq.join_group('go-g', ARRAY['go_a'], session_timeout_ms => 60000) IS NOT NULL AS joined;
SELECT throws_ok($$SELECT * FROM mq.reset_offsets('go-g', 'go_a', '-infinity')$$, 'MQ037',
                 'group "go-g" has live members subscribed to topic "go_a"',
                 'a live member reading the topic refuses the reset (MQ037)');
SELECT results_eq($$SELECT topic, partition, next_offset FROM mq.committed_offsets('go-g')$$,
                  $$VALUES ('go_a', 0, 2::bigint), ('go_a', 1, 5::bigint), ('go_b', 0, 1::bigint)$$,
                  'the refused reset changed nothing');
SELECT results_eq($$SELECT partition, next_offset FROM mq.reset_offsets('go-g', 'go_b', '-infinity')$$,
                  $$VALUES (0, 0::bigint)$$, 'a topic the members do not read is reset');
UPDATE mq.group_member SET last_heartbeat = last_heartbeat - interval '2 minutes' WHERE group_id = 'go-g';
SELECT results_eq($$SELECT partition, next_offset FROM mq.reset_offsets('go-g', 'go_a', '-infinity')$$,
                  $$VALUES (0, 0::bigint), (1, 0::bigint)$$, 'once the member''s session timed out, the topic is reset');

SELECT * FROM finish();
ROLLBACK;
