# Replication: the coordinator is killed (-9) and later restarted, then
# paused past the session timeout and resumed, while an idempotent acks=all
# producer writes.  The coordinator elects but is not needed to serve
# (docs/replication.md, "Serving without the coordinator"): during the
# outage the leader keeps taking writes and its followers keep fetching,
# so acks=all writes are acknowledged throughout; once the coordinator is
# back the brokers take their locks again, and the leader keeps its epoch
# when nobody was elected meanwhile.  The checker then verifies that no
# acknowledged record was lost or duplicated, whatever elections the
# pause caused (two leaders acknowledging in one partition would show as
# a lost or displaced acknowledged record).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");

my $p = $c->start_producer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. the coordinator dies: writes go on
my $t_kill = time;
$c->kill9_coord;
note("killed the coordinator at $t_kill");
like($c->wait_broker_log($leader, qr/serving 1 leadership\(s\) on in their epochs without the coordinator/),
	qr/serving 1 leadership/, 'the leader noticed the outage and serves on');
my $t_noticed = time;
ok($c->wait_acks($p, count => 10, since => $t_noticed, node => $leader),
	'acks=all writes are acknowledged by the leader while the coordinator is down');
is($c->node($leader)->safe_psql('postgres',
		"SELECT role || ' ' || leader_epoch FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	"leader $epoch", 'the leader kept its role and epoch');

$c->coord->start;
note('restarted the coordinator');
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM mq_coord.broker WHERE mq_coord.broker_alive(broker_id, 3000)")
  or diag('the brokers did not come back');
like($c->wait_broker_log($leader, qr/leadership lock taken back; still leading epoch $epoch/),
	qr/lock taken back/, 'the leader took its lock back');
is($c->coord->safe_psql('postgres',
		"SELECT leader || ' ' || leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"$leader $epoch", 'nobody was elected: the same leader in the same epoch');
$c->wait_acks($p, count => 3, since => time) or diag('no write acknowledged after the coordinator returned');

# 2. the coordinator pauses past the session timeout (every heartbeat goes
# stale at once), then resumes: whatever elections follow, one leader
my $lost_before = () = $c->broker_log($leader) =~ /lost the connection to the coordinator/g;
$c->pause_coord;
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
usleep(20_000) while time < $deadline
  && (() = $c->broker_log($leader) =~ /lost the connection to the coordinator/g) <= $lost_before;
ok($c->wait_acks($p, count => 5, since => time),
	'writes are acknowledged after the leader gave up on the paused coordinator');
$c->resume_coord;
note('resumed the coordinator');
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM mq_coord.broker WHERE mq_coord.broker_alive(broker_id, 3000)")
  or diag('the brokers did not come back after the pause');
$c->wait_acks($p, count => 5, since => time) or diag('no write acknowledged after the pause');

my $lines = $c->stop_producer($p);
my $final = $c->leader('t', 0);
$c->check_log('t', 0, $lines, $final, grep { $_ != $final } 1 .. 3);
$c->teardown;
done_testing();
