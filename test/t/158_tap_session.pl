# The TAP tests' kept psql sessions (test/t/MqSession.pm): a statement
# behaves as on a new connection.  It runs once, and succeeds, on a session
# whose server restarted or whose backend was terminated since the last
# statement (the probe finds out and the statement goes on a new session);
# a paused server does not hold it past its timeout; a failed statement
# drops its session; poll_query_until (MqCluster.pm points it there) polls
# on one session.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;

my $node = PostgreSQL::Test::Cluster->new('s');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE TABLE hits (n int)');

sub run { return MqSession::run($node, $_[0], $_[1] // 10); }
sub pid { my ($ok, $out) = run('SELECT pg_backend_pid()'); chomp $out; return $out; }

my ($ok, $out) = run("SELECT 1, 'a'");
ok($ok, 'a statement succeeds');
is($out, "1|a\n", 'its output alone, as psql -A -t prints it');
($ok, $out) = run('SELECT 1/0');
ok(!$ok, 'a failing statement fails');
like($out, qr/ERROR:\s+22012:/, 'its message names the SQLSTATE');

my $pid = pid();
is(pid(), $pid, 'the next statement goes on the same backend');

$node->stop('immediate');
$node->start;
($ok, $out) = run('INSERT INTO hits VALUES (1)');
ok($ok, 'after the server restarted, the statement succeeds') or diag($out);
isnt(pid(), $pid, 'on a new session');

$pid = pid();
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
($ok, $out) = run('INSERT INTO hits VALUES (2)');
ok($ok, 'after its backend was terminated, the statement succeeds') or diag($out);
is($node->safe_psql('postgres', 'SELECT string_agg(n::text, \',\' ORDER BY n) FROM hits'), '1,2',
	'each statement ran once');

$pid = pid();
run('SELECT 1/0');
isnt(pid(), $pid, 'a failed statement dropped its session');

my @pids = MqCluster::server_pids($node);
kill 'STOP', @pids;
my $t = time;
($ok, $out) = run('SELECT 1', 2);
my $took = time - $t;
kill 'CONT', @pids;
ok(!$ok, 'a paused server fails the statement');
cmp_ok($took, '<', 8, "within its timeout (took ${took}s)");
($ok, $out) = run('SELECT 1');
ok($ok, 'and the server resumed, the next statement succeeds');

$pid = pid();
ok($node->poll_query_until('postgres', 'SELECT true'), 'poll_query_until sees its answer');
ok($node->poll_query_until('postgres', "SELECT pg_backend_pid() <> $pid"),
	'poll_query_until polls on a session of its own');
my $ppid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND pid <> $pid "
	  . "AND backend_type = 'client backend'");
$node->poll_query_until('postgres', 'SELECT true');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE pid = '$ppid'"), '1',
	'and keeps it between polls');

$node->stop;
done_testing();
