# mq-kafka in a replicated cluster, configured only through the brokers'
# [kafka] sections (docs/kafka.md's example): each mq-broker runs its node's mq-kafka, which
# registers on the coordinator, so Metadata names every broker and the
# leaders from one bootstrap address.  A librdkafka consumer group (three
# members, six partitions with leaders on all three nodes) commits every
# record synchronously while the test kills a partition leader's node and
# then the group coordinator daemon (mq-broker restarts it).  Every daemon
# must name the same group coordinator; commits for partitions led
# elsewhere are forwarded to their leaders.  At the end every record was
# delivered, no committed position was committed twice, the committed
# positions cover all that was produced, and each leader holds the final
# committed offset of its partitions, checked against an independent
# count of the records produced (the producer's acknowledgements and the
# leaders' high watermarks).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $logs = $PostgreSQL::Test::Utils::log_path;
for my $prog ('rdk_client', 'rdk_cgroup')
{
	system('cc', '-O2', '-o', "$dir/$prog", "$root/test/kafka/$prog.c", '-lrdkafka', '-lpthread') == 0
	  or BAIL_OUT("cannot build test/kafka/$prog.c");
}

# 2,400 records: a tenth of them between progress lines, hundreds
# committed across each kill (6,000 took 190 s of CPU, the most of any test)
my $n = 2400;
my $c = MqCluster->new(nodes => 3);
# the brokers' [kafka] section is the one docs/kafka.md shows
my ($section) = slurp_file("$root/docs/kafka.md") =~ /^## Replicated clusters\n.*?^```ini\n(.*?)^```/ms
  or BAIL_OUT('no [kafka] example in docs/kafka.md');
$c->start_kafka_brokers(section => $section);
$c->create_topic('cg', 6, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
# placement settled: each partition led by its preferred replica with its
# whole ISR (a broker slow to start leaves its partitions with another
# until the preferred-leader handover; a handover during the produce
# below made librdkafka's non-idempotent producer retry a batch)
$c->coord->poll_query_until('postgres', "SELECT bool_and(leader = replicas[1] AND cardinality(isr) = 3)"
	  . " FROM mq_coord.partition WHERE topic = 'cg'")
  or BAIL_OUT('the partitions of cg never settled on their preferred leaders');
my %leaders = map { $c->leader('cg', $_) => 1 } 0 .. 5;
is(scalar keys %leaders, 3, 'the six partitions have leaders on all three nodes');

# one bootstrap address: the client learns the others from Metadata
my $boot = $c->kafka_address(1);
my $out = `$dir/rdk_client produce $boot cg $n none 2>$dir/producer.err`;
is($? >> 8, 0, 'the producer exited successfully') or diag(`tail -20 $dir/producer.err`);
like($out, qr/acknowledged $n, failed 0/, "the producer had all $n records acknowledged");

# the independent count: the leaders' high watermarks
my $produced = 0;
for my $p (0 .. 5)
{
	$produced += $c->node($c->leader('cg', $p))->safe_psql('postgres',
		"SELECT high_watermark FROM mq.partitions WHERE topic = 'cg' AND partition = $p");
}
is($produced, $n, 'the leaders hold every produced record');

# every daemon names the same coordinator for the group
my @named = map { join ':', $c->kafka_find_coordinator($_, 'cgroup') } 1 .. 3;
is_deeply(\@named, [ ($named[0]) x 3 ], "every daemon names the same group coordinator ($named[0])");
my (undef, $gc) = split /:/, $named[0];
ok($gc >= 1 && $gc <= 3, "the group coordinator is a broker ($gc)");

# a leader's node that is not the group coordinator, nor the bootstrap
my ($victim) = grep { $_ != $gc && $_ != 1 } sort keys %leaders;
$victim //= (grep { $_ != $gc } sort keys %leaders)[0];

$ENV{RDK_PACE_US} = 2000;
my $cpid = open(my $cons, '-|', "$dir/rdk_cgroup $boot cg $n cgroup 2>$logs/121_kafka_cluster_groups_consumer.err")
  or die "cannot start the consumer group: $!";
my $line;
while (defined($line = <$cons>) && $line !~ /^progress 2/) { }
ok(defined $line, 'the group committed a fifth of the records');
$c->kill9_node($victim);
note("killed node$victim, a partition leader");

while (defined($line = <$cons>) && $line !~ /^progress 5/) { }
ok(defined $line, 'the group committed half of the records after the leader kill');
my $live = (grep { $_ != $victim } 1 .. 3)[0];
(undef, $gc) = $c->kafka_find_coordinator($live, 'cgroup');
my $kpid = $c->kafka_pid($gc);
ok(kill('KILL', $kpid), "killed the group coordinator daemon (mq-kafka of broker $gc, pid $kpid)");
like($c->wait_broker_log($gc, qr/mq-kafka \(pid $kpid\) was killed by signal 9; restarting it/),
	qr/restarting it/, 'its mq-broker restarts it');

my $summary = join '', <$cons>;
close $cons;
note('commits that failed and were retried or redone: '
	  . (() = slurp_file("$logs/121_kafka_cluster_groups_consumer.err") =~ /failed/g));
is($? >> 8, 0, 'the consumer group exited successfully') or diag(`tail -30 $logs/121_kafka_cluster_groups_consumer.err`);
like($summary, qr/delivered $n of $n, committed $n, twice 0/,
	'every record delivered, every position committed once, all of them committed');

# the committed offsets live with their partitions, on the leaders; an
# OffsetFetch of all of the group's offsets gets each from its leader
my $committed = 0;
my $fetched = $c->kafka_offsets($live, 'cgroup') // {};
is(scalar keys %$fetched, 6, "an OffsetFetch of all the group's offsets at broker $live names six partitions");
for my $p (0 .. 5)
{
	my $l = $c->leader('cg', $p);
	isnt($l, $victim, "partition $p is led by a live node ($l)");
	my ($co, $hw) = split /\|/, $c->node($l)->safe_psql('postgres',
		"SELECT mq.committed_offset('cgroup', 'cg', $p), high_watermark"
		  . " FROM mq.partitions WHERE topic = 'cg' AND partition = $p");
	is($co, $hw, "partition $p: the committed offset on its leader is its high watermark");
	is($fetched->{"cg/$p"}, $co, "partition $p: OffsetFetch of all offsets has the leader's");
	$committed += $co;
}
is($committed, $produced, 'the committed offsets add up to what was produced');

done_testing();
