# The maintenance worker in a read-only database (docs/operations.md,
# "Multiple databases and the maintenance workers"): after
# ALTER DATABASE ... SET default_transaction_read_only = on it says once
# that maintenance is paused and stays idle, instead of failing every pass
# with 25006 and being restarted (exit code 1) over and over; after
# ALTER DATABASE ... RESET it says once that maintenance resumed, and
# retention runs again.
#
#   - the worker applies the changed database setting by itself: it leaves
#     and the launcher starts a new one at once (a session reads its
#     database's settings when it connects)
#   - while read-only: one WARNING, the same worker process passing idly
#     (its pg_stat_activity row changes state every pass and says why it
#     is paused), nothing removed by retention, no worker exit
#   - writable again: one LOG line, and retention drops the closed segments
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('read_only');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n"
	. "mq.maintenance_interval = 100\nmq.launcher_interval = 500\n");
$node->start;

my $worker = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'app'";
# the test's own sessions write in the read-only database as a DBA may
my $rw = 'SET default_transaction_read_only = off;';

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION mq');
$node->wait_for_log(qr/mq maintenance worker started in database "app"/);
my $pid0 = $node->safe_psql('postgres', $worker);

my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE app SET default_transaction_read_only = on');
$node->wait_for_log(qr/mq maintenance worker of database "app" restarts: the database's or role's settings changed/,
	$log_offset);
$node->wait_for_log(qr/WARNING:  mq maintenance of database "app" paused: the database is read-only/, $log_offset);
pass('a changed database setting restarts the worker, which says once that the database is read-only');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($worker) w WHERE pid <> $pid0"),
	'a new worker runs in the read-only database');
my $pid = $node->safe_psql('postgres', $worker);

# records to keep: closed segments that retention (retention.bytes 1) drops
# as soon as maintenance runs
$node->safe_psql('app', qq{$rw
	SELECT mq.create_topic('t', 1, '{"segment.records": 10, "retention.bytes": 1}');
	SELECT mq.send('t', 'k', 'v' || i) FROM generate_series(1, 35) i;});

# the worker passes idly: its row's state changes every pass (100 ms);
# two seconds of them, some twenty passes, in the same process
my $t1 = $node->safe_psql('postgres', 'SELECT now()');
ok($node->poll_query_until('postgres',
	"SELECT state_change > '$t1'::timestamptz + interval '2 s' FROM pg_stat_activity WHERE pid = $pid"),
	'the worker keeps passing');
is($node->safe_psql('postgres', $worker), $pid, 'the same worker process all along');
is($node->safe_psql('postgres', "SELECT query FROM pg_stat_activity WHERE pid = $pid"),
	'mq maintenance: paused, the database is read-only', 'pg_stat_activity says why it is idle');
is($node->safe_psql('app', "SELECT log_start_offset FROM mq.partitions WHERE topic = 't'"), '0',
	'retention removed nothing while the database was read-only');
my $log = slurp_file($node->logfile, $log_offset);
my $paused = () = $log =~ /mq maintenance of database "app" paused/g;
is($paused, 1, 'the pause is said once');
unlike($log, qr/exited with exit code 1/, 'no worker exited with an error');
unlike($log, qr/read-only transaction/, 'no pass failed with 25006');

$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE app RESET default_transaction_read_only');
$node->wait_for_log(qr/LOG:  mq maintenance of database "app" resumed: the database is writable again/, $log_offset);
ok($node->poll_query_until('app', "SELECT log_start_offset >= 30 FROM mq.partitions WHERE topic = 't'"),
	'retention runs again once the database is writable');
$log = slurp_file($node->logfile, $log_offset);
my $resumed = () = $log =~ /resumed: the database is writable again/g;
is($resumed, 1, 'the resume is said once');
unlike($log, qr/paused: the database is read-only/, 'and the pause not again');

unlike(slurp_file($node->logfile), qr/exited with exit code 1/, 'no worker exited with an error at all');
$node->stop;
done_testing();
