# A replicated topic's config is the cluster's (docs/kafka.md, "Replicated
# clusters"): kafka-python's AlterConfigs, sent to a daemon whose node
# holds no replica of the topic, reaches the coordinator and every
# replica's node, and DescribeConfigs there describes it; SQL's
# mq_coord.alter_topic_config does the same.  Before, the daemon asked
# refused the unknown topic, and a daemon holding a replica changed its
# own node only.  Kafka's ACLs are the cluster's too: CreateAcls and
# DeleteAcls at one daemon reach every node's grants; and so are its SCRAM
# credentials: AlterUserScramCredentials at one daemon reaches every
# node's (before, only the asked daemon's node, so a client could not
# authenticate at the daemons leading its partitions).  Client quotas
# likewise: AlterClientQuotas at one daemon reaches every node's.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP qw(decode_json);
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request uvarint cstr);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $logs = $PostgreSQL::Test::Utils::log_path;

my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers(metrics => 1);
$c->create_topic('cfg', 1, { 'replication.factor' => 2 });
my %replica = map { $_ => 1 } split /,/,
  $c->coord->safe_psql('postgres', "SELECT array_to_string(replicas, ',') FROM mq_coord.partition WHERE topic = 'cfg'");
my ($outside) = grep { !$replica{$_} } 1 .. 3;
ok(defined $outside, 'one node holds no replica of the topic');

# each replica's node has the topic with retention.ms = $want
sub replicas_have
{
	my ($want) = @_;
	for my $i (sort keys %replica)
	{
		return 0 unless $c->node($i)->poll_query_until('postgres',
			"SELECT config->>'retention.ms' IS NOT DISTINCT FROM $want FROM mq.topics WHERE topic = 'cfg'");
	}
	return 1;
}

