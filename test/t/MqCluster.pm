# MqCluster: a replicated mq cluster on loopback for TAP tests.
#
#   my $c = MqCluster->new(nodes => 3);   # 3 data nodes + a coordinator
#   (options: metrics => 1, high_fds => 1, lag_time_max_ms, node_conf, broker_conf,
#    coord_proxy => 1, coord_ha => 1: the coordinator highly available, MqHaCoord.pm;
#    both: each broker reaches each coordinator node through a forwarder)
#   $c->start_brokers;                    # one mq-broker per data node
#   $c->create_topic('t', 1, {'replication.factor' => 3, 'min.insync.replicas' => 2});
#   $c->wait_caught_up('t');              # each ISR follower fetched in its leader's epoch
#   $c->wait_preferred_leaders('t', 'u'); # leaders where placement wants them, to stay
#   my $p = $c->start_producer('t', 0);   # idempotent, acks=all, throughout
#   my $q = $c->start_producer('t', 0, tag => 'w', batch => 50);  # a second one
#   (leader => N: always to node N, without asking the coordinator)
#   ... faults: $c->kill9_node($i), $c->restart_node($i), $c->stop_broker ...
#   my $r = $c->start_consumer('t', 0);    # reads through the leader
#   ... faults: $c->kill9_node($i), $c->restart_node($i), $c->stop_broker,
#       $c->pause_node($i) / resume_node($i), $c->signal_broker($i, 'STOP'),
#       $c->kill9_coord / $c->coord->start, $c->pause_coord / resume_coord,
#       $c->cut_coordinator($i) / heal_coordinator($i) (coord_proxy => 1) ...
#   $c->wait_acks($p, since => $t);      # wait on progress, never sleep
#   my $acks = $c->stop_producer($p);
#   $c->stop_consumer($r);
#   $c->check_log('t', 0, $acks, @live);   # the independent checker
#   $c->check_log('t', 0, [ @$acks, @$acks_q ], @live);  # several producers
#
# The producer is a child process that sends batches with psql (one kept
# open per server, MqSession.pm) to whoever the coordinator names leader,
# retrying a batch with the same sequence until it is acknowledged, and
# records each acknowledgement (sequence, offset, node, time) in a file.
# The consumer is another child that reads with mq.fetch from whoever the
# coordinator names leader and records every record it was given (offset,
# value, node, time).  The checker compares those records with what every
# replica holds at the end: acknowledged records kept, at their offsets,
# once, in order; replicas identical below the high watermark; nothing a
# consumer saw later truncated or changed.
# A run that acknowledged nothing would pass all of that, so the checker
# fails it, unless the caller says that nothing was to be acknowledged
# ($c->check_log('t', 0, $acks, { expect_no_acks => 1 }, @live)).
#
# Several producers may write one partition: each has a tag (default 'v')
# that prefixes its values ('v0', 'v1', ...; 'w0', ...), its own producer
# id, batch size and acks file; check_log takes their lines together and
# checks each acknowledged batch, and each producer's order, by its tag.
#
# Cutting a broker from the coordinator: with coord_proxy => 1 every broker
# reaches the coordinator through a forwarder of its own (MqProxy.pm: a
# child process on a port of 127.0.0.1, kept across broker restarts).
# $c->cut_coordinator($i) makes broker $i's forwarder stop accepting,
# reading and writing at once, so the broker and its coordinator session
# hear silence, as behind a firewall dropping packets (no reset, no
# close); heal_coordinator($i) resumes forwarding.  Its node, the other
# brokers and the test's clients are not cut.  Unlike a real drop, the
# forwarder's kernel answers TCP keepalives, so the broker notices the cut
# by its statement deadline (coordinator.timeout.ms) and the coordinator by
# its heartbeat age (session.timeout.ms: another broker fences the
# session), not by keepalives.  No root, iptables or namespaces needed.
package MqCluster;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use Fcntl ();
use File::Basename ();
use MqProxy;
use MqHaCoord;
use MqSession;

# every cluster made, so that brokers never outlive a test that died
my @clusters;
END { $_->teardown for @clusters; }

# A test stopped by a signal (scripts/test.sh's timeout sends SIGTERM, an
# operator ^C) exits, so that the END blocks above and PostgreSQL::Test::
# Cluster's run: by default perl would die of it without running them, and
# its brokers and their mq-kafka would outlive it.  A forked child of the
# test (a producer, a consumer) just ends.
my $test_pid = $$;
for my $sig (qw(TERM INT HUP))
{
	$SIG{$sig} = sub {
		POSIX::_exit(1) if $$ != $test_pid;
		print STDERR "# stopped by SIG$sig: tearing down\n";
		exit 1;
	};
}

# Every test's poll_query_until polls on a kept session (MqSession.pm):
# the attempts, pause and verdict of PostgreSQL::Test::Cluster's own (its
# output exactly as expected, nothing on stderr), without a psql and a
# backend started for each attempt, 10 a second.  An attempt may take the
# test's timeout, or 5 s on the highly available coordinator: a session
# kept on a node that is then paused is dropped, and the next attempt
# connects anew, passing over a paused node after connect_timeout.
#
# safe_psql on a node's postgres database goes through a kept session too,
# one that begins each statement as a new connection would (DISCARD ALL:
# settings, role, prepared statements, advisory locks and temp tables of
# the statements before are gone).  Each psql and backend started cost
# about 55 ms of CPU on the CI machine, and safe_psql was most of the
# psql started by the multi-node tests (182 of 218 in test 117).  Other
# databases (which a test may drop), calls with options, and the highly
# available coordinator keep PostgreSQL::Test::Cluster's own.
my $cluster_safe_psql = \&PostgreSQL::Test::Cluster::safe_psql;
{
	no warnings 'redefine';
	*PostgreSQL::Test::Cluster::poll_query_until = \&poll_query_until;
	*PostgreSQL::Test::Cluster::safe_psql = \&safe_psql;
}

sub safe_psql
{
	my ($node, $dbname, $sql, @params) = @_;
	return $cluster_safe_psql->(@_) if @params || $dbname ne 'postgres' || $node->isa('MqHaCoord');
	return MqSession::safe_psql($node, $dbname, $sql, fresh => 1);
}

sub poll_query_until
{
	my ($node, $dbname, $query, $expected) = @_;
	return poll_conninfo_until($node->connstr($dbname), $query, $expected,
		$node->isa('MqHaCoord') ? 5 : $PostgreSQL::Test::Utils::timeout_default);
}

# The same on a connection string, each attempt given $attempt seconds.
sub poll_conninfo_until
{
	my ($conninfo, $query, $expected, $attempt) = @_;
	$expected //= 't';
	my ($out, $err) = ('', '');
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		(undef, $out, $err) = MqSession::run_conninfo($conninfo, $query // '', $attempt);
		chomp($out, $err);
		return 1 if $out eq $expected && $err eq '';
		usleep(100_000);
	}
	diag("poll_query_until timed out executing this query:\n"
		  . ($query // '(connection attempt only)')
		  . "\nexpecting this output:\n$expected\nlast actual query output:\n$out\nwith stderr:\n$err");
	return 0;
}

# Register a cluster for the END block (new does; test/unit/tap_daemons.sh
# registers one with stand-in daemons).
sub register
{
	my ($self) = @_;
	$self->{pid} = $$;
	push @clusters, $self;
	return $self;
}

# The pids of a process's children (mq-broker's mq-kafka), from /proc.
sub child_pids
{
	my ($pid) = @_;
	my @kids;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh> // next;
		# pid (comm) state ppid ...: comm may hold spaces and parentheses
		push @kids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $pid;
	}
	return @kids;
}

