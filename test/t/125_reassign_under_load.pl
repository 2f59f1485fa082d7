# Placement and reassignment (docs/replication.md, "Placement and
# reassignment"): replication.factor 2 on 3 brokers, each node holding only
# its replicas (the others refuse with MQ020); a fourth broker joins with
# nothing, and mqctl reassign moves replicas onto it while idempotent
# acks=all producers write every partition and a consumer reads one: a
# leader that leaves its replica set hands over (a new epoch), the new
# replicas catch up (throttled: the three broker 4 receives share the
# throttle) and the old ones are dropped and stop serving.  The checker
# then finds nothing acknowledged lost and the replicas agreeing.  Last, a broker that still holds replicas cannot be
# removed; once it holds none and is stopped, it can.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 3, { 'replication.factor' => 2, 'min.insync.replicas' => 2 });

# placement order 1,2,3: partition p on brokers p+1 and p+2 (mod 3)
my %before = map { $_ => $c->replicas('t', $_) } 0 .. 2;
is_deeply(\%before, { 0 => '1,2', 1 => '2,3', 2 => '3,1' }, 'two replicas per partition, spread');

# each node holds the topic with only its replicas hosted
for my $i (1 .. 3)
{
	ok($c->node($i)->poll_query_until('postgres',
			"SELECT count(*) = 3 FROM mq.replica_status WHERE topic = 't'"),
		"node$i has the topic's three partitions");
}
for my $p (0 .. 2)
{
	my %r = map { $_ => 1 } split /,/, $before{$p};
	for my $i (1 .. 3)
	{
		is($c->node($i)->safe_psql('postgres',
				"SELECT hosted FROM mq.replica_status WHERE topic = 't' AND partition = $p"),
			$r{$i} ? 't' : 'f', "node$i " . ($r{$i} ? 'hosts' : 'does not host') . " partition $p");
	}
}
my ($absent) = grep { !{ map { $_ => 1 } split /,/, $before{0} }->{$_} } 1 .. 3;
my ($ok, $out) = MqCluster::psql_cmd($c->node($absent),
	"CALL mq.produce('t', NULL, ARRAY['x']::bytea[], 0, '1')");
ok(!$ok && $out =~ /MQ020/ && $out =~ /holds no replica of "t" partition 0/,
	"node$absent refuses produce to partition 0 with MQ020") or diag($out);
($ok, $out) = MqCluster::psql_cmd($c->node($absent), "SELECT count(*) FROM mq.fetch('t', 0, 0)");
ok(!$ok && $out =~ /holds no replica/, "node$absent refuses to read partition 0") or diag($out);

# node4 is made now (not started) so that the clients forked next know it
my $n4 = $c->add_node(later => 1);
is($n4, 4, 'a fourth node is made');

# producers on every partition, a consumer on partition 0
my @prod = map { $c->start_producer('t', $_) } 0 .. 2;
my $r = $c->start_consumer('t', 0);
$c->wait_acks($_, count => 3) or diag('a producer made no progress') for @prod;
$c->wait_consumed($r) or diag('the consumer read nothing');

# a fourth broker joins with nothing, under load
$c->start_added($n4);
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.partition WHERE 4 = ANY (replicas)"),
	'0', 'a new broker gets no replica by itself');

