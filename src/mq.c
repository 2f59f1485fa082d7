/*-------------------------------------------------------------------------
 *
 * mq.c
 *	  Module entry point: settings, the topic cache's invalidation hook, the
 *	  planner hook of the streaming fetch scan (fetch_path.c) and, when the
 *	  library is preloaded, the maintenance background worker.
 *
 * The worker connects to the database named by mq.database and calls
 * mq.run_maintenance() every mq.maintenance_interval, so that the next
 * segment of every partition exists before producers need it.  Without
 * preloading, a scheduler can call mq.run_maintenance() instead; failing
 * both, the produce path creates a missing segment itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "tcop/tcopprot.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "mq.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

PGDLLEXPORT void mq_maintenance_main(Datum arg);

static char *mq_database = NULL;
static int	mq_maintenance_interval = 1000;
static int	mq_producer_id_expiration_ms = 86400000;

void
_PG_init(void)
{
	BackgroundWorker worker;

	mq_topic_cache_init();
	mq_produce_lock_init();
	mq_offsets_init();
	mq_notify_init();
	mq_commit_wait_init();
	mq_acl_init();
	mq_record_size_init();
	mq_fetch_scan_init();

	DefineCustomBoolVariable("mq.release_before_flush",
							 "Producers release the partition lock before waiting for their commit's WAL flush.",
							 "Lets producers of one partition share WAL flushes; commits are still acknowledged only once durable.",
							 &mq_release_before_flush, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.producer_id_expiration_ms",
							"Time after which an unused producer id expires.",
							"Like Kafka's producer.id.expiration.ms; maintenance removes expired ids.",
							&mq_producer_id_expiration_ms, 86400000, 1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomStringVariable("mq.database",
							   "Database in which the mq maintenance worker runs.",
							   NULL, &mq_database, "postgres",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.maintenance_interval",
							"Time between two runs of mq maintenance.",
							NULL, &mq_maintenance_interval, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	MarkGUCPrefixReserved("mq");

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "mq");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "mq_maintenance_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "mq maintenance");
	snprintf(worker.bgw_type, BGW_MAXLEN, "mq maintenance");
	RegisterBackgroundWorker(&worker);
}

/* One maintenance pass, if the extension is installed in this database. */
static void
maintenance_pass(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mq maintenance");
	/* the worker is a superuser: nothing of a user's may be on its path */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	if (SPI_execute("SELECT 1 FROM pg_catalog.pg_extension "
					"WHERE extname OPERATOR(pg_catalog.=) 'mq'", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		SPI_execute("SELECT mq.run_maintenance()", false, 0);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
mq_maintenance_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(mq_database, NULL, 0);
	elog(LOG, "mq maintenance worker started in database \"%s\"", mq_database);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		maintenance_pass();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 mq_maintenance_interval, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
