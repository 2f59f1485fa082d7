# The shipped monitoring (monitoring/, docs/operations.md "Monitoring:
# Prometheus and Grafana") against a running three-node cluster: Debian's
# prometheus runs monitoring/prometheus.yml (its scrape interval shortened,
# its target files written for this cluster's loopback ports) and scrapes
# every mq-broker's /metrics, every mq-kafka's (run by the brokers, with
# metrics = in [kafka]) and one prometheus-postgres-exporter per data
# node, run with monitoring/postgres-exporter-queries.yaml as a role that
# has pg_monitor and nothing else.  mq-kafka gets requests, a statement
# that fails (DeleteGroups of an unknown group) and a frame it must refuse.  After a produce and a group's partial
# consume, every expression of every panel of
# monitoring/grafana-dashboard.json (and each template variable's
# label_values) must evaluate without error and return at least one
# series; a wrong metric or label name returns none and fails here.  The
# lag Prometheus reports must equal mq.consumer_lag's on the leader.
#
# The exporter and Prometheus run with the command lines of
# docs/operations.md (the sh block after "<!-- monitoring-test: commands
# -->"), only their addresses, paths and connection made this test's; its
# alert expressions (the promql block after "<!-- monitoring-test: promql
# -->") must evaluate, and every metric they name must have series.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use POSIX ();
use Text::ParseWords qw(shellwords);
use Time::HiRes qw(time usleep);
use MqCluster;

for my $bin ('prometheus', 'prometheus-postgres-exporter')
{
	plan skip_all => "$bin not installed (scripts/install-deps.sh, monitoring tests)"
	  unless grep { -x "$_/$bin" } split /:/, $ENV{PATH};
}

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $mon = "$root/monitoring";
my $http = HTTP::Tiny->new(timeout => 5);
my $json = JSON::PP->new;
my @procs;    # [pid, name] of what this test starts, stopped at the end

# docs/operations.md's block after "<!-- monitoring-test: NAME -->": its lines,
# continuation lines joined
sub doc_block
{
	my ($name) = @_;
	open my $fh, '<', "$root/docs/operations.md" or die "operations.md: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	$text =~ /^<!-- monitoring-test: \Q$name\E -->\n```\w+\n(.*?)^```$/ms
	  or die "docs/operations.md: no $name block";
	(my $block = $1) =~ s/\\\n\s*/ /g;
	return grep { /\S/ } split /\n/, $block;
}

