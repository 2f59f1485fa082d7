# Replication: a follower is paused (SIGSTOP) for longer than
# replica.lag.time.max.ms while an idempotent producer writes with
# acks=all (RF 3, min ISR 2) and a consumer reads through the leader.
# First a follower's whole node (postmaster and backends), then the other
# follower's broker.  Each time the leader shrinks the ISR (on the
# coordinator first, then on its node), writes continue with the two
# remaining replicas, and after SIGCONT the follower catches up and the
# ISR expands again.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $lag_ms = 2000;
my $c = MqCluster->new(nodes => 3, lag_time_max_ms => $lag_ms);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my ($f1, $f2) = grep { $_ != $leader } 1 .. 3;
my $ln = $c->node($leader);

my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

# Pause, wait for the shrink, keep the follower paused a while longer,
# resume, wait for the expansion.  Returns the times of those steps.
sub pause_and_resume
{
	my ($who, $pause, $resume) = @_;
	my %t = (pause => time);
	$pause->();
	my $shrunk = $c->coord->poll_query_until('postgres',
		"SELECT NOT isr @> ARRAY[$who] FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
	$t{shrunk} = time;
	ok($shrunk, "replica $who left the ISR");
	ok($ln->poll_query_until('postgres',
			"SELECT NOT isr @> ARRAY[$who] FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
		'the leader\'s node applied the shrink');
	# coordinator first: its event is older than the node's change
	is($c->coord->safe_psql('postgres',
			"SELECT at < '" . $ln->safe_psql('postgres',
				"SELECT r.updated_at FROM mq.replica_partition r JOIN mq.topic t USING (topic_id) "
				  . "WHERE t.topic_name = 't' AND r.partition = 0")
			  . "'::timestamptz FROM mq_coord.event WHERE kind = 'isr_shrink' "
			  . "AND detail->'from' @> '[$who]' AND NOT detail->'to' @> '[$who]' "
			  . "ORDER BY event_id DESC LIMIT 1"),
		't', 'the shrink was written to the coordinator before the node');
	# writes go on with two replicas while this one is paused
	$c->wait_acks($p, count => 2, since => $t{shrunk})
	  or diag("no write acknowledged while replica $who was out of the ISR");
	$t{resume} = time;
	$resume->();
	ok($c->coord->poll_query_until('postgres',
			"SELECT isr @> ARRAY[$who] FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
		"replica $who rejoined the ISR after catching up");
	$t{expanded} = time;
	return \%t;
}

my $t1 = pause_and_resume($f1, sub { $c->pause_node($f1) }, sub { $c->resume_node($f1) });
note("node$f1 paused: " . join(', ', map { sprintf('%s %.2f', $_, $t1->{$_} - $t1->{pause}) } sort keys %$t1));
my $t2 = pause_and_resume($f2, sub { $c->signal_broker($f2, 'STOP') },
	sub { $c->signal_broker($f2, 'CONT') });
note("broker$f2 paused: " . join(', ', map { sprintf('%s %.2f', $_, $t2->{$_} - $t2->{pause}) } sort keys %$t2));
is($c->isr('t', 0), '1,2,3', 'all three replicas in sync at the end');
is($c->leader('t', 0), $leader, 'the leader never changed');
$c->wait_acks($p, since => time) or diag('no write acknowledged at the end');
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

for ([ "node$f1", $t1 ], [ "broker$f2", $t2 ])
{
	my ($what, $t) = @$_;
	my @during = grep { $_->{kind} eq 'ack' && $_->{at} > $t->{shrunk} && $_->{at} < $t->{resume} } @$lines;
	ok(@during > 0, "writes acknowledged while $what was paused and out of the ISR (" . scalar(@during) . ')');
}

$c->check_log('t', 0, $lines, $leader, $f1, $f2);
$c->teardown;
done_testing();
