# Kafka transactions on the three-node cluster (docs/kafka.md,
# "Transactions"): confluent-kafka-python (test/kafka/py/txn.py) through
# one bootstrap address.  A transaction whose partition is led by the
# node whose daemon coordinates its transactional id commits, across a
# kill -9 of that daemon between its Produce and its EndTxn (mq-broker
# restarts it; the transaction's state is in the node's database, so the
# new daemon commits the staged record).  A transaction on a partition
# another node leads commits too (its record staged on the coordinating
# daemon's node, then sent to the leader: src/sql/68_kafka_txn_cluster.sql)
# and leaves nothing staged behind, its record keeping the producer's
# headers and CreateTime (read back through Kafka and SQL).  A batched
# AddPartitionsToTxn (v4+, raw: no client sends it) adds each
# transaction's partitions on its own id's node.  Test 137 runs a whole
# pipeline across the three nodes.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request uvarint cstr);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers(transactions => 1);
$c->create_topic('ktc', 6, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
# (preferred leaders take their partitions back if another broker won first)
ok($c->wait_preferred_leaders('ktc'), 'the six partitions have leaders on all three nodes, to stay');
my %led_by = map { ($c->leader('ktc', $_) => $_) } 0 .. 5;

# a transactional id coordinated by node $x, and partitions led by $x and by another
my ($txn, $x);
for my $i (1 .. 50)
{
	my (undef, $node) = $c->kafka_find_coordinator(1, "ktc-txn-$i");
	next unless $led_by{$node};
	($txn, $x) = ("ktc-txn-$i", $node);
	last;
}
ok(defined $txn, "transactional id $txn is coordinated by broker $x");
my $here = $led_by{$x};
my ($other_node) = grep { $_ != $x } sort keys %led_by;
my $there = $led_by{$other_node};
my $boot = $c->kafka_address(1);
my $py = "/usr/bin/python3 $root/test/kafka/py/txn.py $boot";

sub hw
{
	my ($p) = @_;
	return $c->node($c->leader('ktc', $p))
	  ->safe_psql('postgres', "SELECT high_watermark FROM mq.partitions WHERE topic = 'ktc' AND partition = $p");
}

# one node: committed across a kill -9 of the coordinating daemon
my $before = hw($here);
my $go = "$dir/go";
my $pid = open(my $client, '-|', "$py one $txn ktc $here kept $go 2>$dir/one.err") or die "txn.py: $!";
my $line = <$client>;
is($line, "staged\n", 'the record is staged') or diag(slurp_file("$dir/one.err"));
is($c->node($x)->safe_psql('postgres', "SELECT count(*) FROM mq.kafka_txn_record WHERE transactional_id = '$txn'"),
	'1', "on node$x, without an offset");
is(hw($here), $before, 'and not in the log yet');
my $kpid = $c->kafka_pid($x);
ok(kill('KILL', $kpid), "killed broker ${x}'s mq-kafka (pid $kpid) with the transaction open");
$c->wait_broker_log($x, qr/started mq-kafka \(pid (?!$kpid\))\d+\)/);
open(my $f, '>', $go) or die;
close $f;
$line = <$client>;
close $client;
like($line // '', qr/"commit": "ok"/, 'the client commits through the restarted daemon') or diag(slurp_file("$dir/one.err"));
is(hw($here), $before + 1, 'the record is in the log once');
is($c->node($x)->safe_psql('postgres', "SELECT convert_from(value, 'UTF8') FROM mq.fetch('ktc', $here, $before, 10)"),
	'kept', 'it is the transaction\'s record');

# spanning nodes: the same id (coordinated by broker $x) on a partition another node leads
my $before_there = hw($there);
my $out = `$py one $txn ktc $there away 2>$dir/two.err`;
like($out, qr/"commit": "ok"/, "a transaction on a partition another node leads commits ($out)")
  or diag(slurp_file("$dir/two.err"));
is(hw($there), $before_there + 1, 'its record is in the leader\'s log once');
is($c->node($c->leader('ktc', $there))->safe_psql('postgres',
		"SELECT convert_from(value, 'UTF8') FROM mq.fetch('ktc', $there, $before_there, 10)"),
	'away', 'it is the transaction\'s record');
# txn.py's one: headers [trace a, trace b, bin 00ff, none null], CreateTime 1600000000123 ms
is($c->node($c->leader('ktc', $there))->safe_psql('postgres',
		"SELECT headers::text || ' ' || timestamp_type || ' ' || (extract(epoch FROM timestamp) * 1000)::bigint "
		  . "FROM mq.fetch('ktc', $there, $before_there, 1)"),
	'[["trace", "a"], ["trace", "b"], ["bin", {"base64": "AP8="}], ["none", null]] CreateTime 1600000000123',
	'with the producer\'s headers and CreateTime (SQL)');
$out = `$py get ktc $there $before_there 2>$dir/get.err`;
is($out, '{"value": "away", "timestamp": [1, 1600000000123], '
	  . '"headers": [["trace", "61"], ["trace", "62"], ["bin", "00ff"], ["none", null]]}' . "\n",
	'and through Kafka') or diag(slurp_file("$dir/get.err"));
is(join(',', map { $c->node($_)->safe_psql('postgres', 'SELECT count(*) FROM mq.kafka_txn_record') } 1 .. 3),
	'0,0,0', 'nothing is staged on any node');
is($c->coord->safe_psql('postgres', "SELECT count(*) || ' ' || bool_and(state = 'done') FROM mq_coord.txn WHERE owner = '$txn'"),
	'2 true', 'both decisions on the coordinator are complete');

# AddPartitionsToTxn v4: two transactional ids coordinated on different nodes, one request
my %on;
for my $i (1 .. 50)
{
	my (undef, $node) = $c->kafka_find_coordinator(1, "apv4-$i");
	$on{$node} //= "apv4-$i" if $node >= 1;
	last if keys %on >= 2;
}
my @batch = map { [$on{$_}, $_] } (sort keys %on)[0, 1];
my $req = uvarint(@batch + 1);
for my $b (@batch)
{
	my ($id, $node) = @$b;
	my ($pid, $epoch) = split /\|/,
	  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('$id')");
	$c->node($node)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('$id', 60000, $pid, $epoch)");
	$req .= cstr($id) . pack('q> s> c', $pid, $epoch, 0) . uvarint(2) . cstr('ktc') . uvarint(2) . pack('l>', 0) . "\0\0";
}
my $resp = kafka_request(kafka_connect($c->{kafka_port}[$x]), 'tap', 24, 4, $req . "\0", 1);
# throttle, top-level error, then per transaction: id, [topic, [partition 0, error]]
my @errors = defined $resp ? ($resp =~ /ktc\x02\0\0\0\0(..)/sg) : ();
is(join(',', map { unpack('s>', $_) } @errors), '0,0',
	"AddPartitionsToTxn v4 of $batch[0][0] (node $batch[0][1]) and $batch[1][0] (node $batch[1][1]): both added");
is(join(',', map { $c->node($_->[1])->safe_psql('postgres',
	"SELECT state FROM mq.kafka_txn WHERE transactional_id = '$_->[0]'") } @batch),
	'ongoing,ongoing', 'each on its own id\'s node');

$c->teardown;
done_testing();
