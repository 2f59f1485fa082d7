-- Consumer groups against Kafka's documented behaviour (issue 11, "Groups";
-- issue 9, item 2): a partition count change reaches a stable group, and
-- so does a subscribed topic created again (subscriptions are by name),
-- RoundRobinAssignor's circular pointer over members with different
-- subscriptions, AbstractPartitionAssignor.MemberInfo ordering (static
-- members first), retention_headroom of a record in the segment being
-- written, ILLEGAL_GENERATION on heartbeat, and no helper table a caller
-- can plant under the group functions (SECURITY DEFINER).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(34);

-- "a:t/0,t/1|b:u/2": each member (instance id, else member id) and what it owns
CREATE FUNCTION pg_temp.layout(g text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(who || ':' || ps, '|' ORDER BY who) FROM (
        SELECT coalesce(m.instance_id, 'dyn' || dense_rank() OVER (ORDER BY m.member_id)) AS who,
               (SELECT string_agg(t.topic_name || '/' || a.partition, ',' ORDER BY t.topic_name, a.partition)
                  FROM mq.group_assignment a JOIN mq.topic t USING (topic_id)
                 WHERE a.group_id = m.group_id AND a.owner = m.member_id) AS ps
          FROM mq.group_member m WHERE m.group_id = g) s
$$;

CREATE FUNCTION pg_temp.member(g text, inst text) RETURNS text LANGUAGE sql AS $$
    SELECT member_id FROM mq.group_member WHERE group_id = g AND instance_id = inst
$$;

CREATE FUNCTION pg_temp.gen(g text) RETURNS integer LANGUAGE sql AS $$
    SELECT generation FROM mq.consumer_group WHERE group_id = g
$$;

-------------------------------------------------------------------------------
-- issue 9, item 2: no table a caller plants runs code as the definer (first,
-- before any group call of this session could have created such a table)
-------------------------------------------------------------------------------
CREATE ROLE mq_test_intruder;
SELECT mq.create_topic('trap', 3);
-- an ordinary consumer: it may read the topic and use its groups
SELECT mq.grant('read', 'topic', 'trap', 'mq_test_intruder');
SELECT mq.grant('read', 'group', 'trap*', 'mq_test_intruder');
SET ROLE mq_test_intruder;
CREATE TEMP TABLE spied (who text, what text);
CREATE FUNCTION pg_temp.spy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_temp.spied VALUES (current_user, TG_TABLE_NAME || ' ' || TG_OP);
    RETURN NULL;
END $$;
CREATE TEMP TABLE mq_sticky (topic_id int, partition int, member_id text);
CREATE TEMP TABLE mq_target (topic_id int, partition int, member_id text);
CREATE TRIGGER spy AFTER INSERT OR UPDATE OR DELETE ON mq_sticky FOR EACH ROW EXECUTE FUNCTION pg_temp.spy();
CREATE TRIGGER spy_t AFTER TRUNCATE ON mq_sticky FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.spy();
CREATE TRIGGER spy AFTER INSERT OR UPDATE OR DELETE ON mq_target FOR EACH ROW EXECUTE FUNCTION pg_temp.spy();
CREATE TRIGGER spy_t AFTER TRUNCATE ON mq_target FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.spy();
-- the trap works: the intruder's own insert is recorded
INSERT INTO mq_target VALUES (0, 0, 'x');
SELECT is((SELECT string_agg(who || ' ' || what, ',') FROM spied), 'mq_test_intruder mq_target INSERT',
          'the planted trigger fires');
DELETE FROM spied;
CREATE TEMP TABLE trap_m AS SELECT member FROM mq.join_group('trap-g', ARRAY['trap'], assignor => 'cooperative-sticky');
SELECT mq.join_group('trap-g', ARRAY['trap'], assignor => 'cooperative-sticky');
SELECT mq.heartbeat('trap-g', (SELECT member FROM trap_m));
SELECT mq.leave_group('trap-g', (SELECT member FROM trap_m));
SELECT mq.join_group('trap-r', ARRAY['trap'], assignor => 'range');
SELECT mq.join_group('trap-rr', ARRAY['trap'], assignor => 'roundrobin');
SELECT is((SELECT count(*) FROM spied), 0::bigint,
          'join_group, heartbeat and leave_group never touch a table the caller planted');
RESET ROLE;
SELECT is((SELECT count(*) FROM mq.group_member WHERE group_id = 'trap-g'), 1::bigint,
          'and they worked: one member left, one is in the group');
-- the class: no mq function creates a temporary table at all
SELECT is((SELECT string_agg(p.oid::regprocedure::text, ', ') FROM pg_proc p
            WHERE p.pronamespace = 'mq'::regnamespace AND p.prosrc ~* 'create\s+(temp|temporary)\s'), NULL,
          'no function in schema mq creates a temporary table');

-------------------------------------------------------------------------------
-- (a) add_partitions reaches a stable group
-------------------------------------------------------------------------------
SELECT mq.create_topic('grow', 2);
SELECT mq.join_group('grow-g', ARRAY['grow'], instance_id => 'solo');
SELECT is((SELECT string_agg(partition::text, ',' ORDER BY partition) FROM mq.heartbeat('grow-g', pg_temp.member('grow-g', 'solo'))),
          '0,1', 'a sole member owns both partitions');
CREATE TEMP TABLE grow_gen AS SELECT pg_temp.gen('grow-g') AS g;
SELECT mq.add_partitions('grow', 2);
SELECT is((SELECT string_agg(partition::text, ',' ORDER BY partition) FROM mq.heartbeat('grow-g', pg_temp.member('grow-g', 'solo'))),
          '0,1,2,3', 'after add_partitions the next heartbeat rebalances: the member owns all 4');
SELECT cmp_ok(pg_temp.gen('grow-g'), '>', (SELECT g FROM grow_gen), 'in a new generation');

-- a member that only polls also sees the new partitions
SELECT mq.create_topic('grow2', 2);
SELECT mq.join_group('grow2-g', ARRAY['grow2'], instance_id => 'solo');
SELECT mq.add_partitions('grow2', 2);
SELECT mq.send('grow2', NULL::bytea, 'new'::bytea, partition => 3);
SELECT is((SELECT string_agg(partition || ':' || convert_from(value, 'UTF8'), ',')
             FROM mq.poll('grow2-g', 'grow2', 100, member_id => pg_temp.member('grow2-g', 'solo'))),
          '3:new', 'a record sent to a new partition is polled by the member');

-- a poll in a read-only transaction reads what the member owns and leaves
-- the rebalance to a later call; maintenance rebalances an idle group
SELECT mq.create_topic('grow4', 1);
SELECT mq.join_group('grow4-g', ARRAY['grow4'], instance_id => 'solo');
SELECT mq.add_partitions('grow4', 1);
SAVEPOINT ro;
SET LOCAL transaction_read_only = on;
SELECT lives_ok(format('SELECT * FROM mq.poll(%L, %L, 10, member_id => %L)', 'grow4-g', 'grow4', pg_temp.member('grow4-g', 'solo')),
                'a member polls in a read-only transaction after add_partitions');
ROLLBACK TO SAVEPOINT ro;
SELECT mq.run_maintenance();
SELECT is(pg_temp.layout('grow4-g'), 'solo:grow4/0,grow4/1', 'maintenance rebalanced the idle group onto the new partition');

-- cooperative: the new partitions go to the members without revoking any
SELECT mq.create_topic('grow3', 2);
SELECT mq.join_group('grow3-g', ARRAY['grow3'], instance_id => i, assignor => 'cooperative-sticky')
  FROM unnest(ARRAY['a', 'b']) i;
-- two heartbeat rounds: the hand-over of partition 1 is announced, then released
SELECT mq.heartbeat('grow3-g', member_id) FROM mq.group_member WHERE group_id = 'grow3-g';
SELECT mq.heartbeat('grow3-g', member_id) FROM mq.group_member WHERE group_id = 'grow3-g';
SELECT mq.add_partitions('grow3', 2);
SELECT mq.heartbeat('grow3-g', member_id) FROM mq.group_member WHERE group_id = 'grow3-g';
SELECT is(pg_temp.layout('grow3-g'), 'a:grow3/0,grow3/2|b:grow3/1,grow3/3',
          'cooperative-sticky: each member keeps its partition and gets a new one');
SELECT is((SELECT last_revoked FROM mq.consumer_group WHERE group_id = 'grow3-g'), 0, 'nothing was revoked');

-- a member subscribes by name, as Kafka's consumers: a topic dropped and
-- created again is its topic again, without joining again
SELECT mq.create_topic('re-a', 1);
SELECT mq.create_topic('re-b', 1);
SELECT mq.join_group('re-g', ARRAY['re-b', 're-a'], instance_id => 'solo');
SELECT mq.drop_topic('re-a');
SELECT is((SELECT topics FROM mq.group_members WHERE group_id = 're-g'), ARRAY['re-a', 're-b'],
          'a dropped topic stays in the member''s subscription');
SELECT is((SELECT string_agg(topic || '/' || partition, ',') FROM mq.heartbeat('re-g', pg_temp.member('re-g', 'solo'))),
          're-b/0', 'while the member reads the other topic');
SELECT mq.create_topic('re-a', 2);
SELECT mq.send('re-a', NULL::bytea, 'again'::bytea, partition => 1);
SELECT is((SELECT string_agg(topic || '/' || partition, ',' ORDER BY topic, partition)
             FROM mq.heartbeat('re-g', pg_temp.member('re-g', 'solo'))),
          're-a/0,re-a/1,re-b/0', 'created again, its partitions go to the member at its next heartbeat');
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',')
             FROM mq.poll('re-g', 're-a', 10, member_id => pg_temp.member('re-g', 'solo'))),
          'again', 'which polls the new topic''s records');

