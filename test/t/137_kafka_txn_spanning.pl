# Kafka transactions spanning the nodes of the three-node cluster
# (docs/kafka.md, "Transactions"; src/sql/68_kafka_txn_cluster.sql):
# confluent-kafka-python's consume-transform-produce pipeline
# (test/kafka/py/txn.py, librdkafka underneath, read_committed, offsets
# sent with send_offsets_to_transaction) from an input topic to an output
# topic whose partitions are led by all three nodes, through one bootstrap
# address.  In the middle the test kills -9 the mq-kafka that coordinates
# the transactional id (mq-broker restarts it) and then the PostgreSQL
# node of a partition leader (a third node: neither the transaction's nor
# the group's coordinator).  An independent read_committed reader then sees
# every input record exactly once in the output; an aborted transaction is
# never visible; a zombie with the old epoch is fenced.  A commit decision
# whose daemon is gone completes through the brokers' recovery alone.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
my $c = MqCluster->new(nodes => 3);
$c->start_kafka_brokers(transactions => 1);
my $cfg = { 'replication.factor' => 3, 'min.insync.replicas' => 2 };
$c->create_topic('xin', 6, $cfg);
$c->create_topic('xout', 6, $cfg);
# preferred leaders take their partitions back if another broker won an
# election first (under load): wait until they have, on all three nodes
ok($c->wait_preferred_leaders('xin', 'xout'), 'both topics have leaders on all three nodes, to stay');

# the transactional id's coordinator $x, the group's $g, the node to kill $k: three nodes
my ($txn, $x, $group, $g);
for my $i (1 .. 100)
{
	(undef, $x) = $c->kafka_find_coordinator(1, "xtxn-$i");
	($txn = "xtxn-$i", last) if $x >= 1;
}
for my $i (1 .. 100)
{
	(undef, $g) = $c->kafka_find_coordinator(1, "xgrp-$i");
	($group = "xgrp-$i", last) if $g >= 1 && $g != $x;
}
my ($k) = grep { $_ != $x && $_ != $g } 1 .. 3;
ok(defined $txn && defined $group && defined $k,
	"transaction $txn on broker $x, group $group on broker $g, node $k to kill");
# the ids of the abort and zombie checks below live on a node left alive
my ($abort_id, $zombie_id) = grep {
	my (undef, $n) = $c->kafka_find_coordinator(1, $_);
	$n >= 1 && $n != $k
} map { "xtxn-other-$_" } 1 .. 20;

# 60 input records, ten per partition, each written on its leader
my $n = 60;
for my $p (0 .. 5)
{
	$c->node($c->leader('xin', $p))->safe_psql('postgres',
		"SELECT mq.send_batch('xin', array_fill(NULL::bytea, ARRAY[10]), "
		  . "(SELECT array_agg(convert_to('v$p-' || i, 'UTF8') ORDER BY i) FROM generate_series(0, 9) i), NULL, $p)");
}

my $boot = $c->kafka_address($g);    # neither killed nor restarted
my $py = "timeout 150 /usr/bin/python3 $root/test/kafka/py/txn.py $boot";

# How many input records the pipeline has committed: the group's committed
# offsets on xin (OffsetFetch at the group's coordinator, never killed),
# which a transaction commits with its outputs.  (The high watermarks of
# xout also count each commit's markers, and reached 60 halfway.)
sub committed
{
	my $off = $c->kafka_offsets($g, $group) // {};
	my $sum = 0;
	$sum += $off->{$_} for grep { m{^xin/} && $off->{$_} > 0 } keys %$off;
	return $sum;
}

sub wait_committed
{
	my ($want) = @_;
	my $deadline = time + 60;
	while (time < $deadline)
	{
		return 1 if committed() >= $want;
		usleep(100_000);
	}
	return 0;
}

my $pid = open(my $pipe, '-|', "$py pipeline xin xout $group $n $txn 0.2 2>$dir/pipe.err")
  or die "txn.py: $!";
ok(wait_committed(5), 'the pipeline commits its first transactions') or diag(slurp_file("$dir/pipe.err"));
my $kpid = $c->kafka_pid($x);
ok(kill('KILL', $kpid), "killed the transaction coordinator's mq-kafka (broker $x, pid $kpid)");
# The pipeline client is paused while the test waits for the daemon's
# restart, and again from its first commit through the restarted daemon
# to the node kill: on a loaded machine it otherwise ran to its end in
# the seconds those steps took, and the kill meant for the middle came
# after the end.
my @client = split ' ', `pgrep -f 'txn.py .* pipeline xin xout $group '`;
kill('STOP', @client);
$c->wait_broker_log($x, qr/started mq-kafka \(pid (?!$kpid\))\d+\)/);
kill('CONT', @client);
ok(wait_committed(committed() + 1), 'the pipeline commits through the restarted daemon')
  or diag(slurp_file("$dir/pipe.err"));
