# Placement (docs/replication.md, "Placement and reassignment"): partitions
# added to a replicated topic with mqctl topic alter --partitions on the
# coordinator are placed on the brokers, which add them on their nodes
# (hosting only their replicas) and elect their leaders, while an
# idempotent acks=all producer keeps writing an old partition; a consumer
# group member on one node sees the new partition count, rebalances and
# reads the new partitions from their leaders.  The brokers register the
# rack of their config.  The checker then finds
# nothing acknowledged lost on any partition.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

# every broker registers the rack of its config (one rack: placement by id)
my $c = MqCluster->new(nodes => 3, broker_conf => "[broker]\nrack = r1\n");
$c->start_brokers;
ok($c->coord->poll_query_until('postgres', "SELECT count(*) = 3 FROM mq_coord.broker WHERE rack = 'r1'"),
	'the brokers registered their rack');
$c->create_topic('t', 2, { 'replication.factor' => 2, 'min.insync.replicas' => 2 });
my $p0 = $c->start_producer('t', 0);
$c->wait_acks($p0, count => 3) or diag('the producer made no progress');

# a group member on node1 (which hosts partition 0 only, until the new ones)
my $g = $c->node(1);
ok($g->poll_query_until('postgres', "SELECT count(*) = 2 FROM mq.partitions WHERE topic = 't'"),
	'node1 has the topic');
my $member = $g->safe_psql('postgres',
	"SELECT member FROM mq.join_group('g', ARRAY['t'], instance_id => 'm1', assignor => 'roundrobin')");
is($g->safe_psql('postgres', "SELECT string_agg(partition::text, ',' ORDER BY partition) "
		  . "FROM mq.heartbeat('g', '$member')"), '0,1', 'the member owns partitions 0 and 1');

# the example of docs/cli.md ("topic alter"), as it stands
my $root = $ENV{MQ_REPO_ROOT} // '.';
my ($cmd, $shown) = slurp_file("$root/docs/cli.md")
  =~ /<!-- add-partitions-example:begin -->\n```console\n\$ mqctl (.*?)\n(.*?)```\n<!-- add-partitions-example:end -->/s
  or die 'docs/cli.md has no add-partitions example';
my ($rc, $out) = $c->mqctl(split / /, $cmd);
ok($rc == 0 && $out eq $shown, "mqctl $cmd adds two partitions on the coordinator, as documented")
  or diag($out);
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = 4 FROM mq_coord.partition WHERE topic = 't' AND leader IS NOT NULL"),
	'the new partitions have leaders');
is($c->replicas('t', 2), '3,1', 'partition 2 placed on brokers 3 and 1');
is($c->replicas('t', 3), '1,2', 'partition 3 placed on brokers 1 and 2');
for my $i (1 .. 3)
{
	ok($c->node($i)->poll_query_until('postgres',
			"SELECT count(*) = 4 FROM mq.replica_status WHERE topic = 't'"),
		"node$i grew the topic to 4 partitions");
}
is($c->node(2)->safe_psql('postgres',
		"SELECT string_agg(partition || ':' || hosted, ',' ORDER BY partition) FROM mq.replica_status WHERE topic = 't'"),
	'0:true,1:true,2:false,3:true', 'node2 hosts only its replicas of the new partitions');

# writes to the new partitions at their leaders
my @newp = map { $c->start_producer('t', $_) } 2, 3;
$c->wait_acks($_, count => 3) or diag('a producer of a new partition made no progress') for @newp;

# the member rebalances and reads the new partitions from their leaders
ok($g->poll_query_until('postgres',
		"SELECT string_agg(partition::text, ',' ORDER BY partition) = '0,1,2,3' FROM mq.heartbeat('g', '$member')"),
	'the group rebalanced: the member owns partitions 0 to 3');
for my $p (2, 3)
{
	my $l = $c->leader('t', $p);
	my ($ok, $res) = MqCluster::psql_cmd($c->node($l),
		"SELECT count(*) FROM mq.fetch('t', $p, 0, 1000)");
	ok($ok && $res =~ /^(\d+)/ && $1 > 0, "the member reads partition $p from its leader, broker $l")
	  or diag($res);
}

my $acks0 = $c->stop_producer($p0);
my @acks = map { $c->stop_producer($_) } @newp;
$c->check_log('t', 0, $acks0, split /,/, $c->replicas('t', 0));
$c->check_log('t', 2, $acks[0], split /,/, $c->replicas('t', 2));
$c->check_log('t', 3, $acks[1], split /,/, $c->replicas('t', 3));
$g->safe_psql('postgres', "SELECT mq.leave_group('g', '$member')");
$c->teardown;
done_testing();
