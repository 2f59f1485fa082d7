# Partition reassignments through the Kafka protocol (docs/kafka.md,
# "Moving replicas"): kafkajs's alterPartitionReassignments and
# listPartitionReassignments at a daemon of a three-node cluster, on a
# partition of replication.factor 2.  Without ALTER and DESCRIBE on the
# cluster the client is refused; with them, a move to the third broker
# (paused, so that the move stays in progress) is listed with the replica
# being added and the one leaving, another target meanwhile is
# REASSIGNMENT_IN_PROGRESS and an unknown broker INVALID_REPLICA_ASSIGNMENT;
# a cancel (null replicas, sent by hand: kafkajs refuses them) moves the
# partition back, and a second cancel is NO_REASSIGNMENT_IN_PROGRESS.
# With the third broker resumed the move completes: the coordinator has
# the new replicas, nothing is listed, and the new replica holds every
# record.  DescribeConfigs of a broker needs the same right (DESCRIBE on
# the cluster).
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $logs = $PostgreSQL::Test::Utils::log_path;
plan skip_all => 'kafkajs is not installed in test/kafka/js (npm ci)'
  unless -d "$root/test/kafka/js/node_modules/kafkajs";

my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;
$c->create_topic('rt', 1, { 'replication.factor' => 2, 'min.insync.replicas' => 1 });
ok($c->wait_caught_up('rt'), 'both replicas in sync');
my $q_part = "SELECT array_to_string(replicas, ',') || ' ' || coalesce(array_to_string(target_replicas, ','), '-') "
  . "FROM mq_coord.partition WHERE topic = 'rt' AND partition = 0";
my ($kept, $leaving) = split /,/, (split / /, $c->coord->safe_psql('postgres', $q_part))[0];
my ($new) = grep { $_ != $kept && $_ != $leaving } 1 .. 3;
my $l = $c->leader('rt', 0);
$c->node($l)->safe_psql('postgres',
	"SELECT count(*) FROM mq.send_batch('rt', NULL, ARRAY(SELECT convert_to('r' || i, 'UTF8') "
	  . "FROM generate_series(1, 100) i), partition => 0)");
my $boot = $c->kafka_address($kept);

# kafkajs: list, or alter rt's partition to replicas
sub kjs
{
	my @args = @_;
	my $out = `timeout 120 node $root/test/kafka/js/reassign.js $boot @args 2>>$logs/160_kafkajs.err`;
	chomp $out;
	return $out;
}

# AlterPartitionReassignments v0 of one partition with null replicas (a
# cancel), by hand: the partition's error code
sub cancel
{
	my ($topic, $partition) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $c->{kafka_port}[$kept],
		Proto => 'tcp', Timeout => 10) or return -100;
	# header v2 (no tags); timeout, 1 topic (compact: count + 1), its name
	# (length + 1), 1 partition, null replicas, the tags of each level
	my $body = pack('s> s> l> s>/a* C', 45, 0, 1, 'tap', 0)
	  . pack('l> C C a* C l> C C C C', 10000, 2, length($topic) + 1, $topic, 2, $partition, 0, 0, 0, 0);
	print $sock pack('l>/a*', $body);
	my ($len, $resp) = ('', '');
	return -101 unless read($sock, $len, 4) == 4;
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	# correlation id, tags, throttle, error, null message, 1 topic, its name, 1 partition
	my $at = 4 + 1 + 4 + 2 + 1 + 1;
	$at += unpack("x$at C", $resp);    # the name's length + 1: its length byte and bytes
	my (undef, undef, $err) = unpack("x$at C l> s>", $resp);
	return $err;
}

is(kjs('list'), 'CLUSTER_AUTHORIZATION_FAILED', 'without DESCRIBE on the cluster: refused');
like(kjs('configs', $kept), qr/^(CLUSTER_AUTHORIZATION_FAILED|error 31)$/,
	'so is DescribeConfigs of the broker');
is(kjs('alter', 'rt', 0, "$kept,$new"), 'CLUSTER_AUTHORIZATION_FAILED', 'without ALTER on the cluster: refused');
is($c->coord->safe_psql('postgres', $q_part), "$kept,$leaving -", 'and nothing moved');
$c->node($_)->safe_psql('postgres', "SELECT mq.grant('alter', 'cluster', 'kafka-cluster', '$MqCluster::BROKER_ROLE')")
  for 1 .. 3;
is(kjs('list'), '{}', 'with ALTER on the cluster (which implies DESCRIBE): nothing is moving');
is(kjs('configs', $kept), $kept, 'DescribeConfigs of the broker names its broker.id');

# the move stays in progress while its new broker is paused
$c->signal_broker($new, 'STOP');
is(kjs('alter', 'rt', 0, "$kept,$new"), 'none', "alterPartitionReassignments to $kept,$new starts the move");
is($c->coord->safe_psql('postgres', $q_part), "$kept,$new,$leaving $kept,$new",
	'the coordinator has the target, the replica leaving still in the replicas');
is_deeply(decode_json(kjs('list')),
	{ 'rt/0' => { replicas => [ $kept, $new, $leaving ], adding => [$new], removing => [$leaving] } },
	'listPartitionReassignments names the move: replicas, adding, removing');
is(kjs('alter', 'rt', 0, "$new,$leaving"), 'REASSIGNMENT_IN_PROGRESS', 'another target meanwhile: refused');
is(kjs('alter', 'rt', 0, '9'), 'INVALID_REPLICA_ASSIGNMENT', 'an unknown broker: INVALID_REPLICA_ASSIGNMENT');
is(kjs('alter', 'rt', 5, "$kept,$new"), 'UNKNOWN_TOPIC_OR_PARTITION', 'an unknown partition: UNKNOWN_TOPIC_OR_PARTITION');

is(cancel('rt', 0), 0, 'null replicas cancel the move');
ok($c->coord->poll_query_until('postgres', "SELECT ($q_part) = '$kept,$leaving -'"),
	'the partition moves back to its replicas');
is(kjs('list'), '{}', 'nothing is listed any more');
is(cancel('rt', 0), 85, 'a second cancel: NO_REASSIGNMENT_IN_PROGRESS');

# resumed, the new broker takes its replica and the move completes
$c->signal_broker($new, 'CONT');
is(kjs('alter', 'rt', 0, "$kept,$new"), 'none', 'the move again, its broker running');
ok($c->coord->poll_query_until('postgres', "SELECT ($q_part) = '$kept,$new -'"), 'the move completes');
is(kjs('list'), '{}', 'and is no longer listed');
ok($c->node($new)->poll_query_until('postgres',
		"SELECT log_end_offset = 100 FROM mq.replica_status WHERE topic = 'rt' AND partition = 0"),
	"broker ${new}'s node holds the partition's 100 records");

$c->teardown;
done_testing();
