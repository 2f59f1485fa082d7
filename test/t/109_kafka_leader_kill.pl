# mq-kafka in a replicated cluster: one mq-kafka per node (--node-id =
# broker id, --peer for the others), a librdkafka producer with acks=all
# (RF 3, min ISR 2) bootstrapped with all three, and the leader's node
# killed (-9) while records are in flight.  The producer is idempotent:
# its id comes from whichever daemon answered InitProducerId (a
# cluster-wide id, from that node's coordinator block), every leader takes
# it, and the new leader knows its batches from replication.  It must
# follow Metadata to the new leader and get every record acknowledged, and
# every acknowledged record must be on the new leader exactly once.
use strict;
use warnings;

use IO::Socket::INET;
use POSIX ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $kafka = "$root/broker/mq-kafka/mq-kafka";
my $dir = PostgreSQL::Test::Utils::tempdir();
system('cc', '-O2', '-o', "$dir/rdk_client", "$root/test/kafka/rdk_client.c",
	'-lrdkafka', '-lpthread') == 0
  or BAIL_OUT('cannot build test/kafka/rdk_client.c');

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('kt', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('kt', 0);

# the daemons connect as the brokers' role: InitProducerId needs init_producer
$c->node($_)->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION mq.init_producer(text) TO mq_broker')
  for 1 .. 3;
my @port = (0, map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 3);
my %daemon;
for my $i (1 .. 3)
{
	my @peers = map { ('--peer', "$_=127.0.0.1:$port[$_]") } grep { $_ != $i } 1 .. 3;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>>', "$c->{logprefix}kafka$i.log" or POSIX::_exit(1);
		open STDERR, '>&', \*STDOUT or POSIX::_exit(1);
		exec $kafka, '--listen', "127.0.0.1:$port[$i]", '--node-id', $i, @peers,
		  '-d', MqCluster::conninfo($c->node($i))
		  or POSIX::_exit(1);
	}
	$daemon{$i} = $pid;
}
END { kill 'TERM', values %daemon; waitpid($_, 0) for values %daemon; }
for my $i (1 .. 3)
{
	my $up;
	for (1 .. 200)
	{
		last if $up = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port[$i]);
		usleep(50_000);
	}
	ok($up, "mq-kafka of node$i listens");
}

# the producer prints "half" after half its records, then paces the rest
my $brokers = join ',', map { "127.0.0.1:$port[$_]" } 1 .. 3;
$ENV{RDK_PACE_US} = 1000;
my $ppid = open(my $prod, '-|', "$dir/rdk_client produce $brokers kt 20000 none idempotent 2>$dir/producer.err")
  or die "cannot start the producer: $!";
my $half = <$prod>;
is($half, "half\n", 'the producer is half way');
# some records are acknowledged (acks=all: on the followers too)
$c->node($old)->poll_query_until('postgres',
	"SELECT high_watermark >= 1000 FROM mq.partitions WHERE topic = 'kt' AND partition = 0")
  or diag('nothing replicated before the kill');
$c->kill9_node($old);
note("killed node$old (the leader)");
my $summary = join '', <$prod>;
close $prod;
is($? >> 8, 0, 'the producer exited successfully') or diag(`tail -20 $dir/producer.err`);
like($summary, qr/acknowledged 20000, failed 0/, 'every record was acknowledged');

my $new = $c->leader('kt', 0);
isnt($new, $old, "a new leader was elected (broker $new)");
my ($distinct, $all) = split / /, $c->node($new)->safe_psql('postgres',
	"SELECT count(DISTINCT value) || ' ' || count(*) FROM mq.fetch('kt', 0, 0, 100000)");
is($distinct, 20000, 'every acknowledged record is on the new leader');
is($all, $distinct, 'none of them twice: the idempotent retries across the failover were recognised');

done_testing();
