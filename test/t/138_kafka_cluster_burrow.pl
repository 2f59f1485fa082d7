# Burrow (Debian's burrow 1.2.1, its defaults) on the three-node cluster
# (issue 23's acceptance): given every node's mq-kafka as its bootstrap
# servers, it reads __consumer_offsets (each node's two partitions, the
# commits that node took as leader; docs/design.md, "__consumer_offsets
# in a cluster") and reports per partition the lag mq.consumer_lag gives
# on the partition's leader, for a group committing through Kafka
# (kafka-python's OffsetCommit, routed to each leader) and one committing
# through SQL (mq.commit_offset on the leader), on partitions led by three
# different nodes.  Naming the topic at one daemon makes it on every node;
# every daemon describes it alike.  An SQL
# group's metadata record (mq.join_group) is decoded by Burrow without a
# warning.  Then the leader of one partition is killed: after the
# election both groups commit on the new leader, and Burrow follows.
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $logs = $PostgreSQL::Test::Utils::log_path;
my $dir = PostgreSQL::Test::Utils::tempdir();
my $py = '/usr/bin/python3';    # Debian's python3-kafka

my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;
$c->create_topic('bt', 3, { 'replication.factor' => 3, 'min.insync.replicas' => 1 });
ok($c->wait_preferred_leaders('bt'), 'the three partitions are led by three nodes, to stay');
# Metadata of __consumer_offsets from each daemon: "partition:leader" list
sub co_metadata
{
	my ($i) = @_;
	my $out = `kcat -b @{[ $c->kafka_address($i) ]} -L -J -t __consumer_offsets 2>/dev/null`;
	my $md = eval { decode_json($out) } or return '';
	return join ',', map { "$_->{partition}:$_->{leader}" }
	  sort { $a->{partition} <=> $b->{partition} } @{ $md->{topics}[0]{partitions} // [] };
}
is(join(',', map { $c->node($_)->safe_psql('postgres',
				"SELECT count(*) FROM mq.topics WHERE topic = '__consumer_offsets'") } 1 .. 3),
	'0,0,0', 'no node has __consumer_offsets before a client names it');
# naming it at one daemon makes it on every node: (3 + 1) * 2 partitions
my $want_md = join ',', map { "$_:" . ($_ < 4 ? 1 : int($_ / 2)) } 0 .. 7;
# (kcat gives up after 5 s: making 8 partitions on three nodes at once
# can take longer on a busy machine, and clients ask again)
my $md2 = '';
for (1 .. 30) { last if ($md2 = co_metadata(2)) eq $want_md; }
is($md2, $want_md, "broker 2 describes __consumer_offsets: broker b leads b*2 and b*2+1, 0 and 1 broker 1");
is(join(',', map { $c->node($_)->safe_psql('postgres',
				"SELECT partitions FROM mq.topics WHERE topic = '__consumer_offsets'") } 1 .. 3),
	'8,8,8', 'that made it on every node, with 8 partitions');
is(co_metadata($_), $want_md, "broker $_ describes it alike") for 1, 3;

# the daemons' role reads it (Kafka's READ on the topic); anonymous
# clients are that role
$c->node($_)->safe_psql('postgres', "SELECT mq.grant('read', 'topic', '__consumer_offsets', 'mq_broker')")
  for 1 .. 3;

# records and commits: partition p gets 10 + p records on its leader
for my $p (0 .. 2)
{
	my $node = $c->node($c->leader('bt', $p));
	$node->safe_psql('postgres',
		"SELECT mq.send('bt', NULL::bytea, 'x'::bytea, partition => $p) FROM generate_series(1, 10 + $p)");
	$node->safe_psql('postgres', "SELECT mq.commit_offset('bts', 'bt', $p, 2 + $p)");
}
$c->node(1)->safe_psql('postgres', "SELECT count(*) FROM mq.join_group('btj', ARRAY['bt'])");
my $out = `timeout 120 $py $root/test/kafka/py/coffsets.py commit @{[ $c->kafka_address(2) ]} bt btk 0:4 1:5 2:6 2>$logs/138_commit1.err`;
is($? >> 8, 0, 'a kafka-python group member commits on the three leaders')
  or diag(`tail -n 20 $logs/138_commit1.err`);

# the Kafka group's membership as a group metadata record (GroupMetadataKey
# version 2) in its coordinator's node's own partitions (mq-kafka keeps no
# group state in a cluster, but appends the record: group_store.c)
my $group_record = "SELECT count(*) > 0 FROM mq.topics t, generate_series(0, t.partitions - 1) p,"
  . " LATERAL mq.fetch('__consumer_offsets', p, 0) f WHERE t.topic = '__consumer_offsets'"
  . " AND f.key = '\\x0002'::bytea || mq._kafka_string('btk') AND f.value IS NOT NULL";
my $found;
for (1 .. 300)
{
	$found = grep { $c->node($_)->safe_psql('postgres', $group_record) eq 't' } 1 .. 3;
	last if $found;
	usleep(100_000);
}
ok($found, "the Kafka group's metadata is a record of a node's __consumer_offsets partitions");

# ZooKeeper (Burrow's coordinator insists on one) and Burrow
my $zk_port = PostgreSQL::Test::Cluster::get_free_port();
my $http_port = PostgreSQL::Test::Cluster::get_free_port();
mkdir "$dir/zk";
mkdir "$dir/burrow";
my $zk = fork // die;
if ($zk == 0)
{
	open STDOUT, '>', "$logs/138_zk.log";
	open STDERR, '>&', \*STDOUT;
	exec 'java', '-cp', '/usr/share/java/zookeeper.jar', '-Dzookeeper.admin.enableServer=false',
	  'org.apache.zookeeper.server.ZooKeeperServerMain', $zk_port, "$dir/zk";
	exit 127;
}
system('bash', '-c', "source '$root/test/kafka/burrow_conf.bash' && burrow_conf \"\$@\"", 'burrow_conf',
	"$dir/burrow", $zk_port, $http_port, map { $c->kafka_address($_) } 1 .. 3) == 0
  or die 'cannot write burrow.toml';
my $burrow;
END
{
	local $?;
	for my $pid (grep { defined && $_ > 0 } $burrow, $zk)
	{
		kill 'TERM', $pid;
		waitpid $pid, 0;
	}
}
# ZooKeeper serving (its "srvr" answers), then Burrow
my $zk_up;
for (1 .. 600)
{
	$zk_up = `timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$zk_port && printf srvr >&3 && cat <&3' 2>/dev/null`
	  =~ /^Mode: standalone/m;
	last if $zk_up;
	usleep(100_000);
}
ok($zk_up, 'ZooKeeper serves');
$burrow = fork // die;
if ($burrow == 0)
{
	open STDOUT, '>', "$logs/138_burrow.log";
	open STDERR, '>&', \*STDOUT;
	exec 'Burrow', '--config-dir', "$dir/burrow";
	exit 127;
}

# "topic partition committed lag" lines, from Burrow's HTTP API and from
# mq.consumer_lag on each partition's leader
sub burrow_lag
{
	my ($group) = @_;
	my $j = eval { decode_json(`curl -s http://127.0.0.1:$http_port/v3/kafka/mq/consumer/$group/lag`) };
	my $parts = $j && $j->{status} ? $j->{status}{partitions} // [] : [];
	return join "\n", map { "$_->{topic} $_->{partition} " . ($_->{end}{offset} // '') . " $_->{current_lag}" }
	  sort { $a->{partition} <=> $b->{partition} } grep { $_->{end} } @$parts;
}

sub mq_lag
{
	my ($group) = @_;
	return join "\n", map {
		my $p = $_;
		$c->node($c->leader('bt', $p))->safe_psql('postgres',
			"SELECT topic || ' ' || partition || ' ' || committed_offset || ' ' || lag FROM mq.consumer_lag"
			  . " WHERE group_id = '$group' AND topic = 'bt' AND partition = $p")
	} 0 .. 2;
}

# wait (up to 90 s) until Burrow agrees with mq for both groups
sub wait_agree
{
	my $deadline = time + 90;
	while (time < $deadline)
	{
		return 1 if !grep { burrow_lag($_) ne mq_lag($_) } 'btk', 'bts';
		usleep(250_000);
	}
	return 0;
}

wait_agree();
is(burrow_lag('btk'), "bt 0 4 6\nbt 1 5 6\nbt 2 6 6", "Burrow reports the Kafka group's lag per partition");
is(burrow_lag('btk'), mq_lag('btk'), '... as mq.consumer_lag on the leaders does');
is(burrow_lag('bts'), "bt 0 2 8\nbt 1 3 8\nbt 2 4 8", "Burrow reports the SQL group's lag per partition");
is(burrow_lag('bts'), mq_lag('bts'), '... as mq.consumer_lag on the leaders does');

# a leader change: kill the node leading partition 1 (not broker 1, whose
# daemon stays the bootstrap), elect another, commit there
my $q = $c->leader('bt', 1) == 1 ? 2 : 1;
my $victim = $c->leader('bt', $q);
$c->kill9_node($victim);
ok($c->coord->poll_query_until('postgres',
		"SELECT leader IS NOT NULL AND leader <> $victim FROM mq_coord.partition WHERE topic = 'bt' AND partition = $q"),
	"partition $q has a new leader after its node ($victim) died");
# the dead node's two partitions have no leader, from every live daemon
my $want_down = join ',', map { "$_:" . ($_ < 4 ? 1 : int($_ / 2) == $victim ? -1 : int($_ / 2)) } 0 .. 7;
my %down;
for (1 .. 300)
{
	%down = map { $_ => co_metadata($_) } grep { $_ != $victim } 1 .. 3;
	last if !grep { $_ ne $want_down } values %down;
	usleep(100_000);
}
is($down{$_}, $want_down, "broker $_ describes the dead broker's two partitions without a leader")
  for sort keys %down;
my $new = $c->leader('bt', $q);
my $live = $victim == 2 ? 3 : 2;
# the new leader knows it leads (its broker stepped it)
ok($c->node($new)->poll_query_until('postgres',
		"SELECT role = 'leader' FROM mq.replica_status WHERE topic = 'bt' AND partition = $q"),
	"node $new leads partition $q");
$c->node($new)->safe_psql('postgres', "SELECT mq.commit_offset('bts', 'bt', $q, 9)");
my $ok = 0;
for (1 .. 20)
{
	system("timeout 120 $py $root/test/kafka/py/coffsets.py commit @{[ $c->kafka_address($live) ]} bt btk $q:8"
		  . " >>$logs/138_commit2.log 2>&1");
	last if $ok = ($? == 0);
	sleep 1;
}
ok($ok, "the Kafka group commits partition $q on its new leader");
wait_agree();
is(burrow_lag('btk'), mq_lag('btk'), "Burrow follows the Kafka group's commit on the new leader");
like(burrow_lag('btk'), qr/^bt $q 8 /m, "... which it reports for partition $q");
is(burrow_lag('bts'), mq_lag('bts'), "Burrow follows the SQL group's commit on the new leader");
like(burrow_lag('bts'), qr/^bt $q 9 /m, "... which it reports for partition $q");

ok(kill(0, $burrow), 'Burrow is still running');
my $blog = slurp_file("$logs/138_burrow.log");
# Burrow 1.2.1 decodes offset commits (value versions 0, 1 and 3); group
# metadata it knows up to value version 1, so it skips the version 3 that
# Kafka 3.x writes (from Kafka too), naming the group and the version
my @undecoded = grep { /failed to decode/ } split /\n/, $blog;
is(scalar(grep { !/"message_type":"metadata".*"reason":"value version","version":3/ } @undecoded), 0,
	'Burrow decoded every offset commit record')
  or diag(join "\n", @undecoded[0 .. 4]);
ok(scalar(grep { /"group":"btj"/ } @undecoded),
	"it read the SQL group's metadata record (key version 2), and skipped its value version 3 as Kafka 3.x's");
if (!Test::More->builder->is_passing)
{
	diag(join "\n", (grep { !/"debug"/ } split /\n/, $blog)[-30 .. -1]);
}

done_testing();
