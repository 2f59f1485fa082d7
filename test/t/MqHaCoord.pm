# MqHaCoord: the coordinator of an MqCluster run highly available by
# pg_auto_failover (scripts/coord-ha.sh: a monitor, a primary and a
# synchronous standby on loopback), for TAP tests.
#
#   my $c = MqCluster->new(nodes => 3, coord_ha => 1);
#   $c->coord->safe_psql(...)        # the primary, whichever node it is
#   my $n = $c->coord->kill9_primary; # kill -9 its pg_autoctl and PostgreSQL
#   $c->coord->wait_writable;         # a primary takes writes again
#   $c->coord->restart_node($n);      # it rejoins as the standby
#   $c->coord->kill9_node('monitor'); $c->coord->restart_node('monitor');
#   $c->coord->wait_ready;            # a primary and a secondary again
#   $c->coord->pause_node($n) / resume_node($n) (SIGSTOP / SIGCONT of the
#       whole node: pg_autoctl and PostgreSQL; resume_node($n, 'postgres')
#       resumes PostgreSQL alone, its pg_autoctl stays stopped)
#   my $s = MqHaCoord::start_role_sampler($c, 't', 0);  # every node's role
#   MqHaCoord::check_roles($c, $s, 't', 0);  # each leader elected, once
#
# The object is a PostgreSQL::Test::Cluster whose host and port name both
# coordinator nodes and whose connection strings carry
# target_session_attrs=read-write, so safe_psql and poll_query_until reach
# the primary; MqCluster::psql_cmd (host and port only) reaches any of
# them, which serves its reads.  Brokers get the multi-host conninfo of
# conninfo_for($role).  Everything stops when the test ends.
package MqHaCoord;

use strict;
use warnings;

use parent -norequire, 'PostgreSQL::Test::Cluster';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use File::Temp ();
use File::Basename ();
use POSIX ();
use MqSession;

my @started;
END { $_->stop_ha for @started; }