# Stop one broker and its mq-kafka: each resumed first (a paused process
# keeps SIGTERM pending), SIGTERM, and SIGKILL for what has not exited
# within 10 s; an mq-kafka is killed even when its broker exited cleanly.
sub stop_daemon
{
	my ($pid) = @_;
	my @kids = child_pids($pid);
	kill 'CONT', $pid, @kids;
	kill 'TERM', $pid;
	my $deadline = time + 10;
	my $gone;
	while (!($gone = waitpid($pid, POSIX::WNOHANG())) && time < $deadline)
	{
		usleep(20_000);
	}
	if (!$gone)
	{
		kill 'KILL', $pid;
		waitpid($pid, 0);
	}
	kill 'KILL', grep { kill 0, $_ } @kids;
}

sub new
{
	my ($class, %opt) = @_;
	my $self = bless { nodes => [], brokers => [], opt => \%opt }, $class;
	$self->register;
	my $n = $opt{nodes} // 3;
	# coord_ha => 1: the coordinator runs highly available (MqHaCoord.pm)
	$self->{coord} = MqHaCoord->start(role => $MqCluster::BROKER_ROLE) if $opt{coord_ha};
	for my $i (1 .. $n + ($opt{coord_ha} ? 0 : 1))
	{
		my $node = init_node($i <= $n ? "node$i" : 'coord', $i <= $n ? $opt{node_conf} : undef);
		$node->start;
		install_mq($node);
		if ($i <= $n) { push @{ $self->{nodes} }, $node; }
		else { $self->{coord} = $node; }
	}
	$self->{dir} = PostgreSQL::Test::Utils::tempdir();
	# broker logs and the producer's and consumer's records go next to the
	# servers' logs, which scripts/test.sh keeps when a test fails
	(my $test = File::Basename::basename($0)) =~ s/\.[^.]+$//;
	$self->{logdir} = $PostgreSQL::Test::Utils::log_path;
	$self->{logprefix} = "$self->{logdir}/${test}_";
	my $root = $ENV{MQ_REPO_ROOT} // '.';
	$self->{broker_bin} = -x "$root/broker/mq-broker/mq-broker"
		? "$root/broker/mq-broker/mq-broker" : 'mq-broker';
	return $self;
}

# A node's server, made but not started; $conf goes into postgresql.conf.
# Under scripts/test.sh its data directory is a copy of a template where
# the SQL of install_mq ran already (scripts/tap-initdb/initdb).
sub init_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	{
		local $ENV{MQ_INITDB_SQL} = install_sql();
		$node->init;
	}
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n"
		. "mq.maintenance_interval = 500\nlog_statement = none\n"
		. "log_min_messages = warning\n" . ($conf // '') . "\n");
	return $node;
}

# mq, and the role the brokers run as (no superuser: docs/replication.md)
sub install_sql { return 'CREATE EXTENSION mq; ' . broker_role_sql(); }

# Run install_sql on a started node, unless its data directory's template
# ran it (mq_initdb.sql holds what ran there).
sub install_mq
{
	my ($node) = @_;
	my $done = $node->data_dir . '/mq_initdb.sql';
	return if -e $done && PostgreSQL::Test::Utils::slurp_file($done) eq install_sql() . "\n";
	$node->safe_psql('postgres', install_sql());
}

sub node  { $_[0]{nodes}[ $_[1] - 1 ] }
sub coord { $_[0]{coord} }

# The role every broker connects as: a login role without superuser,
# granted exactly what a broker needs by mq.grant_broker (data node) and
# mq_coord.grant_broker (coordinator); every test that starts brokers
# proves those grants are enough.
our $BROKER_ROLE = 'mq_broker';

sub broker_role_sql
{
	return "CREATE ROLE $BROKER_ROLE LOGIN NOSUPERUSER; "
	  . "SELECT mq.grant_broker('$BROKER_ROLE'); SELECT mq_coord.grant_broker('$BROKER_ROLE');";
}

sub conninfo
{
	my ($node) = @_;
	return sprintf('host=%s port=%d dbname=postgres user=%s', $node->host, $node->port, $BROKER_ROLE);
}

sub broker_config
{
	my ($self, $i) = @_;
	my $file = "$self->{dir}/broker$i.ini";
	my $extra = $self->{opt}{broker_conf} // '';
	open my $fh, '>', $file or die "cannot write $file: $!";
	# metrics => 1: each broker serves Prometheus text on a port of its own
	my $metrics = '';
	if ($self->{opt}{metrics})
	{
		$self->{metrics_port}[$i] //= PostgreSQL::Test::Cluster::get_free_port();
		$metrics = "[metrics]\naddress = 127.0.0.1:$self->{metrics_port}[$i]\n";
	}
	print $fh "[broker]\nid = $i\nnode = " . conninfo($self->node($i)) . "\n"
		. "node.name = node$i\ncoordinator = " . $self->coord_conninfo($i) . "\n"
		. $metrics
		. "[replication]\nreplica.lag.time.max.ms = "
		. ($self->{opt}{lag_time_max_ms} // 2000) . "\n$extra";
	close $fh;
	return $file;
}

# The coordinator as broker $i reaches it: directly, or with coord_proxy
# => 1 through its forwarder (started on first use, kept until teardown).
sub coord_conninfo
{
	my ($self, $i) = @_;
	return $self->coord_ha_conninfo($i) if $self->{opt}{coord_ha};
	return conninfo($self->coord) unless $self->{opt}{coord_proxy};
	my $coord = $self->coord;
	my $up = $coord->host =~ m{^/}
	  ? sprintf('%s/.s.PGSQL.%d', $coord->host, $coord->port)
	  : sprintf('%s:%d', $coord->host, $coord->port);
	$self->{proxies}[$i] //= MqProxy->start(upstream => $up,
		state => "$self->{dir}/coord_proxy$i.state");
	return sprintf('host=127.0.0.1 port=%d dbname=postgres user=%s',
		$self->{proxies}[$i]{port}, $BROKER_ROLE);
}

# The highly available coordinator as broker $i reaches it: the multi-host
# conninfo of both its nodes, with coord_proxy => 1 through a forwarder of
# broker $i's own per node (so that a cut silences both).
sub coord_ha_conninfo
{
	my ($self, $i) = @_;
	my $coord = $self->coord;
	return $coord->conninfo_for($BROKER_ROLE) unless $self->{opt}{coord_proxy};
	my @ports;
	for my $k (0 .. $#{ $coord->{ports} })
	{
		$self->{ha_proxies}[$i][$k] //= MqProxy->start(upstream => "127.0.0.1:$coord->{ports}[$k]",
			state => "$self->{dir}/coord_proxy$i-$k.state");
		push @ports, $self->{ha_proxies}[$i][$k]{port};
	}
	return sprintf('host=%s port=%s dbname=postgres user=%s target_session_attrs=read-write connect_timeout=2',
		join(',', ('127.0.0.1') x @ports), join(',', @ports), $BROKER_ROLE);
}

