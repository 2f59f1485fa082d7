# Availability figures per fault kind (test/bench/replication.sh, phase A;
# docs/benchmarks.md): not a test, nothing here passes or fails on timing.
#
# Three data nodes and three brokers (default settings, as MqCluster
# starts them) with an idempotent acks=all producer (MqCluster's: psql per
# batch of 5 records, to whoever the coordinator names leader) writing one
# partition, replication.factor 3, min.insync.replicas 2.  Each fault is
# injected ROUNDS times (MQ_BENCH_ROUNDS, default 1), with the cluster back
# to a full ISR in between; for each it records
#   failover  the time from the fault to the first write acknowledged by a
#             new leader (for the coordinator's primary: to the promoted
#             standby taking writes; the leader does not change)
#   gap       the longest time between two acknowledgements from one
#             second before the fault to five acknowledgements after the
#             failover
#   named     the time from the fault until the coordinator names another
#             leader (the cluster's part of the failover; "-" when the
#             leader does not change)
# The producer gives an attempt up after MQ_BENCH_ATTEMPT seconds (default
# 2, a client's request timeout) and asks the coordinator again: a client
# waiting on a paused leader adds its own timeout to every figure (with
# the helpers' default of 10 s the pause measured 10 s).
# Faults: the leader's node killed (-9); the leader's broker killed (-9);
# the leader's node and broker paused (SIGSTOP) until another is elected;
# the coordinator's primary killed (-9, pg_autoctl and PostgreSQL, with the
# highly available coordinator of MqHaCoord.pm); the leader's broker cut
# from the coordinator (MqProxy.pm: silence, no reset) until another is
# elected.  The first four run on one cluster with the highly available
# coordinator, the cut on a second one whose brokers reach a plain
# coordinator through forwarders.
#
# Pairs of overlapping faults (issue 25), on a third cluster whose brokers
# reach the highly available coordinator through forwarders:
#   the coordinator's primary killed (-9), and while the standby is being
#     promoted the leader's broker cut from the coordinator; the last fault
#     to heal is the coordinator's (the standby takes writes), the cut
#     lasts until another leader is elected;
#   a follower's broker paused (SIGSTOP) and then the leader's node killed
#     (-9); both heal at once (the broker resumed, the node restarted)
#     once the coordinator named another leader.
# For a pair, a fifth figure: "after heal", the longest time without an
# acknowledgement from the last fault's heal (the first acknowledgement
# after it included) to five acknowledgements later; the goal is at most
# 2 x session.timeout.ms (6 s with the brokers' default of 3 s).
#
# MQ_BENCH_PART=cut runs the cut alone, MQ_BENCH_PART=pairs the pairs,
# anything else the other four (one cluster per run: the test helpers name
# their nodes node1, node2, ...).  MQ_BENCH_LOAD=N (the loaded run) keeps N
# more producers writing batches of 100 records (acks=all, psql per batch,
# as the measured one) to another topic of replication.factor 3 throughout,
# so that both cores are busy; the faults' names then say "(loaded)" and
# the load average is noted.
# Results go to MQ_BENCH_OUT (lines "fault<TAB>failover ms<TAB>gap ms<TAB>named
# ms<TAB>after heal ms").
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use List::Util qw(max);
use MqCluster;

my $rounds = $ENV{MQ_BENCH_ROUNDS} // 1;
my $attempt = $ENV{MQ_BENCH_ATTEMPT} // 2;
my $named;    # set by new_leader_ack for the round being measured
my $healed;   # set by a pair's recovery: when its last fault healed
my $load = $ENV{MQ_BENCH_LOAD} // 0;
my $suffix = $load ? ' (loaded)' : '';
my $out = $ENV{MQ_BENCH_OUT} or die 'MQ_BENCH_OUT not set';
open my $res, '>', $out or die "$out: $!";
$res->autoflush(1);

sub full_isr
{
	my ($c) = @_;
	$c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 AND leader IS NOT NULL FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0")
	  or die 'the ISR did not recover';
}

