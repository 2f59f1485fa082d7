# One address for clients (issue 13): a topic of three partitions led by
# three different nodes, written by `mqctl produce` and read by two
# members of one group with `mqctl consume --group`, all three given only
# the coordinator's address.  The leader of one partition loses its node
# (kill -9) mid-run and comes back.  The checks, from what the tools
# printed (independent of mq's own bookkeeping):
#   - the producer exits 0, and every record it acknowledged (-v: its
#     partition and offset, in input order) is on the partition's leader
#     at that offset with that value at the end: nothing acknowledged lost;
#   - the group read every acknowledged record, each at the offset the
#     producer was told;
#   - no record was read twice unless a member said that the commit after
#     it was not acknowledged ("may be read again" on its stderr): every
#     record exactly once per acknowledged committed position;
#   - both members read, from partitions of all three leaders, and the
#     coordinator showed the group with two members in one generation.
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

# the producer reads lines v0, v1, ... from a FIFO the test feeds
my $fifo = "$c->{dir}/produce.fifo";
POSIX::mkfifo($fifo, 0600) or die "mkfifo: $!";
my $prod = $c->start_mqctl('produce', $fifo, 'produce', 't', '--acks', 'all', '-v',
	'--batch-size', '20', '--linger-ms', '20');
open my $feed, '>', $fifo or die "open $fifo: $!";
$feed->autoflush(1);
my $fed = 0;
$SIG{PIPE} = 'IGNORE';    # a producer that died must not kill the test
sub feed
{
	print $feed join('', map { 'v' . $fed++ . "\n" } 1 .. 20);
	usleep(20_000);		# pace the load: about 1,000 records a second
}

my @members = map { $c->start_mqctl("member$_", undef, 'consume', 't', '--group', 'g',
		'--from-beginning', '--format', 'kv') } 1 .. 2;

sub acked { return $c->mqctl_acked('produce'); }
sub consumed { return $c->mqctl_consumed("member$_[0]"); }

# feed until $cond holds (or the test's timeout, or the producer's exit)
my $prod_status;
sub feed_until
{
	my ($what, $cond) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if $cond->();
		if (!defined $prod_status && waitpid($prod, POSIX::WNOHANG()) == $prod)
		{
			$prod_status = $?;
			delete $c->{children}{$prod};
		}
		if (defined $prod_status)
		{
			diag("mqctl produce exited ($prod_status) while waiting: $what");
			return 0;
		}
		feed();
	}
	diag("gave up waiting: $what");
	return 0;
}

ok(feed_until('both members reading', sub {
	scalar(consumed(1)) > 0 && scalar(consumed(2)) > 0 }), 'both members read records');
is($c->coord->safe_psql('postgres',
		"SELECT count(*) || ' members, ' || count(DISTINCT cardinality(assigned)) "
		  . "FROM mq_coord.cluster_group_members('g') WHERE active"),
	'2 members, 2', 'the coordinator has two active members, with 1 and 2 partitions');

my ($describe) = run_command([ MqCluster::mqctl_bin(), '-d', $c->bootstrap, 'group', 'describe', 'g' ]);
like($describe, qr/^Group: g\tState: Stable\tMembers: 2\tGeneration: \d+\tAssignor: range\t/,
	'group describe through the coordinator shows the two members');
is(scalar(() = $describe =~ /^t +\d +\S+ +\S+ +\S+ +g-[0-9a-f-]+ +\d+ *$/mg), 3,
	'and a row per partition with its owner and leader');

my $old = $c->leader('t', 0);
my $acked_at_kill = scalar(acked());
$c->kill9_node($old);
note("killed node$old, the leader of partition 0, after $acked_at_kill acknowledged records");
ok(feed_until('a new leader of partition 0', sub { my $l = $c->leader('t', 0); $l > 0 && $l != $old }),
	'partition 0 got a new leader');
my $new = $c->leader('t', 0);
ok(feed_until('acknowledgements on partition 0 after the failover', sub {
	scalar(grep { $_->[0] == 0 } (acked())[ $acked_at_kill .. scalar(acked()) - 1 ]) >= 100 }),
	"the producer went on writing partition 0 on node$new");
