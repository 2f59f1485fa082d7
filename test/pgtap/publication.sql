-- mq under a publication FOR ALL TABLES (what Debezium creates by default,
-- and what a logical-replication upgrade starts from): PostgreSQL then
-- refuses UPDATE and DELETE on any table without a replica identity, at
-- any wal_level, so every table mq writes needs one.  Segments are
-- identified by their unique offset index, grants by the whole row, every
-- other table by its primary key.  Then what deletes and updates rows of
-- mq's tables runs under the publication: compaction, a follower's
-- truncation, maintenance removing the grants of dropped roles, revoke,
-- record and group deletion, retention and topic deletion.
BEGIN;
SELECT plan(12);

SELECT mq.create_topic('pub', 1, '{"cleanup.policy": "compact", "segment.records": 10,
                                    "min.cleanable.dirty.ratio": 0}');
SELECT mq.create_topic('publ', 1);
SELECT mq.create_topic('pubf', 1);
SELECT mq.replica_become_leader('publ', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_follower('pubf', 0, 1, 1);

-- the tables mq has written to so far and will write to: the catalog, the
-- coordinator's, each topic's partitioned tables and their segments
SELECT is_empty($$
    SELECT c.oid::regclass::text
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname IN ('mq', 'mq_internal', 'mq_coord', 'mq_log') AND c.relkind = 'r'
       AND (c.relreplident = 'n'
            OR c.relreplident = 'd' AND NOT EXISTS (SELECT 1 FROM pg_index i
                                                     WHERE i.indrelid = c.oid AND i.indisprimary))$$,
    'every table of mq has a replica identity (a primary key, an index or the whole row)');
SELECT is((SELECT count(*) FROM mq.segment s JOIN pg_class c ON c.oid = s.relid
            WHERE c.relreplident = 'i'), (SELECT count(*) FROM mq.segment),
          'every segment is identified by its offset index');

SET LOCAL client_min_messages = error;   -- no "wal_level is insufficient" warning
CREATE PUBLICATION mq_everything FOR ALL TABLES;
RESET client_min_messages;

-- compaction deletes superseded records and updates the time index
SELECT count(*) FROM mq.send_batch('pub', (SELECT array_agg('k' || i % 3) FROM generate_series(0, 24) i),
                                   (SELECT array_agg('v' || i) FROM generate_series(0, 24) i), partition => 0);
SELECT is(mq.compact('pub'), 17::bigint, 'compaction removes superseded records of the closed segments');

-- a follower's truncation (KIP-101) deletes the records above the cut
SELECT count(*) FROM mq.send_batch('publ', NULL, (SELECT array_agg(('r' || i)::bytea) FROM generate_series(1, 10) i),
                                   partition => 0);
SELECT mq.replica_append('pubf', 0, 1, mq.replica_fetch('publ', 0, 1, 2, 0, 100, 0));
SELECT is(mq.replica_truncate('pubf', 0, 1, 4), 6::bigint, 'a follower truncates its log');
SELECT is(mq.replica_append('pubf', 0, 1, mq.replica_fetch('publ', 0, 1, 2, 4, 100, 0)), 10::bigint,
          'and copies them again from the cut');

-- grants: revoke deletes one, maintenance those of roles dropped since
CREATE ROLE pub_reader;
CREATE ROLE pub_gone;
SELECT mq.grant('read', 'topic', 'publ', 'pub_reader');
SELECT mq.grant('read', 'topic', 'publ', 'pub_gone');
SELECT is(mq.revoke('read', 'topic', 'publ', 'pub_reader'), 1, 'revoke removes a grant');
DROP ROLE pub_gone;
SELECT lives_ok('SELECT mq.run_maintenance()', 'maintenance runs');
SELECT is((SELECT count(*) FROM mq.acl WHERE resource_name = 'publ'), 0::bigint,
          'and removed the grant of the dropped role');

-- records, groups, retention and topics
SELECT is(mq.delete_records('publ', 0, 3), 3::bigint, 'records are deleted up to an offset');
SELECT mq.commit_offset('pubg', 'publ', 0, 7);
SELECT lives_ok($$SELECT mq.delete_group('pubg')$$, 'a group is deleted');
SELECT mq.alter_topic('publ', '{"segment.records": 5, "retention.ms": 1}');
SELECT lives_ok($$SELECT mq.apply_retention('publ')$$, 'retention drops segments');
SELECT lives_ok($$SELECT mq.drop_topic('pub')$$, 'a topic is dropped');

SELECT * FROM finish();
ROLLBACK;