kill('STOP', @client);
my $before_kill = committed();
cmp_ok($before_kill, '<', $n, "the leader's node is killed in the middle ($before_kill of $n)");
$c->kill9_node($k);
kill('CONT', @client);
my $line = <$pipe>;
close $pipe;
my $rc = $? >> 8;
is($rc, 0, 'the pipeline runs to its end across both kills') or diag(slurp_file("$dir/pipe.err"));
like($line // '', qr/"committed": $n\b/, "it reports $n records committed") or diag($line);

# an independent read_committed reader, bootstrapped through a live daemon
my $out = `$py read xout 1000 2>$dir/read.err`;
my @values = ($out =~ /"([^"]*)"/g);
my %seen;
$seen{$_}++ for @values;
my @want = map { my $p = $_; map { "V$p-$_" } 0 .. 9 } 0 .. 5;
is(scalar(@values), $n, "the reader sees $n records") or diag($out . slurp_file("$dir/read.err"));
is(join(',', grep { ($seen{$_} // 0) != 1 } @want), '', 'every input record exactly once');
is(join(',', grep { !/^V\d-\d+$/ } @values), '', 'and nothing else');

# an aborted transaction is never visible
my $res = `$py abort xout $abort_id aborted-value 2>$dir/abort.err`;
like($res, qr/"aborted": 1/, 'a transaction is aborted') or diag(slurp_file("$dir/abort.err"));
# a zombie with the old epoch is fenced
$res = `$py zombie xout $zombie_id 2>$dir/zombie.err`;
like($res, qr/"new": "ok"/, 'a new instance of a transactional id commits') or diag(slurp_file("$dir/zombie.err"));
like($res, qr/"old": "(_FENCED|PRODUCER_FENCED|INVALID_PRODUCER_EPOCH)"/, 'the old one is fenced ($res)');
$out = `$py read xout 1000 2>$dir/read2.err`;
unlike($out, qr/aborted-value|zombie/, "the reader sees neither the aborted nor the zombie's records");
like($out, qr/"new"/, "and sees the new instance's");

# a decision whose daemon is gone: the brokers' recovery sends its records
my ($pidr, $epr) = split /\|/, $c->coord->safe_psql('postgres',
	"SELECT producer_id, producer_epoch FROM mq_coord.init_producer('xtxn-recovered')");
my $p0 = (grep { $c->leader('xout', $_) != $k } 0 .. 5)[0];
my $state = $c->coord->safe_psql('postgres',
	"SELECT mq_coord.kafka_txn_decide('krec', 'xtxn-recovered', "
	  . "'[{\"gid\": \"mq:krec:1\", \"broker\": -1, \"kind\": \"output\", "
	  . "\"partitions\": [{\"topic\": \"xout\", \"partition\": $p0, \"epoch\": -1}]}]', $epr, "
	  . "'[{\"gid\": \"mq:krec:1\", \"topic\": \"xout\", \"partition\": $p0, \"producer_id\": $pidr, "
	  . "\"producer_epoch\": $epr, \"base_sequence\": 0, \"count\": 1}]', "
	  . "ARRAY[NULL]::bytea[], ARRAY[convert_to('recovered', 'UTF8')], ARRAY['[[\"r\", \"1\"]]']::jsonb[], "
	  . "ARRAY['2020-01-02 03:04:05.006+00']::timestamptz[])");
is($state, 'commit', 'a commit decision is recorded with its record, its headers and CreateTime');
ok($c->coord->poll_query_until('postgres', "SELECT state = 'done' FROM mq_coord.txn WHERE txn_id = 'krec'"),
	'the brokers send it to its leader and report it durable: done');
is($c->node($c->leader('xout', $p0))->safe_psql('postgres',
		"SELECT count(*) FROM mq.fetch('xout', $p0, 0, 1000) WHERE value = 'recovered' "
		  . "AND headers = '[[\"r\", \"1\"]]' AND timestamp = '2020-01-02 03:04:05.006+00'"),
	'1', 'the record is in the log once, with its headers and CreateTime');

$c->teardown;
done_testing();