# The documented command line of $prog: (environment, arguments), with the
# values of the flags in %$set (and the paths under monitoring/) this test's.
sub doc_command
{
	my ($prog, %set) = @_;
	my ($line) = grep { /(^|\s)\Q$prog\E\s/ } doc_block('commands');
	die "docs/operations.md: no $prog command" unless $line;
	my (%env, @args);
	my @words = shellwords($line);
	while ($words[0] =~ /^([A-Z_]+)=(.*)$/s)
	{
		$env{$1} = $2;
		shift @words;
	}
	die "docs/operations.md: $words[0] is not $prog" unless $words[0] eq $prog;
	for my $w (@words[ 1 .. $#words ])
	{
		my ($flag, $v) = $w =~ /^(--[\w.-]+)=(.*)$/ or die "docs/operations.md: $prog $w";
		$v = $set{$flag} // ($v =~ m{^monitoring/} ? "$root/$v" : $v);
		push @args, "$flag=$v";
	}
	return (\%env, @args);
}

ok(system('promtool', 'check', 'config', "$mon/prometheus.yml") == 0,
	'promtool: the shipped prometheus.yml and its target files are valid');

my $c = MqCluster->new(nodes => 3, metrics => 1);
$c->start_kafka_brokers(metrics => 1);
$c->create_topic('t', 1,
	{ 'replication.factor' => 3, 'min.insync.replicas' => 2, 'retention.ms' => 3_600_000 });
my $l = $c->leader('t', 0);
my $ln = $c->node($l);

# Start a program with its output to the test's log directory.
sub spawn
{
	my ($name, $env, @cmd) = @_;
	my $log = "$c->{logprefix}$name.log";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>', $log or POSIX::_exit(1);
		open STDERR, '>&', \*STDOUT or POSIX::_exit(1);
		open STDIN, '<', '/dev/null';
		$ENV{$_} = $env->{$_} for keys %$env;
		exec @cmd or POSIX::_exit(127);
	}
	push @procs, [ $pid, $name ];
	return $pid;
}

sub stop_all
{
	for my $p (@procs)
	{
		kill 'TERM', $p->[0];
		waitpid($p->[0], 0);
	}
	@procs = ();
}
END { local $?; stop_all(); }

sub write_file
{
	my ($path, $text) = @_;
	open my $fh, '>', $path or die "$path: $!";
	print $fh $text;
	close $fh;
}

# one exporter per data node, as a role with pg_monitor only
my (@exporter_port, @broker_targets, @kafka_targets, @exporter_targets);
for my $i (1 .. 3)
{
	my $node = $c->node($i);
	$node->safe_psql('postgres', 'CREATE ROLE mq_exporter LOGIN; GRANT pg_monitor TO mq_exporter');
	$exporter_port[$i] = PostgreSQL::Test::Cluster::get_free_port();
	my ($env, @args) = doc_command('prometheus-postgres-exporter',
		'--web.listen-address' => "127.0.0.1:$exporter_port[$i]");
	my $host = $node->host;
	my $port = $node->port;
	$env->{DATA_SOURCE_NAME} =~ s/\bhost=\S+/host=$host/ or die 'DATA_SOURCE_NAME: no host';
	$env->{DATA_SOURCE_NAME} =~ s/\bport=\d+/port=$port/ or die 'DATA_SOURCE_NAME: no port';
	$env->{DATA_SOURCE_NAME} =~ s/\bdbname=\S+/dbname=postgres/ or die 'DATA_SOURCE_NAME: no dbname';
	spawn("exporter$i", $env, 'prometheus-postgres-exporter', @args, '--log.level=warn');
	push @broker_targets, "- targets: ['127.0.0.1:$c->{metrics_port}[$i]']\n  labels: {node: node$i}\n";
	push @kafka_targets, "- targets: ['127.0.0.1:$c->{kafka_metrics_port}[$i]']\n  labels: {node: node$i}\n";
	push @exporter_targets, "- targets: ['127.0.0.1:$exporter_port[$i]']\n  labels: {node: node$i}\n";
}

# the shipped scrape config, every second instead of every 15 s, and its
# target files for this cluster
my $pdir = PostgreSQL::Test::Utils::tempdir();
mkdir "$pdir/targets";
open my $in, '<', "$mon/prometheus.yml" or die "prometheus.yml: $!";
my $conf = do { local $/; <$in> };
close $in;
ok($conf =~ s/^(\s*(?:scrape|evaluation)_interval:) 15s$/$1 1s/mg == 2, 'prometheus.yml: intervals substituted');
write_file("$pdir/prometheus.yml", $conf);
write_file("$pdir/targets/mq-broker.yml", join '', @broker_targets);
write_file("$pdir/targets/mq-kafka.yml", join '', @kafka_targets);
write_file("$pdir/targets/postgres-exporter.yml", join '', @exporter_targets);
my $pport = PostgreSQL::Test::Cluster::get_free_port();
my ($penv, @pargs) = doc_command('prometheus', '--config.file' => "$pdir/prometheus.yml",
	'--storage.tsdb.path' => "$pdir/data", '--web.listen-address' => "127.0.0.1:$pport");
spawn('prometheus', $penv, 'prometheus', @pargs, '--log.level=warn');
my $api = "http://127.0.0.1:$pport/api/v1";

# wait on a condition, up to $secs
sub wait_for
{
	my ($secs, $cond) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		return 1 if $cond->();
		usleep(200_000);
	}
	return 0;
}