# The forwarders between broker $i and the coordinator (one, or one per
# node of the highly available coordinator).
sub coord_proxies
{
	my ($self, $i) = @_;
	my @px = grep { defined } ($self->{proxies}[$i], @{ $self->{ha_proxies}[$i] // [] });
	die "cutting a broker from the coordinator needs coord_proxy => 1" unless @px;
	return @px;
}

# Silence between broker $i and the coordinator (both ways), and its end.
sub cut_coordinator
{
	my ($self, $i) = @_;
	$_->cut for $self->coord_proxies($i);
}

sub heal_coordinator
{
	my ($self, $i) = @_;
	$_->heal for $self->coord_proxies($i);
}

sub start_broker
{
	my ($self, $i) = @_;
	# a second broker $i would outlive the test: teardown stops the last one
	my $old = $self->{brokers}[$i];
	die "broker $i runs already (pid $old): stop it first (signal_broker)"
	  if $old && waitpid($old, POSIX::WNOHANG()) == 0;
	my $file = $self->broker_config($i);
	my $log = "$self->{logprefix}broker$i.log";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>>', $log or POSIX::_exit(1);
		open STDERR, '>>', $log or POSIX::_exit(1);
		# the brokers name their connections (application_name) as they do
		# in production, not after the test (PostgreSQL::Test::Utils sets
		# PGAPPNAME)
		delete $ENV{PGAPPNAME};
		# glibc fills freed memory with a pattern: a use after free of a
		# pointer crashes the broker (or its mq-kafka) and fails the test,
		# where it would otherwise read stale memory unseen
		$ENV{MALLOC_PERTURB_} = 165;
		if ($self->{opt}{high_fds})
		{
			# high_fds => 1: the broker starts with descriptors 3..1100 taken,
			# so every socket it opens has a number above FD_SETSIZE (1024)
			exec 'bash', '-c', 'ulimit -n 4096 || exit 1; '
			  . 'exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null 8</dev/null 9</dev/null; '
			  . 'for ((i = 10; i <= 1100; i++)); do exec {fd}</dev/null || exit 1; done; exec "$@"',
			  'mq-broker', $self->{broker_bin}, '-c', $file
			  or POSIX::_exit(1);
		}
		exec $self->{broker_bin}, '-c', $file or POSIX::_exit(1);
	}
	$self->{brokers}[$i] = $pid;
	return $pid;
}

sub start_brokers
{
	my ($self) = @_;
	$self->start_broker($_) for 1 .. scalar @{ $self->{nodes} };
	# all registered
	$self->coord->poll_query_until('postgres',
		'SELECT count(*) = ' . scalar(@{ $self->{nodes} }) . ' FROM mq_coord.broker')
	  or die 'brokers did not register';
}

sub signal_broker
{
	my ($self, $i, $sig) = @_;
	$self->signal_brokers($sig, $i);
}

# Signal several brokers at once, then reap those killed or stopped: a
# broker that outlives another by the time it takes to reap it may see
# its leadership lock free and take it over.
sub signal_brokers
{
	my ($self, $sig, @ids) = @_;
	kill $sig, map { $self->{brokers}[$_] } @ids;
	return unless $sig eq 'KILL' || $sig eq 'TERM';
	for my $i (@ids)
	{
		waitpid($self->{brokers}[$i], 0);
		$self->{brokers}[$i] = undef;
	}
}

# GET a path of broker $i's metrics endpoint: (status, body).
sub http_get
{
	my ($self, $i, $path) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{metrics_port}[$i],
		Proto => 'tcp', Timeout => 5) or return (0, "connect: $!");
	print $sock "GET $path HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	local $/;
	my $resp = <$sock> // '';
	close $sock;
	my ($status) = $resp =~ m{^HTTP/1\.\d (\d+)};
	my (undef, $body) = split /\r\n\r\n/, $resp, 2;
	return ($status // 0, $body // '');
}

# Broker $i's metrics as { 'name{labels}' => value }.
sub metrics
{
	my ($self, $i) = @_;
	my ($status, $body) = $self->http_get($i, '/metrics');
	return {} unless $status == 200;
	my %m;
	for (split /\n/, $body)
	{
		next if /^#/ || !length;
		my ($k, $v) = /^(\S+)\s+(\S+)$/ or next;
		$m{$k} = $v;
	}
	return \%m;
}

sub broker_log
{
	my ($self, $i) = @_;
	return slurp_file("$self->{logprefix}broker$i.log");
}

# Broker $i's log once it matches $re (what it holds at the timeout
# otherwise): a broker writes its log after it acts, so a test that saw
# the action elsewhere (the coordinator) waits for the line.
sub wait_broker_log
{
	my ($self, $i, $re) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	my $log;
	while (1)
	{
		$log = $self->broker_log($i);
		return $log if $log =~ $re || time > $deadline;
		usleep(10_000);
	}
}

sub create_topic
{
	my ($self, $topic, $parts, $config) = @_;
	my $json = '{' . join(',', map { "\"$_\": $config->{$_}" } sort keys %$config) . '}';
	$self->coord->safe_psql('postgres', "SELECT mq_coord.create_topic('$topic', $parts, '$json')");
	$self->coord->poll_query_until('postgres',
		"SELECT count(*) = $parts FROM mq_coord.partition WHERE topic = '$topic' AND leader IS NOT NULL")
	  or die 'no leader elected';
}

# Wait until every follower in the ISR of each partition of $topic has
# caught up with its leader in the leader's epoch (the leader node's
# mq.replica_progress): an election lists every replica in the ISR
# before any follower fetched, and a follower that does not fetch within
# replica.lag.time.max.ms leaves it again (on a loaded machine, a
# follower holding records asks each partition's leader where its epoch
# ends before it fetches).  An acks=all write needs the ISR this waits for.
sub wait_caught_up
{
	my ($self, $topic) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my %want;
		for (split /\n/, MqSession::safe_psql($self->coord, 'postgres',
			"SELECT leader, partition, leader_epoch, array_remove(isr, leader) FROM mq_coord.partition "
			  . "WHERE topic = '$topic' AND leader IS NOT NULL"))
		{
			my ($l, $p, $e, $isr) = split /\|/;
			push @{ $want{$l} }, "($p, $e, '$isr'::int[])";
		}
		my $behind = 0;
		for my $l (keys %want)
		{
			$behind += MqSession::safe_psql($self->node($l), 'postgres',
				"SELECT count(*) FROM (VALUES " . join(', ', @{ $want{$l} }) . ") AS w(p, e, isr), "
				  . "unnest(w.isr) AS f(id) WHERE NOT EXISTS (SELECT 1 FROM mq.replica_progress g "
				  . "JOIN mq.topic t USING (topic_id) WHERE t.topic_name = '$topic' AND g.partition = w.p "
				  . "AND g.replica_id = f.id AND g.leader_epoch = w.e AND g.caught_up_at IS NOT NULL)");
		}
		return 1 if $behind == 0 && %want;
		usleep(100_000);
	}
	return 0;
}

