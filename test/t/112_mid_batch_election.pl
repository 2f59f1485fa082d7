# Replication: a producer batch larger than a follower's fetch, and that
# follower elected while the batch is being copied (issue 12).  One
# idempotent acks=all batch of 25,000 records; the followers fetch at most
# 100 records at a time.  The second follower is paused so that it neither
# copies the batch nor runs for leader; as soon as the first one holds any
# of the batch, the leader's node is killed and the first follower is
# elected.  The producer retries the batch with the same sequence on the
# new leader: it must be acknowledged at its original offset and be in the
# log once.  On a follower that could hold part of a batch, the retry was
# taken for a new batch and most of the records were written twice.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $batch = 25_000;
my $c = MqCluster->new(nodes => 3, lag_time_max_ms => 60_000,
	broker_conf => "replica.fetch.max.records = 100\n[broker]\nsession.timeout.ms = 20000\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);
my ($f1, $f2) = grep { $_ != $old } 1 .. 3;

sub log_end
{
	my ($i) = @_;
	my ($ok, $out) = MqCluster::psql_cmd($c->node($i),
		"SELECT log_end_offset FROM mq.replica_status WHERE topic = 't' AND partition = 0", 5);
	chomp $out;
	return $ok && $out =~ /^\d+$/ ? $out : -1;
}

# both followers stop fetching; the leader takes the batch
$c->signal_broker($f1, 'STOP');
$c->signal_broker($f2, 'STOP');
my $p = $c->start_producer('t', 0, batch => $batch, attempt_timeout => 60);
$c->node($old)->poll_query_until('postgres',
	"SELECT log_end_offset = $batch FROM mq.replica_status WHERE topic = 't' AND partition = 0")
  or diag('the leader did not take the batch');

# the first follower copies; kill the leader as soon as it holds any of it
$c->signal_broker($f1, 'CONT');
my $held = 0;
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	$held = log_end($f1);
	last if $held > 0;
	usleep(5_000);
}
$c->kill9_node($old);
note("killed node$old (the leader) when node$f1 held $held of the $batch records");
ok($held == $batch, "the follower held the whole batch or none of it ($held of $batch)");

$c->coord->poll_query_until('postgres',
	"SELECT leader = $f1 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag("node$f1 was not elected");
is($c->leader('t', 0), $f1, "the follower that holds the batch (node$f1) was elected");
$c->signal_broker($f2, 'CONT');

$c->wait_acks($p, count => 1) or diag('the batch was never acknowledged');
my $lines = $c->stop_producer($p);
my ($first) = grep { $_->{kind} eq 'ack' } @$lines;
is($first->{seq} . ' ' . $first->{base} . ' ' . $first->{node}, "0 0 $f1",
	'the retry was acknowledged by the new leader at the original offset 0');
is($c->node($f1)->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE value = 'v0') || ' ' || count(*) FILTER (WHERE value = 'v24999') "
		  . "FROM mq.fetch('t', 0, 0, 1000000)"),
	'1 1', 'the first and the last record of the batch are in the log once');

$c->check_log('t', 0, $lines, $f1, $f2);
$c->teardown;
done_testing();
