-- __consumer_offsets and SQL consumer groups (issue 23, item 3;
-- src/sql/55_consumer_offsets.sql): each new generation of an mq.join_group
-- group, and a static member's new id, appends Kafka's group metadata
-- record (GroupMetadataKey version 2, GroupMetadataValue version 3 with
-- ConsumerProtocol subscriptions and assignments of version 0), in the
-- changing transaction; an emptied group is Kafka's Empty group;
-- delete_group appends the group's tombstone; the topic's first records
-- carry every SQL group.  On a node with an attached broker (a replicated
-- cluster), commits go to the two partitions of its broker id, which
-- ensure_consumer_offsets adds.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(16);

-- (a transaction appends its records at commit: mq._consumer_offsets_flush()
-- appends them before each check)
-- a decoder of Kafka's formats, as a monitor reads them: a nullable
-- STRING at pos (int16 length), and the group metadata value as jsonb
CREATE FUNCTION pg_temp.i16(b bytea, pos integer) RETURNS integer LANGUAGE sql AS
$$ SELECT ('x' || encode(substr(b, pos, 2), 'hex'))::bit(16)::integer
          - CASE WHEN get_byte(b, pos - 1) >= 128 THEN 65536 ELSE 0 END $$;
CREATE FUNCTION pg_temp.i32(b bytea, pos integer) RETURNS integer LANGUAGE sql AS
$$ SELECT ('x' || encode(substr(b, pos, 4), 'hex'))::bit(32)::integer $$;
CREATE FUNCTION pg_temp.str(b bytea, INOUT pos integer, OUT s text) LANGUAGE plpgsql AS $$
DECLARE n integer := pg_temp.i16(b, pos);
BEGIN
    IF n < 0 THEN s := NULL; pos := pos + 2; RETURN; END IF;
    s := convert_from(substr(b, pos + 2, n), 'UTF8');
    pos := pos + 2 + n;
END $$;
CREATE FUNCTION pg_temp.assignment(b bytea) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE pos integer := 7; r record; out jsonb := '{}'; parts jsonb; n integer;
BEGIN
    IF pg_temp.i16(b, 1) <> 0 THEN RAISE 'assignment version %', pg_temp.i16(b, 1); END IF;
    FOR t IN 1 .. pg_temp.i32(b, 3) LOOP
        r := pg_temp.str(b, pos); pos := r.pos;
        n := pg_temp.i32(b, pos); pos := pos + 4; parts := '[]';
        FOR i IN 1 .. n LOOP parts := parts || to_jsonb(pg_temp.i32(b, pos)); pos := pos + 4; END LOOP;
        out := out || jsonb_build_object(r.s, parts);
    END LOOP;
    IF pg_temp.i32(b, pos) <> -1 OR pos + 3 <> length(b) THEN RAISE 'assignment user data'; END IF;
    RETURN out;
END $$;
CREATE FUNCTION pg_temp.subscription(b bytea) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE pos integer := 7; r record; out jsonb := '[]';
BEGIN
    IF pg_temp.i16(b, 1) <> 0 THEN RAISE 'subscription version'; END IF;
    FOR t IN 1 .. pg_temp.i32(b, 3) LOOP
        r := pg_temp.str(b, pos); pos := r.pos; out := out || to_jsonb(r.s);
    END LOOP;
    IF pg_temp.i32(b, pos) <> -1 OR pos + 3 <> length(b) THEN RAISE 'subscription user data'; END IF;
    RETURN out;