# Wait until every partition of the topics is led by its preferred replica
# (the first of its placement) with every replica in its ISR, and so each
# topic by as many nodes as it can be: true or false (timed out).  Until
# then leaders move: a broker that wins a partition's first election
# before its preferred replica registers hands it over
# auto.leader.rebalance.delay.ms later (clients then get NOT_LEADER, which
# a Kafka client at its default retries=0, kafka-python's, reports as a
# failed send).  So a test whose clients must not see a leader change
# waits here, not merely until every node leads some.
sub wait_preferred_leaders
{
	my ($self, @topics) = @_;
	my $in = join(', ', map { "'$_'" } @topics);
	my $nodes = scalar @{ $self->{nodes} };
	return $self->coord->poll_query_until('postgres',
		"SELECT count(*) = " . scalar(@topics) . " AND bool_and(settled) FROM (SELECT "
		  . "bool_and(leader = replicas[1] AND isr \@> replicas) "
		  . "AND count(DISTINCT leader) = least(count(*), $nodes) AS settled "
		  . "FROM mq_coord.partition WHERE topic IN ($in) GROUP BY topic) x");
}

sub leader
{
	my ($self, $topic, $partition) = @_;
	return MqSession::safe_psql($self->coord, 'postgres',
		"SELECT coalesce(leader, -1) FROM mq_coord.partition WHERE topic = '$topic' AND partition = $partition");
}

sub isr
{
	my ($self, $topic, $partition) = @_;
	return MqSession::safe_psql($self->coord, 'postgres',
		"SELECT array_to_string(ARRAY(SELECT unnest(isr) ORDER BY 1), ',') FROM mq_coord.partition "
		. "WHERE topic = '$topic' AND partition = $partition");
}

# The node's postmaster and its children (backends, walwriter, ...).
sub node_pids
{
	my ($self, $i) = @_;
	return server_pids($self->node($i));
}

sub server_pids
{
	my ($server) = @_;
	my $pm = $server->{_pid};
	my @kids;
	opendir(my $dh, '/proc') or die "/proc: $!";
	for my $p (grep { /^\d+$/ } readdir $dh)
	{
		open(my $fh, '<', "/proc/$p/stat") or next;
		my $stat = <$fh> // '';
		close $fh;
		# pid (comm) state ppid ...: comm may hold spaces and parentheses
		my ($ppid) = $stat =~ /\)\s+\S+\s+(\d+)/;
		push @kids, $p if defined $ppid && $ppid == $pm;
	}
	closedir $dh;
	return ($pm, @kids);
}

# Pause a whole node: SIGSTOP of the postmaster alone would leave its
# backends serving the connections they have.  The postmaster first, so
# that it forks nothing new meanwhile.
sub pause_node  { $_[0]->pause_server($_[1], $_[0]->node($_[1])); }
sub resume_node { $_[0]->resume_server($_[1]); }

# Pause and resume the coordinator's whole server, as pause_node does.
sub pause_coord  { $_[0]->pause_server('coord', $_[0]->coord); }
sub resume_coord { $_[0]->resume_server('coord'); }

# SIGSTOP a server's postmaster (first, so that it forks nothing new
# meanwhile) and its children, remembered under $key; resume_server
# continues them.
sub pause_server
{
	my ($self, $key, $server) = @_;
	my ($pm, @kids) = server_pids($server);
	kill 'STOP', $pm;
	kill 'STOP', @kids;
	$self->{paused}{$key} = [ $pm, @kids ];
}

sub resume_server
{
	my ($self, $key) = @_;
	my ($pm, @kids) = @{ delete $self->{paused}{$key} // [] };
	kill 'CONT', @kids;
	kill 'CONT', $pm if $pm;
}

# kill -9 the node's postmaster and wait until it is gone
sub kill9_node
{
	my ($self, $i) = @_;
	kill9_server($self->node($i));
}

sub kill9_coord { kill9_server($_[0]->coord); }

sub kill9_server { crash_servers($_[0]); }

# Crash servers as a machine crash would: every process of each at once.
# Each postmaster is paused first, so that it forks nothing new, then it
# and all its children get SIGKILL, and this waits until every one is
# gone.  Killing the postmaster alone left its backends running until
# they noticed; one could still write WAL (a commit's, a paused WAL
# writer's buffers) beside the server started next on the data directory,
# whose start no longer looks for them once postmaster.pid is removed.
# The servers are left as PostgreSQL::Test::Cluster's kill9 leaves them.
sub crash_servers
{
	my @servers = grep { $_->{_pid} } @_;    # those running
	kill 'STOP', map { $_->{_pid} } @servers;
	my @pids = map { server_pids($_) } @servers;
	kill 'KILL', @pids;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (grep { pid_alive($_) } @pids)
	{
		die 'processes of a killed server outlived SIGKILL: '
		  . join(' ', grep { pid_alive($_) } @pids) if time > $deadline;
		usleep(20_000);
	}
	for my $srv (@servers)
	{
		$srv->{_pid} = undef;
		unlink $srv->data_dir . '/postmaster.pid';
	}
}

# Whether a process runs (a zombie, dead and not yet reaped, does not).
sub pid_alive
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return 0;
	my $stat = <$fh> // '';
	close $fh;
	return $stat !~ /\)\s+Z\s/;
}

# ---------------------------------------------------------------------
# The producer: a child process sending batches with acks=all
# ---------------------------------------------------------------------

# Run one statement with a psql of its own; returns (success, output)
# (MqSession::once; the loops keep a session instead: MqSession::run).
sub psql_cmd { return MqSession::once(@_); }

sub start_producer
{
	my ($self, $topic, $partition, %opt) = @_;
	my $batch = $opt{batch} // 5;
	my $tag = $opt{tag} // 'v';
	die "producer tag must be lower-case letters" unless $tag =~ /^[a-z]+$/;
	# a whole attempt (connect, produce, wait for acks=all) at most this long
	my $attempt = $opt{attempt_timeout} // 10;
	$self->{batch}{"$topic/$partition"} = $batch if $tag eq 'v';
	# producer_id => ID: an id the test got itself (default: one from the
	# leader's mq.init_producer); value_base => N: values (and the
	# sequences recorded for the checker) start at vN, so that two
	# producers of one partition write different values
	my $vbase = $opt{value_base} // 0;
	# leader => N: always send to node N, never asking the coordinator
	my $fixed = $opt{leader};
	# pace_us => N: the pause after each acknowledged batch (default 50 ms):
	# several tests run at a time, and a producer looping flat out took CPU
	# the others' deadlines needed, for no more faults seen (10 ms while a
	# batch also started two psql; on kept sessions a batch costs little
	# more than its replication, and 10 ms made 113 use 52 s of CPU, 50 ms
	# 32 s)
	my $pace = $opt{pace_us} // 50_000;
	my $producer_id = $opt{producer_id};
	if (!defined $producer_id)
	{
		my $leader = $self->leader($topic, $partition);
		my ($ok, $out) = psql_cmd($self->node($leader), 'SELECT producer_id FROM mq.init_producer()');
		die "init_producer: $out" unless $ok;
		chomp($producer_id = $out);
	}
	my $file = "$self->{logprefix}acks.$topic.$partition" . ($tag eq 'v' ? '' : ".$tag")
	  . ($vbase ? ".$vbase" : '');
	my $stop = "$file.stop";
	unlink $stop;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open my $ack, '>', $file or POSIX::_exit(1);
		$ack->autoflush(1);
		my $seq = 0;
		my $known = -1;
		while (!-e $stop)
		{
			# the leader the coordinator names; while the coordinator cannot
			# answer, the last one it named (leaders serve on without it)
			my ($lok, $l) = defined $fixed ? (1, $fixed) : MqSession::run($self->coord,
				"SELECT coalesce(leader, -1) FROM mq_coord.partition WHERE topic = '$topic' AND partition = $partition", 2);
			chomp $l;
			$l = $known if !$lok && $known > 0;
			if ($l !~ /^\d+$/ || $l < 1) { usleep(50_000); next; }
			$known = $l;
			my $vals = join(',', map { "'$tag" . ($vbase + $seq + $_) . "'" } 0 .. $batch - 1);
			my ($sok, $res) = MqSession::run($self->node($l),
				"CALL mq.produce('$topic', NULL, ARRAY[$vals]::bytea[], $partition, 'all', "
				  . "$producer_id, 0, $seq, 5000)", $attempt);
			if ($sok)
			{
				my ($base) = $res =~ /^(-?\d+)\|/m;
				$base //= -1;
				printf $ack "ack %d %d %d %.3f\n", $vbase + $seq, $base, $l, time;
				$seq += $batch;
				usleep($pace);
			}
			else
			{
				my ($state) = $res =~ /ERROR:\s+([0-9A-Z]{5})/;
				printf $ack "err %d %s %d %.3f\n", $vbase + $seq, $state // 'conn', $l, time;
				usleep(20_000);
			}
		}
		close $ack;
		POSIX::_exit(0);
	}
	$self->{children}{$pid} = 1;
	return { pid => $pid, file => $file, stop => $stop, batch => $batch, tag => $tag,
		vbase => $vbase, topic => $topic, partition => $partition };
}

