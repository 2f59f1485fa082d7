# The produce contract (src/sql/31_produce_acks.sql) in a real cluster,
# through mq-kafka: three nodes, RF 3, min.insync.replicas 2, one mq-kafka
# per broker.  Raw Produce v3 requests (test/kafka/produce_acks.pl) to the
# leader's mq-kafka: acks=-1 with the full ISR is acknowledged; both
# followers' nodes killed (-9), and once the leader's ISR is the leader
# alone, acks=-1 is answered NOT_ENOUGH_REPLICAS (19) and writes nothing
# (the leader's log end unchanged: a client's retry cannot write it
# twice), and so is a transactional batch (mq.produce_check, before it
# is staged), while acks=1 is written.  On one node with the ISR set by hand,
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

$c->teardown;
done_testing();