END $$;
CREATE FUNCTION pg_temp.group_value(b bytea) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE pos integer := 3; r record; o jsonb; m jsonb; members jsonb := '[]'; n integer; len integer;
BEGIN
    IF b IS NULL THEN RETURN NULL; END IF;
    o := jsonb_build_object('version', pg_temp.i16(b, 1));
    r := pg_temp.str(b, pos); pos := r.pos; o := o || jsonb_build_object('protocol_type', r.s);
    o := o || jsonb_build_object('generation', pg_temp.i32(b, pos)); pos := pos + 4;
    r := pg_temp.str(b, pos); pos := r.pos; o := o || jsonb_build_object('protocol', r.s);
    r := pg_temp.str(b, pos); pos := r.pos; o := o || jsonb_build_object('leader', r.s);
    pos := pos + 8;                                   -- current state timestamp
    n := pg_temp.i32(b, pos); pos := pos + 4;
    FOR i IN 1 .. n LOOP
        r := pg_temp.str(b, pos); pos := r.pos; m := jsonb_build_object('member_id', r.s);
        r := pg_temp.str(b, pos); pos := r.pos; m := m || jsonb_build_object('instance_id', r.s);
        r := pg_temp.str(b, pos); pos := r.pos; m := m || jsonb_build_object('client_id', r.s);
        r := pg_temp.str(b, pos); pos := r.pos; m := m || jsonb_build_object('client_host', r.s);
        m := m || jsonb_build_object('rebalance_ms', pg_temp.i32(b, pos), 'session_ms', pg_temp.i32(b, pos + 4));
        pos := pos + 8;
        len := pg_temp.i32(b, pos);
        m := m || jsonb_build_object('subscription', pg_temp.subscription(substr(b, pos + 4, len)));
        pos := pos + 4 + len;
        len := pg_temp.i32(b, pos);
        m := m || jsonb_build_object('assignment', pg_temp.assignment(substr(b, pos + 4, len)));
        pos := pos + 4 + len;
        members := members || m;
    END LOOP;
    RETURN o || jsonb_build_object('members', members, 'complete', pos = length(b) + 1);
END $$;

SELECT mq.create_topic('cg', 3);
SELECT mq.send('cg', NULL::bytea, 'x'::bytea, partition => 0) FROM generate_series(1, 3);
SELECT mq.create_topic('cg2', 1);
SELECT member FROM mq.join_group('sg', ARRAY['cg']);

-- the group records of __consumer_offsets, decoded
CREATE TEMP VIEW grec AS
SELECT f.partition AS at, f.msg_offset, pg_temp.i16(f.key, 1) AS key_version,
       (pg_temp.str(f.key, 3)).s AS grp, f.value IS NULL AS tombstone, pg_temp.group_value(f.value) AS v
  FROM generate_series(0, 9) p, LATERAL mq.fetch('__consumer_offsets', p, 0) f
 WHERE pg_temp.i16(f.key, 1) = 2;

SELECT mq.ensure_consumer_offsets();
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT key_version, grp, v->>'version', v->>'protocol_type', (v->>'generation')::int,
                           v->>'protocol', jsonb_array_length(v->'members'), (v->>'complete')::boolean FROM grec$$,
                  $$VALUES (2, 'sg', '3', 'consumer', 1, 'range', 1, true)$$,
                  'the topic''s first records carry the SQL group: key v2, value v3, generation 1, its assignor, one member');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT v->'members'->0->>'member_id' = v->>'leader', v->'members'->0->'subscription',
                           v->'members'->0->'assignment', v->'members'->0->>'client_id',
                           (v->'members'->0->>'session_ms')::int
                      FROM grec WHERE grp = 'sg'$$,
                  $$VALUES (true, '["cg"]'::jsonb, '{"cg": [0, 1, 2]}'::jsonb, 'mq', 45000)$$,
                  'its member leads it, subscribes to cg and is assigned its three partitions (ConsumerProtocol v0)');

-- a second member: a new generation, a new record
CREATE TEMP TABLE m2 AS SELECT member FROM mq.join_group('sg', ARRAY['cg', 'cg2'], session_timeout_ms => 20000);
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT (v->>'generation')::int, jsonb_array_length(v->'members'), (v->>'complete')::boolean
                      FROM grec WHERE grp = 'sg' ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES (2, 2, true)$$, 'a member joining appends generation 2 with both members');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT m->'subscription', (m->>'session_ms')::int
                      FROM grec, jsonb_array_elements(v->'members') m
                     WHERE grp = 'sg' AND m->>'member_id' = (SELECT member FROM m2) ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES ('["cg", "cg2"]'::jsonb, 20000)$$, 'the new member''s subscription and timeout');
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT count(*) FROM grec, jsonb_array_elements(v->'members') m, jsonb_each(m->'assignment') a,
                  jsonb_array_elements(a.value) p
            WHERE msg_offset = (SELECT max(msg_offset) FROM grec WHERE grp = 'sg') AND grp = 'sg'),
          4::bigint, 'the assignments of the generation cover cg''s three partitions and cg2''s one');
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT v->>'leader' FROM grec WHERE grp = 'sg' ORDER BY msg_offset DESC LIMIT 1),
          (SELECT min(member_id COLLATE "C") FROM mq.group_member WHERE group_id = 'sg'),
          'the leader is the first member by id');