# The producer's log lines so far, as hashes; a line still being written
# is left out.
sub producer_lines
{
	my ($file) = @_;
	my @lines;
	for (split /\n/, -e $file ? slurp_file($file) : '')
	{
		my @f = split / /;
		next unless @f == 5;
		push @lines, { kind => $f[0], seq => $f[1], base => $f[2], state => $f[2], node => $f[3],
			at => $f[4] };
	}
	return \@lines;
}

# Stop the producer; returns its log lines as hashes, each with the
# producer's tag, batch size and value base (for check_log).
sub stop_producer
{
	my ($self, $p) = @_;
	open my $fh, '>', $p->{stop};
	close $fh;
	waitpid($p->{pid}, 0);
	delete $self->{children}{ $p->{pid} };
	my $lines = producer_lines($p->{file});
	@$_{qw(tag batch vbase)} = @$p{qw(tag batch vbase)} for @$lines;
	return $lines;
}

# Poll the child's log file until $count of its lines (default 1) are of
# the kind asked for and pass the filters: since => TIME (recorded then or
# later), node => N (by node N), where => sub { ... } (any test of the line
# hash in $_).  Returns true then, false (with a diag) after the test
# timeout (or timeout => SECONDS).  Tests wait on this instead of sleeping "long enough" for
# progress.  It looks every 10 ms, so that a fault injected as it returns
# lands just after the producer recorded a line, while it asks the
# coordinator for the leader, and seldom while an acknowledgement is on
# its way back to it (which it would record only after the fault).
sub wait_lines
{
	my ($self, $what, $file, $parse, $kind, %opt) = @_;
	my $count = $opt{count} // 1;
	# timeout => SECONDS: give up sooner than the test timeout
	my $deadline = time + ($opt{timeout} // $PostgreSQL::Test::Utils::timeout_default);
	my @got;
	while (1)
	{
		@got = grep {
			$_->{kind} eq $kind
			  && (!defined $opt{since} || $_->{at} >= $opt{since})
			  && (!defined $opt{node} || $_->{node} == $opt{node})
			  && (!$opt{where} || $opt{where}->())
		} @{ $parse->($file) };
		return 1 if @got >= $count;
		last if time > $deadline;
		usleep(10_000);
	}
	diag("gave up waiting for $count $what line(s) ($kind) in $file; saw " . scalar(@got));
	return 0;
}

# Wait until the producer has had $opt{count} (default 1) batches
# acknowledged (see wait_lines for the filters).
sub wait_acks
{
	my ($self, $p, %opt) = @_;
	return $self->wait_lines('producer', $p->{file}, \&producer_lines, 'ack', %opt);
}

# Wait until the producer has been refused $opt{count} (default 1) times;
# where => sub { $_->{state} eq 'MQ021' } picks the error.
sub wait_refusals
{
	my ($self, $p, %opt) = @_;
	return $self->wait_lines('producer', $p->{file}, \&producer_lines, 'err', %opt);
}

# ---------------------------------------------------------------------
# The consumer: a child process reading through the leader
# ---------------------------------------------------------------------

# Reads the partition from offset 0 with mq.fetch (long polling) on
# whoever the coordinator names leader, and records every record it is
# given: "rec OFFSET VALUE NODE TIME".  Refusals are recorded as "err".
sub start_consumer
{
	my ($self, $topic, $partition, %opt) = @_;
	my $file = "$self->{logprefix}consumed.$topic.$partition";
	my $stop = "$file.stop";
	unlink $stop;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open my $out, '>', $file or POSIX::_exit(1);
		$out->autoflush(1);
		my $pos = 0;
		my $known = -1;
		while (!-e $stop)
		{
			# as the producer: the last leader named while the coordinator is away
			my ($lok, $l) = MqSession::run($self->coord,
				"SELECT coalesce(leader, -1) FROM mq_coord.partition WHERE topic = '$topic' AND partition = $partition", 2);
			chomp $l;
			$l = $known if !$lok && $known > 0;
			if ($l !~ /^\d+$/ || $l < 1) { usleep(50_000); next; }
			$known = $l;
			my ($ok, $res) = MqSession::run($self->node($l),
				"SELECT msg_offset || ' ' || convert_from(value, 'UTF8') "
				  . "FROM mq.fetch('$topic', $partition, $pos, 1000, 300)", 5);
			if (!$ok)
			{
				my ($state) = $res =~ /ERROR:\s+([0-9A-Z]{5})/;
				printf $out "err %d %s %d %.3f\n", $pos, $state // 'conn', $l, time;
				usleep(50_000);
				next;
			}
			my $t = time;
			for my $row (grep { length } split /\n/, $res)
			{
				# psql's stderr is merged in: a server message that follows the
				# rows (FATAL when the node is killed right after answering) is
				# no record; keep it in the file as a note
				my ($o, $v) = $row =~ /^(\d+) (.*)$/ or do { print $out "note $row\n"; next; };
				# a gap or a step back would be the server's fault: record it
				printf $out "rec %d %s %d %.3f\n", $o, $v, $l, $t;
				$pos = $o + 1;
			}
		}
		close $out;
		POSIX::_exit(0);
	}
	$self->{children}{$pid} = 1;
	return { pid => $pid, file => $file, stop => $stop, topic => $topic, partition => $partition };
}

# The consumer's log lines so far, as hashes (as producer_lines).
sub consumer_lines
{
	my ($file) = @_;
	my @lines;
	for (split /\n/, -e $file ? slurp_file($file) : '')
	{
		my @f = split / /;
		next unless @f == 5;
		push @lines, { kind => $f[0], offset => $f[1], value => $f[2], state => $f[2],
			node => $f[3], at => $f[4] };
	}
	return \@lines;
}

