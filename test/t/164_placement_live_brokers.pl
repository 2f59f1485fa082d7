# Placement of new topics and partitions uses live brokers first
# (docs/replication.md, "Placement and reassignment"), as Kafka's
# StripedReplicaPlacer prefers unfenced brokers: with one of three brokers
# stopped (its liveness lock gone, still registered), a topic of
# replication factor 2 created on the coordinator, and partitions added to
# it, have no replica on the stopped broker; replication factor 3 is
# placed with a live leader and the stopped broker as the last replica
# (outside the ISR until it returns), through SQL and through mq-kafka's
# CreateTopics; replication factor 4, above the registered brokers, is
# refused with MQ046 naming the registered count
# (INVALID_REPLICATION_FACTOR through mq-kafka), nothing made.  With the
# broker back, it joins the ISR of the topic placed while it was down.
# Fails with the stricter placement on live brokers only, which refused
# replication factor 3 with a broker down.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request);
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;

my $down = 3;
my $locked = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
  . "AND classid = mq_coord.broker_lock_class()::oid AND objid = $down";
$c->signal_broker($down, 'TERM');
ok($c->coord->poll_query_until('postgres', "SELECT ($locked) = 0"),
	"broker $down stopped: its liveness lock is gone");
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.broker"), '3',
	'it is still registered');

# SQL: replication factor 2 on the two live brokers
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.create_topic('live2', 4, '{\"replication.factor\": 2}')");
my $on_down = "SELECT count(*) FROM mq_coord.partition WHERE topic = 'live2' AND $down = ANY (replicas)";
is($c->coord->safe_psql('postgres', $on_down), '0', "no replica of a new topic on broker $down");
is($c->coord->safe_psql('postgres',
		"SELECT string_agg(DISTINCT r::text, ',' ORDER BY r::text) FROM mq_coord.partition, unnest(replicas) r "
		  . "WHERE topic = 'live2'"),
	'1,2', 'its replicas are on the live brokers');
$c->coord->safe_psql('postgres', "SELECT mq_coord.add_partitions('live2', 2)");
is($c->coord->safe_psql('postgres', $on_down), '0', "nor of partitions added to it");
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.partition WHERE topic = 'live2'"),
	'6', 'which are there');
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = 6 FROM mq_coord.partition WHERE topic = 'live2' AND leader IS NOT NULL "
		  . "AND isr = replicas"),
	'every partition is led with its whole ISR');

# SQL: replication factor 3, above the live brokers: the live ones lead,
# the broker down is the last replica and outside the ISR
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.create_topic('live3', 1, '{\"replication.factor\": 3}')");
is($c->coord->safe_psql('postgres', "SELECT replicas, isr FROM mq_coord.partition WHERE topic = 'live3'"),
	"{2,1,3}|{2,1}",
	"replication factor 3 with broker $down down: a live leader, broker $down the last replica, not in the ISR");
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = 2 FROM mq_coord.partition WHERE topic = 'live3' AND partition = 0"),
	'its live preferred leader is elected');

# SQL: replication factor 4, above the registered brokers, is refused, nothing made
my ($rc, $out, $err) = $c->coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT mq_coord.create_topic('live4', 1, '{\"replication.factor\": 4}')");
isnt($rc, 0, 'replication factor 4 with 3 registered brokers is refused');
like($err, qr/MQ046: replication.factor 4 is larger than the 3 registered brokers/,
	'with MQ046 naming the registered brokers');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'live4'"), '0',
	'and no topic was made');

# mq-kafka: CreateTopics v4 with replication factor 4 at broker 1's daemon
{
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, 'k4', 1, 4, 0, 0, 5000, 0);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 19, 4, $body);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'k4 38',
		'CreateTopics with replication factor 4 on 3 registered brokers: INVALID_REPLICATION_FACTOR');
	is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'k4'"), '0',
		'and no topic was made');
}
# and replication factor 3 there is placed with the broker down last
{
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, 'k3', 2, 3, 0, 0, 20000, 0);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 19, 4, $body, 0, 30);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'k3 0',
		"CreateTopics with replication factor 3 and broker $down down succeeds");
	is($c->coord->safe_psql('postgres',
			"SELECT count(*) FROM mq_coord.partition WHERE topic = 'k3' AND replicas[1] <> $down "
			  . "AND replicas[3] = $down AND NOT $down = ANY (isr)"),
		'2', "every partition led by a live broker, broker $down the last replica");
}
# and replication factor 2 there lands on the live brokers
{
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, 'k2', 3, 2, 0, 0, 20000, 0);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 19, 4, $body, 0, 30);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'k2 0', 'CreateTopics with replication factor 2 succeeds');
	is($c->coord->safe_psql('postgres',
			"SELECT count(*) FROM mq_coord.partition WHERE topic = 'k2' AND $down = ANY (replicas)"),
		'0', "with no replica on broker $down");
}

