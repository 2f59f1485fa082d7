# The highly available coordinator's monitor (pg_auto_failover's, one
# PostgreSQL server) is no single point of failure for mq: with the
# monitor killed -9 the coordinator's primary keeps taking writes (its
# keeper reaches its standby, so it does not demote itself), acks=all
# writes and reads go on, and an election still works: the leader's node
# is killed and another broker is elected in a new epoch.  What the
# monitor's loss takes away is the coordinator's own failover until it
# returns, a second fault (docs/replication.md, "A highly available
# coordinator").  Then the monitor comes back and sees both nodes again.
# The checker finds nothing acknowledged lost.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, coord_ha => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
my $roles = MqHaCoord::start_role_sampler($c, 't', 0);
my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. the monitor is lost
$c->coord->kill9_node('monitor');
is(scalar($c->coord->node_pids('monitor')), 0, 'the monitor\'s pg_autoctl and PostgreSQL are gone');
ok($c->wait_acks($p, count => 5, since => time, node => $leader),
	'acks=all writes are acknowledged with the monitor down');
ok($c->wait_consumed($r, count => 5, since => time), 'and the consumer reads on');
my $deadline = time + 10;
my $writable = 1;
while (time < $deadline)	# the primary's keeper does not demote it
{
	$writable &&= $c->coord->can_write;
	usleep(500_000);
}
ok($writable, 'the coordinator\'s primary took writes throughout, without its monitor');

# 2. an election with the monitor down
MqHaCoord::elect_after_kill($c, 't', 0, $leader, $epoch, $p, $r);

# 3. the monitor and the node come back
$c->coord->restart_node('monitor');
ok($c->coord->wait_ready, 'the monitor is back and sees a primary and a secondary');
$c->node($leader)->start;
$c->wait_acks($p, count => 3, since => time) or diag('no write acknowledged at the end');

MqHaCoord::finish($c, $roles, 't', 0, $p, $r);
done_testing();