# Stop the consumer; its records are kept for check_log.
sub stop_consumer
{
	my ($self, $r) = @_;
	open my $fh, '>', $r->{stop};
	close $fh;
	waitpid($r->{pid}, 0);
	delete $self->{children}{ $r->{pid} };
	my $lines = consumer_lines($r->{file});
	$self->{consumed}{"$r->{topic}/$r->{partition}"} = $lines;
	return $lines;
}

# Wait until the consumer has been given $opt{count} (default 1) records
# (filters as wait_lines).
sub wait_consumed
{
	my ($self, $r, %opt) = @_;
	return $self->wait_lines('consumer', $r->{file}, \&consumer_lines, 'rec', %opt);
}

sub acks_since
{
	my ($lines, $t) = @_;
	return grep { $_->{kind} eq 'ack' && $_->{at} >= $t } @$lines;
}

# ---------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------

# A replica's whole log (values by offset) and its high watermark.
sub replica_rows
{
	my ($self, $i, $topic, $partition) = @_;
	my $node = $self->node($i);
	my $rel = $node->safe_psql('postgres',
		"SELECT p.relid FROM mq.partition_state p JOIN mq.topic t USING (topic_id) "
		  . "WHERE t.topic_name = '$topic' AND p.partition = $partition");
	my $hwm = $node->safe_psql('postgres',
		"SELECT high_watermark FROM mq.replica_status WHERE topic = '$topic' AND partition = $partition");
	my $out = $node->safe_psql('postgres',
		"SELECT msg_offset || ' ' || convert_from(value, 'UTF8') FROM $rel ORDER BY msg_offset");
	my @log = map { (split / /)[1] } grep { length } split /\n/, $out;
	return (\@log, $hwm);
}

# Wait until every node in @live has the leader's log end and high watermark.
sub wait_converged
{
	my ($self, $topic, $partition, @live) = @_;
	my $q = "SELECT log_end_offset || '/' || high_watermark FROM mq.replica_status "
	  . "WHERE topic = '$topic' AND partition = $partition";
	for (1 .. 300)
	{
		my %seen = map { (MqSession::run($self->node($_), $q, 10))[1] => 1 } @live;
		my ($k) = keys %seen;
		return 1 if keys %seen == 1 && $k =~ m{^(\d+)/\1$};
		usleep(100_000);
	}
	return 0;
}

# Whether the log holds each producer's records in the order it sent them
# (its sequence numbers rising), and nothing from anyone else.  A producer
# is a tag and a value base: value tagN is the record N of the producer of
# that tag with the largest base not above N.
sub producer_order
{
	my ($ref, @producers) = @_;
	my %bases;
	for (@producers, [ 'v', 0 ]) { $bases{ $_->[0] }{ $_->[1] } = 1; }
	my %last;
	for my $v (@$ref)
	{
		my ($tag, $seq) = $v =~ /^([a-z]+)(\d+)$/ or return 0;
		return 0 unless $bases{$tag};
		my ($base) = sort { $b <=> $a } grep { $_ <= $seq } keys %{ $bases{$tag} };
		return 0 unless defined $base;
		my $who = "$tag/$base";
		return 0 if defined $last{$who} && $seq <= $last{$who};
		$last{$who} = $seq;
	}
	return 1;
}

