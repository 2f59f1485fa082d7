# Kafka transactions on the three-node cluster over topics with one
# replica, the replication factor a client gets when it leaves it at its
# default (Kafka's default.replication.factor is 1): the input topic, the
# output topic and the transactional id's node are different nodes, so
# the node holding the transaction holds no replica of either topic.
# confluent-kafka-python's consume-transform-produce (test/kafka/py/txn.py
# pipeline) commits every record and its offsets; a read_committed reader
# sees each once.  AddPartitionsToTxn of a partition the cluster does not
# have is UNKNOWN_TOPIC_OR_PARTITION, answered by the daemon, with nothing
# written on the transaction's node.  OffsetFetch's require_stable sees an
# open transaction's offset staged on a node that neither leads the
# partition nor coordinates the group, and still while that node is down
# (noted on the coordinator) until a new InitProducerId fences it.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request uvarint cstr);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers(transactions => 1);

# one-replica topics of one partition: each new topic starts on the next
# broker (mq_coord._place_partitions), as Kafka starts each at a random one
my ($in, $out) = ('r1in', 'r1out');
$c->create_topic($in, 1, {});
$c->create_topic($out, 1, {});
my ($a, $b) = ($c->leader($in, 0), $c->leader($out, 0));
is("$a $b", '1 2', "input on node$a, output on node$b");
my $x = 3;
my $txn;
for my $i (1 .. 100)
{
	my (undef, $node) = $c->kafka_find_coordinator(1, "r1txn-$i");
	($txn = "r1txn-$i", last) if $node == $x;
}
ok(defined $txn, "transactional id $txn is coordinated by node$x");
is($c->node($x)->safe_psql('postgres', "SELECT count(*) FROM mq.topic WHERE topic_name IN ('$in', '$out')"),
	'0', "node$x holds no replica of either topic");

$c->node($a)->safe_psql('postgres',
	"SELECT mq.send_batch('$in', array_fill(NULL::bytea, ARRAY[12]), "
	  . "(SELECT array_agg(convert_to('v' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 11) i), NULL, 0)");
my $py = "timeout 120 /usr/bin/python3 $root/test/kafka/py/txn.py " . $c->kafka_address($x);
my $res = `$py pipeline $in $out r1grp 12 $txn 2>$dir/pipe.err`;
like($res, qr/"committed": 12, "aborted": 0, "errors": \[\]/, "the pipeline commits its 12 records ($res)")
  or diag(slurp_file("$dir/pipe.err"));
my $read = `$py read $out 12 2>$dir/read.err`;
is($read, '[' . join(', ', map { "\"V$_\"" } 0 .. 11) . "]\n", 'a read_committed reader sees each once')
  or diag(slurp_file("$dir/read.err"));
is($c->node($a)->safe_psql('postgres', "SELECT mq.committed_offset('r1grp', '$in', 0)"),
	'12', "the group's offset is committed on node$a, the input's leader");
is(join(',', map { $c->node($_)->safe_psql('postgres', 'SELECT count(*) FROM mq.kafka_txn_record') } 1 .. 3),
	'0,0,0', 'nothing is left staged');
is($c->coord->safe_psql('postgres', 'SELECT count(*) FROM mq_coord.kafka_txn_staged_offset'),
	'0', 'nor noted on the coordinator (a decision drops the notes)');

# kafkajs's transactions (npm; the kafka phase's kafkajs.sh installs it)
# over the same input, as another group, into a third one-replica topic
SKIP:
{
	skip 'kafkajs is not installed in test/kafka/js (npm ci)', 3
	  unless -d "$root/test/kafka/js/node_modules/kafkajs";
	$c->create_topic('r1js', 1, {});
	local $ENV{KAFKAJS_NO_PARTITIONER_WARNING} = 1;
	my $js = `timeout 150 node $root/test/kafka/js/txn.js ${\$c->kafka_address($x)} $in r1js r1jsg r1js-id 12 2>$dir/js.err`;
	like($js, qr/"committed":12,.*"aborted":true/, "kafkajs commits the 12 records in transactions ($js)")
	  or diag(slurp_file("$dir/js.err"));
	is($c->node($c->leader('r1js', 0))->safe_psql('postgres',
			"SELECT count(*) || ' ' || count(DISTINCT value) FROM mq.fetch('r1js', 0, 0, 100)"),
		'12 12', 'each record once on the output\'s leader, the aborted one not at all');
	is($c->node($a)->safe_psql('postgres', "SELECT mq.committed_offset('r1jsg', '$in', 0)"),
		'12', "kafkajs's offsets committed on node$a");
	is($c->coord->safe_psql('postgres', 'SELECT count(*) FROM mq_coord.kafka_txn_staged_offset'),
		'0', 'no offset is left noted on the coordinator (nor by the abort)');
}