sub script { ($ENV{MQ_REPO_ROOT} // '.') . '/scripts/coord-ha.sh' }

# Where its logs go: next to the servers' logs, named after the test
# (NAME_coord-ha*), as PostgreSQL::Test::Cluster names the nodes' logs, so
# that tests run side by side (scripts/test.sh) write files of their own.
sub logfile
{
	my ($what) = @_;
	(my $test = File::Basename::basename($0)) =~ s/\.[^.]+$//;
	return "$PostgreSQL::Test::Utils::log_path/${test}_coord-ha$what";
}

sub ha
{
	my ($self, @args) = @_;
	# its messages, and pg_autoctl's logs at the end, go next to the
	# servers' logs (kept when a test fails)
	my $log = logfile('.log');
	local $ENV{MQ_COORD_HA_OWNER} = $$;
	my $argv = join ' ', map { "'$_'" } @args;	# an empty ROLE stays an argument
	my $out = `bash @{[ script() ]} $argv 2>>$log`;
	die "coord-ha.sh @args failed" if $? != 0;
	chomp $out;
	return $out;
}

sub start
{
	my ($class, %opt) = @_;
	# the monitor, the two nodes, and the PgBouncer the keepers reach the
	# monitor through (coord-ha.sh: half the CPU of an idle coordinator)
	my @ports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 4;
	# a short path: the nodes' Unix sockets live there
	my $dir = File::Temp::tempdir('mqha-XXXXXX', TMPDIR => 1, CLEANUP => 1) . '/ha';
	my $self = bless {
		_name => 'coord', _host => '127.0.0.1,127.0.0.1', _port => "$ports[1],$ports[2]",
		ha_dir => $dir, ports => [ @ports[ 1, 2 ] ], paused => {} }, $class;
	push @started, $self;
	$self->ha('start', $dir, @ports[ 0 .. 2 ], $opt{role} // '', $ports[3]);
	note("HA coordinator: monitor $ports[0], nodes $ports[1], $ports[2] in $dir");
	return $self;
}

sub connstr
{
	my ($self, $dbname) = @_;
	# a paused server accepts the TCP connection and never answers
	return $self->SUPER::connstr($dbname) . ' target_session_attrs=read-write connect_timeout=2';
}

sub conninfo_for
{
	my ($self, $user) = @_;
	return "host=$self->{_host} port=$self->{_port} dbname=postgres user=$user "
	  . 'target_session_attrs=read-write connect_timeout=2';
}

# The node (1 or 2) the monitor names primary.
sub primary
{
	my ($self) = @_;
	return $self->ha('primary', $self->{ha_dir});
}

sub node_pids
{
	my ($self, $n) = @_;
	return grep { /^\d+$/ } split /\n/, $self->ha('pids', $self->{ha_dir}, $n);
}

sub kill9_primary
{
	my ($self) = @_;
	my $n = $self->primary;
	$self->kill9_node($n);
	return $n;
}

# kill -9 node $n (1, 2 or 'monitor'): its pg_autoctl and PostgreSQL
sub kill9_node
{
	my ($self, $n) = @_;
	$self->ha('kill9', $self->{ha_dir}, $n);
}

sub restart_node
{
	my ($self, $n) = @_;
	$self->ha('restart', $self->{ha_dir}, $n);
}

# SIGSTOP node $n whole: its pg_autoctl processes first (they would
# restart a PostgreSQL they find stopped), then the postmaster and its
# children.
sub pause_node
{
	my ($self, $n) = @_;
	my $pm = $self->postmaster($n);
	my @keeper = grep { $_ != $pm } $self->keeper_pids($n);
	kill 'STOP', @keeper;
	my @pg = grep { $_ != $pm } MqCluster::server_pids({ _pid => $pm });
	kill 'STOP', $pm, @pg;
	$self->{paused}{$n} = { keeper => \@keeper, pg => [ $pm, @pg ] };
}

# SIGCONT node $n; with 'postgres', PostgreSQL alone.
sub resume_node
{
	my ($self, $n, $only) = @_;
	my $p = $self->{paused}{$n} or return;
	kill 'CONT', @{ $p->{pg} };
	$p->{pg} = [];
	return if defined $only && $only eq 'postgres';
	kill 'CONT', @{ $p->{keeper} };
	delete $self->{paused}{$n};
}

sub postmaster
{
	my ($self, $n) = @_;
	open my $fh, '<', "$self->{ha_dir}/node$n/postmaster.pid" or return 0;
	my $pm = <$fh>;
	chomp $pm;
	return $pm;
}

sub keeper_pids
{
	my ($self, $n) = @_;
	my $pgid = do { local @ARGV = ("$self->{ha_dir}/node$n.pid"); <> } // 0;
	chomp $pgid;
	return grep { /^\d+$/ } split /\n/, `pgrep -g $pgid`;
}

# Wait until a primary takes writes (after a failover: the promoted standby
# opens for writes once the old primary is known demoted).
sub wait_writable
{
	my ($self) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if $self->can_write;
		usleep(50_000);
	}
	return 0;
}

# On a kept session (MqSession.pm), given 3 s: one kept on a node that was
# paused since is then dropped, and the next try connects anew, which
# passes over a paused node after connect_timeout.
sub can_write
{
	my ($self) = @_;
	my ($ok) = MqSession::run_conninfo($self->connstr('postgres'), 'SELECT pg_catalog.txid_current()', 3);
	return $ok;
}

# Wait until the monitor sees a primary and a secondary again.
sub wait_ready
{
	my ($self) = @_;
	my $log = logfile('.log');
	return system("bash @{[ script() ]} wait $self->{ha_dir} "
		  . "$PostgreSQL::Test::Utils::timeout_default 2>>$log") == 0;
}

sub stop_ha
{
	my ($self) = @_;
	local $?;
	kill 'CONT', @{ $_->{pg} }, @{ $_->{keeper} } for values %{ $self->{paused} };
	$self->{paused} = {};
	system('bash', script(), 'stop', $self->{ha_dir});
	for my $f (glob("$self->{ha_dir}/*.log $self->{ha_dir}/node*/log/*.log"))
	{
		(my $name = $f) =~ s{^\Q$self->{ha_dir}\E/}{};
		$name =~ s{/}{_}g;
		system('cp', $f, logfile("_$name"));
	}
}

# ---------------------------------------------------------------------
# Who leads: a child that asks every data node for its role and epoch in
# the partition every 50 ms, and the check of what it saw against the
# coordinator's elections.
# ---------------------------------------------------------------------

sub start_role_sampler
{
	my ($c, $topic, $partition) = @_;
	my $file = "$c->{logprefix}roles.$topic.$partition";
	my $stop = "$file.stop";
	unlink $stop;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open my $out, '>', $file or POSIX::_exit(1);
		$out->autoflush(1);
		while (!-e $stop)
		{
			for my $i (1 .. scalar @{ $c->{nodes} })
			{
				my ($ok, $row) = MqSession::run($c->node($i),
					"SELECT role, leader_epoch FROM mq.replica_status "
					  . "WHERE topic = '$topic' AND partition = $partition", 2);
				printf $out "%d %s %.3f\n", $i, $1, time
				  if $ok && $row =~ /^(leader\|\d+)$/m;
			}
			usleep(50_000);
		}
		POSIX::_exit(0);
	}
	$c->{children}{$pid} = 1;
	return { pid => $pid, file => $file, stop => $stop };
}

# Kill the node of $leader (which leads $topic/$partition in $epoch) and
# wait for another broker's election in a newer epoch; it must then take
# the producer's writes and feed the consumer.  Returns the new leader.
sub elect_after_kill
{
	my ($c, $topic, $partition, $leader, $epoch, $p, $r) = @_;
	$c->kill9_node($leader);
	note("killed the leader's node $leader");
	$c->coord->poll_query_until('postgres',
		"SELECT leader <> $leader AND leader_epoch > $epoch FROM mq_coord.partition "
		  . "WHERE topic = '$topic' AND partition = $partition")
	  or diag('no new leader was elected');
	my $new = $c->leader($topic, $partition);
	isnt($new, $leader, "broker $new was elected in a new epoch");
	ok($c->wait_acks($p, count => 5, since => time, node => $new), 'the new leader acknowledges');
	ok($c->wait_consumed($r, count => 5, since => time), 'the consumer reads from it');
	return $new;
}

# The end of a test: stop the producer and the consumer, check_roles, and
# the checker on every replica of $topic/$partition.
sub finish
{
	my ($c, $roles, $topic, $partition, $p, $r) = @_;
	my $lines = $c->stop_producer($p);
	$c->stop_consumer($r);
	my $final = $c->leader($topic, $partition);
	check_roles($c, $roles, $topic, $partition, $lines, $final);
	$c->check_log($topic, $partition, $lines, $final, grep { $_ != $final } 1 .. 3);
	$c->teardown;
}

# Every epoch the coordinator elected a leader in, once, and every leader a
# data node was (as sampled) elected for that epoch: a broker that acted on
# an election a failover took back, or an epoch handed out twice, shows as
# a node leading an epoch the coordinator gave to nobody or to another.
# Every acknowledgement came from the leader of the epoch its records
# were written in, or of a later epoch (a retry), by the final leader's
# epoch history.
sub check_roles
{
	my ($c, $s, $topic, $partition, $acks, $final) = @_;
	open my $fh, '>', $s->{stop};
	close $fh;
	waitpid($s->{pid}, 0);
	delete $c->{children}{ $s->{pid} };
	my %elected;
	my $dups = 0;
	for (split /\n/, $c->coord->safe_psql('postgres',
			"SELECT (detail->>'leader_epoch') || ' ' || broker_id FROM mq_coord.event "
			  . "WHERE kind = 'leader_elected' AND topic = '$topic' AND partition = $partition"))
	{
		my ($e, $b) = split / /;
		$dups++ if exists $elected{$e};
		$elected{$e} = $b;
	}
	is($dups, 0, 'the coordinator handed out no leader epoch twice');
	my (%seen, @wrong);
	for (split /\n/, PostgreSQL::Test::Utils::slurp_file($s->{file}))
	{
		my ($node, $role, $at) = split / /;
		my (undef, $e) = split /\|/, $role;
		next if $seen{"$node/$e"}++;
		push @wrong, "node $node led epoch $e (elected: " . ($elected{$e} // 'nobody') . ')'
		  if !defined $elected{$e} || $elected{$e} != $node;
	}
	ok(scalar(keys %seen) > 0, 'the sampler saw leaders');
	is_deeply(\@wrong, [], 'every leader a data node was, it was elected for, in that epoch');
	my @hist = map { [ split /\|/ ] } split /\n/, $c->node($final)->safe_psql('postgres',
		"SELECT h.leader_epoch, h.start_offset FROM mq.leader_epoch_history h "
		  . "JOIN mq.topic t USING (topic_id) WHERE t.topic_name = '$topic' "
		  . "AND h.partition = $partition ORDER BY h.leader_epoch");
	# the leader of that epoch, or of a later one: an idempotent retry of a
	# batch the old leader wrote (and died before acknowledging) is
	# acknowledged by the new leader, at the offset the old one wrote it at
	my @bad;
	for my $a (grep { $_->{kind} eq 'ack' } @$acks)
	{
		my ($e) = (map { $_->[0] } grep { $_->[1] <= $a->{base} } @hist)[-1];
		my $later = defined $e && grep { $_ >= $e && $elected{$_} == $a->{node} } keys %elected;
		push @bad, "seq $a->{seq} at $a->{base} acknowledged by node $a->{node}, "
		  . 'epoch ' . ($e // '?') . ' led by ' . ($elected{ $e // -1 } // '?')
		  if !$later;
	}
	is_deeply(\@bad, [], 'every acknowledgement came from the leader of its records\' epoch');
	return \%elected;
}

1;
