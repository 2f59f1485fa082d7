# Leader epochs through mq-kafka on the three-node cluster (KIP-101,
# KIP-320): records written under a first leader, its node killed (-9),
# more records under the new leader.  Then on the new leader's mq-kafka
# (raw frames, test/kafka/epoch_probe.pl): OffsetForLeaderEpoch of the
# old epoch ends where the new epoch starts in the new leader's epoch
# history (what a consumer compares its position with to detect a
# truncation), the new epoch ends at the log end; Fetch's batches carry
# the epoch each record was written under; a Fetch with the old leader's
# epoch is FENCED_LEADER_EPOCH and with a newer one UNKNOWN_LEADER_EPOCH;
# a follower's mq-kafka answers NOT_LEADER_OR_FOLLOWER.  On one node with
# a hand-written history: test/kafka/epochs.sh.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;
$c->create_topic('e', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('e', 0);

sub run_perl
{
	my $out = `perl @_ 2>&1`;
	chomp $out;
	return $out;
}

# one record with acks=-1 through node $node's mq-kafka; sent again, as a
# client would, while the answer is an error (a leadership being taken up)
sub produce
{
	my ($node, $value) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my $out = run_perl("$root/test/kafka/produce_acks.pl", $c->{kafka_port}[$node], 'e', -1, $value);
		return $out if $out =~ /^0 / || time > $deadline;
		usleep(100_000);	# a retry pause: the loop waits on the answer
	}
}
sub probe { my $node = shift; return run_perl("$root/test/kafka/epoch_probe.pl", $c->{kafka_port}[$node], @_); }
sub epoch_of
{
	return $c->node($_[0])->safe_psql('postgres',
		"SELECT leader_epoch FROM mq.partitions WHERE topic = 'e' AND partition = 0");
}

is(produce($old, "a$_"), '0 ' . ($_ - 1), "record a$_ written under the first leader") for 1 .. 3;
my $e1 = epoch_of($old);
is(probe($old, 'end', 'e', 0, $e1, $e1), "0 $e1 3", "the first leader's epoch $e1 ends at its log end");

$c->kill9_node($old);
note("killed node$old (the leader)");
$c->coord->poll_query_until('postgres',
	"SELECT leader IS NOT NULL AND leader <> $old FROM mq_coord.partition WHERE topic = 'e' AND partition = 0")
  or die 'no new leader';
my $new = $c->leader('e', 0);
$c->node($new)->poll_query_until('postgres',
	"SELECT role = 'leader' AND leader_epoch > $e1 FROM mq.partitions WHERE topic = 'e' AND partition = 0")
  or die "node$new did not take up the leadership";
my $e2 = epoch_of($new);
is(produce($new, "b$_"), '0 ' . ($_ + 2), "record b$_ written under the new leader (epoch $e2)") for 1 .. 2;

is($c->node($new)->safe_psql('postgres',
		"SELECT start_offset FROM mq.leader_epochs WHERE topic = 'e' AND partition = 0 AND leader_epoch = $e2"),
	'3', "the new leader's epoch $e2 starts at offset 3 in its history");
is(probe($new, 'end', 'e', 0, $e1, $e2), "0 $e1 3",
	"OffsetForLeaderEpoch on the new leader: epoch $e1 ends at 3, where epoch $e2 starts");
is(probe($new, 'end', 'e', 0, $e2, $e2), "0 $e2 5", "epoch $e2 ends at the log end");
is(probe($new, 'fetch', 'e', 0, $e2), "0 0\@$e1 3\@$e2", 'Fetch: each batch carries the epoch its records were written under');
is(probe($new, 'fetch', 'e', 0, $e1), '74', "Fetch with the old leader's epoch: FENCED_LEADER_EPOCH");
is(probe($new, 'fetch', 'e', 0, $e2 + 1), '75', 'Fetch with a newer epoch: UNKNOWN_LEADER_EPOCH');
is(probe($new, 'diverge', 'e', 0, 4, $e1), "0 - $e1\@3",
	"Fetch v12 from 4 with last fetched epoch $e1: the log diverged after where epoch $e1 ends, 3");
is(probe($new, 'diverge', 'e', 0, 3, $e1), "0 3,4 none", "from 3 with epoch $e1: the new leader's records, no divergence");
my ($follower) = grep { $_ != $old && $_ != $new } 1 .. 3;
$c->node($follower)->poll_query_until('postgres',
	"SELECT role = 'follower' AND leader_epoch = $e2 FROM mq.partitions WHERE topic = 'e' AND partition = 0")
  or diag("node$follower did not follow epoch $e2");
like(probe($follower, 'end', 'e', 0, $e2, $e2), qr/^6 /, "a follower's mq-kafka: NOT_LEADER_OR_FOLLOWER");

$c->teardown;
done_testing();
