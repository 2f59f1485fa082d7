# Replication: a new topic's partitions are first elected on their
# preferred replicas even when one of those brokers is slow to get to
# them (docs/replication.md, "Elections").  While the preferred replica is
# live and in the ISR the other brokers leave a leaderless partition to it
# for session.timeout.ms; with three ticks only (0.7 s), a busy broker lost
# its partitions to another broker and took them back
# auto.leader.rebalance.delay.ms later, a NOT_LEADER for every client
# writing to them meanwhile (test 140 saw kafka-python, at its default
# retries=0, fail 39 of 600 sends that way).
#
# The slow broker is made deterministic: it is paused (SIGSTOP) while the
# topic is created, for 2 s (well past the three ticks, and within the
# 10 s session timeout these brokers run with, so that it stays live).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, broker_conf => "[broker]\nsession.timeout.ms = 10000\n");
$c->start_brokers;

my $slow = 3;
$c->signal_broker($slow, 'STOP');
my $t0 = time;
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.create_topic('u', 3, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')");
my %pref = map {
	my ($p, $r) = split /\|/;
	($p => $r)
} split /\n/, $c->coord->safe_psql('postgres',
	"SELECT partition, replicas[1] FROM mq_coord.partition WHERE topic = 'u' ORDER BY partition");
my ($mine) = grep { $pref{$_} == $slow } sort keys %pref;
ok(defined $mine, "broker $slow is the preferred replica of a partition of u");
# the others elect their own partitions meanwhile
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM mq_coord.partition WHERE topic = 'u' AND leader IS NOT NULL "
		  . "AND replicas[1] <> $slow"),
	'the partitions preferred by the running brokers are led');
# the pause itself: 2 s from the topic's creation
usleep(1_000_000 * ($t0 + 2 - time)) if time < $t0 + 2;
is($c->leader('u', $mine), -1, "partition $mine is still without a leader after 2 s");
ok(time - $t0 < 8, 'the pause stayed well within the session timeout ('
	  . sprintf('%.1f', time - $t0) . ' s)');
$c->signal_broker($slow, 'CONT');

ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $slow FROM mq_coord.partition WHERE topic = 'u' AND partition = $mine"),
	"partition $mine is led by its preferred replica $slow once it runs again");
is($c->coord->safe_psql('postgres',
		"SELECT string_agg(broker_id::text, ',' ORDER BY event_id) FROM mq_coord.event "
		  . "WHERE kind = 'leader_elected' AND topic = 'u' AND partition = $mine"),
	$slow, "one election of partition $mine, by broker $slow: nothing to hand over later");
$c->teardown;
done_testing();
