-- mq.delete_group (Kafka's DeleteGroups, issue 14): an unknown group is
-- MQ035, a group with live SQL members MQ036, a partition this node
-- follows MQ020, a role without DELETE on the group 42501, and each of
-- them changes nothing; otherwise the group's committed offsets, losses
-- and state go, and the leader's offsets version moves for followers.
-- mq.delete_offsets (Kafka's OffsetDelete): the same for one topic's
-- offsets, live members refused only when subscribed to it (MQ037).
BEGIN;
SELECT plan(38);

SELECT mq.create_topic('gd', 2);
SELECT mq.create_topic('gd_led', 1);
SELECT mq.create_topic('gd_followed', 1);
SELECT mq.replica_become_leader('gd_led', 0, 2, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('gd_followed', 0, 2, 1);
SELECT mq.send_batch('gd', NULL, ARRAY['a', 'b', 'c']::bytea[], partition => 0);
SELECT mq.commit_offset('gd-a', 'gd', 0, 2, 'meta');
SELECT mq.commit_offset('gd-a', 'gd', 1, 0);
SELECT mq.commit_offset('gd-b', 'gd', 0, 1);
INSERT INTO mq.retention_loss (group_id, topic_id, partition, records_lost, last_loss_at)
SELECT 'gd-a', topic_id, 0, 7, now() FROM mq.topic WHERE topic_name = 'gd';
CREATE TEMP VIEW offsets AS
SELECT group_id, count(*) AS n FROM mq.consumer_offset GROUP BY group_id;

-- bad input: its own SQLSTATE, nothing changed
SELECT throws_ok($$SELECT mq.delete_group('gd-nope')$$, 'MQ035', NULL, 'an unknown group is MQ035');
SELECT throws_ok($$SELECT mq.delete_group('')$$, 'MQ010', NULL, 'an empty group id is MQ010');
SELECT throws_ok($$SELECT mq.delete_group(NULL)$$, 'MQ010', NULL, 'a null group id is MQ010');

-- a group with a live SQL member is not empty
SELECT mq.commit_offset('gd-live', 'gd', 1, 0);
SELECT mq.join_group('gd-live', ARRAY['gd'], session_timeout_ms => 60000);
SELECT throws_ok($$SELECT mq.delete_group('gd-live')$$, 'MQ036', NULL, 'a group with live members is MQ036');
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-live'), 1::bigint, 'and keeps its offsets');
SELECT is((SELECT count(*) FROM mq.group_member WHERE group_id = 'gd-live'), 1::bigint, 'and its member');
-- once the member's session expired, the group is empty (its last
-- heartbeat moved back past the timeout: no race with a loaded machine)
UPDATE mq.group_member SET last_heartbeat = last_heartbeat - interval '2 minutes' WHERE group_id = 'gd-live';
SELECT is(mq.delete_group('gd-live'), 1, 'a group whose members expired is deleted');
SELECT is((SELECT count(*) FROM mq.consumer_group WHERE group_id = 'gd-live'), 0::bigint,
          'with its group state');

-- privileges: DELETE on the group, READ is not enough
CREATE ROLE gd_reader;
SELECT mq.grant('read', 'group', 'gd-a', 'gd_reader');
SET ROLE gd_reader;
SELECT throws_ok($$SELECT mq.delete_group('gd-a')$$, '42501', NULL, 'READ on the group does not allow deleting it');
RESET ROLE;
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-a'), 2::bigint, 'the refused deletion changed nothing');
SELECT mq.grant('delete', 'group', 'gd-a', 'gd_reader');
SET ROLE gd_reader;
SELECT is(mq.delete_group('gd-a'), 2, 'with DELETE on the group: both offsets deleted');
RESET ROLE;
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-a'), NULL, 'no committed offset is left');
SELECT is(mq.committed_offset('gd-a', 'gd', 0), NULL, 'committed_offset sees none');
SELECT is((SELECT count(*) FROM mq.retention_loss WHERE group_id = 'gd-a'), 0::bigint, 'nor a retention loss');
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-b'), 1::bigint, 'other groups keep theirs');
SELECT throws_ok($$SELECT mq.delete_group('gd-a')$$, 'MQ035', NULL, 'a deleted group is unknown');

-- a group state without offsets (its SQL members left) is a group too
SELECT mq.leave_group('gd-left', (SELECT member FROM mq.join_group('gd-left', ARRAY['gd'])));
SELECT is(mq.delete_group('gd-left'), 0, 'an empty group without offsets is deleted');

-- replicated partitions: only where this node leads
SELECT mq.commit_offset('gd-r', 'gd_led', 0, 0);
INSERT INTO mq.consumer_offset (group_id, topic_id, partition, next_offset)
SELECT 'gd-r', topic_id, 0, 0 FROM mq.topic WHERE topic_name = 'gd_followed';
SELECT throws_ok($$SELECT mq.delete_group('gd-r')$$, 'MQ020', NULL,
                 'offsets on a partition this node follows: MQ020');
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-r'), 2::bigint, 'and nothing deleted');
DELETE FROM mq.consumer_offset WHERE group_id = 'gd-r'
   AND topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = 'gd_followed');
CREATE TEMP TABLE v0 AS SELECT mq._offsets_version(topic_id, 0) AS v FROM mq.topic WHERE topic_name = 'gd_led';
SELECT is(mq.delete_group('gd-r'), 1, 'offsets on a partition this node leads are deleted');
SELECT is((SELECT mq._offsets_version(topic_id, 0) FROM mq.topic WHERE topic_name = 'gd_led'),
          (SELECT v + 1 FROM v0), 'and its offsets version moves, so that followers copy the deletion');

-- mq.delete_offsets: one topic's offsets of a group
SELECT mq.create_topic('gd_other', 1);
SELECT mq.commit_offset('gd-o', 'gd', 0, 2);
SELECT mq.commit_offset('gd-o', 'gd', 1, 0);
SELECT mq.commit_offset('gd-o', 'gd_other', 0, 0);
SELECT throws_ok($$SELECT mq.delete_offsets('gd-nope', 'gd')$$, 'MQ035', NULL, 'delete_offsets: an unknown group is MQ035');
SELECT throws_ok($$SELECT mq.delete_offsets('gd-o', 'gd_nope')$$, 'MQ001', NULL, 'an unknown topic is MQ001');
SELECT throws_ok($$SELECT mq.delete_offsets('gd-o', 'gd', ARRAY[0, 5])$$, 'MQ006', NULL,
                 'a partition outside the topic is MQ006');
SELECT throws_ok($$SELECT mq.delete_offsets('', 'gd')$$, 'MQ010', NULL, 'an empty group id is MQ010');
SELECT throws_ok($$SELECT mq.delete_offsets('gd-o', 'gd', ARRAY[0, NULL])$$, 'MQ010', 'partitions must not contain null',
                 'a null partition is MQ010, not partition NULL');
SELECT throws_ok($$SELECT mq.delete_offsets(NULL, 'gd')$$, 'MQ010', 'group_id must not be null',
                 'a null group id is MQ010, said as null');
SELECT is((SELECT n FROM offsets WHERE group_id = 'gd-o'), 3::bigint, 'the refusals changed nothing');
-- a live member subscribed to the topic refuses it; one reading another topic does not
SELECT mq.join_group('gd-o', ARRAY['gd'], session_timeout_ms => 60000);
SELECT throws_ok($$SELECT mq.delete_offsets('gd-o', 'gd')$$, 'MQ037', NULL,
                 'live members subscribed to the topic: MQ037');
SELECT is(mq.delete_offsets('gd-o', 'gd_other'), 1, 'a topic they do not read: its offset is deleted');
UPDATE mq.group_member SET last_heartbeat = last_heartbeat - interval '2 minutes' WHERE group_id = 'gd-o';
-- privileges: DELETE on the group and READ on the topic
CREATE ROLE gd_deleter;
SELECT mq.grant('delete', 'group', 'gd-o', 'gd_deleter');
SET ROLE gd_deleter;
SELECT throws_ok($$SELECT mq.delete_offsets('gd-o', 'gd', ARRAY[0])$$, '42501', NULL,
                 'without READ on the topic: refused');
RESET ROLE;
SELECT mq.grant('read', 'topic', 'gd', 'gd_deleter');
SET ROLE gd_deleter;
SELECT is(mq.delete_offsets('gd-o', 'gd', ARRAY[0]), 1, 'with both, once the member expired: partition 0 deleted');
RESET ROLE;
SELECT is(mq.committed_offset('gd-o', 'gd', 0), NULL, 'partition 0 has no offset left');
SELECT is(mq.committed_offset('gd-o', 'gd', 1), 0::bigint, 'partition 1 keeps its own');
SELECT is(mq.delete_offsets('gd-o', 'gd', ARRAY[0]), 0, 'deleting it again deletes nothing');
SELECT is(mq.delete_offsets('gd-o', 'gd'), 1, 'no partitions named: every partition''s offset');
-- replicated: only where this node leads, and the leader's version moves
SELECT mq.commit_offset('gd-o', 'gd_led', 0, 0);
DELETE FROM v0;
INSERT INTO v0 SELECT mq._offsets_version(topic_id, 0) FROM mq.topic WHERE topic_name = 'gd_led';
SELECT is(mq.delete_offsets('gd-o', 'gd_led'), 1, 'an offset on a partition this node leads is deleted');
SELECT is((SELECT mq._offsets_version(topic_id, 0) FROM mq.topic WHERE topic_name = 'gd_led'),
          (SELECT v + 1 FROM v0), 'and its offsets version moves');

SELECT * FROM finish();
ROLLBACK;
