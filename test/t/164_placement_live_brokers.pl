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
