# Kafka clients from Debian across a leader change on the three-node
# cluster (issue 23's acceptance): kafka-python (test/kafka/py/cluster.py)
# and sarama (test/kafka/go/sarama_cluster.go) each produce to a topic of
# three partitions (one led by each node, replication factor 3, min ISR
# 2) while a member of a consumer group reads and commits, all
# bootstrapped through one daemon; a partition leader's node (not the
# bootstrap's) is killed -9 mid-run.
#   - Producers keep their defaults but acks=all (with the default
#     acks=1, Kafka too may lose an acknowledged record when its leader
#     dies) and, for kafka-python, retries=5 (its default is 0; sarama
#     retries 3 times by default): they follow Metadata to the new
#     leaders, and every record they had acknowledged is in the log, at
#     the offset it was acknowledged at, by an independent read (SQL on
#     each partition's leader once the test is over).
#   - Each group member stops after half the records; a second member
#     then starts exactly at the offsets committed on the leaders and
#     reads the rest: between them every record of the log is read, none
#     twice unless a commit failed, and the group's final committed
#     offsets are the log ends.
use strict;
use warnings;

use POSIX ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $logs = $PostgreSQL::Test::Utils::log_path;
my $py = '/usr/bin/python3';    # Debian's python3-kafka
my $n = 3000;

# sarama built offline against Debian's package (MqCluster::go_build: the
# tests share its build cache)
my $sarama = "$dir/sarama_cluster";
MqCluster::go_build('sarama_cluster', $sarama, "$logs/141_go_build.log")
  or BAIL_OUT('cannot build test/kafka/go/sarama_cluster.go offline against Debian\'s sarama');

my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers;
$c->create_topic($_, 3, { 'replication.factor' => 3, 'min.insync.replicas' => 2 }) for 'fkp', 'fsr';
# settled: each partition on its preferred leader with its whole ISR (a
# broker slow to start leaves its partitions with another until the
# preferred-leader handover 10 s later, which would move them mid-run)
ok($c->wait_preferred_leaders('fkp', 'fsr'), 'each topic has a partition led by each node, its preferred leader');
my $bootnode = 1;
my $boot = $c->kafka_address($bootnode);
my $victim = 2;
my %led_by_victim = map { my $t = $_; ($t => [ grep { $c->leader($t, $_) == $victim } 0 .. 2 ]) } 'fkp', 'fsr';

# a client in the background, its output in a file
my %pid;
sub start
{
	my ($name, @cmd) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>', "$dir/$name.out" or POSIX::_exit(1);
		open STDERR, '>', "$logs/141_$name.err" or POSIX::_exit(1);
		exec 'timeout', 240, @cmd or POSIX::_exit(1);
	}
	$pid{$name} = $pid;
}
sub lines { open(my $fh, '<', "$dir/$_[0].out") or return (); my @l = <$fh>; chomp @l; return @l; }
sub finish
{
	my ($name) = @_;
	waitpid($pid{$name}, 0);
	is($? >> 8, 0, "$name exits successfully") or diag(`tail -n 30 $logs/141_$name.err`);
	delete $pid{$name};
	return lines($name);
}
END { kill 'KILL', values %pid; }

# the client's lines so far match $re at least $count times
sub wait_lines
{
	my ($name, $re, $count) = @_;
	for (1 .. 1200)
	{
		return 1 if grep({ /$re/ } lines($name)) >= $count;
		usleep(100_000);
	}
	return 0;
}

$ENV{PACE_MS} = 150;    # about 330 records a second, some ten seconds each
start('kpy_produce', $py, "$root/test/kafka/py/cluster.py", 'produce', $boot, 'fkp', $n, 'all', 5);
start('srm_produce', $sarama, 'produce', $boot, 'fsr', $n, 'all');
start('kpy_first', $py, "$root/test/kafka/py/cluster.py", 'consume', $boot, 'fkp', 'fkg', $n / 2, 60);
start('srm_first', $sarama, 'consume', $boot, 'fsr', 'fsg', $n / 2, 60);
ok(wait_lines('kpy_produce', qr/^ack /, $n / 4) && wait_lines('srm_produce', qr/^ack /, $n / 4),
	'both producers had a quarter of their records acknowledged');
# acknowledgements each producer had before the kill
my %before = map { $_ => scalar(grep { /^ack / } lines("${_}_produce")) } 'kpy', 'srm';
$c->kill9_node($victim);
diag("killed node$victim, the leader of fkp/@{$led_by_victim{fkp}} and fsr/@{$led_by_victim{fsr}}");

