# mq-broker's Prometheus endpoint ([metrics] address): every broker serves
# text format on /metrics; the leader reports its high watermark and log
# end, ISR size, under-replicated partitions, follower lag and the
# elections it won; followers report their log end, the high watermark
# their last fetch brought, and their fetch lag.  A follower's node going
# down shows on the leader as an ISR shrink and an under-replicated
# partition; its return as an expansion.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $c = MqCluster->new(nodes => 3, metrics => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $l = $c->leader('t', 0);
my ($f1, $f2) = grep { $_ != $l } 1 .. 3;
my $ln = $c->node($l);
$ln->safe_psql('postgres', "CALL mq.produce('t', NULL, ARRAY['a','b','c','d','e']::bytea[], 0, 'all')");
ok($c->wait_converged('t', 0, 1 .. 3), 'replicas converged at 5 records');

my ($status, $body) = $c->http_get($l, '/metrics');
is($status, 200, 'GET /metrics answers 200');
like($body, qr/^# TYPE mq_partition_high_watermark gauge$/m, 'in Prometheus text format');
is(($c->http_get($l, '/nowhere'))[0], 404, 'other paths: 404');

my $p = '{topic="t",partition="0"}';
# the broker's view is refreshed every tick: wait for one after the produce
sub metric_becomes
{
	my ($i, $key, $want) = @_;
	for (1 .. 100)
	{
		my $m = $c->metrics($i);
		return 1 if defined $m->{$key} && $m->{$key} eq $want;
		select(undef, undef, undef, 0.1);
	}
	diag("broker $i: $key is " . ($c->metrics($i)->{$key} // 'missing') . ", not $want");
	return 0;
}
ok(metric_becomes($l, "mq_partition_high_watermark$p", 5), 'leader: high watermark 5');
my $m = $c->metrics($l);
is($m->{"mq_partition_log_end_offset$p"}, 5, 'leader: log end 5');
is($m->{"mq_partition_is_leader$p"}, 1, 'leader: is_leader 1');
is($m->{"mq_partition_isr_size$p"}, 3, 'leader: ISR size 3');
is($m->{"mq_partition_replicas$p"}, 3, 'leader: 3 replicas');
is($m->{mq_broker_under_replicated_partitions}, 0, 'leader: no under-replicated partition');
is($m->{mq_broker_leader_partitions}, 1, 'leader: leads 1 partition');
ok($m->{mq_broker_elections_total} >= 1, 'leader: won an election');
is($m->{mq_broker_live}, 1, 'leader: live');
is($m->{"mq_follower_in_sync{topic=\"t\",partition=\"0\",replica=\"$f1\"}"}, 1, "leader: follower $f1 in sync");
is($m->{"mq_follower_lag_records{topic=\"t\",partition=\"0\",replica=\"$f1\"}"}, 0, "leader: follower $f1 lags 0 records");
ok(defined $m->{"mq_follower_lag_ms{topic=\"t\",partition=\"0\",replica=\"$f2\"}"}, "leader: follower $f2 lag in ms");

ok(metric_becomes($f1, "mq_partition_high_watermark$p", 5), 'follower: high watermark 5 from its fetches');
$m = $c->metrics($f1);
is($m->{"mq_partition_log_end_offset$p"}, 5, 'follower: log end 5');
is($m->{"mq_partition_fetch_lag_records$p"}, 0, 'follower: fetch lag 0');
is($m->{"mq_partition_is_leader$p"}, 0, 'follower: is_leader 0');
is($m->{"mq_partition_leader$p"}, $l, "follower: names leader $l");

# a follower's node goes down: the leader shrinks the ISR
$c->kill9_node($f2);
ok(metric_becomes($l, 'mq_broker_under_replicated_partitions', 1), 'leader: 1 under-replicated partition');
$m = $c->metrics($l);
is($m->{"mq_partition_isr_size$p"}, 2, 'leader: ISR size 2');
is($m->{mq_broker_isr_shrinks_total}, 1, 'leader: 1 ISR shrink');
is($m->{"mq_follower_in_sync{topic=\"t\",partition=\"0\",replica=\"$f2\"}"}, 0, "leader: follower $f2 out of sync");
is($c->metrics($f2)->{mq_broker_node_connected}, 0, "broker $f2: its node is not connected");
$ln->safe_psql('postgres', "CALL mq.produce('t', NULL, ARRAY['f','g']::bytea[], 0, 'all')");
ok(metric_becomes($l, "mq_partition_high_watermark$p", 7), 'leader: high watermark 7 with two in sync');

$c->node($f2)->start;
ok(metric_becomes($l, 'mq_broker_under_replicated_partitions', 0), 'leader: fully replicated again');
$m = $c->metrics($l);
is($m->{mq_broker_isr_expands_total}, 1, 'leader: 1 ISR expansion');
ok(metric_becomes($f2, "mq_partition_log_end_offset$p", 7), "broker $f2 caught up to 7");

$c->teardown;
done_testing();
