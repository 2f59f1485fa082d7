# A cluster consumer group rebalances while it reads (issue 13): two
# members of `mqctl consume --group` given only the coordinator's address
# read a topic of three partitions led by three nodes while `mqctl
# produce` writes it; a third member joins, then the first leaves
# (SIGTERM), each change a new generation on the coordinator with a new
# assignment, heard by the members through their heartbeats while they
# poll.  The checks, from what the tools printed:
#   - the coordinator went through a generation per change, and ends with
#     the two remaining members owning all three partitions;
#   - the member that joined read records, and the remaining members went
#     on reading after the first left;
#   - the group read every acknowledged record, at its acknowledged offset,
#     and none twice unless a member said that the commit after it was not
#     acknowledged (a rebalance moves partitions between members without
#     a record read twice: the leader's poll claims, src/poll.c).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 3, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
ok($c->wait_preferred_leaders('t'), 'the three partitions are led by three different nodes, to stay');

my $fifo = "$c->{dir}/produce.fifo";
POSIX::mkfifo($fifo, 0600) or die "mkfifo: $!";
my $prod = $c->start_mqctl('produce', $fifo, 'produce', 't', '-v', '--batch-size', '20', '--linger-ms', '20');
open my $feed, '>', $fifo or die "open $fifo: $!";
$feed->autoflush(1);
$SIG{PIPE} = 'IGNORE';
my $fed = 0;

sub start_member
{
	my ($m) = @_;
	return $c->start_mqctl("member$m", undef, 'consume', 't', '--group', 'g', '--from-beginning',
		'--format', 'kv', '--batch-size', '50');
}
my %member = map { ($_ => start_member($_)) } 1, 2;

sub read_since
{
	my ($m, $n) = @_;
	return scalar($c->mqctl_consumed("member$m")) > $n;
}

sub coord_value { return $c->coord->safe_psql('postgres', $_[0]); }

# feed the producer (about 1,000 records a second) until $cond holds
sub feed_until
{
	my ($what, $cond) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if $cond->();
		print $feed join('', map { 'v' . $fed++ . "\n" } 1 .. 20);
		usleep(20_000);
	}
	diag("gave up waiting: $what");
	return 0;
}

ok(feed_until('both members reading', sub { read_since(1, 0) && read_since(2, 0) }), 'two members read');
my $gen = coord_value("SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'");

$member{3} = start_member(3);
ok(feed_until('the third member reading', sub { read_since(3, 0) }), 'a third member joined and read');
cmp_ok(coord_value("SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'"), '>', $gen,
	'its join started a new generation');
is(coord_value("SELECT string_agg(cardinality(assigned)::text, ',' ORDER BY member_id) "
		  . "FROM mq_coord.cluster_group_members('g')"), '1,1,1', 'one partition each');

$gen = coord_value("SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'");
kill 'TERM', $member{1};
is($c->wait_mqctl($member{1}), 0, 'the first member exits 0 on SIGTERM');
my %before = map { ($_ => scalar($c->mqctl_consumed("member$_"))) } 2, 3;
ok(feed_until('the remaining members reading on', sub { read_since(2, $before{2}) && read_since(3, $before{3}) }),
	'the two remaining members read on');
cmp_ok(coord_value("SELECT generation FROM mq_coord.cluster_group WHERE group_id = 'g'"), '>', $gen,
	'its leave started a new generation');
is(coord_value("SELECT sum(cardinality(assigned)) || ' in ' || count(*) FROM mq_coord.cluster_group_members('g')"),
	'3 in 2', 'the two members own the three partitions');

close $feed;
is($c->wait_mqctl($prod), 0, 'mqctl produce exits 0');
my @acked = $c->mqctl_acked('produce');
is(scalar(@acked), $fed, "every line was acknowledged ($fed)");
my %value_at;
$value_at{"$acked[$_][0]:$acked[$_][1]"} = "v$_" for 0 .. $#acked;

my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	my %seen = map { ("$_->[0]:$_->[1]" => 1) } map { $c->mqctl_consumed("member$_") } 1 .. 3;
	last if scalar(grep { !$seen{$_} } keys %value_at) == 0;
	usleep(50_000);
}
kill 'TERM', $member{2}, $member{3};
is($c->wait_mqctl($member{$_}), 0, "member$_ exits 0 on SIGTERM") for 2, 3;

my %may_repeat = %{ $c->mqctl_may_repeat(map { "member$_" } 1 .. 3) };
note(scalar(keys %may_repeat) . ' records declared as possibly read again');
my (%count, @wrong);
for my $r (map { $c->mqctl_consumed("member$_") } 1 .. 3)
{
	my $k = "$r->[0]:$r->[1]";
	$count{$k}++;
	push @wrong, "$k read as $r->[2], acknowledged as " . ($value_at{$k} // 'nothing')
	  if ($value_at{$k} // '') ne $r->[2];
}
my @missing = grep { !$count{$_} } sort keys %value_at;
my @twice = grep { $count{$_} > 1 && !$may_repeat{$_} } sort keys %count;
is(scalar(@missing), 0, 'the group read every acknowledged record')
  or diag('missing: ' . join(', ', @missing[ 0 .. ($#missing < 9 ? $#missing : 9) ]));
is(scalar(@wrong), 0, 'each at its acknowledged offset')
  or diag(join('; ', @wrong[ 0 .. ($#wrong < 9 ? $#wrong : 9) ]));
is(scalar(@twice), 0, 'no record read twice outside a commit that was not acknowledged')
  or diag('read twice: ' . join(', ', @twice[ 0 .. ($#twice < 9 ? $#twice : 9) ]));
$c->teardown;
done_testing();
