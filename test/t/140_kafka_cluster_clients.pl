# Kafka clients from Debian with their default settings against the
# three-node cluster (issue 23's acceptance): each node's mq-broker runs
# its mq-kafka, the clients bootstrap through one node's daemon and learn
# the others from Metadata; the topic's six partitions are led by all
# three nodes.
#   - kafka-python (python3-kafka 2.0.2, test/kafka/py/cluster.py) with
#     its version probing (ApiVersions, Metadata v0): producers, consumers
#     and admin clients connect and infer one version; a producer sends
#     keyed records; a consumer group reads part, commits and leaves, a
#     second member resumes after the commit; the admin client creates,
#     describes and deletes a topic (on every node).
#   - sarama (golang-github-shopify-sarama-dev 1.22.1,
#     test/kafka/go/sarama_cluster.go): its default configuration
#     (Metadata v0, OffsetCommit v1) names every partition's leader as the
#     coordinator does and commits through its offset manager; a group
#     (the lowest version sarama allows groups at, defaults otherwise)
#     produces, consumes, commits and resumes.
# Every produced record is read once, at the offset it was acknowledged
# at, and each committed offset equals mq.committed_offset on the
# partition's leader (where the coordinator says committed offsets live).
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $logs = $PostgreSQL::Test::Utils::log_path;
my $py = '/usr/bin/python3';    # Debian's python3-kafka
my $n = 600;

my $c = MqCluster->new(nodes => 3);
# [kafka] group.min.session.timeout.ms, connections.max.idle.ms and
# num.partitions reach each node's mq-kafka
$c->start_kafka_brokers(min_session_ms => 5000, idle_ms => 300000, num_partitions => 2);
$c->create_topic($_, 6, { 'replication.factor' => 3, 'min.insync.replicas' => 2 }) for 'kpc', 'srm';
# the leaders where placement wants them (all three nodes), before the
# clients at their defaults (kafka-python: retries=0) send
ok($c->wait_preferred_leaders('kpc', 'srm'), 'each topic has partitions led by all three nodes, to stay');
my $boot = $c->kafka_address(2);

# run a client to its end: its lines of output
sub client
{
	my ($name, @cmd) = @_;
	my @out = `timeout 200 @cmd 2>$logs/140_$name.err`;
	is($? >> 8, 0, "$name exits successfully") or diag(`tail -n 30 $logs/140_$name.err`);
	chomp @out;
	return @out;
}

# each partition's committed offset for $group on its leader
sub committed
{
	my ($topic, $group) = @_;
	return { map {
			my $p = $_;
			("$topic/$p" => $c->node($c->leader($topic, $p))->safe_psql('postgres',
				"SELECT mq.committed_offset('$group', '$topic', $p)"))
	} 0 .. 5 };
}

# every record read once at its acknowledged offset: "p/o value" sets
sub records_match
{
	my ($what, $acked, $read) = @_;
	my %seen;
	my @twice = grep { $seen{$_}++ } @$read;
	is(scalar @twice, 0, "$what: no record read twice") or diag("@twice[0 .. 9]");
	is_deeply([ sort keys %seen ], [ sort @$acked ], "$what: every acknowledged record read, at its offset");
}

# --- kafka-python ---
my ($probe) = client('kpy_probe', $py, "$root/test/kafka/py/cluster.py", 'probe', $boot, 3);
is($probe, '{"connected": 9, "first_error": null, "versions": ["2.5.0"]}',
	'kafka-python: three rounds of producer, consumer and admin client probe and connect');

my @acks = map { /^ack (\S+) (\d+) (\d+)$/ ? "$2/$3 $1" : () }
  client('kpy_produce', $py, "$root/test/kafka/py/cluster.py", 'produce', $boot, 'kpc', $n);
is(scalar @acks, $n, "kafka-python: the producer had its $n records acknowledged");
my %parts = map { (split m{/})[0] => 1 } @acks;
is(scalar keys %parts, 6, 'kafka-python: its records went to all six partitions');

