-- One address for clients (issue 13, src/sql/65_cluster_groups.sql):
-- mq_coord.route, consumer groups kept on the coordinator (join,
-- heartbeat, leave, expiry, partitions added: each a new generation with a
-- range assignment), mq_coord.grant_client, and mq.poll(partitions), with
-- which a client polls a leader for the partitions it leads.
BEGIN;
SELECT plan(19);

INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name)
VALUES (1, 'host=n1 port=5432 dbname=app user=mq_broker', 'n1'), (2, 'host=n2 dbname=app', 'n2');
INSERT INTO mq_coord.topic (topic, partitions) VALUES ('orders', 3);
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('orders', 0, '{1,2}', 1, 4, '{1,2}'), ('orders', 1, '{1,2}', 2, 2, '{1,2}'),
       ('orders', 2, '{1,2}', NULL, 0, '{1,2}');

SELECT results_eq($$SELECT partition, partitions, leader, leader_epoch, leader_conninfo FROM mq_coord.route('orders')$$,
                  $$VALUES (0, 3, 1, 4, 'host=n1 port=5432 dbname=app user=mq_broker'),
                           (1, 3, 2, 2, 'host=n2 dbname=app'), (2, 3, NULL, 0, NULL)$$,
                  'route: each partition''s leader, epoch and node address (none when leaderless)');
SELECT is_empty($$SELECT * FROM mq_coord.route('nothing')$$, 'route of a topic the coordinator lacks: no rows');

CREATE TEMP TABLE a AS SELECT * FROM mq_coord.join_cluster_group('g', '{orders}', 'a');
SELECT results_eq($$SELECT member_id, generation, topic, partition FROM a$$,
                  $$VALUES ('a', 1, 'orders', 0), ('a', 1, 'orders', 1), ('a', 1, 'orders', 2)$$,
                  'the first member gets every partition in generation 1');
CREATE TEMP TABLE b AS SELECT * FROM mq_coord.join_cluster_group('g', '{orders}', 'b');
SELECT results_eq($$SELECT generation, partition FROM b$$, $$VALUES (2, 2)$$,
                  'a second member: generation 2, the range assignor gives it the last partition');
SELECT results_eq($$SELECT generation, partition FROM mq_coord.cluster_group_heartbeat('g', 'a')$$,
                  $$VALUES (2, 0), (2, 1)$$, 'the first member hears of it by its heartbeat');
SELECT is((SELECT generation FROM mq_coord.join_cluster_group('g', '{orders}', 'a') LIMIT 1), 2,
          'joining again with the same topics changes nothing');
SELECT alike((SELECT member_id FROM mq_coord.join_cluster_group('g', '{orders}') LIMIT 1), 'g-%',
            'without a member id, one is made');
SELECT is((SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'), 3, 'and a new generation');
SELECT lives_ok($$SELECT mq_coord.leave_cluster_group('g', (SELECT member_id FROM mq_coord.cluster_group_member
                                                             WHERE group_id = 'g' AND member_id LIKE 'g-%'))$$,
                'a member leaves');
SELECT is((SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'), 4, 'a leave: a new generation');

-- b's session times out: the next call on the group drops it
UPDATE mq_coord.cluster_group_member SET last_heartbeat = clock_timestamp() - interval '1 minute'
 WHERE member_id = 'b';
SELECT results_eq($$SELECT generation, partition FROM mq_coord.cluster_group_heartbeat('g', 'a')$$,
                  $$VALUES (5, 0), (5, 1), (5, 2)$$, 'an expired member''s partitions go to the others');
SELECT throws_ok($$SELECT * FROM mq_coord.cluster_group_heartbeat('g', 'b')$$, 'MQ031', NULL,
                 'the expired member is told to join again');

-- partitions added to the topic: the next call rebalances
UPDATE mq_coord.topic SET partitions = 4 WHERE topic = 'orders';
SELECT results_eq($$SELECT generation, partition FROM mq_coord.cluster_group_heartbeat('g', 'a')$$,
                  $$VALUES (6, 0), (6, 1), (6, 2), (6, 3)$$, 'an added partition is assigned in a new generation');
SELECT results_eq($$SELECT member_id, active, assigned FROM mq_coord.cluster_group_members('g')$$,
                  $$VALUES ('a', true, '{orders:0,orders:1,orders:2,orders:3}'::text[])$$,
                  'cluster_group_members: who is there and what it reads');
SELECT throws_ok($$SELECT * FROM mq_coord.join_cluster_group('g', '{}')$$, 'MQ010', NULL,
                 'a member subscribes to something');

-- grant_client: what a client role needs, and nothing for PUBLIC
CREATE ROLE cg_client;
SELECT mq_coord.grant_client('cg_client');
SELECT ok(pg_catalog.has_function_privilege('cg_client', 'mq_coord.cluster_group_heartbeat(text, text)', 'EXECUTE')
          AND pg_catalog.has_function_privilege('cg_client', 'mq_coord.route(text)', 'EXECUTE')
          AND NOT pg_catalog.has_function_privilege('cg_client', 'mq_coord.elect(text, integer, integer, integer)', 'EXECUTE'),
          'grant_client grants routing and cluster groups, not the broker''s functions');

-- mq.poll(partitions): only those named; claims as usual
SELECT mq.create_topic('clicks', 3);
SELECT mq.send('clicks', NULL::bytea, ('c' || p)::bytea, partition => p) FROM generate_series(0, 2) p;
SELECT results_eq($$SELECT partition FROM mq.poll('g', 'clicks', 10, partitions => ARRAY[2, 0]) ORDER BY 1$$,
                  $$VALUES (0), (2)$$, 'poll with partitions reads only those');
SELECT throws_ok($$SELECT * FROM mq.poll('g', 'clicks', 10, partitions => ARRAY[3])$$, 'MQ006', NULL,
                 'a partition the topic lacks is refused');
SELECT results_eq($$SELECT partition FROM mq.poll('g', 'clicks', 10, partitions => NULL)$$,
                  $$VALUES (1)$$, 'without: every partition (this transaction''s claims and positions hold)');

SELECT * FROM finish();
ROLLBACK;
