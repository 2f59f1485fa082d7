/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The maintenance worker: one per database where the extension is
 *	  installed, started by the launcher (launcher.c), calling
 *	  mq.run_maintenance()'s batches every mq.maintenance_interval so that
 *	  the next segment of every partition exists before producers need it
 *	  and retention, compaction and expiry are applied.  A pass commits
 *	  after each batch of mq.maintenance_batch_topics topics
 *	  (src/sql/85_maintenance.sql).
 *
 * Each pass first looks for the extension in pg_extension: where it is
 * not installed (never, or dropped since) the worker tells the launcher
 * and exits quietly, leaving its worker slot to others.  SIGTERM (DROP
 * DATABASE ... WITH (FORCE), the launcher's hook before a plain DROP
 * DATABASE, pg_terminate_backend) ends it at once; the launcher decides
 * whether another starts.
 *
 * A pass starts with a look at the session: in a read-only database
 * (default_transaction_read_only on, from ALTER DATABASE / ALTER ROLE ...
 * SET or postgresql.conf) the worker skips its passes and stays idle
 * instead of failing every pass with 25006; it says so once, and once
 * again when the database is writable (the launcher's slot remembers it
 * across restarts).  A session applies its database's and role's settings
 * when it connects, so the worker compares them (pg_db_role_setting) with
 * what it started with, and when they changed it leaves for the launcher
 * to start a new one at once: an ALTER DATABASE ... SET or RESET reaches
 * maintenance within a pass.
 *
 * Locking: the extension's, shared, in each transaction of a pass (a DROP
 * EXTENSION waits for the batch); mq._maintain_batch() takes what it needs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "mq.h"

PGDLLEXPORT void mq_maintenance_main(Datum arg);

int			mq_maintenance_interval = 1000;
int			mq_maintenance_batch_topics = 500;

typedef enum MqPassResult
{
	MQ_PASS_DONE,
	MQ_PASS_ABSENT,				/* the extension is not installed */
	MQ_PASS_READ_ONLY,			/* skipped: the database is read-only */
	MQ_PASS_RESTART,			/* the session's settings changed */
} MqPassResult;

/* the database's and role's settings as the worker's session applied them */
static char *settings_seen = NULL;

/*
 * Is the extension installed?  Holding a share lock on it until the end of
 * the pass, so that a DROP EXTENSION waits for the pass instead of pulling
 * the tables from under it (looked up again once locked: a drop may have
 * committed meanwhile).
 */
static bool
extension_locked(void)
{
	Oid			ext = get_extension_oid("mq", true);

	if (!OidIsValid(ext))
		return false;
	LockDatabaseObject(ExtensionRelationId, ext, 0, AccessShareLock);
	return get_extension_oid("mq", true) == ext;
}

/*
 * Open a transaction of a pass, holding the extension's lock; false (and no
 * transaction) when the extension is not installed.
 */
static void
pass_start(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mq maintenance");
	/* the worker is a superuser: nothing of a user's may be on its path */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
}

static void
pass_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

static bool
pass_begin(void)
{
	pass_start();
	if (!extension_locked())
	{
		pass_commit();
		return false;
	}
	/* a snapshot taken after the lock sees the extension's tables */
	PopActiveSnapshot();
	PushActiveSnapshot(GetTransactionSnapshot());
	return true;
}

/*
 * One batch of topics after *after (0 with isnull: from the first), in its
 * own transaction; false once none is left.  *after becomes the batch's
 * last topic.
 */
static bool
pass_batch(int32 *after, bool first)
{
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(*after), Int32GetDatum(mq_maintenance_batch_topics)};
	bool		isnull = true;
	Datum		last = (Datum) 0;

	SPI_execute_with_args("SELECT last_topic FROM mq._maintain_batch($1, $2)", 2, argtypes, args,
						  first ? "n " : "  ", false, 1);
	if (SPI_processed == 1)
		last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return false;
	*after = DatumGetInt32(last);
	return true;
}

/*
 * The rows of pg_db_role_setting that apply to this session, as text, in
 * the current transaction's memory.
 */