my @first = client('kpy_first', $py, "$root/test/kafka/py/cluster.py", 'consume', $boot, 'kpc', 'kpg', 250, 20);
my @second = client('kpy_second', $py, "$root/test/kafka/py/cluster.py", 'consume', $boot, 'kpc', 'kpg', $n - 250, 20);
my @read = map { /^rec (\d+) (\d+) (\S+)$/ ? "$1/$2 $3" : () } @first, @second;
is(scalar(grep { /^rec / } @first), 250, 'kafka-python: the first member reads 250 records');
is(scalar(grep { /^commit failed/ } @first, @second), 0, 'kafka-python: every commit succeeded');
records_match('kafka-python', \@acks, \@read);
my %end;
for (@acks) { my ($p, $o) = m{^(\d+)/(\d+)}; $end{"kpc/$p"} = $o + 1 if ($end{"kpc/$p"} // 0) <= $o; }
is_deeply(committed('kpc', 'kpg'), \%end, "kafka-python: the group's committed offsets on the leaders are the log ends");

# Kafka's topics are the cluster's: the admin client's topic is made on the
# coordinator, replicated as asked and described from every broker, and
# deleted from the coordinator and every node
my ($adm) = client('kpy_admin', $py, "$root/test/kafka/py/cluster.py", 'admin', $boot, 'kpc_adm', 3, 2,
	$c->kafka_address(1), $c->kafka_address(3));
my $a = eval { decode_json($adm) } // {};
is(join(' ', map { ref $a->{$_} ? "@{ $a->{$_} }" : $a->{$_} // 'none' } qw(create describe describe_at_0 describe_at_1)),
	'0 2 2 2 2 2 2 2 2 2', 'kafka-python: the admin client creates a topic (3 partitions, 2 replicas each), it and'
	  . ' admin clients of the other brokers describe it');
is(ref $a->{delete} ? "@{ $a->{delete} }" : $a->{delete} // 'none', '0', 'kafka-python: its admin client deletes it');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.partition WHERE topic = 'kpc_adm'"), '0',
	'the coordinator no longer has it');
ok(!grep({ !$c->node($_)->poll_query_until('postgres',
				"SELECT count(*) = 0 FROM mq.topic WHERE topic_name = 'kpc_adm'") } 1 .. 3),
	'and every node drops it');
# a topic in its place: each new topic's partition 0 starts one broker
# further per topic there is (replication.md, "Placement"), and kafkajs's
# CreatePartitions below needs a topic without a replica on node 2
$c->coord->safe_psql('postgres', "SELECT mq_coord.create_topic('kpc_adm_after', 1)");

# the [kafka] section's session minimum, as each broker describes itself
# (to a role with describe on the cluster, as in Kafka: clients without
# SASL act as the daemons' role)
$c->node($_)->safe_psql('postgres', "SELECT mq.grant('describe', 'cluster', 'kafka-cluster', '$MqCluster::BROKER_ROLE')")
  for 1 .. 3;
my ($bc) = client('kpy_broker_configs', $py, "$root/test/kafka/py/cluster.py", 'broker_configs', $boot,
	'group.min.session.timeout.ms', 1, 2, 3);
is($bc, '{"1": "5000", "2": "5000", "3": "5000"}',
	'[kafka] group.min.session.timeout.ms = 5000 is each daemon\'s (DescribeConfigs of brokers 1 to 3)');
($bc) = client('kpy_broker_idle', $py, "$root/test/kafka/py/cluster.py", 'broker_configs', $boot,
	'connections.max.idle.ms', 1, 2, 3);
is($bc, '{"1": "300000", "2": "300000", "3": "300000"}',
	'and [kafka] connections.max.idle.ms = 300000 too');

# a topic with one replica is on one node, and every broker names it
($adm) = client('kpy_admin1', $py, "$root/test/kafka/py/cluster.py", 'admin', $boot, 'kpc_one', 1, 1,
	$c->kafka_address(1), $c->kafka_address(3));
$a = eval { decode_json($adm) } // {};
is(join(' ', map { ref $a->{$_} ? "@{ $a->{$_} }" : $a->{$_} // 'none' } qw(create describe describe_at_0 describe_at_1)),
	'0 1 1 1', 'kafka-python: a topic of one partition and one replica is described from every broker');
is(join(',', map { $c->node($_)->safe_psql('postgres', "SELECT count(*) FROM mq.topics WHERE topic = 'kpc_one'") } 1 .. 3),
	join(',', map { $_ == $c->leader('kpc_one', 0) ? 1 : 0 } 1 .. 3), 'only its replica\'s node holds it');

# --- sarama ---
my $sarama = "$dir/sarama_cluster";
# built offline against Debian's package (MqCluster::go_build: the tests
# share its build cache)
MqCluster::go_build('sarama_cluster', $sarama, "$logs/140_go_build.log")
  or BAIL_OUT('cannot build test/kafka/go/sarama_cluster.go offline against Debian\'s sarama');

@acks = map { /^ack (\S+) (\d+) (\d+)$/ ? "$2/$3 $1" : () } client('srm_produce', $sarama, 'produce', $boot, 'srm', $n);
is(scalar @acks, $n, "sarama: the default producer (Produce v0) had its $n records acknowledged");
%parts = map { (split m{/})[0] => 1 } @acks;
is(scalar keys %parts, 6, 'sarama: its records went to all six partitions');

my @def = client('srm_defaults', $sarama, 'defaults', $boot, 'srm', 'srmg-plain');
is((grep { /^version / } @def)[0], 'version 0.8.2.0', 'sarama: the default configuration is 0.8.2');
my %named = map { /^leader (\d+) (\d+)$/ ? ($1 => $2) : () } @def;
is_deeply(\%named, { map { $_ => $c->leader('srm', $_) } 0 .. 5 },
	"sarama: Metadata v0 from one daemon names each partition's leader as the coordinator does");
is_deeply([ grep { /^offset / } @def ], [ map { "offset $_ -1 " . ($_ + 1) } 0 .. 5 ],
	'sarama: its offset manager commits (OffsetCommit v1) an offset on each partition, a second one reads them (OffsetFetch v1)');
is_deeply(committed('srm', 'srmg-plain'), { map { ("srm/$_" => $_ + 1) } 0 .. 5 },
	'sarama: those commits are on the leaders');

@first = client('srm_first', $sarama, 'consume', $boot, 'srm', 'srmg', 250, 20);
@second = client('srm_second', $sarama, 'consume', $boot, 'srm', 'srmg', $n - 250, 20);
@read = map { /^rec (\d+) (\d+) (\S+)$/ ? "$1/$2 $3" : () } @first, @second;
is(scalar(grep { /^rec / } @first), 250, 'sarama: the first group member reads 250 records');
records_match('sarama', \@acks, \@read);
%end = ();
for (@acks) { my ($p, $o) = m{^(\d+)/(\d+)}; $end{"srm/$p"} = $o + 1 if ($end{"srm/$p"} // 0) <= $o; }
is_deeply(committed('srm', 'srmg'), \%end, "sarama: the group's committed offsets on the leaders are the log ends");

# --- kafkajs (npm, test/kafka/js; the kafka phase's kafkajs.sh installs it) ---
SKIP:
{
	skip 'kafkajs is not installed in test/kafka/js (npm ci)', 7
	  unless -d "$root/test/kafka/js/node_modules/kafkajs";
	local $ENV{KAFKAJS_NO_PARTITIONER_WARNING} = 1;
	my ($js) = client('kafkajs', 'node', "$root/test/kafka/js/cluster.js", $boot, 'kjs', 'kjsg');
	my $j = eval { decode_json($js // '') } // {};
	is(join(' ', map { $j->{$_} // 'none' } qw(created partitions readOnce)), '1 6 600',
		'kafkajs: creates a topic of 6 partitions, its idempotent producer writes to all, its group reads every record once');
	# (preferred leaders take their partitions back after a while)
	ok($c->coord->poll_query_until('postgres', "SELECT string_agg(DISTINCT cardinality(replicas)::text, ',') || ' '"
			  . " || count(DISTINCT leader) FROM mq_coord.partition WHERE topic = 'kjs'", '3 3'),
		'kafkajs: the topic is the coordinator\'s, three replicas each, led by all three nodes');
	my $sum = 0;
	$sum += $_ for values %{ $j->{committed} // {} };
	is($sum, $n, 'kafkajs: its committed offsets cover every record');
	is_deeply({ map { ("kjs/$_" => $j->{committed}{$_}) } keys %{ $j->{committed} // {} } }, committed('kjs', 'kjsg'),
		'kafkajs: OffsetFetch gives the offsets committed on the leaders');
	is($j->{grown}, 3, 'kafkajs: CreatePartitions grows a topic to 3 partitions, each with a leader');
	is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.partition WHERE topic = 'kjs-grow'"), 3,
		'kafkajs: the coordinator has the 3 partitions');
	# kafkajs sends CreatePartitions to the controller, the daemon it
	# bootstrapped through (node 2), which holds no replica of the topic:
	# the daemon checks it as the client on a node holding it
	is($c->coord->safe_psql('postgres',
			"SELECT 2 = ANY (replicas) FROM mq_coord.partition WHERE topic = 'kjs-grow' AND partition = 0"), 'f',
		'kafkajs: that topic had no replica on the node whose daemon was asked');
}

# automatic topic creation, on by default as in Kafka (last: the placement
# of its partitions would move the topics above): kcat at its defaults
# produces to a topic nobody made, through node 2's daemon; it is
# made on the coordinator ([kafka] num.partitions = 2, replication factor
# 1, Kafka's default.replication.factor), and its records are on their
# leaders' nodes
my ($sent) = client('kcat_auto', 'sh', '-c', "'printf \"a\\nb\\nc\\n\" | kcat -b $boot -P -t kpc_auto && echo sent'");
is($sent, 'sent', 'kcat produces to a topic nobody made');
is($c->coord->safe_psql('postgres',
		"SELECT count(*) || ':' || max(cardinality(replicas)) FROM mq_coord.partition WHERE topic = 'kpc_auto'"),
	'2:1', 'the coordinator made it: two partitions of one replica each');
is(eval { my $t = 0; $t += $c->node($c->leader('kpc_auto', $_))->safe_psql('postgres',
		"SELECT count(*) FROM mq.fetch('kpc_auto', $_, 0, 100)") for 0, 1; $t }, 3,
	'the three records are on their partitions\' leaders');

done_testing();
