# MqSession: one psql kept open per server for the TAP tests' loops (the
# producer's and consumer's children of MqCluster.pm, the tests' own loops,
# and poll_query_until, which MqCluster.pm points here), in place of a new
# psql and a new backend for each statement.
#
#   my ($ok, $out) = MqSession::run($node, $sql, $timeout);
#   my ($ok, $stdout, $stderr) = MqSession::run_conninfo($conninfo, $sql, $timeout);
#   my $out = MqSession::safe_psql($node, $dbname, $sql);  # dies on failure
#   my $out = MqSession::safe_psql($node, $dbname, $sql, fresh => 1);  # DISCARD ALL first
#   my ($ok, $out) = MqSession::once($node, $sql, $timeout);  # a psql of its own
#
# run has the contract of once (MqCluster::psql_cmd): true when the statement
# succeeded, its output with psql's messages (stderr) after it, and psql
# killed when $timeout seconds pass (a paused server must not hold a
# client).  Why: on the 2-core CI machine a psql and its backend cost about
# 47 ms of CPU to start and stop, a statement on an open session under 1 ms,
# and the loops ran a statement or two every 10 to 100 ms; docs/design.md,
# "The test command's time", has the measurement.
#
# A statement must behave as on a new connection, so each goes after a
# probe (`SELECT 1`) in the same write: when the server went away since
# the last statement (killed, restarted, the session terminated), the
# probe fails and psql, which reads a script, ends without running the
# statement; the statement then goes once more on a new session.  A
# statement that fails or times out after the probe passed is a failure
# of the statement, as before.  Sessions belong to the process that opened
# them (a forked child opens its own), and end with it: psql reads EOF.
# Statements longer than 60 kB go through once (a file), so that a
# write never blocks past the deadline.
package MqSession;

use strict;
use warnings;

use File::Temp ();
use IPC::Open3 ();
use POSIX ();
use Symbol ();
use Time::HiRes qw(time);

my %open;    # "pid conninfo" => { pid, in, out, err, used }
my $seq = 0;

sub run
{
	my ($node, $sql, $timeout) = @_;
	return once($node, $sql, $timeout) if length($sql) > 60 * 1024;
	my ($ok, $out, $err) = run_conninfo(
		'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres', $sql, $timeout);
	return ($ok, $out . $err);
}

sub run_conninfo
{
	my ($conninfo, $sql, $timeout, %opt) = @_;
	my $deadline = $timeout ? time + $timeout : undef;
	my $key = ($opt{fresh} ? 'fresh ' : '') . "$$ $conninfo";
	while (1)
	{
		my $s = $open{$key} //= start($conninfo, $opt{fresh});
		my ($state, $out, $err) = exchange($s, $sql, $deadline);
		# only a session whose statement succeeded serves again: one that
		# failed may have left its connection in any state
		if ($state ne 'ok')
		{
			finish($s);
			delete $open{$key};
		}
		# a session that served before and lost its server: once more
		next if $state eq 'stale' && $s->{used};
		$s->{used} = 1;
		return ($state eq 'ok', $out, $err);
	}
}

# As PostgreSQL::Test::Cluster's safe_psql: the output without its last
# newline; dies when the statement fails (or takes the test's timeout).
# The highly available coordinator's own safe_psql, with a new connection
# each time: a session kept on a node that is then paused would wait
# there, where a new connection tries its other node.
# With fresh => 1, the statement runs on a session of its own kind that
# begins each statement with DISCARD ALL, as on a new connection (a
# transaction left open fails it: the statement goes on a new session);
# its messages (NOTICEs) are printed as PostgreSQL::Test::Cluster prints
# them.
sub safe_psql
{
	my ($node, $dbname, $sql, %opt) = @_;
	return $node->safe_psql($dbname, $sql) if $node->isa('MqHaCoord');
	my ($ok, $out, $err) = run_conninfo($node->connstr($dbname), $sql,
		$PostgreSQL::Test::Utils::timeout_default, %opt);
	die "statement failed: $sql\n$err" unless $ok;
	print "#### Begin standard error\n$err\n#### End standard error\n" if $opt{fresh} && $err ne '';
	chomp $out;
	return $out;
}

