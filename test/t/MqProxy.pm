# MqProxy: a TCP forwarder that a test can cut silently, without root.
#
#   my $px = MqProxy->start(upstream => '/tmp/sockdir/.s.PGSQL.5432',
#                           state => "$dir/proxy1.state");
#   ... a client connects to 127.0.0.1:$px->{port} instead of the server ...
#   $px->cut;     # silence both ways: no RST, no FIN, nothing delivered
#   $px->heal;    # forwarding resumes, connections and buffers intact
#   $px->stop;
#
# What it owns: one child process (forked, no exec) listening on a port of
# 127.0.0.1 that the kernel picks, which forwards every connection it
# accepts to the upstream (a Unix socket path, or host:port).  A cut
# (SIGUSR1) makes it stop accepting, reading and writing on every socket
# at once: the client's and the server's kernels still acknowledge what
# was already in flight and answer keepalive probes, but no byte crosses,
# and no connection is reset or closed, so each side sees silence, as
# behind a firewall that drops packets.  New connections complete their
# TCP handshake in the listen backlog and then hear nothing (a client's
# connect_timeout fires).  A heal (SIGUSR2) resumes forwarding where it
# stopped: what either side wrote meanwhile is delivered then, and the
# backlog is accepted.
#
# Unlike a real packet drop, the kernel keeps answering TCP keepalives on
# both sides of the proxy, so neither peer learns of a cut from its
# keepalives; it learns only from its own deadlines (statement timeouts,
# heartbeat ages).  tcp_user_timeout does not fire either (everything
# written is acknowledged by the proxy's kernel).
#
# An upstream that cannot be reached (its server is dead) makes the
# forwarder close its listening socket, so that clients' connections are
# refused as they would be by the dead server's machine (libpq then tries
# the next host of a multi-host conninfo; a connection accepted and then
# closed would count as reached and end its attempt).  The connection that
# found the upstream dead is closed; the forwarder listens on the same port
# again once the upstream accepts connections (probed every 100 ms).
#
# cut and heal wait until the child has applied the change (it writes its
# state to the state file), so that a test knows the cut is in force when
# they return.  Locking: none; the parent only signals the child.
package MqProxy;

use strict;
use warnings;

use IO::Socket::INET;
use IO::Socket::UNIX;
use Socket qw(SOMAXCONN);
use POSIX ();
use Time::HiRes qw(time usleep);

# at most this much read from one side and not yet written to the other
use constant BUFMAX => 65536;

sub start
{
	my ($class, %opt) = @_;
	my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
		Proto => 'tcp', Listen => SOMAXCONN, ReuseAddr => 1)
	  or die "MqProxy: cannot listen on 127.0.0.1: $!";
	my $self = bless { port => $listen->sockport, upstream => $opt{upstream},
		state => $opt{state} }, $class;
	unlink $self->{state};
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		run_child($self, $listen);
		POSIX::_exit(0);
	}
	close $listen;
	$self->{pid} = $pid;
	$self->wait_state('open');
	return $self;
}

