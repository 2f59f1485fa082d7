# Placement of new topics and partitions uses live brokers only
# (docs/replication.md, "Placement and reassignment"), as Kafka's
# controller places them on unfenced brokers: with one of three brokers
# stopped (its liveness lock gone, still registered), a topic of
# replication factor 2 created on the coordinator, and partitions added to
# it, have no replica on the stopped broker, and replication factor 3 is
# refused with MQ046 naming the live and registered counts, through SQL
# and through mq-kafka's CreateTopics (INVALID_REPLICATION_FACTOR), nothing
# made.  Before, the stopped broker got replicas (never in sync until it
# returned) and replication factor 3 was accepted.  With the broker back,
# replication factor 3 is placed again.
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

# SQL: replication factor 3 is refused, nothing made
my ($rc, $out, $err) = $c->coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT mq_coord.create_topic('live3', 1, '{\"replication.factor\": 3}')");
isnt($rc, 0, 'replication factor 3 with 2 live brokers is refused');
like($err, qr/MQ046: replication.factor 3 is larger than the 2 live brokers \(3 registered\)/,
	'with MQ046 naming the live and registered brokers');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'live3'"), '0',
	'and no topic was made');

# mq-kafka: CreateTopics v4 with replication factor 3 at broker 1's daemon
{
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, 'k3', 1, 3, 0, 0, 5000, 0);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 19, 4, $body);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $code // 'none'), 'k3 38',
		'CreateTopics with replication factor 3 and a broker down: INVALID_REPLICATION_FACTOR');
	is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'k3'"), '0',
		'and no topic was made');
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

# the broker back: replication factor 3 is placed again
$c->start_kafka_brokers(brokers => [$down]);
ok($c->coord->poll_query_until('postgres', "SELECT ($locked) = 1"), "broker $down is live again");
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.create_topic('live3', 1, '{\"replication.factor\": 3}')");
is($c->coord->safe_psql('postgres', "SELECT cardinality(replicas) FROM mq_coord.partition WHERE topic = 'live3'"),
	'3', 'replication factor 3 is placed on the three live brokers');

$c->teardown;
done_testing();