# One fault: $inject->($leader) returns nothing; $recovered->($leader, $t0)
# waits and returns the failover time; $repair->($leader) undoes the fault.
sub measure
{
	my ($c, $p, $name, $inject, $recovered, $repair) = @_;
	for my $round (1 .. $rounds)
	{
		full_isr($c);
		$c->wait_acks($p, count => 5, since => time) or die 'no progress before the fault';
		my $leader = $c->leader('t', 0);
		my $t0 = time;
		undef $named;
		undef $healed;
		$inject->($leader);
		my $failover = $recovered->($leader, $t0);
		$c->wait_acks($p, count => 5, since => time) or die "no progress after $name";
		my @at = sort { $a <=> $b } map { $_->{at} }
		  grep { $_->{kind} eq 'ack' && $_->{at} >= $t0 - 1 }
		  @{ MqCluster::producer_lines($p->{file}) };
		my $gap = max(map { $at[$_] - $at[ $_ - 1 ] } 1 .. $#at) // 0;
		my $nm = defined $named ? sprintf('%d', $named * 1000) : '-';
		my $ah = defined $healed ? sprintf('%d', after_heal($c, $p, $healed) * 1000) : '-';
		printf $res "%s\t%d\t%d\t%s\t%s\n", "$name$suffix", $failover * 1000, $gap * 1000, $nm, $ah;
		note(sprintf('%s%s (round %d): failover %.0f ms, longest gap %.0f ms, new leader named after %s ms, '
			  . 'after heal %s ms; load average %s', $name, $suffix, $round, $failover * 1000, $gap * 1000,
			$nm, $ah, (split / /, slurp_file('/proc/loadavg'))[0]));
		$repair->($leader);
	}
}

# the time from $t0 to the first acknowledgement by a broker other than
# $old; $named: to the coordinator naming another leader
sub new_leader_ack
{
	my ($c, $p, $old, $t0) = @_;
	$c->coord->poll_query_until('postgres',
		"SELECT leader IS DISTINCT FROM $old AND leader IS NOT NULL FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0")
	  or die 'no new leader named';
	$named = time - $t0;
	$c->wait_acks($p, since => $t0, where => sub { $_->{node} != $old })
	  or die 'no acknowledgement from a new leader';
	my ($first) = sort { $a <=> $b } map { $_->{at} }
	  grep { $_->{kind} eq 'ack' && $_->{at} >= $t0 && $_->{node} != $old }
	  @{ MqCluster::producer_lines($p->{file}) };
	return $first - $t0;
}

# The longest time without an acknowledgement from $t (a heal) to five
# acknowledgements later, the wait for the first one included.
sub after_heal
{
	my ($c, $p, $t) = @_;
	$c->wait_acks($p, count => 5, since => $t) or die 'no acknowledgement after the heal';
	my @at = ($t, sort { $a <=> $b } map { $_->{at} }
		  grep { $_->{kind} eq 'ack' && $_->{at} >= $t } @{ MqCluster::producer_lines($p->{file}) });
	return max(map { $at[$_] - $at[ $_ - 1 ] } 1 .. 5);
}

# A cluster of three nodes and brokers (%opt: MqCluster's), the measured
# partition t/0 with its producer, and with MQ_BENCH_LOAD the load.
sub cluster
{
	my (%opt) = @_;
	my $c = MqCluster->new(nodes => 3, %opt);
	$c->start_brokers;
	$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
	if ($load)
	{
		$c->create_topic('load', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
		$c->start_producer('load', 0, tag => 'l' x $_, batch => 100, attempt_timeout => $attempt)
		  for 1 .. $load;
	}
	return ($c, $c->start_producer('t', 0, attempt_timeout => $attempt));
}

sub finish
{
	my ($c, $p) = @_;
	$c->stop_producer($p);
	$c->teardown;
	close $res;
	ok(1, 'figures written');
	done_testing();
	exit 0;
}

if (($ENV{MQ_BENCH_PART} // '') eq 'cut')
{
	my ($d, $q) = cluster(coord_proxy => 1);
	measure($d, $q, 'leader cut from the coordinator', sub { $d->cut_coordinator($_[0]) },
		sub { new_leader_ack($d, $q, $_[0], $_[1]) }, sub { $d->heal_coordinator($_[0]) });
	finish($d, $q);
}

if (($ENV{MQ_BENCH_PART} // '') eq 'pairs')
{
	my ($d, $q) = cluster(coord_ha => 1, coord_proxy => 1);
	my $dead;
	measure($d, $q, 'coordinator primary kill -9 + leader cut from the coordinator',
		sub {
			my ($l) = @_;
			$dead = $d->coord->primary;
			# the kill returns once pg_autoctl and PostgreSQL are gone; the
			# cut lands while the standby is being promoted
			$d->coord->kill9_node($dead);
			$d->cut_coordinator($l);
		},
		sub {
			my ($l, $t0) = @_;
			$d->coord->wait_writable or die 'no coordinator failover';
			$healed = time;
			return new_leader_ack($d, $q, $l, $t0);
		},
		sub {
			$d->heal_coordinator($_[0]);
			$d->coord->restart_node($dead);
			$d->coord->wait_ready or die 'no rejoin';
		});
	my $f;
	measure($d, $q, 'follower broker paused + leader node kill -9',
		sub {
			my ($l) = @_;
			($f) = grep { $_ != $l } 1 .. 3;
			$d->signal_broker($f, 'STOP');
			$d->kill9_node($l);
		},
		sub {
			my ($l, $t0) = @_;
			$d->coord->poll_query_until('postgres',
				"SELECT leader NOT IN ($l, $f) FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
			  or die 'no new leader named';
			$named = time - $t0;
			$d->signal_broker($f, 'CONT');
			$d->node($l)->start;
			$healed = time;
			return new_leader_ack($d, $q, $l, $t0);
		},
		sub { });
	finish($d, $q);
}

my ($c, $p) = cluster(coord_ha => 1);
my $by_new = sub { new_leader_ack($c, $p, $_[0], $_[1]) };

measure($c, $p, 'leader node kill -9', sub { $c->kill9_node($_[0]) }, $by_new,
	sub { $c->node($_[0])->start });
measure($c, $p, 'leader broker kill -9', sub { $c->signal_broker($_[0], 'KILL') }, $by_new,
	sub { $c->start_broker($_[0]) });
measure($c, $p, 'leader node and broker paused',
	sub { $c->pause_node($_[0]); $c->signal_broker($_[0], 'STOP') }, $by_new,
	sub { $c->signal_broker($_[0], 'CONT'); $c->resume_node($_[0]) });
my $dead;
measure($c, $p, 'coordinator primary kill -9', sub { $dead = $c->coord->kill9_primary },
	sub { $c->coord->wait_writable or die 'no failover'; time - $_[1] },
	sub { $c->coord->restart_node($dead); $c->coord->wait_ready or die 'no rejoin' });
finish($c, $p);
