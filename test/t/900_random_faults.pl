# Soak: randomized faults against a replicated cluster (not part of the
# test command; scripts/soak.sh runs it with MQ_SOAK_SECONDS and
# MQ_SOAK_SEED).  Two partitions led by different nodes, an idempotent
# acks=all producer on each and a consumer on each; for the given time,
# one random fault after another, each held for a random time and then
# healed: kill -9 of a leader's node or broker, SIGSTOP of a leader's node
# and broker past the session timeout, of a follower's node, or of the
# coordinator, kill -9 of the coordinator, a broker cut silently from the
# coordinator (MqCluster's coord_proxy).  Then the independent checker
# on both partitions: nothing acknowledged lost, duplicated or moved,
# replicas identical below the high watermark, nothing a consumer saw
# truncated or replaced.  The fault schedule is printed with its seed, so a
# failing run can be repeated.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

plan skip_all => 'a soak: set MQ_SOAK_SECONDS (scripts/soak.sh)' unless $ENV{MQ_SOAK_SECONDS};
my $seconds = $ENV{MQ_SOAK_SECONDS};
my $seed = $ENV{MQ_SOAK_SEED} // time;
srand($seed);
note("seed $seed, $seconds s");

my $c = MqCluster->new(nodes => 3, coord_proxy => 1);
$c->start_brokers;
$c->create_topic('t', 2, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my @p = map { $c->start_producer('t', $_) } 0, 1;
my @r = map { $c->start_consumer('t', $_) } 0, 1;
$c->wait_acks($_, count => 3) for @p;

sub hold { usleep(int((0.5 + rand(1.5 * $_[0])) * 1_000_000)); }

my @faults = (
	[ 'kill -9 of a leader node', sub {
		my $l = $c->leader('t', int(rand(2)));
		return unless $l > 0;
		$c->kill9_node($l);
		hold(4);
		$c->node($l)->start;
	} ],
	[ 'kill -9 of a leader broker', sub {
		my $l = $c->leader('t', int(rand(2)));
		return unless $l > 0;
		$c->signal_broker($l, 'KILL');
		hold(4);
		$c->start_broker($l);
	} ],
	[ 'pause of a leader node and broker', sub {
		my $l = $c->leader('t', int(rand(2)));
		return unless $l > 0;
		$c->pause_node($l);
		$c->signal_broker($l, 'STOP');
		hold(5);
		$c->resume_node($l);
		$c->signal_broker($l, 'CONT');
	} ],
	[ 'pause of a follower node', sub {
		my $part = int(rand(2));
		my $l = $c->leader('t', $part);
		my @f = grep { $_ != $l } 1 .. 3;
		my $f = $f[ int(rand(@f)) ];
		$c->pause_node($f);
		hold(4);
		$c->resume_node($f);
	} ],
	[ 'a broker cut from the coordinator', sub {
		my $b = 1 + int(rand(3));
		$c->cut_coordinator($b);
		hold(5);
		$c->heal_coordinator($b);
	} ],
	[ 'kill -9 of the coordinator', sub {
		$c->kill9_coord;
		hold(3);
		$c->coord->start;
	} ],
	[ 'pause of the coordinator', sub {
		$c->pause_coord;
		hold(5);
		$c->resume_coord;
	} ],
);

my $end = time + $seconds;
my $n = 0;
while (time < $end)
{
	my $f = $faults[ int(rand(@faults)) ];
	my $t = time;
	note(sprintf('%.1f s: %s', $t - ($end - $seconds), $f->[0]));
	$f->[1]->();
	$n++;
	# each partition makes progress again before the next fault
	for my $pp (@p)
	{
		$c->wait_acks($pp, since => time) or diag("no progress on partition $pp->{partition} after: $f->[0]");
	}
}
note("$n faults");
for my $i (0, 1)
{
	my $lines = $c->stop_producer($p[$i]);
	$c->stop_consumer($r[$i]);
	my $l = $c->leader('t', $i);
	$c->check_log('t', $i, $lines, $l, grep { $_ != $l } 1 .. 3);
}
$c->teardown;
done_testing();
