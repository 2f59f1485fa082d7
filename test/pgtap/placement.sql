-- Placement and reassignment on the coordinator and a node's side of it
-- (docs/replication.md, "Placement and reassignment";
-- src/sql/66_placement.sql): rack-alternated placement on live brokers
-- first, then on brokers that are down only when the replication factor
-- needs them (the leader always live), adding partitions, the checks of mq_coord.reassign, completing a move only when
-- its time has come, the moves a broker reads (its throttle's shares),
-- removing brokers; on the node, a topic placed with only some partitions
-- hosted, the others refusing with MQ020.  Runs in a fresh database where
-- pgtap and mq are installed; it plays both the coordinator (brokers
-- registered by hand, this session holding their liveness locks, no
-- mq-broker) and a data node.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(53);

-- four brokers, two racks: placement order is 1, 3, 2, 4 (first of each rack, ...)
INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name, rack)
VALUES (1, 'host=a', 'a', 'r1'), (2, 'host=b', 'b', 'r1'), (3, 'host=c', 'c', 'r2'), (4, 'host=d', 'd', 'r2');
SELECT is(mq_coord._placement_order(), ARRAY[1, 3, 2, 4], 'brokers alternate between racks');
-- placement uses live brokers first: none holds its liveness lock yet
SELECT is(mq_coord._placement_order(true), '{}'::int[], 'no broker is live');
SELECT throws_ok($$ SELECT mq_coord.create_topic('none', 1) $$, 'MQ046',
                 'replication.factor 1 cannot be placed: all brokers are down (4 registered)',
                 'a topic needs a live broker');
-- this session holds brokers 1, 2 and 4's liveness locks (3 is down):
-- the live ones alternate among themselves
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), b) FROM unnest('{1,2,4}'::int[]) b;
SELECT is(mq_coord._placement_order(true), ARRAY[1, 4, 2], 'the live brokers alternate between racks');
SELECT mq_coord.create_topic('three', 3, '{"replication.factor": 3}');
SELECT is((SELECT count(*)::int FROM mq_coord.partition WHERE topic = 'three' AND 3 = ANY (replicas)), 0,
          'a broker that is down gets no replica while the live ones suffice');
-- replication.factor above the live brokers (as Kafka's StripedReplicaPlacer):
-- the live ones first (rotated), then the one down; the ISR the live ones
SELECT mq_coord.create_topic('four', 1, '{"replication.factor": 4}');
SELECT results_eq($$ SELECT replicas, isr FROM mq_coord.partition WHERE topic = 'four' $$,
                  $$ VALUES ('{4,2,1,3}'::int[], '{4,2,1}'::int[]) $$,
                  'replication.factor 4 with 3 live brokers: the live ones lead, broker 3 is the last replica');
SELECT throws_ok($$ SELECT mq_coord.create_topic('five', 1, '{"replication.factor": 5}') $$, 'MQ046',
                 'replication.factor 5 is larger than the 4 registered brokers',
                 'replication.factor above the registered brokers is refused');
SELECT is((SELECT count(*)::int FROM mq_coord.topic WHERE topic IN ('none', 'five')), 0, 'nothing made');
-- only broker 1 live: the brokers down follow it in placement order (3, 2, 4)
SELECT pg_advisory_unlock(mq_coord.broker_lock_class(), b) FROM unnest('{2,4}'::int[]) b;
SELECT mq_coord.create_topic('solo', 2, '{"replication.factor": 3}');
SELECT results_eq($$ SELECT replicas, isr FROM mq_coord.partition WHERE topic = 'solo' ORDER BY partition $$,
                  $$ VALUES ('{1,3,2}'::int[], '{1}'::int[]), ('{1,3,2}', '{1}') $$,
                  'one live broker: it leads every partition, the others down follow in placement order');
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), b) FROM unnest('{2,4}'::int[]) b;
SELECT pg_advisory_lock(mq_coord.broker_lock_class(), 3);
DELETE FROM mq_coord.partition WHERE topic IN ('three', 'four', 'solo');
DELETE FROM mq_coord.topic WHERE topic IN ('three', 'four', 'solo');
SELECT mq_coord.create_topic('p', 4, '{"replication.factor": 2, "min.insync.replicas": 2}');
SELECT results_eq($$ SELECT replicas FROM mq_coord.partition WHERE topic = 'p' ORDER BY partition $$,
                  $$ VALUES ('{1,3}'::int[]), ('{3,2}'), ('{2,4}'), ('{4,1}') $$,
                  'replication.factor 2 on 4 brokers: each partition in both racks, leaders spread');
SELECT is((SELECT count(*)::int FROM mq_coord.partition p, mq_coord.broker a, mq_coord.broker b
            WHERE p.topic = 'p' AND a.broker_id = p.replicas[1] AND b.broker_id = p.replicas[2]
              AND a.rack = b.rack), 0, 'no partition has both replicas in one rack');