# an instant query: (status, result list, error text)
sub query
{
	my ($expr) = @_;
	my $r = $http->post_form("$api/query", { query => $expr });
	return ('http', [], "$r->{status} $r->{content}") unless $r->{content} =~ /^\{/;
	my $d = $json->decode($r->{content});
	return ($d->{status}, $d->{data}{result} // [], $d->{error} // '');
}

ok(wait_for(30, sub {
	my $r = $http->get("$api/targets");
	return 0 unless $r->{success};
	my @t = @{ $json->decode($r->{content})->{data}{activeTargets} };
	return @t == 9 && !grep { $_->{health} ne 'up' } @t;
}), 'prometheus scrapes the 3 brokers, the 3 mq-kafka and the 3 exporters') or diag($http->get("$api/targets")->{content});

# records, and a group that consumed some of them: lag exists
$ln->safe_psql('postgres',
	"CALL mq.produce('t', NULL, ARRAY['a','b','c','d','e','f','g','h','i','j']::bytea[], 0, 'all')");
$ln->safe_psql('postgres',
	"BEGIN; SELECT count(*) FROM mq.poll('g', 't', 4); SELECT mq.commit_polled('g', 't'); COMMIT;");
ok($c->wait_converged('t', 0, 1 .. 3), 'replicas converged');
my $lag = $ln->safe_psql('postgres',
	"SELECT lag FROM mq.consumer_lag WHERE group_id = 'g' AND topic = 't' AND partition = 0");
is($lag, 6, 'mq.consumer_lag: 6 records not consumed');
my $seen;
ok(wait_for(30, sub {
	my ($s, $res) = query('mq_consumer_lag{group_id="g",topic="t",partition="0",role="leader"}');
	$seen = @$res == 1 ? $res->[0]{value}[1] : undef;
	return defined $seen && $seen eq $lag;
}), 'Prometheus reports the lag mq.consumer_lag has on the leader')
  or diag('Prometheus: ' . ($seen // 'no series'));

# with retention.ms and lag: a headroom and an age, not NaN
for my $m ('mq_consumer_retention_headroom_seconds', 'mq_consumer_oldest_unconsumed_seconds')
{
	my (undef, $res) = query("$m\{group_id=\"g\",topic=\"t\",role=\"leader\"}");
	my $v = @$res ? $res->[0]{value}[1] : 'no series';
	ok($v =~ /^[0-9.e+-]+$/ && $v >= 0 && $v <= 3600, "$m: $v s, within retention.ms");
}

# mq-kafka: a statement that fails (DeleteGroups of a group that does not
# exist, at its coordinator) and a frame it must refuse (size 4)
sub kafka_call
{
	my ($i, $frame) = @_;
	require IO::Socket::INET;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $c->{kafka_port}[$i],
		Proto => 'tcp', Timeout => 5) or die "mq-kafka $i: $!";
	print $sock $frame;
	my ($len, $resp) = ('', '');
	read($sock, $len, 4) == 4 or return undef;
	read($sock, $resp, unpack('l>', $len));
	close $sock;
	return $resp;
}
my ($ferr, $gc) = $c->kafka_find_coordinator(1, 'nosuch');
my $resp = kafka_call($gc, pack('l>/a*', pack('s> s> l> s>/a* l> s>/a*', 42, 0, 7, 'tap', 1, 'nosuch')));
my (undef, undef, undef, undef, $derr) = unpack('l> l> l> s>/a s>', $resp // '');
ok(defined $derr && ($derr == 69 || $derr == 30), "DeleteGroups of an unknown group: error " . ($derr // 'none'));
is(kafka_call(1, pack('l>', 4)), undef, 'a 4-byte frame closes the connection');
my %kafka_want = (
	'sum(mq_kafka_requests_total{api="FindCoordinator"})' => sub { $_[0] >= 3 },
	'sum(mq_kafka_requests_total{api="DeleteGroups"})' => sub { $_[0] == 1 },
	'sum(mq_kafka_statement_errors_total)' => sub { $_[0] >= 1 },
	'sum(mq_kafka_statement_errors_by_sqlstate_total{sqlstate=~"MQ035|42501"})' => sub { $_[0] >= 1 },
	'sum(mq_kafka_protocol_errors_total)' => sub { $_[0] == 1 },
	'sum(mq_kafka_request_seconds_total{api="DeleteGroups"})' => sub { $_[0] > 0 });
for my $e (sort keys %kafka_want)
{
	my $v;
	ok(wait_for(20, sub {
		my ($s, $res) = query($e);
		$v = @$res ? $res->[0]{value}[1] : undef;
		return defined $v && $kafka_want{$e}->($v);
	}), "mq-kafka via Prometheus: $e") or diag('value: ' . ($v // 'no series'));
}

# every panel's expressions, with the dashboard's variables set to "All"
open $in, '<', "$mon/grafana-dashboard.json" or die "grafana-dashboard.json: $!";
my $dash = $json->decode(do { local $/; <$in> });
close $in;
my @exprs;
for my $p (@{ $dash->{panels} })
{
	for my $t (@{ $p->{targets} // [] })
	{
		(my $e = $t->{expr}) =~ s/\$__rate_interval/5s/g;
		$e =~ s/\$(topic|group)\b/.*/g;
		push @exprs, [ "$p->{title} ($t->{refId})", $e ];
	}
}
# template variables: label_values(metric, label) needs series with the label
for my $v (@{ $dash->{templating}{list} })
{
	next unless $v->{type} eq 'query';
	my ($m, $lab) = $v->{query}{query} =~ /^label_values\((\w+),\s*(\w+)\)$/
	  or die "variable $v->{name}: unexpected query";
	push @exprs, [ "variable \$$v->{name}", "$m\{$lab!=\"\"}" ];
}
cmp_ok(scalar @exprs, '>=', 25, scalar(@exprs) . ' expressions in the dashboard');
my %res;
# rates need a few scrapes after the first sample: wait until all answer
wait_for(30, sub {
	for my $x (@exprs)
	{
		next if $res{ $x->[0] } && $res{ $x->[0] }[0] eq 'success' && @{ $res{ $x->[0] }[1] };
		$res{ $x->[0] } = [ query($x->[1]) ];
	}
	return !grep { !($res{ $_->[0] }[0] eq 'success' && @{ $res{ $_->[0] }[1] }) } @exprs;
});
for my $x (@exprs)
{
	my ($status, $result, $err) = @{ $res{ $x->[0] } };
	ok($status eq 'success' && @$result, "$x->[0]: series returned")
	  or diag("$x->[1]: $status $err, " . scalar(@$result) . ' series');
}
# the alert expressions of docs/operations.md evaluate, on metrics that exist
for my $e (doc_block('promql'))
{
	my ($st, undef, $err) = query($e);
	is($st, 'success', "alert expression evaluates: $e") or diag($err);
	my %names = map { $_ => 1 } $e =~ /\b((?:mq|pg)_\w+)\b/g;
	for my $m (sort keys %names)
	{
		my ($st2, $res) = query("count($m)");
		ok(@$res, "alert metric $m has series");
	}
}

# the check can fail: a name no source exports has no series
my ($s, $none) = query('mq_partition_isr_sizes');
ok($s eq 'success' && !@$none, 'a misspelt metric returns no series');

stop_all();
$c->teardown;
done_testing();
