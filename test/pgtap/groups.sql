-- Consumer groups: assignors, eager vs cooperative rebalancing, session
-- expiry, stale generations, static membership, member-restricted polls.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(42);

-- join n static members i1..in to a fresh group; returns nothing
CREATE FUNCTION pg_temp.join_n(g text, topic text, n int, assignor text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM mq.join_group(g, ARRAY[topic], instance_id => 'i' || i, assignor => assignor);
    END LOOP;
    -- two heartbeat rounds: cooperative hand-overs are announced, then released
    FOR round IN 1 .. 2 LOOP
        PERFORM mq.heartbeat(g, m.member_id) FROM mq.group_member m WHERE m.group_id = g;
    END LOOP;
END $$;

-- "i1:0,1|i2:2" for a group
CREATE FUNCTION pg_temp.layout(g text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(i || ':' || ps, '|' ORDER BY i) FROM (
        SELECT m.instance_id AS i, string_agg(a.partition::text, ',' ORDER BY a.partition) AS ps
          FROM mq.group_member m JOIN mq.group_assignment a ON a.group_id = m.group_id AND a.owner = m.member_id
         WHERE m.group_id = g GROUP BY m.instance_id) s
$$;

-- every partition owned once, and owners balanced within one partition
CREATE FUNCTION pg_temp.balanced(g text, partitions int) RETURNS boolean LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM mq.group_assignment WHERE group_id = g AND owner IS NOT NULL AND NOT revoking) = partitions
       AND (SELECT max(n) - min(n) <= 1 FROM (
              SELECT count(a.partition) AS n FROM mq.group_member m
                LEFT JOIN mq.group_assignment a ON a.group_id = m.group_id AND a.owner = m.member_id
               WHERE m.group_id = g GROUP BY m.member_id) s)
$$;

SELECT mq.create_topic('g1p', 1);
SELECT mq.create_topic('g3p', 3);
SELECT mq.create_topic('g6p', 6);
SELECT mq.create_topic('g7p', 7);

-- exact tables for range and roundrobin
SELECT pg_temp.join_n('range-2x7', 'g7p', 2, 'range');
SELECT is(pg_temp.layout('range-2x7'), 'i1:0,1,2,3|i2:4,5,6', 'range, 2 members, 7 partitions');
SELECT pg_temp.join_n('range-3x7', 'g7p', 3, 'range');
SELECT is(pg_temp.layout('range-3x7'), 'i1:0,1,2|i2:3,4|i3:5,6', 'range, 3 members, 7 partitions');
SELECT pg_temp.join_n('rr-3x7', 'g7p', 3, 'roundrobin');
SELECT is(pg_temp.layout('rr-3x7'), 'i1:0,3,6|i2:1,4|i3:2,5', 'roundrobin, 3 members, 7 partitions');
SELECT pg_temp.join_n('range-3x1', 'g1p', 3, 'range');
SELECT is(pg_temp.layout('range-3x1'), 'i1:0', 'range, more members than partitions: the rest get none');

-- balance for every assignor, 1 to 4 members, 1, 3, 6 and 7 partitions
SELECT ok(bool_and(pg_temp.balanced(g, parts)), 'balanced: ' || a)
  FROM (SELECT a, n, parts, a || '-' || n || 'x' || parts AS g,
               pg_temp.join_n(a || '-' || n || 'x' || parts, 'g' || parts || 'p', n, a)
          FROM unnest(ARRAY['range', 'roundrobin', 'cooperative-sticky']) a,
               generate_series(1, 4) n, unnest(ARRAY[1, 3, 6, 7]) parts) s
 GROUP BY a ORDER BY a;

-- eager revokes everything, cooperative only what moves
SELECT pg_temp.join_n('eager', 'g6p', 2, 'range');
SELECT mq.join_group('eager', ARRAY['g6p'], instance_id => 'i3', assignor => 'range');
SELECT is((SELECT last_revoked FROM mq.consumer_group WHERE group_id = 'eager'), 6,
          'eager: a third member joining revokes all 6 partitions');
SELECT pg_temp.join_n('coop', 'g6p', 2, 'cooperative-sticky');
SELECT is(pg_temp.layout('coop'), 'i1:0,1,2|i2:3,4,5', 'cooperative: two members split 6 partitions');
SELECT mq.join_group('coop', ARRAY['g6p'], instance_id => 'i3', assignor => 'cooperative-sticky');
SELECT is((SELECT last_revoked FROM mq.consumer_group WHERE group_id = 'coop'), 2,
          'cooperative: a third member joining revokes only the 2 partitions that move');
SELECT is((SELECT count(*) FROM mq.group_assignment WHERE group_id = 'coop' AND owner IS NOT NULL AND NOT revoking), 4::bigint,
          'cooperative: the 4 partitions that stay are never revoked');
SELECT is((SELECT count(*) FROM mq.group_assignment a JOIN mq.group_member m ON m.member_id = a.owner
            WHERE a.group_id = 'coop' AND m.instance_id = 'i3'), 0::bigint,
          'cooperative: the new member owns nothing before the old owners release');
SELECT is((SELECT string_agg(state, ',' ORDER BY partition) FROM mq.heartbeat('coop',
              (SELECT member_id FROM mq.group_member WHERE group_id = 'coop' AND instance_id = 'i1'))),
          'owned,owned,revoking', 'cooperative: the heartbeat tells the old owner what it must give up');
SELECT is((SELECT count(*) FROM mq.group_assignment a JOIN mq.group_member m ON m.member_id = a.owner
            WHERE a.group_id = 'coop' AND m.instance_id = 'i3'), 0::bigint,
          'cooperative: announcing is not releasing');
SELECT mq.heartbeat('coop', member_id) FROM mq.group_member WHERE group_id = 'coop' AND instance_id IN ('i1', 'i2');
SELECT mq.heartbeat('coop', member_id) FROM mq.group_member WHERE group_id = 'coop' AND instance_id IN ('i1', 'i2');
SELECT is(pg_temp.layout('coop'), 'i1:0,1|i2:3,4|i3:2,5', 'cooperative: after release the new member owns the moved partitions');
SELECT ok(pg_temp.balanced('coop', 6), 'cooperative: balanced after the hand-over');

-- a silent member loses its partitions after its session timeout: its
-- last heartbeat is made older than that by hand (a 100 ms timeout and a
-- sleep expired it too early on a loaded machine, when the other member
-- joined)
SELECT mq.join_group('silent', ARRAY['g6p'], instance_id => 'quiet', session_timeout_ms => 100);
UPDATE mq.group_member SET last_heartbeat = last_heartbeat + interval '1 hour'
 WHERE group_id = 'silent' AND instance_id = 'quiet';
SELECT mq.join_group('silent', ARRAY['g6p'], instance_id => 'alive', session_timeout_ms => 60000);
SELECT is((SELECT count(*) FROM mq.group_members WHERE group_id = 'silent'), 2::bigint, 'two members');
UPDATE mq.group_member SET last_heartbeat = clock_timestamp() - interval '1 second'
 WHERE group_id = 'silent' AND instance_id = 'quiet';
SELECT mq.run_maintenance();
SELECT is((SELECT string_agg(instance_id, ',') FROM mq.group_member WHERE group_id = 'silent'), 'alive',
          'the silent member was expired by maintenance');
SELECT is((SELECT count(*) FROM mq.group_assignment a JOIN mq.group_member m ON m.member_id = a.owner
            WHERE a.group_id = 'silent' AND m.instance_id = 'alive'), 6::bigint,
          'the remaining member owns all partitions');

-- stale generation and ownership on commit
CREATE TEMP TABLE gm AS SELECT * FROM mq.join_group('commits', ARRAY['g3p'], instance_id => 'a');
SELECT lives_ok($$SELECT mq.commit_offset('commits', 'g3p', 0, 0, member_id => (SELECT member FROM gm),
                                          generation_id => (SELECT generation FROM gm))$$,
                'the owner commits in the current generation');
SELECT mq.join_group('commits', ARRAY['g3p'], instance_id => 'b');
SELECT throws_ok($$SELECT mq.commit_offset('commits', 'g3p', 0, 0, member_id => (SELECT member FROM gm),
                                           generation_id => (SELECT generation FROM gm))$$,
                 'MQ030', NULL, 'a commit from a stale generation is refused');
SELECT throws_ok($$SELECT mq.commit_offset('commits', 'g3p', 2, 0, member_id => (SELECT member FROM gm),
                                           generation_id => (SELECT generation FROM mq.consumer_group WHERE group_id = 'commits'))$$,
                 'MQ034', NULL, 'a commit for a partition the member does not own is refused');
SELECT throws_ok($$SELECT mq.commit_offset('commits', 'g3p', 0, 0, member_id => 'stranger', generation_id => 1)$$,
                 'MQ031', NULL, 'a commit from an unknown member is refused');
SELECT throws_ok($$SELECT * FROM mq.heartbeat('commits', 'stranger')$$, 'MQ031', NULL, 'an unknown member cannot heartbeat');
SELECT throws_ok($$SELECT * FROM mq.join_group('commits', ARRAY['g3p'], assignor => 'roundrobin')$$,
                 'MQ032', NULL, 'a member with another assignor is refused');
SELECT throws_ok($$SELECT * FROM mq.join_group('commits', ARRAY['nosuch'])$$, 'MQ001', NULL, 'an unknown topic is refused');
SELECT throws_ok($$SELECT * FROM mq.join_group('commits', ARRAY['g3p'], assignor => 'sticky')$$,
                 'MQ010', NULL, 'an unknown assignor is refused');

-- a group id a member could never commit for, and an empty instance id, are refused
SELECT throws_ok($$SELECT * FROM mq.join_group(repeat('g', 256), ARRAY['g3p'])$$, 'MQ010',
                 'group_id is longer than 255 bytes', 'a group id longer than 255 bytes is refused');
SELECT lives_ok($$SELECT * FROM mq.join_group(repeat('g', 255), ARRAY['g3p'])$$, 'one of 255 bytes joins');
SELECT throws_ok($$SELECT * FROM mq.join_group('commits', ARRAY['g3p'], instance_id => '')$$, 'MQ010', NULL,
                 'an empty instance id is refused, as Kafka''s group.instance.id');
SELECT throws_ok($$SELECT * FROM mq.heartbeat(NULL, 'm')$$, 'MQ010', 'group_id must not be null',
                 'a heartbeat without a group id: MQ010, not an unknown member');
SELECT throws_ok($$SELECT mq.leave_group(NULL, 'm')$$, 'MQ010', NULL, 'so is leaving');

-- static membership: a restart keeps the partitions, the old id is fenced
SELECT pg_temp.join_n('static', 'g6p', 2, 'cooperative-sticky');
CREATE TEMP TABLE before AS SELECT pg_temp.layout('static') AS layout,
    (SELECT generation FROM mq.consumer_group WHERE group_id = 'static') AS generation,
    (SELECT member_id FROM mq.group_member WHERE group_id = 'static' AND instance_id = 'i1') AS old_id;
CREATE TEMP TABLE again AS SELECT * FROM mq.join_group('static', ARRAY['g6p'], instance_id => 'i1', assignor => 'cooperative-sticky');
SELECT is(pg_temp.layout('static'), (SELECT layout FROM before), 'a static member''s restart keeps its partitions');
SELECT is((SELECT generation FROM again), (SELECT generation FROM before), 'and causes no rebalance');
SELECT isnt((SELECT member FROM again), (SELECT old_id FROM before), 'the restarted instance gets a new member id');
SELECT throws_ok($$SELECT * FROM mq.heartbeat('static', (SELECT old_id FROM before))$$, 'MQ033', NULL,
                 'the old instance is fenced');
-- a member rejoining with another instance id than its own, as Kafka's
-- coordinator answers it: another member's is fenced (MQ033), an unknown
-- one an unknown member (MQ031); nothing changes either way
CREATE TEMP TABLE static_ids AS
    SELECT instance_id, member_id FROM mq.group_member WHERE group_id = 'static';
SELECT throws_ok($$SELECT * FROM mq.join_group('static', ARRAY['g6p'], (SELECT member FROM again), 'i2',
                                               assignor => 'cooperative-sticky')$$,
                 'MQ033', NULL, 'a member rejoining with another member''s instance id is fenced');
SELECT throws_ok($$SELECT * FROM mq.join_group('static', ARRAY['g6p'], (SELECT member FROM again), 'i9',
                                               assignor => 'cooperative-sticky')$$,
                 'MQ031', NULL, 'with an instance id no member has, it is an unknown member');
SELECT set_eq($$SELECT instance_id, member_id FROM mq.group_member WHERE group_id = 'static'$$,
              $$SELECT * FROM static_ids$$, 'and the group''s members and instance ids are as they were');
SELECT lives_ok($$SELECT * FROM mq.join_group('static', ARRAY['g6p'], (SELECT member FROM again), 'i1',
                                              assignor => 'cooperative-sticky')$$,
                'its own instance id rejoins');

-- poll restricted to a member's partitions
SELECT mq.send_batch('g3p', NULL, ARRAY['a'], partition => p) FROM generate_series(0, 2) p;
SELECT is((SELECT array_agg(DISTINCT partition ORDER BY partition) FROM mq.poll('range-3x7', 'g3p', 100)), ARRAY[0, 1, 2],
          'without member_id poll reads every partition');
SELECT pg_temp.join_n('members', 'g3p', 3, 'range');
SELECT is((SELECT array_agg(partition) FROM mq.poll('members', 'g3p', 100,
              member_id => (SELECT member_id FROM mq.group_member WHERE group_id = 'members' AND instance_id = 'i2'))),
          ARRAY[1], 'with member_id poll reads only the member''s partitions');

SELECT * FROM finish();
ROLLBACK;
