# Replication, scenario 4: both followers' nodes go down (-9) while an
# idempotent producer writes with acks=all (RF 3, min ISR 2).  The ISR
# shrinks to the leader alone, and from then on every write is refused
# (not_enough_replicas before the append, or
# not_enough_replicas_after_append after it): nothing is acknowledged.
# When the followers return, they rejoin and writes are acknowledged again.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my @followers = grep { $_ != $leader } 1 .. 3;

my $p = $c->start_producer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
my $t_down = time;
$c->kill9_node($_) for @followers;
$c->coord->poll_query_until('postgres',
	"SELECT isr = ARRAY[$leader] FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('ISR did not shrink');
is($c->isr('t', 0), $leader, 'the ISR shrank to the leader');
my $t_shrunk = time;
# several attempts while the ISR is the leader alone: each must be refused
$c->wait_refusals($p, count => 20, since => $t_shrunk + 0.2)
  or diag('the producer was not refused while the ISR was below min.insync.replicas');
my $t_back = time;
$c->node($_)->start for @followers;
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('ISR did not expand');
is($c->isr('t', 0), '1,2,3', 'both followers rejoined the ISR');
$c->wait_acks($p, since => time) or diag('no write acknowledged after the recovery');
my $lines = $c->stop_producer($p);

my @during = grep { $_->{kind} eq 'ack' && $_->{at} > $t_shrunk + 0.2 && $_->{at} < $t_back } @$lines;
is(scalar @during, 0, 'nothing acknowledged while the ISR was below min.insync.replicas');
my %codes = map { $_->{state} => 1 } grep { $_->{kind} eq 'err' && $_->{at} > $t_down && $_->{at} < $t_back } @$lines;
ok($codes{MQ021} || $codes{MQ022}, 'writes refused with not_enough_replicas (' . join(',', sort keys %codes) . ')');
ok(scalar(MqCluster::acks_since($lines, $t_back)) > 0, 'writes acknowledged again after recovery');

$c->check_log('t', 0, $lines, $leader, @followers);
$c->teardown;
done_testing();
