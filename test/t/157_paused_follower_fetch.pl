# Replication: a follower that stops reading its fetch's answer holds back
# nobody but itself (issue 25, availability).  Its broker is paused while
# its long poll waits on the leader; a batch larger than the socket's
# buffer then wakes that poll, and the leader's backend blocks sending
# the answer.  The other follower must keep replicating, and once the
# paused one leaves the ISR an acks=all write must be acknowledged, as in
# Kafka.  The fetch used to send its answer before its commit, holding
# the partition's progress lock, which every other follower's fetch of
# the partition takes: the other follower stopped at that batch, and
# acks=all was refused once it left the ISR too (test 112 met this by
# chance under CI load).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $batch = 25_000;
my $c = MqCluster->new(nodes => 3, lag_time_max_ms => 10_000,
	broker_conf => "replica.fetch.wait.max.ms = 4000\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $l = $c->leader('t', 0);
my ($f1, $f2) = grep { $_ != $l } 1 .. 3;
my $leader = $c->node($l);

sub produce
{
	my ($first, $n, $acks) = @_;
	my $last = $first + $n - 1;
	return MqCluster::psql_cmd($leader,
		"DO \$\$ DECLARE v bytea[] := (SELECT array_agg(('v' || g)::bytea) FROM generate_series($first, $last) g); "
		  . "b bigint; h bigint; "
		  . "BEGIN CALL mq.produce('t', NULL, v, 0, '$acks', NULL, NULL, NULL, 30000, b, h); END \$\$", 60);
}

# backends of the leader's node blocked sending a fetch's answer
sub blocked_senders
{
	return $leader->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'ClientWrite' "
		  . "AND query LIKE '%replica_fetch%'");
}

# pause the second follower while its long poll waits, then wake that poll
# with the batch: its answer fills the socket and the leader's backend
# blocks sending it (tried again if the poll had ended just before)
my $next = 0;
my $blocked = 0;
for my $try (1 .. 5)
{
	ok($c->wait_converged('t', 0, 1 .. 3), "try $try: the replicas agree before the pause");
	$c->signal_broker($f2, 'STOP');
	my ($ok, $out) = produce($next, $batch, '1');
	ok($ok, "try $try: a batch of $batch records written with acks=1") or BAIL_OUT($out);
	$next += $batch;
	my $deadline = time + 5;
	usleep(20_000) until ($blocked = blocked_senders()) > 0 || time > $deadline;
	last if $blocked;
	$c->signal_broker($f2, 'CONT');
}
ok($blocked > 0, "the leader's backend blocks sending the paused follower its answer");

# the other follower goes on: it takes the next record too
my ($ok, $out) = produce($next, 1, '1');
ok($ok, 'one more record written with acks=1') or diag($out);
$next += 1;
ok($c->node($f1)->poll_query_until('postgres',
		"SELECT log_end_offset >= $next FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	"node$f1 replicates while node$f2 holds its answer unread");

# acks=all: acknowledged once the paused follower leaves the ISR
($ok, $out) = produce($next, 1, 'all');
ok($ok, 'an acks=all write is acknowledged with the follower still paused') or diag($out);
$next += 1;
my $want = join(',', sort { $a <=> $b } $l, $f1);
ok($c->coord->poll_query_until('postgres',
		"SELECT array_to_string(ARRAY(SELECT unnest(isr) ORDER BY 1), ',') = '$want' "
		  . "FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"the ISR is node$l and node$f1");

# the paused follower resumes and catches up
$c->signal_broker($f2, 'CONT');
ok($c->wait_converged('t', 0, 1 .. 3), "node$f2 catches up after the pause");
is($c->node($f2)->safe_psql('postgres',
		"SELECT log_end_offset FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	$next, "node$f2 holds all $next records");

$c->teardown;
done_testing();
