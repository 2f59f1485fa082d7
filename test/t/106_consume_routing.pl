# Replication routing for consumers: mq.fetch and mq.poll read a
# replicated partition only on its leader.  On a follower (or a leader
# that resigned) they raise not_leader (MQ020) naming the leader, also
# when the node is demoted while a long poll waits.  Unreplicated topics
# on the same node are not affected.  A node whose broker has gone (it
# had attached, its session ended) leads nothing: produce and fetch are
# refused with not_leader until a broker attaches again.
#
# One node, no broker: the test plays the broker's part with
# mq.replica_become_leader / mq.replica_become_follower.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('routing');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\nlog_statement = none\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION mq;
SELECT mq.create_topic('plain', 1);
SELECT mq.create_topic('rep', 2, '{"replication.factor": 3, "min.insync.replicas": 1}');
SELECT mq.replica_become_leader('rep', 0, 1, 1, '{1,2,3}', '{1}', 'node1');
SELECT mq.replica_become_leader('rep', 1, 1, 1, '{1,2,3}', '{1}', 'node1');
SELECT mq.send('plain', NULL, 'p0'::bytea);
SELECT mq.send_batch('rep', NULL, ARRAY['a', 'b', 'c']::bytea[], NULL, 0);
SELECT mq.send_batch('rep', NULL, ARRAY['d']::bytea[], NULL, 1);
-- what the broker's tick does: with the ISR the leader alone, this moves
-- the high watermark to the log end
SELECT count(*) FROM mq.replica_leader_state('rep', 0, 1);
SELECT count(*) FROM mq.replica_leader_state('rep', 1, 1);
});

sub try_sql
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($rc, $out, $err);
}

# the leader serves reads below its high watermark (the ISR is itself)
is($node->safe_psql('postgres',
		"SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('rep', 0, 0)"),
	'a,b,c', 'mq.fetch on the leader');
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.poll('g', 'rep', 10)"), 4,
	'mq.poll on the leader');

# demoted: broker 2 on node2 leads epoch 2
$node->safe_psql('postgres', "SELECT mq.replica_become_follower('rep', 0, 2, 2, 'node2')");
my ($rc, $out, $err) = try_sql("SELECT * FROM mq.fetch('rep', 0, 0)");
isnt($rc, 0, 'mq.fetch on a follower fails');
like($err, qr/ERROR:\s+MQ020: this node is not the leader of "rep" partition 0: broker 2 \(node2\) leads it/,
	'with not_leader naming the leader');
($rc, $out, $err) = try_sql("SELECT * FROM mq.poll('g2', 'rep', 10)");
like($err, qr/MQ020/, 'mq.poll reaching a partition this node does not lead fails with not_leader');
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('rep', 1, 0)"), 1,
	'the partition it still leads is served');
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('plain', 0, 0)"), 1,
	'an unreplicated topic is served');

# resigned (leader unknown), then elected again
$node->safe_psql('postgres', "SELECT mq.replica_resign_all()");
($rc, $out, $err) = try_sql("SELECT * FROM mq.fetch('rep', 1, 0)");
like($err, qr/MQ020: this node is not the leader of "rep" partition 1, and the leader is not known yet/,
	'a resigned leader refuses reads too');
$node->safe_psql('postgres', "SELECT mq.replica_become_leader('rep', 0, 3, 1, '{1,2,3}', '{1}', 'node1')");
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('rep', 0, 0)"), 3,
	'leader again in a new epoch: served');

# demoted while a long poll waits: the poll wakes and refuses
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT count(*) FROM mq.fetch('rep', 0, 3, 10, 20000);\n");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM mq.fetch%' "
		  . "AND wait_event_type = 'Extension'"),
	'a long poll waits on the leader');
$node->safe_psql('postgres', "SELECT mq.replica_become_follower('rep', 0, 4, 3, 'node3')");
$bg->query_until(qr/done/, "\\echo done\n");
like($bg->{stderr}, qr/ERROR:  this node is not the leader of "rep" partition 0: broker 3 \(node3\) leads it/,
	'a long poll on a leader demoted meanwhile ends with not_leader');
$bg->quit;

# a broker attaches, then its session ends: the node stops leading
$node->safe_psql('postgres', "SELECT mq.replica_become_leader('rep', 0, 5, 1, '{1,2,3}', '{1}', 'node1')");
my $broker = $node->background_psql('postgres');
$broker->query_safe('SELECT mq.replica_attach_broker(1)');
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('rep', 0, 0)"), 3,
	'with its broker attached the leader serves reads');
($rc, $out, $err) = try_sql("SELECT mq.replica_attach_broker(2)");
like($err, qr/another mq-broker is attached to this node/, 'a second broker is refused');
like($err, qr/MQ026: another mq-broker/, 'with its own SQLSTATE, not invalid argument');
$broker->quit;
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19796")
  or diag('the broker lock stayed');
($rc, $out, $err) = try_sql("SELECT * FROM mq.fetch('rep', 0, 0)");
like($err, qr/MQ020: this node's broker is not running, so it no longer leads "rep" partition 0/,
	'without its broker the leader refuses reads');
($rc, $out, $err) = try_sql("SELECT mq.send('rep', NULL, 'x'::bytea, NULL, 0)");
like($err, qr/MQ020: this node's broker is not running/, 'and produce');
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('plain', 0, 0)"), 1,
	'unreplicated topics are served all the same');
$node->safe_psql('postgres', "DELETE FROM mq.replica_broker");
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('rep', 0, 0)"), 3,
	'a node told it has no broker any more leads without one');

$node->stop;
done_testing();
