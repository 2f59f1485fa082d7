# docs/delivery.md, "Exactly-once in a cluster": the mqctl pipeline example
# runs as written on a three-node cluster (the block between the
# pipeline-example markers, with COORD and NODE1..3 set), with orders
# produced where the example says so; then every order is in "invoices"
# exactly once, has its row in "billed" on exactly one node, the group's
# offsets are at the end of "orders", and nothing is left prepared.
# Also: a prepared transaction committed by mq.txn_finish wakes a long
# poll waiting on its topic (COMMIT PREPARED runs no commit callbacks, so
# without the wake-up the poll would sleep to its own deadline).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use File::Basename ();
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $doc = slurp_file("$root/docs/delivery.md");
my ($block) = $doc =~ /<!-- pipeline-example:begin -->\n```sh\n(.*?)```\n<!-- pipeline-example:end -->/s;
ok(defined $block, 'docs/delivery.md has the pipeline example');
my ($setup, $run) = split /^# \.\.\. orders are produced \.\.\.\n/m, $block // '';
ok(defined $run, 'the example says where orders are produced');

my $c = MqCluster->new(nodes => 3, node_conf => "max_prepared_transactions = 10");
$c->start_brokers;
$ENV{COORD} = $c->coord->connstr('postgres');
$ENV{"NODE$_"} = $c->node($_)->connstr('postgres') for 1 .. 3;
$ENV{PATH} = "$root/broker/mqctl:$ENV{PATH}";

sub sh
{
	my ($script) = @_;
	my ($ok, $out) = (0, '');
	my $pid = open(my $fh, '-|') // die "fork: $!";
	if ($pid == 0)
	{
		open STDERR, '>&', \*STDOUT;
		exec 'bash', '-euo', 'pipefail', '-c', $script or POSIX::_exit(127);
	}
	local $/;
	$out = <$fh> // '';
	close $fh;
	return ($? == 0, $out);
}

my ($ok, $out) = sh($setup);
ok($ok, 'the setup part of the example runs') or diag($out);
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 5 FROM mq_coord.partition WHERE topic IN ('orders', 'invoices') AND leader IS NOT NULL")
  or diag('no leaders');

# orders o1..o300 to partition i % 2 on its leader, idempotent (no retry twice)
my ($pid) = split /\|/, $c->coord->safe_psql('postgres',
	"SELECT producer_id FROM mq_coord.init_producer('docs-orders')");
my $n = 300;
for my $p (0 .. 1)
{
	my $vals = join(',', map { "'o$_'" } grep { $_ % 2 == $p } 1 .. $n);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my ($pok, $res) = MqCluster::psql_cmd($c->node($c->leader('orders', $p)),
			"CALL mq.produce('orders', NULL, ARRAY[$vals]::bytea[], $p, 'all', $pid, 0, 0, 5000)", 15);
		last if $pok;
		die "cannot produce: $res" if time > $deadline;
		usleep(100_000);
	}
}

($ok, $out) = sh($run);
ok($ok, 'mqctl pipeline of the example runs to the end of the orders') or diag($out);
like($out, qr/Processed a total of $n messages/, "it processed the $n orders");

my %seen;
for my $q (0 .. 2)
{
	my ($log) = $c->replica_rows($c->leader('invoices', $q), 'invoices', $q);
	$seen{$_}++ for @$log;
}
is(scalar(grep { $seen{$_} != 1 } keys %seen), 0, 'no order is in invoices twice');
is(scalar(keys %seen), $n, 'every order is in invoices');
my %billed;
for my $i (1 .. 3)
{
	$billed{$_}++ for split /\n/, $c->node($i)->safe_psql('postgres', 'SELECT order_id FROM billed');
}
is(scalar(grep { $billed{$_} != 1 } keys %billed), 0, 'no order was billed twice (all nodes)');
is(scalar(keys %billed), $n, 'every order was billed');
for my $p (0 .. 1)
{
	is($c->node($c->leader('orders', $p))->safe_psql('postgres',
			"SELECT mq.committed_offset('billing', 'orders', $p) = log_end_offset "
			  . "FROM mq.partitions WHERE topic = 'orders' AND partition = $p"),
		't', "the group's offset of orders/$p is at its end");
}
is($c->coord->safe_psql('postgres', "SELECT string_agg(DISTINCT state, ',') FROM mq_coord.txn"),
	'done', 'every step is done on the coordinator');
my $left = 0;
$left += $c->node($_)->safe_psql('postgres', 'SELECT count(*) FROM mq.txn_in_doubt()') for 1 .. 3;
is($left, 0, 'nothing is left prepared');

# ---------------------------------------------------------------------
# mq.txn_finish wakes a long poll of its topic (an unreplicated topic of
# node1: no high watermark moves to wake it otherwise)
my $node = $c->node(1);
$node->safe_psql('postgres', "SELECT mq.create_topic('wake', 1)");
my $poll = $node->background_psql('postgres');
my $t0 = time;
$poll->query_until(qr/polling/, "\\echo polling\nSELECT count(*) FROM mq.fetch('wake', 0, 0, 10, 120000);\n");
# the poll sleeps on its topic before the commit comes
$node->poll_query_until('postgres', "SELECT count(*) > 0 FROM pg_stat_activity "
	  . "WHERE query LIKE '%mq.fetch(''wake''%' AND wait_event_type = 'Extension'")
  or diag('the long poll never slept');
$node->safe_psql('postgres', "BEGIN; SELECT mq.send('wake', NULL::bytea, 'x'::bytea); "
	  . "PREPARE TRANSACTION 'mq:wake:0';");
$node->safe_psql('postgres', "SELECT mq.txn_finish('mq:wake:0', true)");
my $got = $poll->query_safe('SELECT 1');
my $waited = time - $t0;
cmp_ok($waited, '<', 60, "the long poll came back well before its 120 s deadline (${waited} s)");
$poll->quit;
$c->teardown;
done_testing();