SELECT mq_coord.set_broker_rack(2, NULL);
SELECT is(mq_coord._placement_order(), ARRAY[2, 1, 3, 4], 'a broker without a rack is a rack of its own');
SELECT mq_coord.set_broker_rack(2, 'r1');
SELECT throws_ok($$ SELECT mq_coord.set_broker_rack(9, 'r1') $$, 'MQ042', NULL, 'an unknown broker has no rack');

-- adding partitions places them like the first ones
SELECT is(mq_coord.add_partitions('p', 2), 6, 'two partitions added');
SELECT results_eq($$ SELECT replicas FROM mq_coord.partition WHERE topic = 'p' AND partition >= 4 ORDER BY partition $$,
                  $$ VALUES ('{1,3}'::int[]), ('{3,2}') $$, 'the new partitions continue the placement');
SELECT is((SELECT partitions FROM mq_coord.topic WHERE topic = 'p'), 6, 'the topic has 6 partitions');
SELECT throws_ok($$ SELECT mq_coord.add_partitions('p', 0) $$, 'MQ005', NULL, 'adding none is refused');
SELECT throws_ok($$ SELECT mq_coord.add_partitions('nope', 1) $$, 'MQ001', NULL, 'an unknown topic is refused');

-- each new topic starts one broker further, so one-partition topics spread
SELECT mq_coord.create_topic('one' || i, 1) FROM generate_series(1, 3) i;
SELECT results_eq($$ SELECT replicas FROM mq_coord.partition WHERE topic LIKE 'one_' ORDER BY topic $$,
                  $$ VALUES ('{3}'::int[]), ('{2}'), ('{4}') $$,
                  'three one-partition topics after the first: on three other brokers');
SELECT is(mq_coord.add_partitions('one3', 2), 3, 'two partitions added to the fourth topic');
SELECT results_eq($$ SELECT replicas FROM mq_coord.partition WHERE topic = 'one3' ORDER BY partition $$,
                  $$ VALUES ('{4}'::int[]), ('{1}'), ('{3}') $$, 'continuing from its partition 0');

-- a proposal moves nothing
SELECT results_eq($$ SELECT proposed FROM mq_coord.propose_reassignment('{p}', '{3,4}') WHERE partition < 2 $$,
                  $$ VALUES ('{3,4}'::int[]), ('{4,3}') $$, 'a proposal on brokers 3 and 4');
SELECT is((SELECT replicas FROM mq_coord.partition WHERE topic = 'p' AND partition = 0), '{1,3}', 'and changes nothing');

-- reassign: the checks
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 0, '{4}') $$, 'MQ044', NULL,
                 'fewer replicas than min.insync.replicas');
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 0, '{4,4}') $$, 'MQ044', NULL, 'a broker twice');
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 0, '{4,2}', 0) $$, 'MQ044', NULL, 'a throttle of 0');
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 0, '{4,9}') $$, 'MQ042', NULL, 'an unknown broker');
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 9, '{4,2}') $$, 'MQ006', NULL, 'an unknown partition');

-- a move: replicas widen to target + leaving, the ISR stays
UPDATE mq_coord.partition SET leader = 1, leader_epoch = 1 WHERE topic = 'p' AND partition = 0;
SELECT is(mq_coord.reassign('p', 0, '{4,3}', 1000), '{4,3,1}', 'while moving: target, then the replica leaving');
SELECT results_eq($$ SELECT isr, target_replicas, throttle_bytes FROM mq_coord.partition WHERE topic = 'p' AND partition = 0 $$,
                  $$ VALUES ('{1,3}'::int[], '{4,3}'::int[], 1000::bigint) $$, 'the ISR is unchanged, the target recorded');
SELECT throws_ok($$ SELECT mq_coord.reassign('p', 0, '{2,3}') $$, 'MQ045', NULL, 'a moving partition cannot get another target');
SELECT results_eq($$ SELECT topic, partition, target_replicas FROM mq_coord.moving(4) $$,
                  $$ VALUES ('p'::text, 0, '{4,3}'::int[]) $$, 'the new replica''s broker sees the move');
SELECT is(mq_coord.complete_reassignment('p', 0, 1, 1), NULL, 'not complete while the target is not in the ISR');
UPDATE mq_coord.partition SET isr = '{1,3,4}' WHERE topic = 'p' AND partition = 0;
SELECT is(mq_coord.complete_reassignment('p', 0, 1, 1), NULL, 'nor by a leader that leaves the replica set');
UPDATE mq_coord.partition SET leader = 4, leader_epoch = 2 WHERE topic = 'p' AND partition = 0;
SELECT is(mq_coord.complete_reassignment('p', 0, 4, 1), NULL, 'nor in an old epoch');
SELECT is(mq_coord.complete_reassignment('p', 0, 4, 2), '{3,4}', 'the new leader completes it: ISR within the target');
SELECT results_eq($$ SELECT replicas, target_replicas FROM mq_coord.partition WHERE topic = 'p' AND partition = 0 $$,
                  $$ VALUES ('{4,3}'::int[], NULL::int[]) $$, 'replicas are the target');

