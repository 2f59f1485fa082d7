# Idempotent producers through leader faults: (a) kill -9 of the leader's
# node, (b) kill -9 of the leader's broker with its node up, (c) the
# leader's node and broker paused (SIGSTOP) past an election, then resumed.
# (A leader cut from the coordinator is 116_idempotent_coordinator_cut.)
# Each scenario has its own topic (RF 3, min ISR 2) written by two
# idempotent acks=all producers in batches of 50 while followers fetch at
# most 3 records at a time (so at most one batch a fetch) when the leader
# dies; a consumer reads through the leader.  Every
# producer retries a batch with its producer id, epoch and sequence until
# acknowledged, on whoever the coordinator names leader, exactly as a
# correct client retries after an error or a lost connection.
#
# The promise (docs/replication.md, "acks"): retrying with the same
# sequence after any failure never writes twice.  So every acknowledged
# batch must be in the log exactly once, at the offset it was
# acknowledged with, even when the new leader was elected holding a batch
# whose acknowledgement the producer never got and retries (check_log).
#
# A follower fetches whole producer batches (docs/replication.md,
# "replica.fetch.max.records"), so a new leader holds each batch whole or
# not at all: a retry of one it holds gets the original offsets, one it
# lacks is written once.  (The followers are no longer held inside a
# batch at the fault: they never are, and trying took up to two minutes
# a scenario.)
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;

my $c = MqCluster->new(nodes => 3, broker_conf => "replica.fetch.max.records = 3\n");
$c->start_brokers;

# One scenario on its own topic: $fault->($leader) breaks the leader,
# $recover->($leader) brings it back.
sub scenario
{
	my ($topic, $what, $fault, $recover) = @_;
	$c->create_topic($topic, 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
	my $old = $c->leader($topic, 0);
	# an attempt stuck on a paused leader gives up after 3 s and asks the
	# coordinator again
	my @p = map { $c->start_producer($topic, 0, tag => $_, batch => 50, attempt_timeout => 3) } 'v', 'w';
	my $r = $c->start_consumer($topic, 0);
	$c->wait_acks($_, count => 3) or diag("$topic: producer $_->{tag} made no progress") for @p;
	$c->wait_consumed($r) or diag("$topic: the consumer read nothing");

	my $t_fault = time;
	$fault->($old);
	note("$topic: $what of broker $old (the leader) at $t_fault");
	ok($c->coord->poll_query_until('postgres',
			"SELECT leader <> $old AND NOT isr @> ARRAY[$old] FROM mq_coord.partition "
			  . "WHERE topic = '$topic' AND partition = 0"),
		"$topic: another broker was elected after the $what; the old leader left the ISR");
	my $t_elected = time;
	my $new = $c->leader($topic, 0);
	# both producers retried their batches on the new leader and go on
	$c->wait_acks($_, since => $t_elected, node => $new, count => 2)
	  or diag("$topic: producer $_->{tag}: nothing acknowledged by the new leader $new") for @p;

	$recover->($old);
	ok($c->node($old)->poll_query_until('postgres', "SELECT role = 'follower' AND leader_id = $new "
			  . "FROM mq.replica_status WHERE topic = '$topic' AND partition = 0"),
		"$topic: the old leader's node follows broker $new");
	$c->wait_acks($_, since => time) or diag("$topic: producer $_->{tag}: nothing acknowledged after the recovery")
	  for @p;
	my @lines = map { @{ $c->stop_producer($_) } } @p;
	$c->stop_consumer($r);
	# (after the producers: fetching at most one batch at a time, a follower
	# a batch behind cannot overtake the in-sync one while acks=all producers
	# keep the partition busy)
	ok($c->coord->poll_query_until('postgres',
			"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = '$topic' AND partition = 0"),
		"$topic: the old leader rejoined the ISR");
	for my $p (@p)
	{
		my @after = grep { $_->{tag} eq $p->{tag} && $_->{at} > $t_elected } MqCluster::acks_since(\@lines, $t_fault);
		ok(@after > 0, "$topic: producer $p->{tag}: writes continued after the election (" . scalar(@after)
			  . ' batches)');
	}
	note("$topic: " . scalar(grep { $_->{kind} eq 'err' } @lines) . ' failed attempts retried');
	$c->check_log($topic, 0, \@lines, $new, grep { $_ != $new } 1 .. 3);
}

# (a) the leader's node dies with everything in flight on it
scenario('a', 'kill -9 of the node',
	sub { $c->kill9_node($_[0]); },
	sub { $c->node($_[0])->start; });

# (b) the leader's broker dies; its node refuses as leader at once (MQ020)
scenario('b', 'kill -9 of the broker',
	sub { $c->signal_broker($_[0], 'KILL'); },
	sub { $c->start_broker($_[0]); });

# (c) the leader stops answering, keeps its coordinator session until it
# is fenced, and wakes up in an epoch that is over
scenario('c', 'SIGSTOP of the node and the broker',
	sub { $c->pause_node($_[0]); $c->signal_broker($_[0], 'STOP'); },
	sub { $c->resume_node($_[0]); $c->signal_broker($_[0], 'CONT'); });

$c->teardown;
done_testing();
