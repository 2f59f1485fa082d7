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
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "mq.h"

PGDLLEXPORT void mq_maintenance_main(Datum arg);

int			mq_maintenance_interval = 1000;
int			mq_maintenance_batch_topics = 500;

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
static bool
pass_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mq maintenance");
	/* the worker is a superuser: nothing of a user's may be on its path */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	if (!extension_locked())
	{
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
		return false;
	}
	/* a snapshot taken after the lock sees the extension's tables */
	PopActiveSnapshot();
	PushActiveSnapshot(GetTransactionSnapshot());
	return true;
}

static void
pass_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
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
 * One maintenance pass: a transaction per batch of topics
 * (mq.maintenance_batch_topics), so that a pass over many topics never
 * holds back the xmin horizon for long, then one for the rest; false if
 * the extension is not installed here.
 */
static bool
maintenance_pass(void)
{
	int32		after = 0;
	bool		more = true;

	for (bool first = true; more; first = false)
	{
		CHECK_FOR_INTERRUPTS();
		if (!pass_begin())
			return false;
		more = pass_batch(&after, first);
		if (!more)
			SPI_execute("SELECT mq._maintain_rest()", false, 0);
		pass_commit();
	}
	return true;
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
		if (!maintenance_pass())
		{
			ereport(first ? DEBUG1 : LOG,
					(errmsg("mq maintenance worker leaves database \"%s\": the extension is not installed",
							dbname)));
			(void) mq_launcher_worker_state(true);
			proc_exit(0);
		}
		if (first)
			ereport(LOG, (errmsg("mq maintenance worker started in database \"%s\"", dbname)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 mq_maintenance_interval, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
