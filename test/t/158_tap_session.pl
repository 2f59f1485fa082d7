# The TAP tests' kept psql sessions (test/t/MqSession.pm): a statement
# behaves as on a new connection.  It runs once, and succeeds, on a session
# whose server restarted or whose backend was terminated since the last
# statement (the probe finds out and the statement goes on a new session);
# a paused server does not hold it past its timeout; a failed statement
# drops its session; poll_query_until (MqCluster.pm points it there) polls
# on one session; safe_psql (pointed there too) starts each statement as a
# new connection would.
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

# safe_psql on the postgres database (MqCluster.pm points it at
# MqSession::safe_psql with fresh => 1) keeps a session of its own, on
# which each statement begins as on a new connection
my $spid = $node->safe_psql('postgres', 'SELECT pg_backend_pid()');
is($node->safe_psql('postgres', 'SELECT pg_backend_pid()'), $spid, 'safe_psql keeps its session');
$node->safe_psql('postgres', "CREATE ROLE leaker; SET application_name = 'leak'; "
	  . 'CREATE TEMP TABLE leak (); PREPARE leak AS SELECT 1; SELECT pg_advisory_lock(42); SET ROLE leaker');
is($node->safe_psql('postgres', "SELECT current_user = session_user, "
	  . "current_setting('application_name') <> 'leak', to_regclass('pg_temp.leak') IS NULL, "
	  . "(SELECT count(*) FROM pg_prepared_statements), "
	  . "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')"),
	't|t|t|0|0', 'nothing of the statements before is left: role, settings, temp table, '
	  . 'prepared statement, advisory lock');
$node->safe_psql('postgres', 'BEGIN; INSERT INTO hits VALUES (3)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM hits WHERE n = 3'), '0',
	'a statement never runs inside a transaction the one before left open');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"),
	'and that transaction ends');
is($node->safe_psql('postgres', 'SELECT count(*) FROM hits WHERE n = 3'), '0', 'rolled back');

$node->stop;
done_testing();