-- a rolled-back join leaves no record
SAVEPOINT s;
SELECT count(*) FROM mq.join_group('sg', ARRAY['cg']);
ROLLBACK TO SAVEPOINT s;
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT count(*) FROM grec WHERE grp = 'sg'), 2::bigint, 'a rolled-back join leaves no record');

-- leaving: a new generation each time, then Kafka's Empty group
SELECT mq.leave_group('sg', member) FROM m2;
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT (v->>'generation')::int, jsonb_array_length(v->'members')
                      FROM grec WHERE grp = 'sg' ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES (3, 1)$$, 'a member leaving appends generation 3 with one member');
SELECT mq.leave_group('sg', member_id) FROM mq.group_member WHERE group_id = 'sg';
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT (v->>'generation')::int, v->>'protocol', v->>'leader', jsonb_array_length(v->'members'),
                           (v->>'complete')::boolean
                      FROM grec WHERE grp = 'sg' ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES (4, NULL::text, NULL::text, 0, true)$$,
                  'the last one leaving appends the Empty group: no protocol, leader or members');

-- a static member's return: a new member id, the same generation
CREATE TEMP TABLE s1 AS SELECT member FROM mq.join_group('stat', ARRAY['cg'], instance_id => 'i1');
CREATE TEMP TABLE s2 AS SELECT member FROM mq.join_group('stat', ARRAY['cg'], instance_id => 'i1');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT (v->>'generation')::int, v->'members'->0->>'member_id', v->'members'->0->>'instance_id'
                      FROM grec WHERE grp = 'stat' ORDER BY msg_offset$$,
                  $$VALUES (1, (SELECT member FROM s1), 'i1'), (1, (SELECT member FROM s2), 'i1')$$,
                  'a static member returning appends its new member id, in the same generation');

-- delete_group: the group's tombstone
SELECT mq.delete_group('sg');
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT tombstone FROM grec WHERE grp = 'sg' ORDER BY msg_offset DESC LIMIT 1$$,
                  $$VALUES (true)$$, 'delete_group appends the group''s tombstone');
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT count(DISTINCT at) FROM grec WHERE grp = 'sg'), 1::bigint,
          'every record of the group is on one partition');

-- a node with an attached broker: the two partitions of its broker id
INSERT INTO mq.replica_broker (broker_id) VALUES (5);
CREATE TEMP VIEW ends AS SELECT sum(log_end_offset) AS n FROM mq.partitions WHERE topic = '__consumer_offsets';
CREATE TEMP TABLE before AS SELECT n FROM ends;
SELECT mq.commit_offset('gk', 'cg', 0, 1);
SELECT mq._consumer_offsets_flush();
SELECT is((SELECT n FROM ends), (SELECT n FROM before), 'before it has broker 5''s partitions, a commit appends nothing');
SELECT mq._consumer_offsets_flush();
SELECT is(mq.ensure_consumer_offsets(), 12, 'ensure_consumer_offsets adds them: 12 partitions');
SELECT mq.commit_offset(g, 'cg', 0, 2) FROM unnest(ARRAY['gk', 'ünï😀code-group']) g;
SELECT mq._consumer_offsets_flush();
SELECT results_eq($$SELECT f.partition FROM generate_series(0, 11) p, LATERAL mq.fetch('__consumer_offsets', p, 0) f
                     WHERE f.partition >= 10 ORDER BY 1$$,
                  $$VALUES (10), (11)$$,
                  'then commits go to broker 5''s two: 10 + abs(hashCode) % 2');
SELECT mq._consumer_offsets_flush();
SELECT is(mq.ensure_consumer_offsets(50), 50, 'and it grows to what mq-kafka asks for (every listener''s)');

SELECT * FROM finish();
ROLLBACK;