my ($rc, $gen) = $c->mqctl('reassign', '--generate', '--topics=t', '--brokers=2,3,4');
is($rc, 0, 'reassign --generate runs');
like($gen, qr/Proposed partition reassignment configuration\n\{"version":1,"partitions":\[\{"topic":"t","partition":0,"replicas":\[\d,\d\]\}/,
	'it proposes a plan') or diag($gen);
my @proposed = (split /Proposed/, $gen)[1] =~ /"replicas":\[([\d,]+)\]/g;
is(scalar(@proposed), 3, 'one proposal per partition');
is(scalar(grep { /\b1\b/ } @proposed), 0, 'the proposal leaves broker 1 out') or diag($gen);

# The walk-through of docs/cli.md ("reassign"), run as it stands: broker
# 1 leaves; partition 0's leader hands over, partition 2's follower goes;
# partition 1's follower 3 is replaced by 4 with leader 2 staying.
my $root = $ENV{MQ_REPO_ROOT} // '.';
my ($example) = slurp_file("$root/docs/cli.md")
  =~ /<!-- reassign-example:begin -->\n```console\n(.*?)```\n<!-- reassign-example:end -->/s
  or die 'docs/cli.md has no reassign example';
my (@steps, %shown);
for (split /\n/, $example)
{
	if (/^\$ (.*)$/) { push @steps, $1; $shown{$1} = ''; }
	else { $shown{ $steps[-1] } .= "$_\n"; }
}
is_deeply([ map { (split / /)[ 0 .. 1 ] } @steps ],
	[ 'cat', 'plan.json', ('mqctl', 'reassign') x 3, 'mqctl', 'broker' ], 'the example has its five steps');
# in a directory of its own: tests run side by side (scripts/test.sh)
my $plan = PostgreSQL::Test::Utils::tempdir() . "/plan.json";
open my $fh, '>', $plan or die $!;
print $fh $shown{'cat plan.json'};
close $fh;
# run step $n of the example: (exit status, output)
sub step
{
	my ($n, @more) = @_;
	my @args = map { s/^--file=plan\.json$/--file=$plan/r } split / /, $steps[$n];
	shift @args;    # mqctl
	return $c->mqctl(@args, @more);
}

($rc, $out) = step(1);
is($rc, 0, 'reassign --execute --dry-run runs');
is($out, $shown{ $steps[1] }, 'a dry run shows the moves, as documented');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.reassignments"), '0',
	'and changes nothing');

my $t_move = time;
($rc, $out) = step(2);
is($rc, 0, 'reassign --execute runs');
is($out, $shown{ $steps[2] }, 'it starts the moves, throttled, as documented');
($rc, $out) = step(3, '--interval-ms=100', '--timeout-ms=' . 1000 * $PostgreSQL::Test::Utils::timeout_default);
is($rc, 0, 'reassign --verify --wait sees every move complete');
is((split /\n/, $out)[-1], (split /\n/, $shown{ $steps[3] })[-1], 'its last line as documented')
  or diag($out);
note($out);

is($c->replicas('t', 0), '4,2', 'partition 0 is on brokers 4 and 2');
is($c->replicas('t', 1), '2,4', 'partition 1 is on brokers 2 and 4');
is($c->replicas('t', 2), '3,4', 'partition 2 is on brokers 3 and 4');
is($c->leader('t', 0), '4', "partition 0's leader left its replica set: the first target replica leads");
is($c->leader('t', 1), '2', "partition 1's leader stayed");
is($c->isr('t', 0), '2,4', 'partition 0: both new replicas in sync');
like($c->broker_log(1), qr/leaving the replica set: the target is in the ISR; resigned epoch \d+ and released the leadership for broker 4/,
	'broker 1 handed partition 0 over');
# the throttle per broker: the three copies broker 4 receives share 1 MB/s
for my $part (0 .. 2)
{
	like($c->broker_log(4),
		qr/"t" partition $part: copying at most 333333 bytes\/s \(throttle 1000000; leader \d+ serves \d+ throttled copies, this broker receives 3\)/,
		"broker 4 copied partition $part at a third of the throttle");
}
ok($c->coord->safe_psql('postgres',
		"SELECT count(*) FROM mq_coord.event WHERE topic = 't' AND partition = 0 AND kind = 'leader_elected' "
		  . "AND broker_id = 4 AND at > to_timestamp($t_move)") == 1,
	'broker 4 was elected in a new epoch');

# the old replicas stop serving
ok($c->node(1)->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM mq.replica_status WHERE topic = 't' AND NOT hosted AND partition IN (0, 2)"),
	'node1 no longer hosts partitions 0 and 2');
ok($c->node(3)->poll_query_until('postgres',
		"SELECT NOT hosted FROM mq.replica_status WHERE topic = 't' AND partition = 1"),
	'node3 no longer hosts partition 1');
($ok, $out) = MqCluster::psql_cmd($c->node(1), "CALL mq.produce('t', NULL, ARRAY['x']::bytea[], 0, '1')");
ok(!$ok && $out =~ /holds no replica of "t" partition 0/, 'the old leader refuses produce') or diag($out);

# writes go on at the new leader
my $t_done = time;
$c->wait_acks($prod[0], since => $t_done, node => 4, count => 3) or diag('no write acknowledged by broker 4');
$c->wait_acks($_, since => $t_done, count => 3) or diag('a producer stalled') for @prod[ 1, 2 ];
my @lines = map { $c->stop_producer($_) } @prod;
$c->stop_consumer($r);
ok(scalar(grep { $_->{node} == 4 } MqCluster::acks_since($lines[0], $t_done)) > 0,
	'partition 0 writes acknowledged by broker 4 after the move');
$c->check_log('t', 0, $lines[0], 4, 2);
$c->check_log('t', 1, $lines[1], 2, 4);
$c->check_log('t', 2, $lines[2], 3, 4);

# removing brokers
($rc, $out) = $c->mqctl('broker', 'remove', '2');
ok($rc == 1 && $out =~ /MQ043/ && $out =~ /still holds replicas/, 'a broker holding replicas cannot be removed')
  or diag($out);
($rc, $out) = $c->mqctl('broker', 'remove', '1');
ok($rc == 1 && $out =~ /is running/, 'nor one whose mq-broker runs') or diag($out);
$c->signal_broker(1, 'TERM');
($rc, $out) = step(4);
ok($rc == 0 && $out eq $shown{ $steps[4] }, 'a stopped broker holding nothing is removed, as documented')
  or diag($out);
is($c->coord->safe_psql('postgres', 'SELECT string_agg(broker_id::text, \',\' ORDER BY broker_id) FROM mq_coord.broker'),
	'2,3,4', 'brokers 2, 3 and 4 remain');
$c->teardown;
done_testing();