sub start
{
	my ($conninfo, $fresh) = @_;
	my $err = Symbol::gensym();
	my $pid = IPC::Open3::open3(my $in, my $out, $err,
		'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose',
		'-d', $conninfo);
	$in->autoflush(1);
	$err->blocking(0);
	return { pid => $pid, in => $in, out => $out, err => $err, used => 0,
		probe => $fresh ? "DISCARD ALL;\nSELECT 1;" : 'SELECT 1;' };
}

sub finish
{
	my ($s) = @_;
	kill 'KILL', $s->{pid};
	close $s->{$_} for qw(in out err);
	waitpid($s->{pid}, 0);
}

# Send the probe and the statement, read to the statement's end mark.
# Returns (state, stdout, stderr): state 'ok', 'failed' (the statement
# failed), 'lost' (no end: the deadline passed or psql ended after the
# probe) or 'stale' (the probe failed: the statement never ran).
sub exchange
{
	my ($s, $sql, $deadline) = @_;
	$seq++;
	my ($probe, $end) = ("__mq_probe_${$}_$seq", "__mq_end_${$}_$seq");
	local $SIG{PIPE} = 'IGNORE';
	my $wrote = print { $s->{in} } "$s->{probe}\n\\echo $probe :ERROR\n$sql\n;\n\\echo $end :ERROR\n";
	my ($out, $err) = ('', '');
	my $rin = '';
	vec($rin, fileno($s->{$_}), 1) = 1 for qw(out err);
	my ($state, $eof) = ('lost', 0);
	while ($wrote)
	{
		if ($out =~ /^\Q$end\E (\w+)\n/m)
		{
			$state = $1 eq 'false' ? 'ok' : 'failed';
			last;
		}
		my $left = defined $deadline ? $deadline - time : undef;
		last if defined $left && $left <= 0;
		next if select(my $r = $rin, undef, undef, $left) <= 0;
		sysread($s->{err}, $err, 65536, length $err) if vec($r, fileno($s->{err}), 1);
		next unless vec($r, fileno($s->{out}), 1);
		my $n = sysread($s->{out}, $out, 65536, length $out);
		next if !defined $n && $!{EINTR};
		$eof = 1, last unless $n;
	}
	# psql wrote its messages before the mark that follows them
	1 while sysread($s->{err}, $err, 65536, length $err);
	my ($pstate) = $out =~ /^\Q$probe\E (\w+)\n/m;
	$state = 'stale' if !$wrote || (defined $pstate ? $pstate ne 'false' : $eof);
	$out =~ s/^1\n\Q$probe\E \w+\n//m;
	$out =~ s/^\Q$end\E \w+\n//m;
	return ($state, $out, $err);
}

# Run one statement with psql; returns (success, output).  With $timeout
# (seconds), psql is killed (SIGKILL) after that long: a paused node must
# not hold a client forever.  Not by an alarm inherited across exec: psql 15
# catches SIGALRM once connected (its \watch timer), so an alarm ended a
# connection attempt but never a statement in progress.
sub once
{
	my ($node, $sql, $timeout) = @_;
	my @cmd = ('psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose',
		'-h', $node->host, '-p', $node->port, '-d', 'postgres');
	# a statement too long for one argument (a big batch) goes in a file
	my $sqlfile;
	if (length($sql) > 64 * 1024)
	{
		my $fh;
		($fh, $sqlfile) = File::Temp::tempfile('mq-sql-XXXXXX', TMPDIR => 1);
		print $fh $sql;
		close $fh;
		push @cmd, '-f', $sqlfile;
	}
	else
	{
		push @cmd, '-c', $sql;
	}
	my $out = '';
	my $pid = open(my $fh, '-|');
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDERR, '>&', \*STDOUT;
		exec @cmd or POSIX::_exit(127);
	}
	my $deadline = $timeout ? time + $timeout : undef;
	my $rin = '';
	vec($rin, fileno($fh), 1) = 1;
	while (1)
	{
		my $left = defined $deadline ? $deadline - time : undef;
		if (defined $left && $left <= 0)
		{
			kill 'KILL', $pid;	# then read on to the EOF its death brings
			$deadline = undef;
			next;
		}
		next if select(my $r = $rin, undef, undef, $left) <= 0;
		my $n = sysread($fh, my $buf, 65536);
		next if !defined $n && $!{EINTR};
		last unless $n;
		$out .= $buf;
	}
	close $fh;
	my $status = $?;
	unlink $sqlfile if $sqlfile;
	return ($status == 0, $out);
}

1;
