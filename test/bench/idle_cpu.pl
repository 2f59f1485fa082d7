# The CPU an idle replicated cluster spends (docs/benchmarks.md, "An idle
# cluster"): not a test, nothing here passes or fails on timing.
#
# Three data nodes, a coordinator and three brokers (MqCluster's
# defaults), a topic of MQ_BENCH_PARTITIONS partitions (default 6),
# replication factor 3, nothing produced.  Once every partition has its
# preferred leader and a full ISR in an epoch the restarted brokers
# elected, the CPU time (user + system, from /proc) of every server
# process and broker is summed over
# MQ_BENCH_SECONDS (default 20), first with tick.idle.ms = tick.ms (the
# tick as it was: every 100 ms whatever the state), then with the
# default tick.idle.ms, alternating for MQ_BENCH_ROUNDS rounds (default
# 2; the brokers restart between runs).  Prints each run and the ratio
# of the medians, and each run's CPU per group (the coordinator, each
# node's server processes, the brokers); results go to MQ_BENCH_OUT
# ("config<TAB>cpu ms per s").  With MQ_BENCH_FUNCTIONS=1 node 1 also
# tracks its functions (track_functions = all), and each run prints the
# ones that took the most time there, calls and milliseconds per second
# (pg_stat_user_functions: what the brokers' statements cost).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $parts = $ENV{MQ_BENCH_PARTITIONS} // 6;
my $secs = $ENV{MQ_BENCH_SECONDS} // 20;
my $rounds = $ENV{MQ_BENCH_ROUNDS} // 2;
my $tck = POSIX::sysconf(POSIX::_SC_CLK_TCK()) || 100;

my $c = MqCluster->new(nodes => 3);
if ($ENV{MQ_BENCH_FUNCTIONS})
{
	$c->node(1)->append_conf('postgresql.conf', "track_functions = all\n");
	$c->node(1)->reload;
}
$c->start_brokers;
$c->create_topic('idle', $parts, { 'replication.factor' => 3 });

# Settled: every partition led by its preferred replica with a full ISR,
# in an epoch after the brokers' restart (a restarted leader elects
# itself again to bump the epoch, and its followers apply that: until
# then the old epoch looks settled, and the run measured that wave)
sub settled
{
	return $c->coord->poll_query_until('postgres',
		"SELECT bool_and(cardinality(p.isr) = 3 AND p.leader = p.replicas[1] "
		  . "AND p.leader_epoch > coalesce(e.leader_epoch, -1)) "
		  . "FROM mq_coord.partition p LEFT JOIN bench_epochs e USING (partition) "
		  . "WHERE p.topic = 'idle'");
}

# CPU ticks so far per group: the coordinator, each node, the brokers
sub cpu_ticks
{
	my %pids = (coordinator => [ MqCluster::server_pids($c->coord) ],
		brokers => [ grep { defined } @{ $c->{brokers} }[ 1 .. 3 ] ]);
	$pids{"node $_"} = [ MqCluster::server_pids($c->node($_)) ] for 1 .. 3;
	my %sum;
	for my $group (keys %pids)
	{
		$sum{$group} = 0;
		for my $pid (@{ $pids{$group} })
		{
			open(my $fh, '<', "/proc/$pid/stat") or next;
			my @f = split ' ', ((<$fh> // '') =~ s/^.*\)\s+//r);
			# utime, stime, and of reaped children (the postmaster's
			# cutime, cstime): a backend that exits within the window
			# moves its time there rather than out of the sum
			$sum{$group} += $f[11] + $f[12] + $f[13] + $f[14];
		}
	}
	return \%sum;
}

# pg_stat_user_functions of node 1: name => [calls, total ms, self ms]
sub function_stats
{
	return {} unless $ENV{MQ_BENCH_FUNCTIONS};
	my %f;
	for (split /\n/, $c->node(1)->safe_psql('postgres',
		"SELECT schemaname || '.' || funcname, "
		  . "sum(calls), sum(total_time), sum(self_time) FROM pg_stat_user_functions GROUP BY 1"))
	{
		my ($name, @v) = split /\|/;
		$f{$name} = \@v if @v == 3;
	}
	return \%f;
}

# The functions that took the most time on node 1 between two snapshots
sub function_note
{
	my ($f0, $f1, $dt) = @_;
	my %d;
	for my $name (keys %$f1)
	{
		my @a = @{ $f0->{$name} // [ 0, 0, 0 ] };
		$d{$name} = [ map { ($f1->{$name}[$_] - $a[$_]) / $dt } 0 .. 2 ];
	}
	my @top = grep { $d{$_}[0] > 0 } sort { $d{$b}[1] <=> $d{$a}[1] } keys %d;
	note(sprintf('  node 1 %s: %.1f calls/s, %.1f ms/s (self %.1f)', $_, @{ $d{$_} }))
	  for @top[ 0 .. ($#top < 9 ? $#top : 9) ];
}

sub restart_brokers
{
	my ($conf) = @_;
	$c->coord->safe_psql('postgres',
		"DROP TABLE IF EXISTS bench_epochs; CREATE TABLE bench_epochs AS "
		  . "SELECT partition, leader_epoch FROM mq_coord.partition WHERE topic = 'idle'");
	$c->signal_broker($_, 'TERM') for 1 .. 3;
	$c->{opt}{broker_conf} = $conf;
	$c->start_broker($_) for 1 .. 3;
}

my %runs = (old => [], new => []);
for my $r (1 .. $rounds)
{
	for my $kind ('old', 'new')
	{
		restart_brokers($kind eq 'old' ? "[broker]\ntick.idle.ms = 100\n" : '');
		settled() or die 'the partitions did not settle';
		sleep 2;                    # past the first ticks after settling
		my $f0 = function_stats();    # its psql outside the CPU window
		my ($t0, $c0) = (time, cpu_ticks());
		sleep $secs;
		my ($c1, $dt) = (cpu_ticks(), time - $t0);
		my $f1 = function_stats();
		my %ms = map { $_ => ($c1->{$_} - $c0->{$_}) * 1000 / $tck / $dt } keys %$c1;
		my $ms = 0;
		$ms += $_ for values %ms;
		push @{ $runs{$kind} }, $ms;
		note(sprintf('round %d %s: %.0f ms of CPU per second (%s)', $r, $kind, $ms,
			join(', ', map { sprintf('%s %.0f', $_, $ms{$_}) } sort keys %ms)));
		function_note($f0, $f1, $dt);
	}
}

sub median { my @s = sort { $a <=> $b } @_; return $s[ $#s / 2 ]; }
my ($old, $new) = (median(@{ $runs{old} }), median(@{ $runs{new} }));
note(sprintf('idle cluster, %d partitions: %.0f ms/s with the tick every 100 ms, '
	  . '%.0f ms/s with tick.idle.ms: %.2fx', $parts, $old, $new, $new / $old));
if (my $out = $ENV{MQ_BENCH_OUT})
{
	open(my $fh, '>', $out) or die "$out: $!";
	printf $fh "tick every 100 ms\t%.0f\ntick.idle.ms 500\t%.0f\n", $old, $new;
}
ok(1, 'measured');
$c->teardown;
done_testing();
