/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The maintenance worker: one per database where the extension is
 *	  installed, started by the launcher (launcher.c), calling
 *	  mq.run_maintenance() every mq.maintenance_interval so that the next
 *	  segment of every partition exists before producers need it and
 *	  retention, compaction and expiry are applied.
 *
 * Each pass first looks for the extension in pg_extension: where it is
 * not installed (never, or dropped since) the worker tells the launcher
 * and exits quietly, leaving its worker slot to others.  SIGTERM (DROP
 * DATABASE ... WITH (FORCE), the launcher's hook before a plain DROP
 * DATABASE, pg_terminate_backend) ends it at once; the launcher decides
 * whether another starts.
 *
 * Locking: none of its own; mq.run_maintenance() takes what it needs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_extension.h"
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

/* One maintenance pass; false if the extension is not installed here. */
static bool
maintenance_pass(void)
{
	bool		installed;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mq maintenance");
	/* the worker is a superuser: nothing of a user's may be on its path */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	installed = extension_locked();
	if (installed)
	{
		/* a snapshot taken after the lock sees the extension's tables */
		PopActiveSnapshot();
		PushActiveSnapshot(GetTransactionSnapshot());
		SPI_execute("SELECT mq.run_maintenance()", false, 0);
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
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
