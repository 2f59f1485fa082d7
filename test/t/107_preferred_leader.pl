# Replication: preferred leaders.  The first replica of a partition's
# placement leads it from the start; when its node dies another ISR member
# takes over, and once the preferred replica is back in the ISR for
# auto.leader.rebalance.delay.ms the leader hands leadership back (a new
# leader epoch), while an idempotent producer (acks=all, RF 3, min ISR 2)
# and a consumer keep going.  Two partitions with different preferred
# leaders: only the one whose preferred leader failed moves.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3,
	broker_conf => "auto.leader.rebalance.enable = true\nauto.leader.rebalance.delay.ms = 1000\n");
$c->start_brokers;
$c->create_topic('t', 2, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my @pref = map {
	$c->coord->safe_psql('postgres', "SELECT replicas[1] FROM mq_coord.partition WHERE topic = 't' AND partition = $_")
} 0, 1;
isnt($pref[0], $pref[1], "the partitions prefer different leaders ($pref[0], $pref[1])");
is($c->leader('t', 0), $pref[0], 'partition 0 starts on its preferred leader');
is($c->leader('t', 1), $pref[1], 'partition 1 starts on its preferred leader');

my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

my $victim = $pref[0];
$c->kill9_node($victim);
ok($c->coord->poll_query_until('postgres',
		"SELECT leader <> $victim FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"partition 0 failed over from broker $victim");
my $interim = $c->leader('t', 0);
is($c->leader('t', 1), $pref[1], 'partition 1 did not move');
# the interim leader takes writes before the preferred one returns
$c->wait_acks($p, count => 2, node => $interim) or diag("no write acknowledged by broker $interim");

my $t_back = time;
$c->node($victim)->start;
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $victim FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"leadership of partition 0 returned to its preferred leader $victim");
is($c->isr('t', 0), '1,2,3', 'with all replicas in sync');
like($c->broker_log($interim), qr/the preferred leader, broker $victim, has been in the ISR for 1000 ms; resigned epoch \d+/,
	"broker $interim handed it over after the rebalance delay");
is($c->coord->safe_psql('postgres',
		"SELECT string_agg(broker_id::text, ',' ORDER BY event_id) FROM mq_coord.event "
		  . "WHERE kind = 'leader_elected' AND topic = 't' AND partition = 0"),
	"$victim,$interim,$victim", 'elections of partition 0: preferred, interim, preferred again');
is($c->leader('t', 1), $pref[1], 'partition 1 still on its preferred leader');
$c->wait_acks($p, since => $t_back, node => $victim)
  or diag("no write acknowledged by the preferred leader $victim");
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

ok(scalar(grep { $_->{node} == $victim } MqCluster::acks_since($lines, $t_back)) > 0,
	'writes acknowledged by the preferred leader again');
$c->check_log('t', 0, $lines, $victim, grep { $_ != $victim } 1 .. 3);
$c->teardown;
done_testing();
