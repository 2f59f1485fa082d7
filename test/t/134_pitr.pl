# Point-in-time recovery of a database that holds mq (docs/operations.md,
# "Backups and restore"): a base backup and the archived WAL, recovered to
# a named restore point, give back the log exactly as it was there (every
# record, header and offset, the log end, committed offsets, an idempotent
# producer's state) and nothing written after it; the recovered server
# then goes on: new topics and producer ids after the recovered ones, the
# producer's retry of its last batch answered with its offsets, appends at
# the recovered log end.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(has_archiving => 1, allows_streaming => 1);
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION mq;
	SELECT mq.create_topic('t', 2, '{"segment.records": "40"}');
	SELECT mq.send('t', 'k' || g, 'v' || g, jsonb_build_object('n', g), g % 2) FROM generate_series(1, 60) g;
	SELECT mq.commit_offset('g', 't', 0, 10);
});
$node->backup('base');

# after the backup, before the restore point: an idempotent producer's
# batches, more records across segments, a later commit
my $pid = $node->safe_psql('postgres', 'SELECT producer_id FROM mq.init_producer()');
my $batch = "SELECT string_agg(msg_offset::text, ',') FROM mq.send_batch('t', ARRAY['a','b','c']::bytea[],
	ARRAY['1','2','3']::bytea[], partition => 1, producer_id => $pid, producer_epoch => 0, base_sequence => %d)";
$node->safe_psql('postgres', sprintf($batch, 0));
my $last_batch = $node->safe_psql('postgres', sprintf($batch, 3));
$node->safe_psql('postgres', q{
	SELECT mq.send('t', 'k' || g, 'v' || g, NULL::jsonb, g % 2) FROM generate_series(61, 100) g;
	SELECT mq.commit_offset('g', 't', 0, 40);
});

my $state = q{SELECT (SELECT string_agg(r.partition || ':' || r.msg_offset || ':' || encode(r.key, 'escape') || ':'
		|| encode(r.value, 'escape') || ':' || coalesce(r.headers::text, '-'), ',' ORDER BY r.partition, r.msg_offset)
		FROM generate_series(0, 1) p, LATERAL mq.fetch('t', p, 0, 1000) r)
	|| ' ends ' || (SELECT string_agg(log_end_offset::text, ',' ORDER BY partition) FROM mq.partitions WHERE topic = 't')
	|| ' committed ' || mq.committed_offset('g', 't', 0)
	|| ' topics ' || (SELECT string_agg(topic, ',' ORDER BY topic) FROM mq.topics)};
my $at_point = $node->safe_psql('postgres', $state);
$node->safe_psql('postgres', "SELECT pg_create_restore_point('before_mistake')");

# what recovery must leave out
$node->safe_psql('postgres', q{
	SELECT mq.send('t', 'late', 'late', NULL::jsonb, g % 2) FROM generate_series(1, 30) g;
	SELECT mq.commit_offset('g', 't', 0, 55);
	SELECT mq.create_topic('late', 1);
});
my $late_pid = $node->safe_psql('postgres', 'SELECT producer_id FROM mq.init_producer()');
# the segment pg_switch_wal completed (the current position may already be
# in the next one, which nothing archives until it fills)
my $walfile = $node->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$node->poll_query_until('postgres', "SELECT last_archived_wal >= '$walfile' FROM pg_stat_archiver")
  or die 'the WAL is not archived';
$node->stop;

my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($node, 'base', has_restoring => 1);
$restored->append_conf('postgresql.conf', "recovery_target_name = 'before_mistake'\nrecovery_target_action = 'promote'\n");
$restored->start;
$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'recovery does not end';

is($restored->safe_psql('postgres', $state), $at_point,
	'recovered to the restore point: every record, header and offset, the log ends, the committed offset and the topics as they were there');
is($restored->safe_psql('postgres', sprintf($batch, 3)), $last_batch,
	'the idempotent producer\'s retry of its last batch is answered with its offsets');
is($restored->safe_psql('postgres', sprintf($batch, 6)), '56,57,58',
	'and its next batch appends at the recovered log end, in sequence');
cmp_ok($restored->safe_psql('postgres', 'SELECT producer_id FROM mq.init_producer()'), '>', $pid,
	'a new producer id follows the recovered ones');
ok($restored->safe_psql('postgres', "SELECT mq.create_topic('after', 1) > 1"),
	'a new topic gets a new id');
is($restored->safe_psql('postgres', "SELECT mq.send('t', 'x'::text, 'y'::text, NULL::jsonb, 0)"), '(0,50)',
	'a send appends at the recovered log end of partition 0');
$restored->stop;

done_testing();
