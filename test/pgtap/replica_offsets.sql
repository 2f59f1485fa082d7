-- Committed group offsets on replicated partitions (issue 12): only the
-- leader takes commits, each bumps the partition's offsets version,
-- followers copy all of the partition's offsets with the version when
-- theirs differs, and the leader counts what every ISR member applied.
-- Two topics of one database stand for two nodes: 'ol' is led here, 'of'
-- follows it.
BEGIN;
SELECT plan(17);

SELECT mq.create_topic('ol', 1);
SELECT mq.create_topic('of', 1);
SELECT mq.replica_become_leader('ol', 0, 3, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('of', 0, 3, 1);
SELECT mq.send_batch('ol', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
CREATE TEMP VIEW ids AS
SELECT (SELECT topic_id FROM mq.topic WHERE topic_name = 'ol') AS l,
       (SELECT topic_id FROM mq.topic WHERE topic_name = 'of') AS f;

SELECT is(mq._offsets_version((SELECT l FROM ids), 0), 3::bigint << 32,
          'a leader of epoch 3 numbers its offsets versions from 3 * 2^32');
SELECT mq.commit_offset('g1', 'ol', 0, 5);
SELECT mq.commit_offset('g2', 'ol', 0, 2, 'meta');
SELECT is(mq._offsets_version((SELECT l FROM ids), 0), (3::bigint << 32) + 2, 'each commit bumps the version');
SELECT throws_ok($$SELECT mq.commit_offset('g1', 'of', 0, 1)$$, 'MQ020', NULL,
                 'a follower refuses commits: the leader takes them');

-- the follower's first fetch (version unknown) carries all the offsets
CREATE TEMP TABLE f1 AS SELECT mq.replica_fetch('ol', 0, 3, 2, 0, 100, 0, NULL) AS b;
SELECT is((SELECT (b).offset_groups FROM f1), ARRAY['g1', 'g2'], 'the first fetch ships every group''s offset');
SELECT is((SELECT (b).offsets_version FROM f1), (3::bigint << 32) + 2, 'with the leader''s version');
SELECT mq.replica_append('of', 0, 3, (SELECT b FROM f1));
SELECT results_eq($$SELECT group_id, next_offset, metadata FROM mq.consumer_offset
                     WHERE topic_id = (SELECT f FROM ids) ORDER BY 1$$,
                  $$VALUES ('g1', 5::bigint, NULL::text), ('g2', 2::bigint, 'meta')$$,
                  'the follower holds the leader''s committed offsets');
SELECT is(mq._offsets_version((SELECT f FROM ids), 0), (3::bigint << 32) + 2, 'and its version');

-- the next fetch reports that version: nothing to ship, and it counts
CREATE TEMP TABLE f2 AS SELECT mq.replica_fetch('ol', 0, 3, 2, 10, 100, 0, (3::bigint << 32) + 2) AS b;
SELECT is((SELECT (b).offset_groups FROM f2), NULL, 'an unchanged version ships nothing');
SELECT is(mq._offsets_acked_version((SELECT l FROM ids), 0, 3), (3::bigint << 32) + 2,
          'the ISR has applied the version');

-- a new commit: acknowledged only once the follower applied it
SELECT mq.commit_offset('g1', 'ol', 0, 9);
SELECT cmp_ok(mq._offsets_acked_version((SELECT l FROM ids), 0, 3), '<', (3::bigint << 32) + 3,
              'a commit the follower has not fetched is not acknowledged');
CREATE TEMP TABLE f3 AS SELECT mq.replica_fetch('ol', 0, 3, 2, 10, 100, 0, (3::bigint << 32) + 2) AS b;
SELECT mq.replica_append('of', 0, 3, (SELECT b FROM f3));
SELECT is((SELECT next_offset FROM mq.consumer_offset WHERE topic_id = (SELECT f FROM ids) AND group_id = 'g1'),
          9::bigint, 'the changed offsets reach the follower');
SELECT mq.replica_fetch('ol', 0, 3, 2, 10, 100, 0, (3::bigint << 32) + 3);
SELECT is(mq._offsets_acked_version((SELECT l FROM ids), 0, 3), (3::bigint << 32) + 3,
          'and once it reports the version, the commit is acknowledged');

-- A follower outside the ISR joins only once its offsets caught up: its
-- broker sees it below the high watermark until then.
SELECT mq.replica_set_isr('ol', 0, 3, ARRAY[1]);
SELECT mq.commit_offset('g1', 'ol', 0, 10);
SELECT mq.replica_fetch('ol', 0, 3, 2, 10, 100, 0, (3::bigint << 32) + 3);
SELECT cmp_ok((SELECT log_end_offset FROM mq.replica_leader_state('ol', 0, 3) WHERE replica_id = 2), '<',
              (SELECT high_watermark FROM mq.replica_leader_state('ol', 0, 3) WHERE replica_id = 2),
              'a follower whose offsets lag is not reported caught up');
SELECT mq.replica_fetch('ol', 0, 3, 2, 10, 100, 0, (3::bigint << 32) + 4);
SELECT is((SELECT log_end_offset FROM mq.replica_leader_state('ol', 0, 3) WHERE replica_id = 2), 10::bigint,
          'once it applied the version it had at its previous fetch, it is');

-- a new leader epoch: versions restart above every older one, so the
-- followers copy the offsets afresh
SELECT mq.replica_become_follower('ol', 0, 4, 2);
SELECT mq.replica_become_leader('of', 0, 4, 2, ARRAY[1, 2], ARRAY[1, 2]);
SELECT is(mq._offsets_version((SELECT f FROM ids), 0), 4::bigint << 32, 'the new leader''s versions start at 4 * 2^32');
SELECT is((SELECT (mq.replica_fetch('of', 0, 4, 1, 10, 100, 0, (3::bigint << 32) + 4)).offset_groups),
          ARRAY['g1', 'g2'], 'so the old leader, now a follower, gets the new leader''s offsets');
SELECT is(mq.committed_offset('g1', 'of', 0), 9::bigint,
          'the new leader resumes the group where the ISR had acknowledged it');

SELECT * FROM finish();
ROLLBACK;
