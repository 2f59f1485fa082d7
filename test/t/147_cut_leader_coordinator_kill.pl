# Two overlapping faults (issue 25, item 3): the leader's broker is cut
# from the coordinator (MqCluster's coord_proxy: silence, no reset) and,
# while it is cut, the highly available coordinator's primary is killed -9
# (pg_autoctl and PostgreSQL, MqHaCoord.pm).  An idempotent acks=all
# producer writes one partition (RF 3, min ISR 2) throughout and a
# consumer reads through the leader.  What docs/replication.md promises:
#
#   - the standby is promoted; the two brokers that are not cut find it
#     through their multi-host conninfo, and one of them, seeing the cut
#     broker's session age past session.timeout.ms there, is elected in a
#     new leader epoch; it acknowledges the producer's writes and feeds the
#     consumer while the old leader is still cut;
#   - once healed, the cut broker reaches the new primary, finds another
#     leader in a newer epoch, steps down, and its node follows and
#     rejoins the ISR; the old primary rejoins as the standby;
#   - every leader a data node was is one the coordinator elected for that
#     epoch, no epoch was handed out twice, and the checker finds every
#     acknowledged record in the log once, at its offset.
#
# The recovery is asserted by waiting on conditions; how long it took (the
# fault to the first acknowledgement by the new leader, the longest gap
# between acknowledgements after the last fault healed) is printed, and
# measured against 2 x session.timeout.ms by test/bench/availability.pl,
# not asserted here.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use List::Util qw(max);
use MqCluster;

my $c = MqCluster->new(nodes => 3, coord_ha => 1, coord_proxy => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the ISR did not fill');
my $old = $c->leader('t', 0);
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
my $roles = MqHaCoord::start_role_sampler($c, 't', 0);

# an attempt stuck on the silent leader gives up after 3 s and asks the
# coordinator again
my $p = $c->start_producer('t', 0, attempt_timeout => 3);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. both faults: the leader cut, then the coordinator's primary lost
my $t0 = time;
$c->cut_coordinator($old);
my $dead = $c->coord->kill9_primary;
note("cut broker $old (the leader) from the coordinator and killed coordinator node $dead");
ok($c->coord->wait_writable, 'the standby was promoted and takes writes');
my $t_up = time;

# 2. another broker is elected on the new primary, while the leader is cut
ok($c->coord->poll_query_until('postgres',
		"SELECT leader <> $old AND leader_epoch > $epoch FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	'another broker was elected in a newer epoch on the promoted standby');
my $new = $c->leader('t', 0);
isnt($new, $old, "broker $new leads");
ok($c->wait_acks($p, count => 5, since => time, node => $new),
	'the new leader acknowledges writes while the old one is still cut');
ok($c->wait_consumed($r, count => 5, since => time), 'and the consumer reads from it');
my ($first) = sort { $a <=> $b } map { $_->{at} }
  grep { $_->{kind} eq 'ack' && $_->{at} > $t0 && $_->{node} == $new }
  @{ MqCluster::producer_lines($p->{file}) };

# 3. the cut heals and the old primary returns: everything converges
$c->heal_coordinator($old);
my $t_heal = time;
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 AND leader_epoch > $epoch FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	"the healed broker $old stepped down and its node rejoined the ISR");
$c->coord->restart_node($dead);
ok($c->coord->wait_ready, 'the old coordinator primary rejoined as the standby');
ok($c->wait_acks($p, count => 5, since => time), 'writes acknowledged after both faults healed');

my @at = sort { $a <=> $b } map { $_->{at} }
  grep { $_->{kind} eq 'ack' && $_->{at} >= $t_up } @{ MqCluster::producer_lines($p->{file}) };
my $gap = max(0, map { $at[$_] - $at[ $_ - 1 ] } 1 .. $#at);
diag(sprintf('faults -> standby writable %.1f s -> first acknowledgement by broker %d %.1f s; '
		  . 'longest gap between acknowledgements after the standby took writes %.1f s '
		  . '(session.timeout.ms 3 s); cut healed %.1f s after the faults',
		$t_up - $t0, $new, $first - $t0, $gap, $t_heal - $t0));

MqHaCoord::finish($c, $roles, 't', 0, $p, $r);
done_testing();
