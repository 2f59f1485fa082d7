# Every database where mq is installed is maintained, by the launcher's
# worker per database (docs/operations.md, "Multiple databases and the
# maintenance workers"), and dropping a database stops its worker cleanly.
#
#   - db_a: created after the server started, mq installed at once
#   - db_b: mq installed, dropped (the worker leaves), installed again
#     later: the CREATE EXTENSION wakes the launcher (a database without
#     mq is otherwise probed only once a minute)
#   - retention runs in both without anyone calling mq.run_maintenance()
#   - DROP DATABASE db_a (plain) and DROP DATABASE db_b WITH (FORCE) while
#     their workers run both succeed, and no worker starts again for them
#   - ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE succeed while
#     the worker runs; the renamed database and the copy are maintained;
#     another role's failed DROP DATABASE leaves the worker alone
#   - max_worker_processes too small: a WARNING says which database has
#     no worker and what to raise
#   - mq.database set: only that database is maintained; renamed away,
#     a WARNING says that nothing is maintained
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('launcher');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n"
	. "mq.maintenance_interval = 200\nmq.launcher_interval = 500\n"
	. "max_worker_processes = 8\n");
$node->start;

sub workers
{
	my ($db) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = '$db'");
}

# one topic whose closed segments retention drops (retention.bytes 1)
sub fill
{
	my ($db) = @_;
	$node->safe_psql($db, q{
		SELECT mq.create_topic('t', 1, '{"segment.records": 10, "retention.bytes": 1}');
		SELECT mq.send('t', 'k', 'v' || i) FROM generate_series(1, 35) i;});
}

sub retained
{
	my ($db) = @_;
	return $node->poll_query_until($db,
		"SELECT log_start_offset >= 30 FROM mq.partitions WHERE topic = 't'");
}

is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mq launcher' AND datname IS NULL"),
	'1', 'one launcher, connected to no database');

$node->safe_psql('postgres', 'CREATE DATABASE db_a');
$node->safe_psql('db_a', 'CREATE EXTENSION mq');
$node->safe_psql('postgres', 'CREATE DATABASE db_b');
$node->safe_psql('db_b', 'CREATE EXTENSION mq');
ok($node->poll_query_until('postgres',
	"SELECT count(DISTINCT datname) = 2 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname IN ('db_a', 'db_b')"),
	'a maintenance worker runs in each database created after the start');
is(workers('postgres'), '0', 'none in a database without the extension');

# the extension dropped: the worker leaves; installed again: it is back at
# once (the launcher would otherwise probe db_b again only after a minute)
$node->safe_psql('db_b', 'DROP EXTENSION mq');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_b'"),
	'the worker leaves a database whose extension was dropped');
$node->wait_for_log(qr/mq maintenance worker leaves database "db_b": the extension is not installed/);
my $t0 = time;
$node->safe_psql('db_b', 'CREATE EXTENSION mq');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_b'"),
	'the worker is back once the extension is created again');
cmp_ok(time - $t0, '<', 30, 'woken by CREATE EXTENSION, not by the next probe a minute later');

fill('db_a');
fill('db_b');
ok(retained('db_a'), 'retention runs in db_a without mq.run_maintenance()');
ok(retained('db_b'), 'retention runs in db_b without mq.run_maintenance()');

# the drops: the plain form fails after 5 s while another session stays
my $log_offset = -s $node->logfile;
is(workers('db_a'), '1', 'db_a has its worker before the drop');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE db_a');
is($ret, 0, 'plain DROP DATABASE succeeds while its worker runs') or diag($err);
is(workers('db_b'), '1', 'db_b has its worker before the drop');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE db_b WITH (FORCE)');
is($ret, 0, 'DROP DATABASE WITH (FORCE) succeeds while its worker runs') or diag($err);

# a database created now is maintained: the launcher has looked again since
$node->safe_psql('postgres', 'CREATE DATABASE db_c');
$node->safe_psql('db_c', 'CREATE EXTENSION mq');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_c'"),
	'a later database gets its worker');
