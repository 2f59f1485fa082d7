# Replication: the leader crashes after its followers hold a batch but
# before its own WAL flush (docs/replication.md, "The acknowledgement
# path").  An acks=all write commits on the leader without waiting for its
# flush, so that the followers fetch it while the leader's WAL is written;
# it is acknowledged, and counted by the high watermark, only once both the
# leader's flush and the in-sync followers' flushed appends have it.
#
# Every node runs under holdwal.so (test/t/holdwal.c, LD_PRELOAD): while a
# flag file exists, its WAL writes wait, so what it committed stays in its
# WAL buffers and a kill -9 loses it.  With the leader's writes held, the
# producer keeps writing: its batches are committed on the leader and
# replicated to both followers, but neither acknowledged nor visible to
# consumers.  Then the followers' brokers freeze (no other replica can be
# elected), the leader's node is killed, restarted without the records it
# never flushed, and elected again; the followers come back, follow it and
# cut those records (they were never acknowledged).  The checker: no
# acknowledged record lost.  If the acknowledgement or the high watermark
# did not wait for the leader's flush, the batches acknowledged during the
# hold would be exactly the ones lost here.
#
# RF 3, min ISR 2; nodes with synchronous_commit = off and a 10 s
# wal_writer_delay as in 105, so that nothing else flushes meanwhile.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, lag_time_max_ms => 5000,
	node_conf => "synchronous_commit = off\nwal_writer_delay = 10000ms\n",
	broker_conf => "[broker]\nnode.timeout.ms = 20000\n");

# every node again under the shim, each with a flag file of its own
my $dir = PostgreSQL::Test::Utils::tempdir();
my $root = $ENV{MQ_REPO_ROOT} // '.';
system('gcc', '-shared', '-fPIC', '-o', "$dir/holdwal.so", "$root/test/t/holdwal.c", '-ldl') == 0
  or BAIL_OUT('cannot build holdwal.so');
for my $i (1 .. 3)
{
	$c->node($i)->stop;
	local $ENV{LD_PRELOAD} = "$dir/holdwal.so";
	local $ENV{MQ_HOLD_WAL} = "$dir/hold$i";
	$c->node($i)->start;
}
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
# settled on its preferred leader with all three replicas in the ISR (the
# preferred-leader handover, 10 s after a slow broker left the first
# leadership with another, moved it away from the node whose WAL is held)
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = replicas[1] AND cardinality(isr) = 3 FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	'all three replicas in the ISR, the preferred one leading');
my $a = $c->leader('t', 0);
my @f = grep { $_ != $a } 1 .. 3;
my $na = $c->node($a);

my $p = $c->start_producer('t', 0, attempt_timeout => 30);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

# Hold the leader's WAL writes.
my $q_state = "SELECT log_end_offset || ' ' || high_watermark FROM mq.replica_status "
  . "WHERE topic = 't' AND partition = 0";
open my $fh, '>', "$dir/hold$a" or die;
close $fh;
my $t_hold = time;
note("leader $a: WAL writes held");

# The producer's next batch is committed on the leader and replicated to
# both followers (their appends are flushed on their nodes), above the
# leader's high watermark ...
my $hwm0;
for my $try (1 .. 1000)
{
	my (undef, $h) = split / /, $na->safe_psql('postgres', $q_state);
	my @above = grep {
		my ($leo) = split / /, $c->node($_)->safe_psql('postgres', $q_state);
		$leo > $h
	} @f;
	if (@above == 2) { $hwm0 = $h; last; }
	usleep(20_000);
}
ok(defined $hwm0, 'both followers hold records above the leader\'s high watermark, which it has not flushed');
$hwm0 //= -1;
# ... and stays unacknowledged while the leader cannot flush: the high
# watermark does not move (given the time an acknowledgement takes unheld,
# many times over; the one fixed wait, for something that must not happen)
usleep(1_500_000);
my ($leo_a, $hwm_a) = split / /, $na->safe_psql('postgres', $q_state);
is($hwm_a, $hwm0, "the leader's high watermark stays at $hwm0 without its flush (log end $leo_a)");
my @held = grep { $_->{kind} eq 'ack' && $_->{at} > $t_hold && $_->{base} + 5 > $hwm0 }
  @{ MqCluster::producer_lines($p->{file}) };
is(scalar(@held), 0, 'no batch above it acknowledged while the leader could not flush');
my %f_leo;
for my $i (@f)
{
	($f_leo{$i}) = split / /, $c->node($i)->safe_psql('postgres', $q_state);
}

# The followers' brokers freeze; the leader's broker and node die, the node
# with every process (a backend held in a WAL write included).
$c->signal_broker($_, 'STOP') for @f;
$c->signal_broker($a, 'KILL');
MqCluster::crash_servers($na);
unlink "$dir/hold$a";
my $t_crash = time;
{
	local $ENV{LD_PRELOAD} = "$dir/holdwal.so";
	local $ENV{MQ_HOLD_WAL} = "$dir/hold$a";
	$na->start;
}
my ($leo_after) = split / /, $na->safe_psql('postgres', $q_state);
ok($leo_after < $f_leo{ $f[0] } && $leo_after < $f_leo{ $f[1] },
	"the restarted leader lost what it never flushed (log end $leo_after; followers "
	  . join(', ', map { "$_: $f_leo{$_}" } @f) . ')');

# The old leader is elected again, with its shorter log; the followers
# come back, follow it and cut what it lost.
my $epoch0 = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
$c->start_broker($a);
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $a AND leader_epoch > $epoch0 FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	"broker $a leads again in a new epoch");
$c->signal_broker($_, 'CONT') for @f;
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'the followers rejoined the ISR');
$c->wait_acks($p, count => 2, since => time) or diag('no write acknowledged after the crash');
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

ok(scalar(MqCluster::acks_since($lines, $t_crash)) > 0, "writes acknowledged after the crash");
my @lost_window = grep { $_->{kind} eq 'ack' && $_->{at} < $t_crash && $_->{base} + 5 > $leo_after } @$lines;
is(scalar(@lost_window), 0,
	"nothing the leader lost had been acknowledged (acks above offset $leo_after before the crash)");
$c->check_log('t', 0, $lines, $a, @f);
$c->teardown;
done_testing();
