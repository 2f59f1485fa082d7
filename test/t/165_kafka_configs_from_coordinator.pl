# DescribeConfigs of a replicated topic whose only node is down (docs/
# kafka.md, "Replicated clusters"): its config is the cluster's, kept on
# the coordinator, so the daemon asked answers from that copy, as Kafka
# answers from the controller's whatever brokers are up, with the same
# keys, values, sources, synonyms, types and documentation a node holding
# the topic gives (byte for byte, DescribeConfigs v0, v1, v3 and v4).
# DESCRIBE_CONFIGS is checked on the asked daemon's node, as the client;
# an unknown topic stays UNKNOWN_TOPIC_OR_PARTITION.  Before, with the
# topic's node's database down, the answer was KAFKA_STORAGE_ERROR.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request uvarint cstr);
use MqCluster;

my $c = MqCluster->new(nodes => 2);
$c->start_kafka_brokers;
$c->create_topic('solo', 1, { 'replication.factor' => 1, 'retention.ms' => 123456 });
my $holder = $c->coord->safe_psql('postgres', "SELECT replicas[1] FROM mq_coord.partition WHERE topic = 'solo'");
my ($asked) = grep { $_ != $holder } 1 .. 2;
ok($c->node($holder)->poll_query_until('postgres',
		"SELECT config->>'retention.ms' = '123456' FROM mq.topics WHERE topic = 'solo'"),
	'the topic is on its one node');
is($c->node($asked)->safe_psql('postgres', "SELECT count(*) FROM mq.topics WHERE topic = 'solo'"), '0',
	'and not on the other');

# DescribeConfigs v$v of $topic at node $asked's daemon, every key, with
# synonyms and documentation: the raw answer (after the correlation id)
sub describe
{
	my ($v, $topic) = @_;
	my $body = $v >= 4
	  ? uvarint(2) . pack('c', 2) . cstr($topic) . "\0\0" . pack('c c', 1, 1) . "\0"
	  : pack('l> c n/a* l>', 1, 2, $topic, -1) . ($v >= 1 ? pack('c', 1) : '') . ($v >= 3 ? pack('c', 1) : '');
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$asked]), 'tap', 32, $v, $body, $v >= 4);
	return defined $r ? substr($r, 4) : undef;
}

# the error code of a v0-v3 answer
sub code { return defined $_[0] ? unpack('x8 s>', $_[0]) : 'none'; }

# a v3 answer's keys: "key=value read_only source sensitive [synonym=value/source ...] type doc"
sub keys_v3
{
	my ($r) = @_;
	my $p = 8;
	my $i16 = sub { my $x = unpack('s>', substr($r, $p, 2)); $p += 2; $x };
	my $i8 = sub { my $x = unpack('c', substr($r, $p, 1)); $p += 1; $x };
	my $i32 = sub { my $x = unpack('l>', substr($r, $p, 4)); $p += 4; $x };
	my $str = sub { my $n = $i16->(); return 'null' if $n < 0; my $s = substr($r, $p, $n); $p += $n; $s };
	my %k;
	$i16->();
	$str->();
	$i8->();
	$str->();
	for (1 .. $i32->())
	{
		my $key = $str->();
		my $line = $str->() . ' ' . join(' ', $i8->(), $i8->(), $i8->());
		my @syn = map { $str->() . '=' . $str->() . '/' . $i8->() } 1 .. $i32->();
		$k{$key} = "$line [@syn] " . $i8->() . ' ' . $str->();
	}
	return \%k;
}

# the daemon asked reads the view naming the topic within its refresh
my ($before, $r) = ({});
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
until (code($r = describe(3, 'solo')) eq '0' || time > $deadline)
{
	usleep(100_000);
}
is(code($r), 0, "DescribeConfigs at the other node's daemon, the topic's node up, answers");
my $k = keys_v3($r // '');
is($k->{'retention.ms'}, '123456 0 1 0 [retention.ms=123456/1 log.retention.ms=-1/5] 0 null',
	'the key set: its value, DYNAMIC_TOPIC_CONFIG, its synonyms');
is($k->{'segment.bytes'}, '1073741824 0 5 0 [log.segment.bytes=1073741824/5] 0 null',
	'a key not set: its default, DEFAULT_CONFIG');
$before->{$_} = describe($_, 'solo') for 0, 1, 3, 4;

# the topic's one node down: its database stopped
$c->node($holder)->stop('fast');
is(code(describe(3, 'solo')), 29,
	"without DESCRIBE_CONFIGS on the asked daemon's node: TOPIC_AUTHORIZATION_FAILED, not KAFKA_STORAGE_ERROR");
$c->node($asked)->safe_psql('postgres',
	"SELECT mq.grant('alter', 'topic', 'solo', '$MqCluster::BROKER_ROLE'); "
	  . "SELECT mq.grant('alter', 'topic', 'nosuch', '$MqCluster::BROKER_ROLE')");
for my $v (0, 1, 3, 4)
{
	my $after = describe($v, 'solo');
	ok(defined $after && defined $before->{$v} && $after eq $before->{$v},
		"with it, DescribeConfigs v$v answers from the coordinator's config as the node did")
	  or diag('the first bytes before and after: ',
		join(' ', map { defined $_ ? unpack('H48', $_) : 'none' } $before->{$v}, $after));
}
is(code(describe(3, 'nosuch')), 3, 'an unknown topic is UNKNOWN_TOPIC_OR_PARTITION');

# a new config, stored on the coordinator only (the node cannot take it)
$c->coord->safe_psql('postgres', qq{SELECT mq_coord.alter_topic_config('solo', '{"retention.ms": "654321"}')});
$k = keys_v3(describe(3, 'solo') // '');
is($k->{'retention.ms'}, '654321 0 1 0 [retention.ms=654321/1 log.retention.ms=-1/5] 0 null',
	"the coordinator's copy is the one described");

$c->teardown;
done_testing();