# require_stable (KIP-447) sees an open transaction's offset staged on its
# id's node, neither the partition's leader nor the group's coordinator
my ($open_pid, $open_epoch) = split /\|/,
  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('$txn')");
$c->node($x)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('$txn', 60000, $open_pid, $open_epoch); "
	  . "SELECT mq.kafka_txn_offset('$txn', $open_pid, $open_epoch, 'r1grp', '$in', 0, 20)");
my $gport = $c->{kafka_port}[($c->kafka_find_coordinator(1, 'r1grp'))[1]];
my $stable = `perl $root/test/kafka/stable_offsets.pl $gport r1grp $in 0`;
like($stable, qr/^7 0 12 0\n7 1 -1 88\n/m,
	"OffsetFetch v7 with require_stable: UNSTABLE_OFFSET_COMMIT (88) while node${x}'s transaction is open; without, 12");
$c->node($x)->safe_psql('postgres', "SELECT mq.kafka_txn_end('$txn', $open_pid, $open_epoch, false)");
$stable = `perl $root/test/kafka/stable_offsets.pl $gport r1grp $in 0`;
like($stable, qr/^7 1 12 0\n/m, 'once it aborts, the committed offset (12)');

# AddPartitionsToTxn v3 of a partition no node has: refused by the daemon
my ($pid, $epoch) = split /\|/,
  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('r1-none')");
my (undef, $y) = $c->kafka_find_coordinator(1, 'r1-none');
$c->node($y)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('r1-none', 60000, $pid, $epoch)");
my $req = cstr('r1-none') . pack('q> s>', $pid, $epoch) . uvarint(3)
  . cstr($in) . uvarint(2) . pack('l>', 5) . "\0" . cstr('r1-nowhere') . uvarint(2) . pack('l>', 0) . "\0\0";
my $resp = kafka_request(kafka_connect($c->{kafka_port}[$y]), 'tap', 24, 3, $req, 1);
my @codes = defined $resp ? map { unpack('s>', $_) } ($resp =~ /(?:\Q$in\E|r1-nowhere)\x02\0\0\0[\x05\0](..)/sg) : ();
is(join(',', @codes), '3,3', 'a partition the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION (3)');
is($c->node($y)->safe_psql('postgres', "SELECT state FROM mq.kafka_txn WHERE transactional_id = 'r1-none'"),
	'empty', 'and nothing was begun on the transaction\'s node');

# ... and also while that node is down: the daemon that staged the offset
# (TxnOffsetCommit) noted it on the coordinator
# (mq_coord.kafka_txn_staged_offset) before answering, until a new
# InitProducerId fences the transaction
my $dgrp;
for my $i (1 .. 100)
{
	my (undef, $node) = $c->kafka_find_coordinator(1, "r1down-$i");
	($dgrp = "r1down-$i", last) if $node != $x && $node > 0;
}
my $dport = $c->{kafka_port}[($c->kafka_find_coordinator(1, $dgrp))[1]];
($open_pid, $open_epoch) = split /\|/,
  $c->coord->safe_psql('postgres', "SELECT producer_id, producer_epoch FROM mq_coord.init_producer('$txn')");
$c->node($x)->safe_psql('postgres', "SELECT mq.kafka_txn_adopt('$txn', 60000, $open_pid, $open_epoch)");
# TxnOffsetCommit v2: id, group, producer id and epoch, [topic, [partition, offset, leader epoch, metadata]]
$req = pack('s>/a* s>/a* q> s> l> s>/a* l> l> q> l> s>', $txn, $dgrp, $open_pid, $open_epoch,
	1, $in, 1, 0, 7, -1, -1);
$resp = kafka_request(kafka_connect($dport), 'tap', 28, 2, $req);
is(defined $resp ? unpack('s>', substr($resp, -2)) : 'none', 0, "TxnOffsetCommit to ${dgrp}'s coordinator stages the offset on node$x");
is($c->coord->safe_psql('postgres', "SELECT topic || ' ' || partition FROM mq_coord.kafka_txn_staged_offset WHERE group_id = '$dgrp'"),
	"$in 0", 'and notes it on the coordinator');
$c->kill9_node($x);
$stable = `perl $root/test/kafka/stable_offsets.pl $dport $dgrp $in 0`;
like($stable, qr/^7 1 -1 88\n/m, "with node$x down, require_stable still answers UNSTABLE_OFFSET_COMMIT ($stable)");
$c->coord->safe_psql('postgres', "SELECT mq_coord.init_producer('$txn')");
$stable = `perl $root/test/kafka/stable_offsets.pl $dport $dgrp $in 0`;
like($stable, qr/^7 1 -1 0\n/m, "a new InitProducerId fences it: stable, though node$x is still down ($stable)");
$c->node($x)->start;

$c->teardown;
done_testing();