-- a cancel: back to the replicas it had
SELECT is(mq_coord.reassign('p', 1, '{1,4}'), '{1,4,3,2}', 'partition 1 starts moving');
SELECT is(mq_coord.reassign('p', 1, '{3,2}'), '{3,2,1,4}', 'the replicas it had before cancel the move');
SELECT is((SELECT target_replicas FROM mq_coord.partition WHERE topic = 'p' AND partition = 1), '{3,2}',
          'it moves back: the replicas added leave once the original ones are in sync');

-- the moves a broker reads: its own, and the throttled ones led by a leader of its throttled copies
UPDATE mq_coord.partition SET leader = 2, leader_epoch = 1 WHERE topic = 'p' AND partition IN (2, 5);
SELECT mq_coord.reassign('p', 2, '{2,1}', 1000), mq_coord.reassign('p', 5, '{2,4}', 500);
SELECT results_eq($$ SELECT partition, throttle_bytes, leader, replicas, isr FROM mq_coord.moving(1) $$,
                  $$ VALUES (1, NULL::bigint, NULL::int, '{3,2,1,4}'::int[], '{3,2}'::int[]),
                            (2, 1000, 2, '{2,1,4}', '{2,4}'), (5, 500, 2, '{2,4,3}', '{3,2}') $$,
                  'broker 1 copying from leader 2 also sees the other throttled move leader 2 serves');
SELECT results_eq($$ SELECT partition FROM mq_coord.moving(3) $$, $$ VALUES (1), (5) $$,
                  'a broker with no throttled copy sees only its own moves');

-- removing brokers
SELECT throws_ok($$ SELECT mq_coord.remove_broker(1) $$, 'MQ043', NULL, 'a broker holding replicas stays');
SELECT lives_ok($$ INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name) VALUES (5, 'host=e', 'e');
                   SELECT mq_coord.remove_broker(5) $$, 'a broker holding nothing is removed');

-- the node's side: a topic placed with partition 1 hosted, 0 and 2 not
SELECT is(mq.replica_place_topic('q', 3, '{"replication.factor": 2}', '{1}'), 2,
          'the topic is created, two partitions marked not hosted');
SELECT results_eq($$ SELECT partition, role, hosted FROM mq.replica_status WHERE topic = 'q' ORDER BY 1 $$,
                  $$ VALUES (0, 'follower'::text, false), (1, 'follower', true), (2, 'follower', false) $$,
                  'every partition is given to replication at once, only partition 1 hosted');
SELECT throws_like($$ SELECT mq.send('q', NULL::text, 'x', partition => 0) $$,
                   'this node holds no replica of "q" partition 0', 'a partition not hosted refuses produce');
SELECT throws_like($$ SELECT * FROM mq.fetch('q', 2, 0) $$,
                   'this node holds no replica of "q" partition 2', 'and reads');
SELECT mq.replica_become_leader('q', 1, 1, 7, '{7}', '{7}');
SELECT lives_ok($$ SELECT mq.send('q', NULL::text, 'x', partition => 1) $$, 'the hosted partition, once led, takes produce');
SELECT mq.replica_set_replicas('q', 1, 1, '{7,8}', '{7,8}');
SELECT mq.replica_set_replicas('q', 1, 1, '{7}');
SELECT is((SELECT isr FROM mq.replica_status WHERE topic = 'q' AND partition = 1), '{7}',
          'a replica dropped from the leader''s replica set leaves its ISR');
SELECT mq.replica_unhost('q', 1);
SELECT throws_like($$ SELECT mq.send('q', NULL::text, 'y', partition => 1) $$,
                   'this node holds no replica of "q" partition 1', 'a replica that moved away refuses produce');
SELECT is(mq.replica_place_topic('q', 4, '{}', '{}'), 1, 'growing the topic marks only the new partition');

-- the cluster's names follow Kafka's collision rule too
SELECT mq_coord.create_topic('co_ll', 1);
SELECT throws_ok($$ SELECT mq_coord.create_topic('co.ll', 1) $$, 'MQ003',
                 'topic "co.ll" collides with existing topic "co_ll"', 'a name differing only in "." against "_"');

SELECT pg_advisory_unlock(mq_coord.broker_lock_class(), b) FROM generate_series(1, 4) b;
ROLLBACK;
