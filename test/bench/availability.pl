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
# MQ_BENCH_PART=cut runs the cut alone, anything else the other four (one
# cluster per run: the test helpers name their nodes node1, node2, ...).
# Results go to MQ_BENCH_OUT (lines "fault<TAB>failover ms<TAB>gap ms<TAB>named ms").
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
		$inject->($leader);
		my $failover = $recovered->($leader, $t0);
		$c->wait_acks($p, count => 5, since => time) or die "no progress after $name";
		my @at = sort { $a <=> $b } map { $_->{at} }
		  grep { $_->{kind} eq 'ack' && $_->{at} >= $t0 - 1 }
		  @{ MqCluster::producer_lines($p->{file}) };
		my $gap = max(map { $at[$_] - $at[ $_ - 1 ] } 1 .. $#at) // 0;
		my $nm = defined $named ? sprintf('%d', $named * 1000) : '-';
		printf $res "%s\t%d\t%d\t%s\n", $name, $failover * 1000, $gap * 1000, $nm;
		note(sprintf('%s (round %d): failover %.0f ms, longest gap %.0f ms, new leader named after %s ms',
			$name, $round, $failover * 1000, $gap * 1000, $nm));
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

if (($ENV{MQ_BENCH_PART} // '') eq 'cut')
{
	my $d = MqCluster->new(nodes => 3, coord_proxy => 1);
	$d->start_brokers;
	$d->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
	my $q = $d->start_producer('t', 0, attempt_timeout => $attempt);
	measure($d, $q, 'leader cut from the coordinator', sub { $d->cut_coordinator($_[0]) },
		sub { new_leader_ack($d, $q, $_[0], $_[1]) }, sub { $d->heal_coordinator($_[0]) });
	$d->stop_producer($q);
	$d->teardown;
	close $res;
	ok(1, 'figures written');
	done_testing();
	exit 0;
}

my $c = MqCluster->new(nodes => 3, coord_ha => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $p = $c->start_producer('t', 0, attempt_timeout => $attempt);
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
$c->stop_producer($p);
$c->teardown;

close $res;
ok(1, 'figures written');
done_testing();