$node->wait_for_log(qr/mq maintenance worker started in database "db_c"/, $log_offset);
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname IS DISTINCT FROM 'db_c'"),
	'0', 'no worker for the dropped databases');
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/database "db_[ab]" does not exist|database \d+ does not exist/,
	'no worker tried to start in a dropped database');
unlike($log, qr/maintenance worker started in database "db_[ab]"/, 'no worker restarted for them');

# statements that need the database alone succeed while its worker runs,
# which comes back afterwards; a copy of a database with mq is maintained
$log_offset = -s $node->logfile;
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE db_c RENAME TO db_c2');
is($ret, 0, 'ALTER DATABASE RENAME succeeds while its worker runs') or diag($err);
$node->wait_for_log(qr/mq maintenance worker started in database "db_c2"/, $log_offset);
# someone who may not drop it does not stop its maintenance by trying
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_c2'"),
	'db_c2 has its worker');
my $pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_c2'");
$node->safe_psql('postgres', 'CREATE ROLE mallory LOGIN CREATEDB');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE db_c2', extra_params => [ '-U', 'mallory' ]);
like($err, qr/must be owner of database db_c2/, 'a DROP DATABASE by another role fails');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE db_x TEMPLATE db_c2', extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied to copy database "db_c2"/, 'so does a copy');
is($node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_c2'"),
	$pid, 'the worker was left alone');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE db_e TEMPLATE db_c2');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE succeeds while its worker runs') or diag($err);
ok($node->poll_query_until('postgres', "SELECT count(DISTINCT datname) = 2 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname IN ('db_c2', 'db_e')"),
	'the renamed database and its copy are maintained');
$node->safe_psql('postgres', 'DROP DATABASE db_e');

# too few worker slots: a clear WARNING, the rest maintained
$node->safe_psql('postgres', 'CREATE DATABASE db_d');
$node->safe_psql('db_d', 'CREATE EXTENSION mq');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'db_d'"),
	'db_d gets its worker');
# the logical replication launcher, mq's launcher and one worker
$node->append_conf('postgresql.conf', "max_worker_processes = 3\n");
$log_offset = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/WARNING:  mq launcher: no background worker slot free for the maintenance of database "db_(c2|d)"/, $log_offset);
$log = slurp_file($node->logfile, $log_offset);
like($log, qr/max_worker_processes is 3; mq needs one for its launcher and one per database/, 'the warning says what is needed');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'mq maintenance'"),
	'the one free slot maintains one database');

# mq.database restricts maintenance to one database
$node->append_conf('postgresql.conf', "max_worker_processes = 8\nmq.database = 'db_d'\n");
$log_offset = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/mq maintenance worker started in database "db_d"/, $log_offset);
$node->wait_for_log(qr/mq launcher started: maintaining database "db_d" only/, $log_offset);
is($node->safe_psql('postgres', "SELECT string_agg(datname, ',') FROM pg_stat_activity WHERE backend_type = 'mq maintenance'"),
	'db_d', 'with mq.database set, only that database is maintained');

# the database mq.database names renamed: its worker goes, and the log
# says that nothing is maintained any more, then that it is back
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE db_d RENAME TO db_d2');
$node->wait_for_log(qr/WARNING:  mq launcher: mq.database names "db_d", which is no database that accepts connections: no database is maintained/,
	$log_offset);
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'mq maintenance'"),
	'after the rename no database is maintained, and a WARNING says so');
$node->safe_psql('postgres', 'ALTER DATABASE db_d2 RENAME TO db_d');
$node->wait_for_log(qr/LOG:  mq launcher: database "db_d" \(mq.database\) is there again/, $log_offset);
$node->wait_for_log(qr/mq maintenance worker started in database "db_d"/, $log_offset);
pass('renamed back, it is maintained again');

$node->stop;
done_testing();