$c->node($old)->start;
ok(feed_until('the old leader back in the ISR', sub {
	$c->coord->safe_psql('postgres',
		"SELECT bool_and(isr @> ARRAY[$old]) FROM mq_coord.partition WHERE topic = 't'") eq 't' }),
	"node$old rejoined the ISR");
feed() for 1 .. 10;
close $feed;	# EOF: the producer sends what it has and exits
$prod_status //= $c->wait_mqctl($prod);
is($prod_status, 0, 'mqctl produce exits 0 (every batch acknowledged)');

my @acked = acked();
is(scalar(@acked), $fed, "every line was acknowledged ($fed)");
my %value_at;    # "p:o" -> value the producer was acknowledged for
$value_at{"$acked[$_][0]:$acked[$_][1]"} = "v$_" for 0 .. $#acked;

# let the group read everything, then stop both members (SIGTERM: the
# batch in hand is finished and committed, the member leaves)
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
my %member_status;
while (time < $deadline)
{
	for my $pid (@members)
	{
		next if defined $member_status{$pid} || waitpid($pid, POSIX::WNOHANG()) != $pid;
		$member_status{$pid} = $?;
		delete $c->{children}{$pid};
	}
	last if keys %member_status;    # a member died: nothing more will come
	my %seen = map { ("$_->[0]:$_->[1]" => 1) } (consumed(1), consumed(2));
	last if scalar(grep { !$seen{$_} } keys %value_at) == 0;
	usleep(50_000);
}
kill 'TERM', grep { !defined $member_status{$_} } @members;
is($member_status{$_} // $c->wait_mqctl($_), 0, 'a member exits 0 on SIGTERM') for @members;

# records a member declared may come again: "p:o" of each such range
my %may_repeat = %{ $c->mqctl_may_repeat('member1', 'member2') };
note(scalar(keys %may_repeat) . ' records declared as possibly read again');

my (%count, @wrong, %partitions_read);
for my $m (1, 2)
{
	for my $r (consumed($m))
	{
		my $k = "$r->[0]:$r->[1]";
		$count{$k}++;
		$partitions_read{$m}{ $r->[0] } = 1;
		push @wrong, "$k read as $r->[2], acknowledged as " . ($value_at{$k} // 'nothing')
		  if defined $value_at{$k} && $value_at{$k} ne $r->[2];
	}
}
my @missing = grep { !$count{$_} } sort keys %value_at;
my @twice = grep { $count{$_} > 1 && !$may_repeat{$_} } sort keys %count;
is(join(', ', @missing[ 0 .. ($#missing < 9 ? $#missing : 9) ]), '', 'the group read every acknowledged record');
is(join('; ', @wrong[ 0 .. ($#wrong < 9 ? $#wrong : 9) ]), '', 'each at the offset the producer was acknowledged for');
is(scalar(@twice), 0, 'no record read twice outside a commit that was not acknowledged')
  or diag('read twice: ' . join(', ', @twice[ 0 .. ($#twice < 9 ? $#twice : 9) ]));
my %union = map { %$_ } values %partitions_read;
is(scalar(keys %union), 3, 'the members read all three partitions between them');
ok(keys %{ $partitions_read{1} // {} } && keys %{ $partitions_read{2} // {} }, 'each member read');

# nothing acknowledged is lost: each partition's leader holds every
# acknowledged record at its offset
for my $p (0 .. 2)
{
	my $l = $c->leader('t', $p);
	my %have = map { split /\|/ } split /\n/, $c->node($l)->safe_psql('postgres',
		"SELECT msg_offset || '|' || convert_from(value, 'UTF8') FROM mq.fetch('t', $p, 0, 1000000)");
	my @lost = grep { my ($q, $o) = split /:/; $q == $p && ($have{$o} // '') ne $value_at{$_} } keys %value_at;
	is(scalar(@lost), 0, "partition $p: every acknowledged record is on its leader node$l");
}
$c->teardown;
done_testing();
