# Idempotent producers through leader faults: (a) kill -9 of the leader's
# node, (b) kill -9 of the leader's broker with its node up, (c) the
# leader's node and broker paused (SIGSTOP) past an election, then resumed.
# (A leader cut from the coordinator is 116_idempotent_coordinator_cut.)
# Each scenario has its own topic (RF 3, min ISR 2) written by two
# idempotent acks=all producers in batches of 50 while followers fetch at
# most 3 records at a time, so a follower usually holds part of a batch
# when the leader dies; a consumer reads through the leader.  Every
# producer retries a batch with its producer id, epoch and sequence until
# acknowledged, on whoever the coordinator names leader, exactly as a
# correct client retries after an error or a lost connection.
#
# The promise (docs/replication.md, "acks"): retrying with the same
# sequence after any failure never writes twice.  So every acknowledged
# batch must be in the log exactly once, at the offset it was
# acknowledged with, even when the new leader was elected holding only
# part of a batch the producer then retries (check_log).
#
# So that the fault surely lands while the followers hold part of a batch,
# the followers' brokers are held (SIGSTOP) at such a moment, the fault is
# injected, and they are let go at once: a few hundred milliseconds, far
# below session.timeout.ms.  In (a) and (c) the old leader cannot serve
# the rest of the batch afterwards, so the new leader is elected holding
# part of a batch that a producer then retries; in (b) the orphaned node
# may still serve it to the followers before the election.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;

my $c = MqCluster->new(nodes => 3, broker_conf => "replica.fetch.max.records = 3\n");
$c->start_brokers;

# Hold the followers' brokers (SIGSTOP) at a moment when each follower's
# log ends inside a batch, far enough from its end that the one fetch a
# broker may have in flight (at most 3 records) cannot complete it.
# Returns the held brokers (none after 20 tries: then the fault lands where
# it lands); the caller lets them go (SIGCONT).
sub hold_followers_mid_batch
{
	my ($topic, $leader, $batch) = @_;
	my @f = grep { $_ != $leader } 1 .. 3;
	my $q = "SELECT log_end_offset FROM mq.replica_status WHERE topic = '$topic' AND partition = 0";
	for my $try (1 .. 20)
	{
		$c->signal_broker($_, 'STOP') for @f;
		my @ends = map { $c->node($_)->safe_psql('postgres', $q) } @f;
		return @f unless grep { my $r = $_ % $batch; $r == 0 || $r > $batch - 4 } @ends;
		$c->signal_broker($_, 'CONT') for @f;
		# try again once the first follower has moved on
		$c->node($f[0])->poll_query_until('postgres', "SELECT log_end_offset <> $ends[0] "
			  . "FROM mq.replica_status WHERE topic = '$topic' AND partition = 0")
		  or last;
	}
	# followers that fetch whole producer batches never are
	note("$topic: the followers were not both inside a batch in 20 tries; injecting the fault anyway");
	return ();
}

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

	my @held = hold_followers_mid_batch($topic, $old, 50);
	note("$topic: followers held inside a batch: "
		  . join(', ', map { "node$_ at " . $c->node($_)->safe_psql('postgres',
				"SELECT log_end_offset FROM mq.replica_status WHERE topic = '$topic' AND partition = 0") } @held))
	  if @held;
	my $t_fault = time;
	$fault->($old);
	$c->signal_broker($_, 'CONT') for @held;
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