# Wait until the child reports $want in its state file.
sub wait_state
{
	my ($self, $want) = @_;
	my $deadline = time + ($PostgreSQL::Test::Utils::timeout_default // 180);
	while (time < $deadline)
	{
		if (open my $fh, '<', $self->{state})
		{
			my $s = <$fh> // '';
			close $fh;
			return 1 if $s eq "$want\n";
		}
		die "MqProxy: the forwarder (pid $self->{pid}) is gone" unless kill 0, $self->{pid};
		usleep(5_000);
	}
	die "MqProxy: the forwarder did not report $want";
}

sub cut
{
	my ($self) = @_;
	kill 'USR1', $self->{pid};
	$self->wait_state('cut');
}

sub heal
{
	my ($self) = @_;
	kill 'USR2', $self->{pid};
	$self->wait_state('open');
}

sub stop
{
	my ($self) = @_;
	return unless $self->{pid};
	kill 'KILL', $self->{pid};
	waitpid($self->{pid}, 0);
	$self->{pid} = undef;
}

# ---------------------------------------------------------------------
# The child
# ---------------------------------------------------------------------

sub connect_upstream
{
	my ($up) = @_;
	return IO::Socket::UNIX->new(Peer => $up, Type => Socket::SOCK_STREAM())
	  if $up =~ m{^/};
	return IO::Socket::INET->new(PeerAddr => $up, Proto => 'tcp');
}

sub write_state
{
	my ($file, $state) = @_;
	open my $fh, '>', "$file.tmp" or POSIX::_exit(1);
	print $fh "$state\n";
	close $fh;
	rename "$file.tmp", $file or POSIX::_exit(1);
}

# One connection: two sockets and what each direction holds.  Returns
# false when the upstream could not be reached.
sub accept_one
{
	my ($listen, $up, $conns) = @_;
	my $c = $listen->accept or return 1;
	my $u = connect_upstream($up);
	if (!$u) { close $c; return 0; }
	$_->blocking(0) for $c, $u;
	push @$conns, { s => [ $c, $u ], buf => [ '', '' ], eof => [ 0, 0 ] };
	return 1;
}

# Listen on $port again once the upstream accepts connections (undef
# until then).
sub relisten
{
	my ($port, $up) = @_;
	my $probe = connect_upstream($up) or return undef;
	close $probe;
	return IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
		Proto => 'tcp', Listen => SOMAXCONN, ReuseAddr => 1);
}

# Move bytes for one connection after select: buf->[i] holds what was read
# from side i and goes to side 1-i.  Returns false once it is finished.
sub pump
{
	my ($conn, $rd, $wr) = @_;
	for my $i (0, 1)
	{
		my ($from, $to) = ($conn->{s}[$i], $conn->{s}[ 1 - $i ]);
		if (vec($rd, fileno($from), 1))
		{
			my $n = sysread($from, my $data, BUFMAX);
			if (defined $n && $n > 0) { $conn->{buf}[$i] .= $data; }
			elsif (defined $n || !$!{EAGAIN}) { $conn->{eof}[$i] = 1; }
		}
		if (length $conn->{buf}[$i] && vec($wr, fileno($to), 1))
		{
			my $n = syswrite($to, $conn->{buf}[$i]);
			if (defined $n) { substr($conn->{buf}[$i], 0, $n) = ''; }
			elsif (!$!{EAGAIN}) { return 0; }
		}
	}
	# a side that closed ends the connection once what it sent is delivered
	for my $i (0, 1)
	{
		return 0 if $conn->{eof}[$i] && !length $conn->{buf}[$i];
	}
	return 1;
}

sub run_child
{
	my ($self, $listen) = @_;
	my $want = 'open';
	local $SIG{USR1} = sub { $want = 'cut' };
	local $SIG{USR2} = sub { $want = 'open' };
	local $SIG{TERM} = sub { POSIX::_exit(0) };
	my @conns;
	my $state = '';
	while (1)
	{
		if ($want ne $state)
		{
			$state = $want;
			write_state($self->{state}, $state);
		}
		if ($state eq 'cut')
		{
			# no accept, no read, no write: wait for the heal (a signal
			# interrupts the select; the timeout bounds a signal that came
			# just before it)
			select(undef, undef, undef, 0.1);
			next;
		}
		$listen //= relisten($self->{port}, $self->{upstream});
		my ($rd, $wr) = ('', '');
		vec($rd, fileno($listen), 1) = 1 if $listen;
		for my $conn (@conns)
		{
			for my $i (0, 1)
			{
				vec($rd, fileno($conn->{s}[$i]), 1) = 1
				  if !$conn->{eof}[$i] && length $conn->{buf}[$i] < BUFMAX;
				vec($wr, fileno($conn->{s}[ 1 - $i ]), 1) = 1 if length $conn->{buf}[$i];
			}
		}
		my $n = select(my $r = $rd, my $w = $wr, undef, 0.1);
		next if $n <= 0;
		if ($listen && vec($r, fileno($listen), 1) && !accept_one($listen, $self->{upstream}, \@conns))
		{
			close $listen;		# refused from now on, until the upstream is back
			undef $listen;
		}
		@conns = grep {
			my $keep = pump($_, $r, $w);
			if (!$keep) { close $_->{s}[0]; close $_->{s}[1]; }
			$keep
		} @conns;
	}
}

1;