-------------------------------------------------------------------------------
-- (b) roundrobin follows RoundRobinAssignor with different subscriptions
-------------------------------------------------------------------------------
SELECT mq.create_topic('rr-x', 2);
SELECT mq.create_topic('rr-y', 3);
SELECT mq.join_group('rr-mixed', ARRAY['rr-x', 'rr-y'], instance_id => 'a', assignor => 'roundrobin');
SELECT mq.join_group('rr-mixed', ARRAY['rr-y'], instance_id => 'b', assignor => 'roundrobin');
SELECT is(pg_temp.layout('rr-mixed'), 'a:rr-x/0,rr-x/1,rr-y/1|b:rr-y/0,rr-y/2',
          'roundrobin: the pointer skips a member not subscribed and goes on from there (3/2, not 4/1)');
-- Kafka's RoundRobinAssignorTest.testMultipleConsumersMixedTopics
SELECT mq.create_topic('t1', 3);
SELECT mq.create_topic('t2', 2);
SELECT mq.join_group('rr-kafka', ARRAY['t1'], instance_id => 'consumer1', assignor => 'roundrobin');
SELECT mq.join_group('rr-kafka', ARRAY['t1', 't2'], instance_id => 'consumer2', assignor => 'roundrobin');
SELECT mq.join_group('rr-kafka', ARRAY['t1'], instance_id => 'consumer3', assignor => 'roundrobin');
SELECT is(pg_temp.layout('rr-kafka'), 'consumer1:t1/0|consumer2:t1/1,t2/0,t2/1|consumer3:t1/2',
          'roundrobin: Kafka''s mixed-topics example');
