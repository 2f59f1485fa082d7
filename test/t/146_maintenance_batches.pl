# The maintenance worker commits after each batch of topics
# (mq.maintenance_batch_topics; src/maintenance.c, src/sql/85_maintenance.sql),
# so that a pass over many topics never holds back the xmin horizon for
# its length.
#
#   - batches of one topic: two topics whose segments are due for a roll
#     by segment.ms (set for both in one transaction, so the same pass
#     sees both) are rolled by different transactions: the rows the rolls
#     wrote into mq.segment have different commit timestamps
#     (track_commit_timestamp).  Were a pass one transaction, they would
#     share its commit.
#   - the rolls themselves are right: the segment being written closes at
#     the log end, a new one follows it
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('batches');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n"
	. "mq.maintenance_interval = 100\nmq.maintenance_batch_topics = 1\n"
	. "track_commit_timestamp = on\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION mq');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance'"),
	'the maintenance worker runs');

# topics with records in their first segment; then segment.ms for all in
# one transaction: every later pass sees all of them due
my @topics = map { "b$_" } 1 .. 4;
for my $t (@topics)
{
	$node->safe_psql('postgres', qq{
		SELECT mq.create_topic('$t', 1, '{"segment.records": 100}');
		SELECT count(*) FROM mq.send_batch('$t', NULL, ARRAY['a', 'b', 'c']::bytea[]);});
}
$node->safe_psql('postgres', 'BEGIN; '
	. join(' ', map { qq{SELECT mq.alter_topic('$_', '{"segment.records": 100, "segment.ms": 1}');} } @topics)
	. ' COMMIT;');

my $list = join(', ', map { "'$_'" } @topics);
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 4 FROM mq.segments WHERE topic IN ($list) AND base_offset = 0 AND end_offset = 3}),
	'the worker rolled the segment being written of every topic at its log end');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM mq.segments s JOIN mq.partitions p USING (topic, partition)
	 WHERE s.topic IN ($list) AND s.base_offset = 3 AND p.log_end_offset = 3}),
	'4', 'a new segment follows each rolled one');

# the rolled segments' rows: one transaction per topic (a batch of one).
# Their xmins differ either way (each topic's roll is a subtransaction),
# so the commit timestamps tell: a subtransaction commits with its top one
is($node->safe_psql('postgres', qq{
	SELECT count(DISTINCT pg_xact_commit_timestamp(sg.xmin)) FROM mq.segment sg JOIN mq.topic t USING (topic_id)
	 WHERE t.topic_name IN ($list) AND sg.base_offset = 0}),
	'4', 'each topic\'s roll committed in a transaction of its own');

# nothing failed on the way
unlike(slurp_file($node->logfile), qr/mq maintenance (skipped|could not)/,
	'no maintenance warning');

$node->stop;
done_testing();
