-- mq.committed_offsets (what mq-kafka's OffsetFetch reads, as the client's
-- role under SASL): a group's committed positions with their metadata,
-- only with describe on the group (42501 otherwise), and only in the
-- topics the caller may describe.
BEGIN;
SELECT plan(5);

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

SELECT * FROM finish();
ROLLBACK;
