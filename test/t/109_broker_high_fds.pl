# mq-broker with every descriptor number above FD_SETSIZE (1024): its
# event loop uses poll(), so connections to its node, the coordinator and
# the leader's node, and the metrics endpoint, work at any descriptor
# number (a select() with a stack fd_set overflowed there).  The brokers
# start with descriptors 3..1100 already open (MqCluster high_fds).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $c = MqCluster->new(nodes => 2, metrics => 1, high_fds => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 2, 'min.insync.replicas' => 2 });
my $l = $c->leader('t', 0);
my $f = 3 - $l;

# the sockets of both brokers really are numbered above 1024
for my $i (1, 2)
{
	my $pid = $c->{brokers}[$i];
	my @high = grep { $_ > 1024 && (readlink("/proc/$pid/fd/$_") // '') =~ /^socket:/ }
	  map { m{/(\d+)$} ? $1 : () } glob("/proc/$pid/fd/*");
	ok(@high >= 2, "broker $i has sockets above descriptor 1024 (" . scalar(@high) . ')');
}

# acks=all needs the follower's fetch (its long poll, a socket above 1024)
$c->node($l)->safe_psql('postgres',
	"CALL mq.produce('t', NULL, ARRAY['a','b','c']::bytea[], 0, 'all')");
ok($c->wait_converged('t', 0, 1, 2), 'acks=all write replicated to the follower');

# the metrics endpoint answers from the same loop
my ($status, $body) = $c->http_get($f, '/metrics');
is($status, 200, 'metrics scrape answered');
like($body, qr/^mq_broker_live 1$/m, 'the follower broker is live');

# the node's death is still noticed at once through its watched socket
$c->kill9_node($l);
$c->coord->poll_query_until('postgres',
	"SELECT leader = $f FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or die 'no failover';
pass('failover to the other broker');
like($c->broker_log($l), qr/lost the connection to the node/, 'the leader noticed its node die');

done_testing();