-- topics in byte order (Java String order), whatever the database collation
SELECT mq.create_topic('Zrr', 1);
SELECT mq.create_topic('arr', 1);
SELECT mq.join_group('rr-case', ARRAY['arr', 'Zrr'], instance_id => i, assignor => 'roundrobin')
  FROM unnest(ARRAY['m1', 'm2']) i;
SELECT is(pg_temp.layout('rr-case'), 'm1:Zrr/0|m2:arr/0', 'roundrobin: topic names sorted as Java sorts them');

-------------------------------------------------------------------------------
-- (c) member order: static members by instance id first, then member ids
-------------------------------------------------------------------------------
SELECT mq.create_topic('ord', 3);
SELECT mq.join_group('ord-range', ARRAY['ord'], instance_id => 'zeta');
SELECT mq.join_group('ord-range', ARRAY['ord']);
SELECT is(pg_temp.layout('ord-range'), 'dyn1:ord/2|zeta:ord/0,ord/1',
          'range: the static member sorts before a dynamic member id');
SELECT mq.join_group('ord-rr', ARRAY['ord'], assignor => 'roundrobin');
SELECT mq.join_group('ord-rr', ARRAY['ord'], assignor => 'roundrobin');
SELECT mq.join_group('ord-rr', ARRAY['ord'], instance_id => 'zz', assignor => 'roundrobin');
SELECT is(pg_temp.layout('ord-rr'), 'dyn1:ord/1|dyn2:ord/2|zz:ord/0',
          'roundrobin: static first, then dynamic members by member id');
-- cooperative-sticky breaks ties between equally loaded members in that order
SELECT mq.create_topic('ord1', 1);
SELECT mq.join_group('ord-sticky', ARRAY['ord1'], instance_id => 'alpha', assignor => 'cooperative-sticky');
SELECT mq.join_group('ord-sticky', ARRAY['ord1'], assignor => 'cooperative-sticky');
SELECT mq.join_group('ord-sticky', ARRAY['ord1'], instance_id => 'zeta', assignor => 'cooperative-sticky');
SELECT mq.add_partitions('ord1', 1);
SELECT mq.heartbeat('ord-sticky', member_id) FROM mq.group_member WHERE group_id = 'ord-sticky';
SELECT mq.heartbeat('ord-sticky', member_id) FROM mq.group_member WHERE group_id = 'ord-sticky';
SELECT is(pg_temp.layout('ord-sticky'), 'alpha:ord1/0|zeta:ord1/1',
          'cooperative-sticky: of two idle members the static one gets the new partition');