# validate_only (CreateTopics v1+, CreatePartitions v0+) answers what the
# real call answers, the coordinator deciding both, and changes nothing
# (before, it checked on the asked node only: RF 4 and a name only the
# cluster has passed; a replicated topic's CreatePartitions was MQ039)
sub create_topics_v4
{
	my ($broker, $name, $partitions, $rf, $validate) = @_;
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, $name, $partitions, $rf, 0, 0, 5000, $validate);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$broker]), 'tap', 19, 4, $body, 0, 30);
	my ($n, $got, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	return join(' ', $got // 'none', $code // 'none');
}
my $coord_topics = "SELECT count(*) FROM mq_coord.topic WHERE topic LIKE 'v\\_%'";
is(create_topics_v4(1, 'v_rf4', 1, 4, 1), 'v_rf4 38',
	'CreateTopics validate_only with replication factor 4 on 3 registered brokers: INVALID_REPLICATION_FACTOR');
$c->coord->safe_psql('postgres', "SELECT mq_coord.create_topic('v_solo', 1, '{\"replication.factor\": 1}')");
my $solo = $c->coord->safe_psql('postgres', "SELECT replicas[1] FROM mq_coord.partition WHERE topic = 'v_solo'");
my $other = $solo == 1 ? 2 : 1;
is($c->node($other)->safe_psql('postgres', "SELECT count(*) FROM mq.topics WHERE topic = 'v_solo'"), '0',
	"v_solo, on broker $solo, is not on broker $other's node");
is(create_topics_v4($other, 'v_solo', 1, 1, 1), 'v_solo 36',
	'CreateTopics validate_only of a name the cluster has, not the asked node: TOPIC_ALREADY_EXISTS');
is(create_topics_v4($other, 'v_solo', 1, 1, 0), 'v_solo 36', 'as the real call answers');
($rc, $out, $err) = $c->coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT mq_coord.create_topic('v_solo', 1)");
like($err, qr/MQ002: topic "v_solo" already exists/, 'which the coordinator raises as MQ002');
is(create_topics_v4(1, 'v_good', 2, 2, 1), 'v_good 0', 'CreateTopics validate_only of a good topic: no error');
is($c->coord->safe_psql('postgres', $coord_topics), '1', 'and no topic was made on the coordinator');
is($c->node(1)->safe_psql('postgres', "SELECT count(*) FROM mq.topics WHERE topic = 'v_good'"), '0',
	'nor on the asked node');
{
	# CreatePartitions v0: live2 (6 partitions) to 8, validate_only
	my $body = pack('l> n/a* l> l> l> C', 1, 'live2', 8, -1, 5000, 1);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 37, 0, $body, 0, 30);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'live2 0', 'CreatePartitions validate_only: no error');
	is($c->coord->safe_psql('postgres', "SELECT partitions FROM mq_coord.topic WHERE topic = 'live2'"), '6',
		'and the topic was not grown');
	$body = pack('l> n/a* l> l> l> C', 1, 'live2', 8, -1, 5000, 0);
	$r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 37, 0, $body, 0, 30);
	($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'live2 0', 'the real CreatePartitions: no error');
	is($c->coord->safe_psql('postgres', "SELECT partitions FROM mq_coord.topic WHERE topic = 'live2'"), '8',
		'and the coordinator grew the topic');
	# a topic of broker 1's node alone, not the cluster's: the coordinator
	# refuses to grow it (UNKNOWN_TOPIC_OR_PARTITION), validate_only as well
	$c->node(1)->safe_psql('postgres',
		"SELECT mq.create_topic('v_local', 1); SELECT mq.grant('alter', 'topic', 'v_local', 'mq_broker')");
	for my $validate (1, 0)
	{
		$body = pack('l> n/a* l> l> l> C', 1, 'v_local', 2, -1, 5000, $validate);
		$r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 37, 0, $body, 0, 30);
		($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
		is(join(' ', $name // 'none', $code // 'none'), 'v_local 3',
			"CreatePartitions (validate_only $validate) of a topic the coordinator does not know: "
			  . 'UNKNOWN_TOPIC_OR_PARTITION');
	}
}

# the broker back: it joins the ISR of the topic placed while it was down,
# and new topics place it among the live brokers again
$c->start_kafka_brokers(brokers => [$down]);
ok($c->coord->poll_query_until('postgres', "SELECT ($locked) = 1"), "broker $down is live again");
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 'live3' AND partition = 0"),
	"broker $down catches up and joins the ISR of live3");
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.create_topic('back3', 3, '{\"replication.factor\": 3}')");
is($c->coord->safe_psql('postgres',
		"SELECT count(*) FROM mq_coord.partition WHERE topic = 'back3' AND replicas[1] = $down"),
	'1', "broker $down leads one of three new partitions again");

$c->teardown;
done_testing();