static char *
session_settings(void)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(MyDatabaseId), ObjectIdGetDatum(GetSessionUserId())};
	bool		isnull;
	Datum		d;

	SPI_execute_with_args("SELECT coalesce(string_agg(setdatabase || '/' || setrole || ' ' || setconfig::text, ' ' "
						  "ORDER BY setdatabase, setrole), '') FROM pg_catalog.pg_db_role_setting "
						  "WHERE setdatabase IN (0, $1) AND setrole IN (0, $2)",
						  2, argtypes, args, NULL, true, 1);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return TextDatumGetCString(d);
}

/*
 * Before a pass: is the database read-only, or have the settings of this
 * session changed since it connected?  (Or is the extension gone.)
 */
static MqPassResult
pass_check(void)
{
	MqPassResult result = MQ_PASS_DONE;
	char	   *now;

	pass_start();
	now = session_settings();
	if (settings_seen == NULL)
		settings_seen = MemoryContextStrdup(TopMemoryContext, now);
	if (strcmp(now, settings_seen) != 0)
		result = MQ_PASS_RESTART;
	else if (!OidIsValid(get_extension_oid("mq", true)))
		result = MQ_PASS_ABSENT;
	else if (XactReadOnly)
	{
		result = MQ_PASS_READ_ONLY;
		pgstat_report_activity(STATE_RUNNING, "mq maintenance: paused, the database is read-only");
	}
	pass_commit();
	return result;
}

/* Say once that maintenance pauses for a read-only database, once that it resumes. */
static void
note_read_only(bool read_only, const char *dbname)
{
	if (!mq_launcher_note_read_only(read_only))
		return;
	if (read_only)
		ereport(WARNING,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("mq maintenance of database \"%s\" paused: the database is read-only", dbname),
				 errdetail("default_transaction_read_only is on for the maintenance worker's session; segments are not created ahead, and retention, compaction and expiry wait."),
				 errhint("Maintenance resumes by itself when the database is writable again (ALTER DATABASE ... RESET default_transaction_read_only).")));
	else
		ereport(LOG,
				(errmsg("mq maintenance of database \"%s\" resumed: the database is writable again", dbname)));
}

/*
 * One maintenance pass: a transaction per batch of topics
 * (mq.maintenance_batch_topics), so that a pass over many topics never
 * holds back the xmin horizon for long, then one for the rest; false if
 * the extension is not installed here.
 */
static MqPassResult
maintenance_pass(const char *dbname)
{
	int32		after = 0;
	bool		more = true;
	MqPassResult checked = pass_check();

	if (checked == MQ_PASS_READ_ONLY || checked == MQ_PASS_DONE)
		note_read_only(checked == MQ_PASS_READ_ONLY, dbname);
	if (checked != MQ_PASS_DONE)
		return checked;
	for (bool first = true; more; first = false)
	{
		CHECK_FOR_INTERRUPTS();
		if (!pass_begin())
			return MQ_PASS_ABSENT;
		more = pass_batch(&after, first);
		if (!more)
			SPI_execute("SELECT mq._maintain_rest()", false, 0);
		pass_commit();
	}
	return MQ_PASS_DONE;
}

void
mq_maintenance_main(Datum arg)
{
	char	   *dbname;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	if (!mq_launcher_worker_state(false))
		proc_exit(0);			/* the database is being dropped or renamed */
	StartTransactionCommand();
	dbname = MemoryContextStrdup(TopMemoryContext, get_database_name(MyDatabaseId));
	CommitTransactionCommand();

	for (bool first = true;; first = false)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		switch (maintenance_pass(dbname))
		{
			case MQ_PASS_ABSENT:
				ereport(first ? DEBUG1 : LOG,
						(errmsg("mq maintenance worker leaves database \"%s\": the extension is not installed",
								dbname)));
				(void) mq_launcher_worker_state(true);
				proc_exit(0);
				break;
			case MQ_PASS_RESTART:
				ereport(LOG,
						(errmsg("mq maintenance worker of database \"%s\" restarts: the database's or role's settings changed",
								dbname)));
				mq_launcher_restart_me();
				proc_exit(0);
				break;
			case MQ_PASS_DONE:
			case MQ_PASS_READ_ONLY:
				break;
		}
		if (first)
			ereport(LOG, (errmsg("mq maintenance worker started in database \"%s\"", dbname)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 mq_maintenance_interval, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