-------------------------------------------------------------------------------
-- (d) retention_headroom
-------------------------------------------------------------------------------
SELECT mq.create_topic('head', 1, '{"segment.records": 5, "retention.ms": 1}');
SELECT mq.send_batch('head', NULL, ARRAY['a', 'b', 'c']);
SELECT mq.commit_offset('head-g', 'head', 0, 1);
SELECT pg_sleep(0.01);
SELECT is((SELECT retention_headroom FROM mq.consumer_lag WHERE group_id = 'head-g'), interval '1 millisecond',
          'the next record is in the segment being written: it must close first, so at least retention.ms, never negative');
SELECT mq.send_batch('head', NULL, ARRAY['d', 'e', 'f', 'g']);
SELECT pg_sleep(0.01);
SELECT is((SELECT retention_headroom FROM mq.consumer_lag WHERE group_id = 'head-g'), interval '0',
          'once that segment is closed and past retention.ms, the headroom is zero, never negative');
SELECT mq.create_topic('head-day', 1, '{"segment.records": 5, "retention.ms": "1d"}');
SELECT mq.send_batch('head-day', NULL, ARRAY['a', 'b', 'c', 'd', 'e', 'f']);
SELECT mq.commit_offset('head-g', 'head-day', 0, 1);
SELECT ok((SELECT retention_headroom BETWEEN interval '23 hours' AND interval '1 day' - interval '1 microsecond'
             FROM mq.consumer_lag WHERE group_id = 'head-g' AND topic = 'head-day'),
          'a closed segment: the time until its newest record is older than retention.ms');
SELECT mq.commit_offset('head-g', 'head-day', 0, 5);
SELECT is((SELECT retention_headroom FROM mq.consumer_lag WHERE group_id = 'head-g' AND topic = 'head-day'), interval '1 day',
          'the segment being written, no segment.ms: it closes when filled, by records no older than now: retention.ms');
SELECT mq.create_topic('head-roll', 1, '{"segment.records": 5, "retention.ms": "1d", "segment.ms": 1}');
SELECT mq.send_batch('head-roll', NULL, ARRAY['a', 'b']);
SELECT mq.commit_offset('head-g', 'head-roll', 0, 1);
SELECT pg_sleep(0.01);
SELECT ok((SELECT retention_headroom BETWEEN interval '23 hours' AND interval '1 day' - interval '5 milliseconds'
             FROM mq.consumer_lag WHERE group_id = 'head-g' AND topic = 'head-roll'),
          'with segment.ms it may close now, without new records: until its newest record is older than retention.ms');

-------------------------------------------------------------------------------
-- (e) heartbeat checks the generation (ILLEGAL_GENERATION)
-------------------------------------------------------------------------------
SELECT mq.create_topic('hb', 2);
SELECT mq.join_group('hb-g', ARRAY['hb'], instance_id => 'a', assignor => 'cooperative-sticky');
CREATE TEMP TABLE hb_old AS SELECT pg_temp.gen('hb-g') AS g;
SELECT lives_ok(format('SELECT * FROM mq.heartbeat(%L, %L, %s)', 'hb-g', pg_temp.member('hb-g', 'a'), pg_temp.gen('hb-g')),
                'a heartbeat in the current generation');
SELECT mq.join_group('hb-g', ARRAY['hb'], instance_id => 'b', assignor => 'cooperative-sticky');
SELECT throws_ok(format('SELECT * FROM mq.heartbeat(%L, %L, %s)', 'hb-g', pg_temp.member('hb-g', 'a'), (SELECT g FROM hb_old)),
                 'MQ030', NULL, 'a heartbeat from an older generation is refused');
SELECT is((SELECT count(*) FROM mq.group_assignment WHERE group_id = 'hb-g' AND revoking AND announced), 0::bigint,
          'the refused heartbeat announced no revocation');
SELECT throws_ok(format('SELECT * FROM mq.heartbeat(%L, %L, %s)', 'hb-g', pg_temp.member('hb-g', 'a'), pg_temp.gen('hb-g') + 1),
                 'MQ030', NULL, 'a heartbeat from a future generation is refused');
SELECT is((SELECT generation FROM mq.join_group('hb-g', ARRAY['hb'], member_id => pg_temp.member('hb-g', 'a'),
                                                assignor => 'cooperative-sticky')),
          pg_temp.gen('hb-g'), 'rejoining with the member id returns the current generation');
SELECT is((SELECT string_agg(state, ',' ORDER BY partition)
             FROM mq.heartbeat('hb-g', pg_temp.member('hb-g', 'a'), pg_temp.gen('hb-g'))),
          'owned,revoking', 'with it the heartbeat goes through and announces the revocation');
SELECT lives_ok(format('SELECT * FROM mq.heartbeat(%L, %L)', 'hb-g', pg_temp.member('hb-g', 'b')),
                'without generation_id the heartbeat is not checked');

SELECT * FROM finish();
ROLLBACK;
