# Replication: the coordinator stops answering (its PostgreSQL paused with
# SIGSTOP) for less than coordinator.timeout.ms, so every broker sits in a
# coordinator statement that neither answers nor times out.  The followers
# must keep fetching meanwhile (docs/design.md, "Waiting for the
# coordinator"): acks=all writes to the leader the cluster already has go
# on being acknowledged while the coordinator is stopped.  A broker that
# waited on the coordinator alone held every follower fetch for up to
# coordinator.timeout.ms (20 s here), so no write was acknowledged until
# the coordinator answered or the deadline passed.
#
# The pause stays below coordinator.timeout.ms and session.timeout.ms:
# no broker loses the coordinator and no heartbeat goes stale, so once the
# coordinator resumes the same leader goes on in the same epoch.  Then a
# follower's node is killed during a second pause: its broker notices at
# once but gives its liveness and locks up only after the coordinator
# statement it waits for (nothing served while waiting calls the
# coordinator).  Finally the leader's broker stops and a follower is
# elected, and the checker finds every acknowledged record in place.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3,
	broker_conf => "[broker]\ncoordinator.timeout.ms = 20000\nsession.timeout.ms = 15000\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my @followers = grep { $_ != $leader } 1 .. 3;
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
# every replica in the ISR, so that acks=all needs both followers' fetches
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the ISR did not fill');

# a partition whose ISR is its leader alone: its high watermark moves
# only when its broker reads the followers' progress (none) from the node
$c->create_topic('solo', 1, { 'replication.factor' => 1, 'min.insync.replicas' => 1 });
my $solo = $c->leader('solo', 0);

# the producers send to the leader they have, never asking the paused coordinator
my $p = $c->start_producer('t', 0, leader => $leader);
my $s = $c->start_producer('solo', 0, leader => $solo);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_acks($s, count => 3) or diag('the producer of solo made no progress');

# 1. the coordinator stops answering; each broker is in a coordinator
# statement within a tick (every tick heartbeats), and stays there
my $t_pause = time;
$c->pause_coord;
note("paused the coordinator at $t_pause");
# acknowledgements from a second after the pause on: ten ticks, so none
# of them can come from a broker that had not reached the coordinator yet.
# The deadline is well below coordinator.timeout.ms (20 s)
ok($c->wait_acks($p, count => 10, since => $t_pause + 1, node => $leader, timeout => 12),
	'acks=all writes go on being acknowledged while the coordinator is stopped');
ok($c->wait_acks($s, count => 5, since => $t_pause + 1, node => $solo, timeout => 12),
	'and so are those to a leader alone in its ISR (its broker reads progress while waiting)');
my $t_still = time;
ok($t_still - $t_pause < 15,
	'all of that while the coordinator was still paused (below both timeouts)');
$c->resume_coord;
note('resumed the coordinator');

# 2. nobody gave up on the coordinator: the brokers had waited, serving
for my $i (1 .. 3)
{
	unlike($c->broker_log($i), qr/lost the connection to the coordinator/,
		"broker $i never lost the coordinator (it waited within its deadline)");
}
$c->wait_acks($p, count => 5, since => time)
  or diag('no write acknowledged after the coordinator resumed');
is($c->coord->safe_psql('postgres',
		"SELECT leader || ' ' || leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"$leader $epoch", 'the same leader in the same epoch');
my $lines_s = $c->stop_producer($s);
$c->check_log('solo', 0, $lines_s, $solo);
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the ISR is not whole after the pause');
# 3. a follower's node dies while its broker waits for the paused
# coordinator: the broker notices at once (it watches its node while it
# waits), but giving its liveness and locks up takes the coordinator, so
# that waits until the coordinator answers; then the leader shrinks it
# out and acknowledges again, and the restarted node rejoins
my $x = $followers[0];
my $off = length($c->broker_log($x));
my $since_kill = sub { substr($c->broker_log($x), $off) };
my $t_pause2 = time;
$c->pause_coord;
# a second on (ten ticks): every broker sits in a coordinator statement
ok($c->wait_acks($p, count => 1, since => $t_pause2 + 1, node => $leader, timeout => 12),
	'acknowledged again a second into the second pause');
$c->kill9_node($x);
note("killed node $x during the second pause");
my $deadline = time + 12;
usleep(20_000) while time < $deadline && $since_kill->() !~ /lost the connection to the node/;
like($since_kill->(), qr/lost the connection to the node/,
	"broker $x noticed its node's death while waiting for the coordinator");
unlike($since_kill->(), qr/gave up leadership of \d+ partition\(s\) and liveness/,
	'and leaves its liveness and locks for after the coordinator statement');
$c->resume_coord;
like($c->wait_broker_log($x, qr/gave up leadership of \d+ partition\(s\) and liveness/),
	qr/gave up leadership of \d+ partition\(s\) and liveness/,
	'it gave them up once the coordinator answered');
ok($c->wait_acks($p, count => 3, since => time, node => $leader),
	'the leader acknowledges again without the dead follower');
$c->node($x)->start;
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag("node $x did not rejoin the ISR");

my $lines = $c->stop_producer($p);

# the cluster still elects: the leader's broker stops, a follower takes over
$c->signal_broker($leader, 'TERM');
$c->coord->poll_query_until('postgres',
	"SELECT leader <> $leader AND leader_epoch > $epoch FROM mq_coord.partition "
	  . "WHERE topic = 't' AND partition = 0")
  or diag('no new leader after the leader broker stopped');
my $new = $c->leader('t', 0);
ok((grep { $_ == $new } @followers), "a follower ($new) leads after the old leader's broker stopped");

my $q = $c->start_producer('t', 0, tag => 'w', leader => $new);
ok($c->wait_acks($q, count => 3), 'the new leader acknowledges acks=all writes');
my $lines_q = $c->stop_producer($q);
$c->check_log('t', 0, [ @$lines, @$lines_q ], $new, grep { $_ != $new } @followers);
$c->teardown;
done_testing();