my %acked;
for my $t ([ 'kpy', 'fkp' ], [ 'srm', 'fsr' ])
{
	my ($who, $topic) = @$t;
	my @out = finish("${who}_produce");
	my ($done) = grep { /^done / } @out;
	like($done // '', qr/^done \d+ \d+$/, "$who: the producer ended ($done)");
	$acked{$topic} = [ map { /^ack (\S+) (\d+) (\d+)$/ ? "$2/$3 $1" : () } @out ];
	my @failed = grep { /^fail / } @out;
	diag("$who: " . scalar(@{ $acked{$topic} }) . ' acknowledged, ' . scalar(@failed) . " failed: @failed[0 .. 2]");
	cmp_ok(scalar @{ $acked{$topic} }, '>=', $n / 2, "$who: most records were acknowledged across the leader change");
	# (all of them after the kill: the last 200 alone once held none of
	# that partition's, on a loaded machine)
	my %after = map { (split m{/})[0] => 1 } @{ $acked{$topic} }[ $before{$who} .. $#{ $acked{$topic} } ];
	ok(grep({ $after{$_} } @{ $led_by_victim{$topic} }),
		"$who: records were acknowledged after the kill on the partition the dead node led (by its new leader)");
}
for my $topic ('fkp', 'fsr')
{
	my @l = map { $c->leader($topic, $_) } 0 .. 2;
	ok(!grep({ $_ == $victim || $_ < 0 } @l), "$topic: every partition has a live leader (@l)")
	  or $c->coord->poll_query_until('postgres',
		"SELECT bool_and(leader IS NOT NULL AND leader <> $victim) FROM mq_coord.partition WHERE topic = '$topic'");
}

# the independent read: each partition's log on its leader, "p/o value"
sub log_of
{
	my ($topic) = @_;
	my @rows;
	for my $p (0 .. 2)
	{
		push @rows, map { "$p/$_" } split /\n/, $c->node($c->leader($topic, $p))->safe_psql('postgres',
			"SELECT msg_offset || ' ' || convert_from(value, 'UTF8') FROM mq.fetch('$topic', $p, 0, 100000)"
			  . ' ORDER BY msg_offset');
	}
	return @rows;
}

for my $t ([ 'kpy', 'fkp', 'fkg' ], [ 'srm', 'fsr', 'fsg' ])
{
	my ($who, $topic, $group) = @$t;
	my @log = log_of($topic);
	my %inlog = map { $_ => 1 } @log;
	my @lost = grep { !$inlog{$_} } @{ $acked{$topic} };
	is(scalar @lost, 0, "$who: every acknowledged record is in the log at its offset") or diag("lost: @lost[0 .. 9]");
	my %seen;
	my @dups = grep { $seen{ (split / /)[1] }++ } @log;
	diag("$who: the log holds " . scalar(@log) . ' records, ' . scalar(@dups) . ' of them written twice (retries)');

	# the first member stopped after half; the second starts at the commits
	my @first = finish("${who}_first");
	my %committed = map {
		my $p = $_;
		($p => $c->node($c->leader($topic, $p))->safe_psql('postgres', "SELECT mq.committed_offset('$group', '$topic', $p)"))
	} 0 .. 2;
	my %end = map { my $p = $_; ($p => scalar grep { m{^$p/} } @log) } 0 .. 2;
	my (%expect, $rest);
	for my $p (0 .. 2)
	{
		# none committed (NULL, or sarama's -1): from the earliest
		my $from = $committed{$p} eq '' || $committed{$p} < 0 ? 0 : $committed{$p};
		$expect{$p} = $from if $from < $end{$p};
		$rest += $end{$p} - $from;
	}
	# the second member reads what is left after the commits, then stops
	my @cmd = $who eq 'kpy' ? ($py, "$root/test/kafka/py/cluster.py") : ($sarama);
	start("${who}_second", @cmd, 'consume', $boot, $topic, $group, $rest, 30);
	my @second = finish("${who}_second");
	my %start;
	for (@second) { $start{$1} //= $2 if /^rec (\d+) (\d+) /; }
	is_deeply(\%start, \%expect, "$who: the second member starts at the offsets committed on the leaders");
	my @read = map { /^rec (\d+) (\d+) (\S+)$/ ? "$1/$2 $3" : () } @first, @second;
	my %got;
	my @twice = grep { $got{$_}++ } @read;
	is_deeply([ sort keys %got ], [ sort @log ], "$who: the two members read every record of the log");
	# records are read again only after a commit failed (kafka-python
	# commits after each poll) or a rebalance (sarama commits every second:
	# a new session starts from the committed offsets), as with Kafka
	my $again = grep({ /^commit failed|^poll failed|error/ } @first) + grep({ /^session / } @first) - ($who eq 'srm');
	is(scalar @twice, 0, "$who: no record read twice") if !$again;
	diag("$who: " . scalar(@twice) . " records read twice after $again failed commits or rebalances") if $again;
	is_deeply({ map { ($_ => $c->node($c->leader($topic, $_))->safe_psql('postgres',
						"SELECT mq.committed_offset('$group', '$topic', $_)")) } 0 .. 2 },
		\%end, "$who: the group's committed offsets on the leaders are the log ends");
}

done_testing();
