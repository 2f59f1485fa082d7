# A broker added to the cluster remaps some transactional ids to its node
# (the id's node is chosen among the registered daemons: cluster_txn_pool,
# broker/mq-kafka/cluster.c).  A transaction open when that happens stays
# on the node where it began until it ends: the node the id now maps to
# has no transaction of the id, and the daemon finds it on the others
# (txn_cluster_stage, broker/mq-kafka/h_txn_init.c).  Forty ids each open
# a transaction with one staged record on three nodes; a fourth broker
# starts; EndTxn of an id that now maps to it commits the record where it
# was staged.  Then InitProducerId's pair check (KIP-360) and EndTxn's
# states through the cluster path (test/kafka/txn_states.pl), and an
# InitProducerId whose epoch another one's overtook.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(str kafka_connect kafka_request cstr);
use MqCluster;

my $c = MqCluster->new(nodes => 4);
$c->start_kafka_brokers(transactions => 1, brokers => [1, 2, 3]);
$c->create_topic('krm', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('krm', 0);

# forty transactions, each with one record staged on its id's node
my %open;    # id => [node, producer id, epoch]
for my $id (map { "rm-$_" } 1 .. 40)
{
	my (undef, $x) = $c->kafka_find_coordinator(1, $id);
	my ($pid, $epoch) = split /\|/,
	  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('$id')");
	$c->node($x)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('$id', 300000, $pid, $epoch); "
		  . "SELECT mq.kafka_txn_stage('$id', $pid, $epoch, 'krm', 0, 0, ARRAY['k']::bytea[], "
		  . "ARRAY[convert_to('v-$id', 'UTF8')])");
	$open{$id} = [$x, $pid, $epoch];
}
is(join(',', map { $c->node($_)->safe_psql('postgres', "SELECT count(*) FROM mq.kafka_txn WHERE state = 'ongoing'") } 1 .. 3)
	  =~ tr/,//, 2, 'forty transactions are open on the three nodes');

$c->start_kafka_brokers(transactions => 1, brokers => [4]);
my ($moved) = grep { ($c->kafka_find_coordinator(1, $_))[1] == 4 } sort keys %open;
ok(defined $moved, "with a fourth broker, $moved (on node$open{$moved}[0]) maps to node4");
is($c->node(4)->safe_psql('postgres', "SELECT count(*) FROM mq.kafka_txn WHERE transactional_id = '$moved'"),
	'0', 'which has no transaction of it');

# EndTxn v1 (commit) to the daemon the id maps to: transactional id, producer id, epoch, committed
my (undef, $pid, $epoch) = @{ $open{$moved} };
my $resp = kafka_request(kafka_connect($c->{kafka_port}[4]), 'tap', 26, 1,
	pack('s>/a* q> s> c', $moved, $pid, $epoch, 1), 0, 60);
is(defined $resp ? unpack('x4 x4 s>', $resp) : 'none', 0, 'EndTxn commits it (no error)');
is($c->node($leader)->safe_psql('postgres',
		"SELECT count(*) FROM mq.fetch('krm', 0, 0, 100) WHERE convert_from(value, 'UTF8') = 'v-$moved'"),
	'1', 'its staged record is in the log once');
is($c->node($open{$moved}[0])->safe_psql('postgres',
		"SELECT state || ' ' || last_result FROM mq.kafka_txn WHERE transactional_id = '$moved'"),
	'empty commit', "on node$open{$moved}[0], where it began, the transaction is committed");

# KIP-360 and EndTxn's states where the id's producer ids come from the
# coordinator (h_txn_init.c's cluster path)
my $out = `perl $FindBin::Bin/../kafka/txn_states.pl $c->{kafka_port}[1] rm-states krm 2>&1`;
is($?, 0, 'txn_states.pl: every check holds in the cluster') or diag($out);

# The check and the coordinator's epoch are two transactions: when another
# InitProducerId of the id puts a newer epoch on the id's node first (done
# here by hand, with an epoch ahead of the coordinator's next), this one's
# older epoch is refused with CONCURRENT_TRANSACTIONS (51), and asking
# again gets one the node takes (mq.kafka_txn_adopt).  The id's node:
# FindCoordinator v1's (key type 1) for an id it gives one of the first
# three brokers (the daemons may not have read broker 4's node yet, and
# leave it out of the ids' nodes until they do).
my ($race, $y);
for my $i (1 .. 50)
{
	my $fc = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 10, 1, str("rm-race$i") . pack('c', 1));
	# correlation id, throttle, error, error message (null), node id
	my $node = defined $fc ? unpack('x4 x4 x2 x2 l>', $fc) : -1;
	($race, $y) = ("rm-race$i", $node), last if $node >= 1 && $node <= 3;
}
my ($rpid, $repoch) = split /\|/,
  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('$race')");
$c->node($y)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('$race', 60000, $rpid, $repoch + 2)");
# InitProducerId v4: transactional id, timeout, producer id and epoch (none)
my $init = cstr($race) . pack('l> q> s>', 60000, -1, -1) . "\0";
my @got = map {
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$y]), 'tap', 22, 4, $init, 1);
	defined $r ? join(' ', unpack('x4 x1 x4 s> q> s>', $r)) : 'none'
} 1 .. 2;
my $took = $c->node($y)->safe_psql('postgres',
	"SELECT producer_id || ' ' || producer_epoch FROM mq.kafka_txn WHERE transactional_id = '$race'");
is(join(', ', @got), "51 -1 -1, 0 $took",
	'an epoch older than the one the id\'s node has: CONCURRENT_TRANSACTIONS, then one the node takes');

$c->teardown;
done_testing();
