# The cluster's view through the Kafka protocol, with brokers configured
# by their [kafka] sections: Metadata from one bootstrap address names
# every live daemon and the coordinator's leaders; when a node dies its
# daemon leaves the view (Metadata drops it, its partitions get the new
# leaders, which DescribeTopicPartitions names too, a page at a time) and the groups it coordinated move to one other daemon that
# every daemon names; when the node is back they move back.  A stopped
# mq-broker takes its mq-kafka with it.
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;
$c->create_topic('vt', 3, { 'replication.factor' => 3, 'min.insync.replicas' => 1 });

# kcat -L -J from node1's daemon: { broker id => 1 }, { partition => leader }
sub metadata
{
	my $out = `kcat -b @{[ $c->kafka_address(1) ]} -L -J -t vt 2>/dev/null`;
	my $md = eval { decode_json($out) } or return ({}, {});
	my %brokers = map { $_->{id} => 1 } @{ $md->{brokers} };
	my %leaders = map { $_->{partition} => $_->{leader} } @{ $md->{topics}[0]{partitions} // [] };
	return (\%brokers, \%leaders);
}

sub coord_leaders { return { map { $_ => $c->leader('vt', $_) } 0 .. 2 }; }

# Metadata agrees with the coordinator (polled: the view is refreshed every 500 ms)
sub wait_metadata
{
	my ($want_brokers, $what) = @_;
	my ($b, $l, $want);
	for (1 .. 300)
	{
		$want = coord_leaders();
		($b, $l) = metadata();
		last if join(',', sort keys %$b) eq $want_brokers && join(',', map { $l->{$_} // '' } 0 .. 2)
		  eq join(',', map { $want->{$_} } 0 .. 2);
		select(undef, undef, undef, 0.1);
	}
	is(join(',', sort keys %$b), $want_brokers, "Metadata names brokers $want_brokers $what");
	is_deeply($l, $want, "Metadata names the coordinator's leaders $what");
}

wait_metadata('1,2,3', 'from one bootstrap address');

# a group that broker 2's daemon coordinates, by every daemon's answer
my ($group, @named);
for my $i (1 .. 100)
{
	@named = map { join ':', $c->kafka_find_coordinator($_, "g$i") } 1 .. 3;
	if ($named[0] eq '0:2') { $group = "g$i"; last; }
}
ok(defined $group, 'some group is coordinated by broker 2');
is_deeply(\@named, [ ('0:2') x 3 ], "every daemon names broker 2 for $group");

# node 2 dies: its daemon gives up its place, its groups move
$c->kill9_node(2);
my @after;
for (1 .. 300)
{
	@after = map { join ':', $c->kafka_find_coordinator($_, $group) } 1, 3;
	last if $after[0] eq $after[1] && $after[0] =~ /^0:[13]$/;
	select(undef, undef, undef, 0.1);
}
like($after[0], qr/^0:[13]$/, "$group moved to a live daemon ($after[0])");
is($after[1], $after[0], 'both live daemons name the same one');
# the other live daemon does not describe it: it is not its coordinator
my ($now) = $after[0] =~ /^0:(\d)$/;
my $other = $now == 1 ? 3 : 1;
my ($derr) = $c->kafka_describe_group($other, $group);
is($derr, 16, "DescribeGroups of $group at broker $other is NOT_COORDINATOR");
my ($merr, $mstate) = $c->kafka_describe_group($now, $group);
is("$merr $mstate", '0 Dead', "DescribeGroups of $group at broker $now answers for it (no members: Dead)");
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM mq_coord.partition WHERE topic = 'vt' AND leader = 2")
  or diag('node 2 still leads');
wait_metadata('1,3', 'without the dead node');

# DescribeTopicPartitions (v0) from node 1's daemon: the same leaders, in
# two pages of two partitions and one
{
	my ($port) = $c->kafka_address(1) =~ /:(\d+)$/;
	my $out = `PYTHONPATH=$root/test/kafka/py /usr/bin/python3 $root/test/kafka/py/topic_partitions.py $port '[[["vt"], 2, null], [["vt"], 2, ["vt", 2]]]'`;
	my @calls = @{ (eval { decode_json($out) } // {})->{calls} // [] };
	my %l = map { $_->[1] => $_->[2] } map { @{ $_->{topics}[0][4] // [] } } @calls;
	is_deeply(\%l, coord_leaders(), 'DescribeTopicPartitions names the coordinator\'s leaders without the dead node');
	is_deeply([ map { $_->{next} } @calls ], [ [ 'vt', 2 ], undef ], 'in two pages, the first ending at partition 2');
}

# node 2 is back: its daemon is live again and takes its groups back
$c->node(2)->start;
my $back;
for (1 .. 300)
{
	$back = join ':', $c->kafka_find_coordinator(1, $group);
	last if $back eq '0:2';
	select(undef, undef, undef, 0.1);
}
is($back, '0:2', "$group is coordinated by broker 2 again");
wait_metadata('1,2,3', 'with the node back');

# a stopped broker stops its mq-kafka
my $kpid = $c->kafka_pid(3);
ok(kill(0, $kpid), "broker 3's mq-kafka runs (pid $kpid)");
$c->signal_broker(3, 'TERM');
my $gone;
for (1 .. 100) { last if $gone = !kill(0, $kpid); select(undef, undef, undef, 0.1); }
ok($gone, 'stopping broker 3 stopped its mq-kafka');

done_testing();