my $out = `timeout 120 /usr/bin/python3 $root/test/kafka/py/cluster.py configs @{[ $c->kafka_address($outside) ]} cfg retention.ms 123456 2>$logs/156_configs.err`;
is($? >> 8, 0, 'kafka-python exits successfully') or diag(`tail -n 20 $logs/156_configs.err`);
my $r = eval { decode_json($out // '') } // {};
is(join(' ', map { $r->{$_} // 'none' } qw(alter describe value)), '0 0 123456',
	'AlterConfigs at the daemon without a replica succeeds, and DescribeConfigs there describes the new value');
is($c->coord->safe_psql('postgres', "SELECT config->>'retention.ms' FROM mq_coord.topic WHERE topic = 'cfg'"),
	'123456', "the coordinator keeps the topic's new config");
ok(replicas_have("'123456'"), "every replica's node has it");

# AlterConfigs replaces the whole config: retention.ms back to its default
$out = `timeout 120 /usr/bin/python3 $root/test/kafka/py/cluster.py configs @{[ $c->kafka_address($outside) ]} cfg segment.ms 600000 2>>$logs/156_configs.err`;
$r = eval { decode_json($out // '') } // {};
is(join(' ', map { $r->{$_} // 'none' } qw(alter describe value)), '0 0 600000', 'a second AlterConfigs succeeds');
ok(replicas_have('NULL'), 'the key it did not name returns to its default on every replica');
is($c->coord->safe_psql('postgres', "SELECT config->>'replication.factor' FROM mq_coord.topic WHERE topic = 'cfg'"),
	'2', 'the replication factor stays');

# SQL on the coordinator
$c->coord->safe_psql('postgres',
	qq{SELECT mq_coord.alter_topic_config('cfg', '{"retention.ms": "777777", "segment.ms": "600000"}')});
ok(replicas_have("'777777'"), 'mq_coord.alter_topic_config reaches every replica too');
my ($rc, $o, $e) = $c->coord->psql('postgres',
	qq{SELECT mq_coord.alter_topic_config('cfg', '{"retention.ms": "soon"}')});
like($e, qr/retention\.ms/, 'a bad value is refused on the coordinator, with its key named');
is($c->coord->safe_psql('postgres', "SELECT config->>'retention.ms' FROM mq_coord.topic WHERE topic = 'cfg'"),
	'777777', 'and nothing changed');

# mqctl topic alter connected to the coordinator
my ($mrc, $mout) = $c->mqctl('topic', 'alter', 'cfg', '--config', 'retention.ms=888888');
ok($mrc == 0 && $mout =~ /^Altered topic cfg: config .*retention\.ms=888888/,
	'mqctl topic alter on the coordinator changes a replicated topic\'s config') or diag($mout);
ok(replicas_have("'888888'"), 'and every replica takes it');
($mrc, $mout) = $c->mqctl('topic', 'alter', 'cfg', '--delete-config', 'retention.ms');
ok($mrc == 0 && replicas_have('NULL'), '--delete-config resets it on every replica') or diag($mout);

# ACLs: the daemons' role may grant (alter on the cluster) on every node,
# and the grantee exists on every node
for my $i (1 .. 3)
{
	$c->node($i)->safe_psql('postgres',
		"CREATE ROLE acl_user; SELECT mq.grant('alter', 'cluster', 'kafka-cluster', 'mq_broker')");
}
sub grants_on
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SELECT count(*) FROM mq.grants WHERE grantee = 'acl_user' AND resource_name = 'cfg' AND operation = 'read'");
}
my $acl = sub {
	my $o = `timeout 120 /usr/bin/python3 $root/test/kafka/py/cluster.py acls @{[ $c->kafka_address($outside) ]} @_ cfg acl_user 2>>$logs/156_configs.err`;
	return eval { decode_json($o // '') } // {};
};
ok($acl->('create')->{ok}, 'CreateAcls at one daemon succeeds');
is(join(' ', map { grants_on($_) } 1 .. 3), '1 1 1', 'and the grant is on every node');
ok($acl->('delete')->{ok}, 'DeleteAcls at the same daemon succeeds');
is(join(' ', map { grants_on($_) } 1 .. 3), '0 0 0', 'and the grant is gone from every node');

# SCRAM credentials (KIP-554, raw v0 requests: the Debian clients have no
# admin call for them): the daemons' role may alter them (alter on the
# cluster, granted above), and the user is a role on every node
sub verifiers_on
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SELECT coalesce(string_agg(mechanism || '/' || iterations, ' ' ORDER BY mechanism), 'none') "
		  . "FROM mq.scram_credentials WHERE user_name = 'acl_user'");
}
# AlterUserScramCredentials at the daemon outside the topic: the error
# code of the one user named, or undef
my $scram = sub {
	my ($body) = @_;
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$outside]), 'tap', 51, 0, $body, 1) // return undef;
	# per user: its name (a compact string), its error code
	return $r =~ /\x09acl_user(..)/s ? unpack('s>', $1) : undef;
};
my $salted = 'k' x 32;
is($scram->(uvarint(1) . uvarint(2) . cstr('acl_user') . pack('c l>', 1, 4096) . cstr('salt-of-16-bytes')
	  . cstr($salted) . "\0\0"), 0, 'AlterUserScramCredentials at one daemon succeeds');
is(join(' ', map { verifiers_on($_) } 1 .. 3), join(' ', ('SCRAM-SHA-256/4096') x 3),
	'and the credential is on every node');
my %keys = map {
	$c->node($_)->safe_psql('postgres', "SELECT stored_key FROM mq.scram_credential WHERE user_name = 'acl_user'") => 1
} 1 .. 3;
is(scalar(keys %keys), 1, 'the same verifier on every node');
is($scram->(uvarint(2) . cstr('acl_user') . pack('c', 1) . "\0" . uvarint(1) . "\0"), 0,
	'a deletion at the same daemon succeeds');
is(join(' ', map { verifiers_on($_) } 1 .. 3), 'none none none', 'and the credential is gone from every node');

# client quotas (KIP-546, a raw v1 request): the daemons' role may set
# them (alter on the cluster, granted above); the error code of the one
# entry, for user acl_user's producer_byte_rate (remove: $remove)
sub quotas_on
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SELECT coalesce(string_agg(quota_key || '=' || quota_value, ' '), 'none') "
		  . "FROM mq.list_client_quotas() WHERE user_name = 'acl_user'");
}
my $quota = sub {
	my ($remove) = @_;
	my $body = uvarint(2) . uvarint(2) . cstr('user') . cstr('acl_user') . "\0" . uvarint(2)
	  . cstr('producer_byte_rate') . pack('d> c', 1048576, $remove) . "\0\0" . "\0\0";
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$outside]), 'tap', 49, 1, $body, 1) // return undef;
	return unpack('x10 s>', $r);    # header, throttle time, the entries' count: the entry's code
};
is($quota->(0), 0, 'AlterClientQuotas at one daemon succeeds');
is(join(' ', map { quotas_on($_) } 1 .. 3), join(' ', ('producer_byte_rate=1048576') x 3),
	'and the quota is on every node');
# every daemon reads its node's quotas (its role was granted the lookup,
# MqCluster.pm) within its ten-second refresh: the one set through node
# $outside's daemon counts on each
for my $i (1 .. 3)
{
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	my $seen;
	until (($seen = `curl -sf http://127.0.0.1:$c->{kafka_metrics_port}[$i]/metrics` // '')
		  =~ /^mq_kafka_client_quotas 1$/m || time > $deadline)
	{
		select(undef, undef, undef, 0.2);
	}
	like($seen, qr/^mq_kafka_client_quotas 1$/m, "node ${i}'s daemon enforces the quota");
}
is($quota->(1), 0, 'its removal at the same daemon succeeds');
is(join(' ', map { quotas_on($_) } 1 .. 3), 'none none none', 'and the quota is gone from every node');

# a replication factor above the registered brokers: Kafka's
# INVALID_REPLICATION_FACTOR (CreateTopics v4), nothing created
{
	my $body = pack('l> n/a* l> s> l> l> l> C', 1, 'rf4', 1, 4, 0, 0, 5000, 0);
	my $r = kafka_request(kafka_connect($c->{kafka_port}[1]), 'tap', 19, 4, $body);
	my ($n, $name, $err) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	is(join(' ', $name // 'none', $err // 'none'), 'rf4 38',
		'CreateTopics with a replication factor of 4 on 3 brokers: INVALID_REPLICATION_FACTOR');
	is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'rf4'"), '0',
		'and no topic was made');
}

$c->teardown;
done_testing();