# The checks every scenario ends with.  Options go in a hash before the
# live nodes: { expect_no_acks => 1 } for a run in which nothing was to be
# acknowledged.
sub check_log
{
	my ($self, $topic, $partition, $lines, @live) = @_;
	my $opt = ref $live[0] eq 'HASH' ? shift @live : {};
	ok($self->wait_converged($topic, $partition, @live), 'replicas converged');
	my @acks = grep { $_->{kind} eq 'ack' } @$lines;
	# with nothing acknowledged, no check below could fail
	if ($opt->{expect_no_acks})
	{
		is(scalar(@acks), 0, 'nothing was acknowledged, as the test expects');
	}
	else
	{
		ok(@acks > 0, 'the producer had batches acknowledged (' . scalar(@acks) . ')');
	}
	my ($ref, $hwm) = $self->replica_rows($live[0], $topic, $partition);
	my %where;
	for my $o (0 .. $#$ref) { push @{ $where{ $ref->[$o] } }, $o; }
	my ($lost, $dup, $moved) = (0, 0, 0);
	for my $a (@acks)
	{
		my $tag = $a->{tag} // 'v';
		for my $k (0 .. ($a->{batch} // $self->{batch}{"$topic/$partition"} // 5) - 1)
		{
			my $v = $tag . ($a->{seq} + $k);
			my $at = $where{$v} // [];
			$lost++ if @$at == 0 || $at->[0] >= $hwm;
			$moved++ if @$at && $at->[0] != $a->{base} + $k;
		}
	}
	my @dups = sort { $where{$a}[0] <=> $where{$b}[0] } grep { @{ $where{$_} } > 1 } keys %where;
	$dup = scalar @dups;
	diag("$topic/$partition: $dup record(s) twice in the log, e.g. "
		  . join(', ', map { "$_ at offsets @{ $where{$_} }" } @dups[ 0 .. ($#dups < 2 ? $#dups : 2) ]))
	  if @dups;
	my $ordered = producer_order($ref, map { [ $_->{tag} // 'v', $_->{vbase} // 0 ] } @acks);
	is($lost, 0, 'no acknowledged record lost (' . scalar(@acks) . ' acknowledged batches)');
	is($dup, 0, 'no record duplicated');
	is($moved, 0, 'every acknowledged record sits at the offset it was acknowledged with');
	ok($ordered, 'records in producer order (each producer\'s own), none from elsewhere');
	for my $i (@live[ 1 .. $#live ])
	{
		my ($log, $h) = $self->replica_rows($i, $topic, $partition);
		my $n = $h < $hwm ? $h : $hwm;
		is_deeply([ @$log[ 0 .. $n - 1 ] ], [ @$ref[ 0 .. $n - 1 ] ],
			"node$i identical to node$live[0] below the high watermark ($n)");
	}
	if (my $seen = $self->{consumed}{"$topic/$partition"})
	{
		# what a consumer was given must never be truncated or replaced
		my @recs = grep { $_->{kind} eq 'rec' } @$seen;
		my ($gone, $changed, $gaps, $next) = (0, 0, 0, 0);
		for my $r (@recs)
		{
			$gaps++ if $r->{offset} != $next;
			$next = $r->{offset} + 1;
			if ($r->{offset} >= $hwm || $r->{offset} > $#$ref) { $gone++; next; }
			$changed++ if $ref->[ $r->{offset} ] ne $r->{value};
		}
		ok(@recs > 0, 'the consumer read records (' . scalar(@recs) . ')');
		is($gone, 0, 'no offset a consumer saw was truncated');
		is($changed, 0, 'no record a consumer saw was replaced');
		is($gaps, 0, 'the consumer saw gapless offsets in order');
	}
	return ($ref, $hwm);
}

sub teardown
{
	my ($self) = @_;
	# called from END: waitpid must not replace the test's exit status
	local $?;
	# only the test that made the cluster stops it, not a forked child
	return if ($self->{pid} // $$) != $$;
	# producers and consumers a failed test left behind: they hold prove's pipe
	for my $pid (keys %{ $self->{children} // {} })
	{
		kill 'KILL', $pid;
		waitpid($pid, 0);
	}
	$self->{children} = {};
	$self->resume_server($_) for keys %{ $self->{paused} // {} };
	for my $i (1 .. $#{ $self->{brokers} })
	{
		my $pid = $self->{brokers}[$i] or next;
		stop_daemon($pid);
		$self->{brokers}[$i] = undef;
	}
	$_ && $_->stop for @{ $self->{proxies} // [] }, map { @{ $_ // [] } } @{ $self->{ha_proxies} // [] };
}

# --- Kafka listeners run by the brokers ([kafka] section) ---
#   $c->start_kafka_brokers(section => $text);  # brokers whose config has
#                                       # [kafka] ($text: the section, with
#                                       # 127.0.0.1:9092 for the address)
#                                       # (metrics => 1: each mq-kafka with --metrics
#                                       # on 127.0.0.1:$c->{kafka_metrics_port}[$i];
#                                       # program => $path: the mq-kafka to run)
#   $c->kafka_address($i)               # "127.0.0.1:PORT" of broker $i's mq-kafka
#   $c->kafka_address2($i)              # the port of 127.0.0.1:9093 in $text, if any
#                                       # (a second listener, each broker its own port)
#   $c->kafka_pid($i)                   # pid of the mq-kafka broker $i runs now
#   $c->kafka_find_coordinator($i, $g)  # (error, node id) FindCoordinator v0 at $i
#   $c->kafka_offsets($i, $g)           # { "topic/partition" => offset }: OffsetFetch v2
#                                       # of all of $g's offsets (topics null) at $i
#   $c->kafka_describe_group($i, $g)    # (error, state) DescribeGroups v0 at $i

# Start every broker with a [kafka] section (the given one, or a minimal
# one; each broker's address on a port of its own, the mq-kafka of this
# tree, group_delay_ms as the group rebalance delay, min_session_ms as
# the smallest member session, if given), grant the brokers'
# role what mq-kafka needs (with transactions => 1 also write on every
# transactional id and topic, for clients without SASL), and wait until
# every listener is live on the coordinator.  brokers => [ids] starts only
# those (again later for others: the daemons started so far must agree).
sub start_kafka_brokers
{
	my ($self, %o) = @_;
	my $root = $ENV{MQ_REPO_ROOT} // '.';
	my $base = $self->{opt}{broker_conf} // '';
	my $n = scalar @{ $self->{nodes} };
	$self->coord->safe_psql('postgres', "SELECT mq_coord.grant_kafka('$BROKER_ROLE')");
	$self->node($_)->safe_psql('postgres',
		"GRANT EXECUTE ON FUNCTION mq.init_producer(text), mq.client_quota_lookup() TO $BROKER_ROLE; "
		  . "GRANT SELECT ON mq.consumer_offset, mq.topic TO $BROKER_ROLE; "
		  . "SELECT mq.grant('read, describe', 'group', '*', '$BROKER_ROLE')"
		  . ($o{transactions}    # clients without SASL act as the daemons' role
			? "; SELECT mq.grant('write', 'transactional_id', '*', '$BROKER_ROLE'); "
			  . "SELECT mq.grant('write, read, describe', 'topic', '*', '$BROKER_ROLE')"
			: ''))
	  for 1 .. $n;
	for my $i (@{ $o{brokers} // [1 .. $n] })
	{
		$self->{kafka_started}{$i} = 1;
		$self->{kafka_port}[$i] //= PostgreSQL::Test::Cluster::get_free_port();
		(my $section = $o{section} // "[kafka]\nlisten = 127.0.0.1:9092\n")
		  =~ s/127\.0\.0\.1:9092/127.0.0.1:$self->{kafka_port}[$i]/g;
		# a second listener (TLS, 135_kafka_cluster_tls): 127.0.0.1:9093 in the section
		if ($section =~ /127\.0\.0\.1:9093/)
		{
			$self->{kafka_port2}[$i] //= PostgreSQL::Test::Cluster::get_free_port();
			$section =~ s/127\.0\.0\.1:9093/127.0.0.1:$self->{kafka_port2}[$i]/g;
		}
		# metrics => 1: each mq-kafka serves /metrics on a port of its own
		if ($o{metrics})
		{
			$self->{kafka_metrics_port}[$i] //= PostgreSQL::Test::Cluster::get_free_port();
			$section .= "metrics = 127.0.0.1:$self->{kafka_metrics_port}[$i]\n";
		}
		local $self->{opt}{broker_conf} = $base . $section
		  . 'program = ' . ($o{program} // "$root/broker/mq-kafka/mq-kafka") . "\n"
		  . 'group.initial.rebalance.delay.ms = ' . ($o{group_delay_ms} // 1000) . "\n"
		  . ($o{min_session_ms} ? "group.min.session.timeout.ms = $o{min_session_ms}\n" : '')
		  . ($o{idle_ms} ? "connections.max.idle.ms = $o{idle_ms}\n" : '')
		  . ($o{num_partitions} ? "num.partitions = $o{num_partitions}\n" : '');
		$self->start_broker($i);
	}
	my @started = sort keys %{ $self->{kafka_started} };
	$n = @started;
	$self->coord->poll_query_until('postgres',
		"SELECT count(*) FILTER (WHERE live) = $n FROM mq_coord.kafka_listeners()")
	  or die 'the Kafka listeners did not register';
	# and every daemon has read that view: they agree on the coordinators
	# of a few groups, and each of them is named for one of them
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my @answers = map {
			my $i = $_;
			join ',', map { join ':', $self->kafka_find_coordinator($i, "probe$_") } 1 .. 30
		} @started;
		my %named = map { $_ => 1 } split /,/, $answers[0];
		last if !grep({ $_ ne $answers[0] } @answers) && keys %named == $n
		  && !grep { !/^0:/ } keys %named;
		die 'the Kafka listeners do not agree on group coordinators' if time > $deadline;
		usleep(50_000);
	}
}

sub kafka_address { return "127.0.0.1:$_[0]{kafka_port}[$_[1]]"; }
# the second listener's (a section with 127.0.0.1:9093)
sub kafka_address2 { return "127.0.0.1:$_[0]{kafka_port2}[$_[1]]"; }

sub kafka_pid
{
	my ($self, $i) = @_;
	my @pids = $self->broker_log($i) =~ /started mq-kafka \(pid (\d+)\)/g;
	return $pids[-1];
}

sub kafka_find_coordinator
{
	my ($self, $i, $group) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{kafka_port}[$i],
		Proto => 'tcp', Timeout => 5) or return (-100, -1);
	my $body = pack('s> s> l> s>/a* s>/a*', 10, 0, 1, 'tap', $group);
	print $sock pack('l>/a*', $body);
	my $len = '';
	return (-101, -1) unless read($sock, $len, 4) == 4;
	my $resp = '';
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	my (undef, $err, $node) = unpack('l> s> l>', $resp);
	return ($err, $node);
}

sub kafka_describe_group
{
	my ($self, $i, $group) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{kafka_port}[$i],
		Proto => 'tcp', Timeout => 5) or return (-100, '');
	print $sock pack('l>/a*', pack('s> s> l> s>/a* l> s>/a*', 15, 0, 1, 'tap', 1, $group));
	my ($len, $resp) = ('', '');
	return (-101, '') unless read($sock, $len, 4) == 4;
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	my (undef, undef, $err, undef, $state) = unpack('l> l> s> s>/a s>/a', $resp);
	return ($err, $state);
}

sub kafka_offsets
{
	my ($self, $i, $group) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{kafka_port}[$i],
		Proto => 'tcp', Timeout => 5) or return undef;
	print $sock pack('l>/a*', pack('s> s> l> s>/a* s>/a* l>', 9, 2, 1, 'tap', $group, -1));
	my ($len, $resp) = ('', '');
	return undef unless read($sock, $len, 4) == 4;
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	my %off;
	my @t = unpack('x4 l>', $resp);
	my $pos = 8;
	for (1 .. $t[0])
	{
		my ($tn) = unpack("x$pos s>/a", $resp);
		$pos += 2 + length $tn;
		my ($np) = unpack("x$pos l>", $resp);
		$pos += 4;
		for (1 .. $np)
		{
			my ($p, $o, $m) = unpack("x$pos l> q> s>/a", $resp);
			$pos += 4 + 8 + 2 + length($m) + 2;
			$off{"$tn/$p"} = $o;
		}
	}
	return \%off;
}

# ---------------------------------------------------------------------
# mqctl given the coordinator's address alone (docs/cli.md, "A replicated
# cluster"): the client's connection string names the coordinator, as
# the test's own user (no user=: mqctl connects to every node as itself).
# ---------------------------------------------------------------------

# Build test/kafka/go/NAME.go (a client of Debian's sarama, offline with
# Debian's Go) into $out, its output in $log; true when it built.  The
# tests share Go's build cache, and build under a lock on it: the first
# build compiles sarama (about a minute of CPU), and two tests starting
# together compiled it twice; now the second waits and only links.
sub go_build
{
	my ($name, $out, $log) = @_;
	my $root = $ENV{MQ_REPO_ROOT} // '.';
	my $cache = "/tmp/mq-go-build-cache-$>";
	open(my $lock, '>>', "$cache.lock") or die "cannot open $cache.lock: $!";
	flock($lock, Fcntl::LOCK_EX()) or die "cannot lock $cache.lock: $!";
	my $rc = system("env GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$cache GOFLAGS= "
		  . "go build -o $out $root/test/kafka/go/$name.go >$log 2>&1");
	close $lock;
	return $rc == 0;
}

sub mqctl_bin
{
	my $root = $ENV{MQ_REPO_ROOT} // '.';
	return -x "$root/broker/mqctl/mqctl" ? "$root/broker/mqctl/mqctl" : 'mqctl';
}

sub bootstrap
{
	my ($self) = @_;
	return sprintf('host=%s port=%d dbname=postgres', $self->coord->host, $self->coord->port);
}

# Start mqctl with the coordinator's address, its stdin from $in (a file
# name or undef for /dev/null), stdout and stderr to files; returns the pid
# (registered for teardown).  Its files are $c->{logprefix}$name.out/.err.
sub start_mqctl
{
	my ($self, $name, $in, @args) = @_;
	my $out = "$self->{logprefix}$name.out";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDIN, '<', $in // '/dev/null' or POSIX::_exit(1);
		open STDOUT, '>', $out or POSIX::_exit(1);
		open STDERR, '>', "$self->{logprefix}$name.err" or POSIX::_exit(1);
		exec mqctl_bin(), '-d', $self->bootstrap, @args or POSIX::_exit(127);
	}
	$self->{children}{$pid} = 1;
	return $pid;
}

# Wait for a child started by start_mqctl; its exit status.
sub wait_mqctl
{
	my ($self, $pid) = @_;
	waitpid($pid, 0);
	my $status = $?;
	delete $self->{children}{$pid};
	return $status;
}

# What mqctl printed, parsed: the lines of $c->{logprefix}$name that
# match $re.
sub mqctl_lines
{
	my ($self, $name, $re) = @_;
	my $f = "$self->{logprefix}$name";
	return () unless -e $f;
	return grep { /$re/ } split /\n/, slurp_file($f);
}

# produce -v: [partition, offset] per acknowledged record, in input order
sub mqctl_acked
{
	my ($self, $name) = @_;
	return map { [/^partition=(\d+) offset=(\d+)$/] }
	  $self->mqctl_lines("$name.out", qr/^partition=\d+ offset=\d+$/);
}

# consume --format kv: [partition, offset, value] per record printed
sub mqctl_consumed
{
	my ($self, $name) = @_;
	return map { [/^partition=(\d+) offset=(\d+) .* value=(\S+)$/] }
	  $self->mqctl_lines("$name.out", qr/^partition=\d+ offset=\d+ .* value=\S+$/);
}

# "p:o" of every record a member said may be read again (a commit that
# was not acknowledged), over the members named
sub mqctl_may_repeat
{
	my ($self, @names) = @_;
	my %may;
	for my $name (@names)
	{
		for ($self->mqctl_lines("$name.err", qr/may be read again/))
		{
			my ($p, $from, $to) = /partition (\d+) offsets (\d+) to (\d+)/ or next;
			$may{"$p:$_"} = 1 for $from .. $to;
		}
	}
	return \%may;
}

# ---------------------------------------------------------------------
# Placement (test/t/125, 126): growing a running cluster, and mqctl
# ---------------------------------------------------------------------

# One more data node, configured like the others, and its broker; returns
# its number, which is also the new broker's id.  With later => 1 it is
# only made (its address fixed), to be started by start_added($i): the
# producers and consumers forked meanwhile know it, so they can follow a
# leader there.
sub add_node
{
	my ($self, %opt) = @_;
	my $i = scalar(@{ $self->{nodes} }) + 1;
	my $node = init_node("node$i", $self->{opt}{node_conf});
	push @{ $self->{nodes} }, $node;
	$self->start_added($i) unless $opt{later};
	return $i;
}

sub start_added
{
	my ($self, $i) = @_;
	my $node = $self->node($i);
	$node->start;
	install_mq($node);
	$self->start_broker($i);
	$self->coord->poll_query_until('postgres', "SELECT count(*) = 1 FROM mq_coord.broker WHERE broker_id = $i")
	  or die "broker $i did not register";
}

# A partition's replicas on the coordinator, as "1,2" in placement order.
sub replicas
{
	my ($self, $topic, $partition) = @_;
	return MqSession::safe_psql($self->coord, 'postgres',
		"SELECT array_to_string(replicas, ',') FROM mq_coord.partition "
		  . "WHERE topic = '$topic' AND partition = $partition");
}

# Run mqctl against the coordinator: (exit status, stdout and stderr).
sub mqctl
{
	my ($self, @args) = @_;
	my $root = $ENV{MQ_REPO_ROOT} // '.';
	my $bin = -x "$root/broker/mqctl/mqctl" ? "$root/broker/mqctl/mqctl" : 'mqctl';
	my $conn = sprintf('host=%s port=%d dbname=postgres', $self->coord->host, $self->coord->port);
	my ($stdout, $stderr);
	require IPC::Run;
	IPC::Run::run([ $bin, @args, '-d', $conn ], '<', \undef, '>', \$stdout, '2>', \$stderr);
	return ($? >> 8, $stdout . $stderr);
}

1;
