# A 3-node cluster whose mq-kafka daemons serve TLS (issue 24), configured
# by their [kafka] sections: listeners SSL (first, so it is the one each
# node registers on the coordinator) and a loopback PLAINTEXT one.  A
# client bootstrapping over TLS from any node learns every node's TLS
# address, and reaches every partition's leader over mutual TLS with its
# certificate's principal (mapped by ssl.principal.mapping.rules to a
# role): it produces to partitions led by all three nodes, consumes them
# from another bootstrap node, and commits in a group; a role without
# write on the topic is refused by every leader.  SIGHUP to mq-broker
# reaches its mq-kafka, which reloads its certificate.
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $pki = PostgreSQL::Test::Utils::tempdir();
system('bash', '-c', "source '$root/test/kafka/tls_certs.bash' && tls_make_certs '$pki'") == 0
  or die 'cannot make the test PKI';

my $c = MqCluster->new(nodes => 3);
my $rules = 'RULE:^CN=([^,]*),OU=[a-z]*,O=mq test$/mq_tls_$1/L';
$c->start_kafka_brokers(section => "[kafka]\n"
	  . "listeners = SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092\n"
	  . "ssl.certificate.location = $pki/server.crt\n"
	  . "ssl.key.location = $pki/server.key\n"
	  . "ssl.ca.location = $pki/ca.crt\n"
	  . "ssl.client.auth = requested\n"
	  . "ssl.principal.mapping.rules = $rules\n");
$c->create_topic('tlst', 6, { 'replication.factor' => 3, 'min.insync.replicas' => 1 });
# the principal's role on every node, a member of which the daemons' role is
for my $i (1 .. 3)
{
	$c->node($i)->safe_psql('postgres',
		"CREATE ROLE mq_tls_app1; GRANT mq_tls_app1 TO $MqCluster::BROKER_ROLE; "
		  . "SELECT mq.grant('read, write, describe', 'topic', 'tlst', 'mq_tls_app1'); "
		  . "SELECT mq.grant('read', 'group', 'tls_g', 'mq_tls_app1'); "
		  . "CREATE ROLE mq_tls_app2; GRANT mq_tls_app2 TO $MqCluster::BROKER_ROLE; "
		  . "SELECT mq.grant('read, describe', 'topic', 'tlst', 'mq_tls_app2')");
}

my $conf = "$pki/kcat.conf";
open(my $fh, '>', $conf) or die;
print $fh "security.protocol=ssl\nssl.ca.location=$pki/ca.crt\n"
  . "ssl.certificate.location=$pki/client.crt\nssl.key.location=$pki/client.key\n";
close $fh;
# preferred leaders take their partitions back after a while: wait until
# they have (every node leads some, and the leaders stay put for the test)
ok($c->wait_preferred_leaders('tlst'), 'every node leads partitions of tlst');
my %leaders = map { $_ => $c->leader('tlst', $_) } 0 .. 5;
sub stored
{
	my ($p) = @_;
	return $c->node($c->leader('tlst', $p))->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('tlst', $p, 0, 100)");
}

# Metadata over TLS from node 2: every node at its TLS address
my $md;
for (1 .. 100)
{
	my $out = `kcat -b @{[ $c->kafka_address2(2) ]} -F $conf -L -J -t tlst 2>/dev/null`;
	$md = eval { decode_json($out) };
	last if $md && @{ $md->{brokers} } == 3;
	select(undef, undef, undef, 0.1);
}
is_deeply([ sort map { $_->{name} } @{ $md->{brokers} } ],
	[ sort map { $c->kafka_address2($_) } 1 .. 3 ],
	'Metadata over TLS names each node by its TLS listener');

# produce to each partition over mutual TLS, bootstrapping from node 1
my $in = "$pki/in";
for my $p (0 .. 5)
{
	open(my $f, '>', $in) or die;
	print $f map { "p$p-$_\n" } 1 .. 5;
	close $f;
	my $rc = system('timeout', '60', 'kcat', '-b', $c->kafka_address2(1), '-F', $conf,
		'-P', '-t', 'tlst', '-p', $p, '-l', $in);
	is($rc, 0, "kcat produces to partition $p (led by node $leaders{$p}) over mutual TLS");
	is(stored($p), '5', "its leader stored the 5 records");
}

# consume everything from node 3's TLS listener, in a group that commits
my $out = `timeout 60 kcat -b @{[ $c->kafka_address2(3) ]} -F $conf -C -G tls_g -o beginning -e -q tlst 2>&1`;
my @got = sort grep { /^p\d-\d$/ } split /\n/, $out;
is(scalar @got, 30, 'a group consumes the 30 records of every leader over mutual TLS')
  or diag($out);

# another principal (app2: read only) is refused by each leader
open($fh, '>', "$pki/app2.conf") or die;
print $fh "security.protocol=ssl\nssl.ca.location=$pki/ca.crt\n"
  . "ssl.certificate.location=$pki/other.crt\nssl.key.location=$pki/other.key\n";
close $fh;
for my $p (0 .. 5)
{
	$out = `timeout 60 kcat -b @{[ $c->kafka_address2(1) ]} -F $pki/app2.conf -P -t tlst -p $p -X message.timeout.ms=5000 -l $in 2>&1`;
	like($out, qr/Topic authorization failed/,
		"mq_tls_app2 (read only) gets TOPIC_AUTHORIZATION_FAILED from node $leaders{$p}");
}
is(join(',', map { stored($_) } 0 .. 5),
	'5,5,5,5,5,5', 'and stored nothing');

# SIGHUP to mq-broker: its mq-kafka reloads
$c->signal_broker(1, 'HUP');
my $reloaded;
for (1 .. 100)
{
	last if $reloaded = $c->broker_log(1) =~ /tls reloaded/;
	select(undef, undef, undef, 0.1);
}
ok($reloaded, 'SIGHUP to mq-broker makes its mq-kafka reload the certificate');
ok(kill(0, $c->kafka_pid(1)), 'and the same mq-kafka keeps running');

done_testing();
