# The produce contract (src/sql/31_produce_acks.sql) in a real cluster,
# through mq-kafka: three nodes, RF 3, min.insync.replicas 2, one mq-kafka
# per broker.  Raw Produce v3 requests (test/kafka/produce_acks.pl) to the
# leader's mq-kafka: acks=-1 with the full ISR is acknowledged; both
# followers' nodes killed (-9), and once the leader's ISR is the leader
# alone, acks=-1 is answered NOT_ENOUGH_REPLICAS (19) and writes nothing
# (the leader's log end unchanged: a client's retry cannot write it
# twice), and so is a transactional batch (mq.produce_check, before it
# is staged), while acks=1 is written.  Then with the partition left
# without a leader, OffsetFetch answers a retriable error of the group's.
# On one node with the ISR set by hand,
# every client path: test/kafka/produce_acks.sh, test/cli/produce_contract.sh.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $c = MqCluster->new(nodes => 3);
# the brokers, each with its mq-kafka (starting them twice would leave the
# first ones running)
$c->start_kafka_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my @followers = grep { $_ != $leader } 1 .. 3;
my $port = $c->{kafka_port}[$leader];

# one Produce of acks $acks: "error_code base_offset"; sent again, as a
# client would, while the answer is NOT_LEADER_OR_FOLLOWER (6: nothing
# written), which a broker re-electing its node's leadership gives
sub produce
{
	my ($acks, $value) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my $out = `perl $root/test/kafka/produce_acks.pl $port t $acks $value 2>&1`;
		chomp $out;
		return $out if $out ne '6 -1' || time > $deadline;
		usleep(100_000);	# a retry pause: the loop waits on the answer
	}
}
sub log_end
{
	return $c->node($leader)->safe_psql('postgres',
		"SELECT log_end_offset FROM mq.partitions WHERE topic = 't'");
}

is(produce(-1, 'full'), '0 0', 'acks=-1 with the full ISR is acknowledged');
# an offset committed while the ISR is full, on every replica (below)
$c->node($leader)->safe_psql('postgres', "SELECT mq.commit_offset('g132all', 't', 0, 1)");
$c->node($_)->poll_query_until('postgres', "SELECT mq.committed_offset('g132all', 't', 0) = 1")
  or diag("node $_ did not get the committed offset") for @followers;

$c->kill9_node($_) for @followers;
$c->node($leader)->poll_query_until('postgres',
	"SELECT cardinality(isr) = 1 FROM mq.replica_status WHERE topic = 't' AND partition = 0")
  or diag('the leader did not shrink its ISR');
my $end = log_end();
is(produce(-1, 'short'), '19 -1', 'the ISR is the leader alone: acks=-1 gets NOT_ENOUGH_REPLICAS');
is(log_end(), $end, 'and nothing was written (the log end is unchanged)');
my (undef, undef, $check_err) = $c->node($leader)->psql('postgres', "SELECT mq.produce_check('t', 0)");
like($check_err, qr/not enough in-sync replicas/,
	'mq.produce_check, which mq-kafka asks before it stages a transactional batch, refuses it too');
# an offset commit is refused too (COORDINATOR_NOT_AVAILABLE), and is not
# left committed on the leader: OffsetFetch does not show it
my $commit = `/usr/bin/python3 - 127.0.0.1:$port 2>&1 <<'PY'
import sys
from confluent_kafka import Consumer, KafkaException, TopicPartition
c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'g132', 'enable.auto.commit': False})
try:
    c.commit(offsets=[TopicPartition('t', 0, 1)], asynchronous=False)
    print('committed', end=' ')
except KafkaException as e:
    print(e.args[0].name(), end=' ')
print(c.committed([TopicPartition('t', 0)], timeout=10)[0].offset)
c.close()
PY
`;
chomp $commit;
like($commit, qr/^COORDINATOR_NOT_AVAILABLE -1001$/,
	"an offset commit is refused (COORDINATOR_NOT_AVAILABLE) and OffsetFetch shows none: nothing was left committed ($commit)");
is(produce(1, 'one'), "0 $end", 'acks=1 is written');
is(log_end(), $end + 1, 'at the log end');

# The leader's node killed too, and the followers' back, out of the ISR:
# the partition has no leader to read its committed offsets on.  Kafka's
# offsets never wait on a partition's leader, and a partition's
# NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE is fatal to Java's
# consumer (librdkafka hands it to the application): OffsetFetch v2+
# answers the group COORDINATOR_LOAD_IN_PROGRESS (14), which clients ask
# again on (the partition keeps its own error, for a client that reads
# no further).  "group_error partition_error" from a follower's mq-kafka.
sub offset_fetch_v2
{
	my ($port, $group, $topics) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
		Proto => 'tcp', Timeout => 5) or return 'unreachable';
	print $sock pack('l>/a*', pack('s> s> l> s>/a* s>/a*', 9, 2, 1, 'tap', $group) . $topics);
	my ($len, $resp) = ('', '');
	return 'closed' unless read($sock, $len, 4) == 4;
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	return $resp;
}
# topic t partition 0: "group_error partition_error"
sub fetch_t0
{
	my $resp = offset_fetch_v2($_[0], 'g132', pack('l> s>/a* l> l>', 1, 't', 1, 0));
	return $resp if length $resp < 20;
	# correlation id, 1 topic "t", 1 partition: id, offset, metadata, error; the group's error
	my (undef, undef, undef, undef, undef, undef, $meta) = unpack('l> l> s>/a l> l> q> s>', $resp);
	my ($perr, $gerr) = unpack('s> s>', substr($resp, 4 + 4 + 3 + 4 + 4 + 8 + 2 + ($meta > 0 ? $meta : 0)));
	return "$gerr $perr";
}
# all of group g132all's offsets (topics null): "group_error topics"
sub fetch_all
{
	my $resp = offset_fetch_v2($_[0], 'g132all', pack('l>', -1));
	return $resp if length $resp < 10;
	my (undef, $ntopics) = unpack('l> l>', $resp);
	return unpack('s>', substr($resp, -2)) . " $ntopics";
}
$c->kill9_node($leader);
$c->node($_)->start for @followers;
my $fport = $c->{kafka_port}[ $followers[0] ];
my $fetched = '';
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	$fetched = fetch_t0($fport);
	last if $fetched =~ /^(\d+) (\d+)$/ && ($1 != 0 || $2 != 0);
	usleep(200_000);
}
like($fetched, qr/^14 /,
	"the partition without a leader: OffsetFetch answers the group COORDINATOR_LOAD_IN_PROGRESS (group and partition errors: $fetched)");
# the same once the follower's daemon no longer counts the leader's
# listener live (its daemon gave the listener up with its database; the
# Metadata it answers lists live brokers only): no node was asked for the
# partition's offsets then, which had left them out without an error
my $brokers = '';
$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	$brokers = `/usr/bin/python3 - 127.0.0.1:$fport 2>&1 <<'PY'
import sys
from confluent_kafka.admin import AdminClient
print(' '.join(str(b) for b in sorted(AdminClient({'bootstrap.servers': sys.argv[1]}).list_topics(timeout=10).brokers)))
PY
`;
	chomp $brokers;
	last if $brokers =~ /^[\d ]+$/ && $brokers !~ /\b$leader\b/;
	usleep(200_000);
}
unlike($brokers, qr/\b$leader\b/, "the follower's daemon no longer lists broker $leader ($brokers)");
is(fetch_all($fport), '14 0',
	'and so does OffsetFetch of all of a group\'s offsets, which had left out the partition\'s');

$c->teardown;
done_testing();
