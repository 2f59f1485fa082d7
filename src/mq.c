/*-------------------------------------------------------------------------
 *
 * mq.c
 *	  Module entry point: settings, the topic cache's invalidation hook, the
 *	  planner hook of the streaming fetch scan (fetch_path.c) and, when the
 *	  library is preloaded, the maintenance launcher (launcher.c), which
 *	  starts a maintenance worker (maintenance.c) in every database where
 *	  the extension is installed.
 *
 * Without preloading, a scheduler can call mq.run_maintenance() instead;
 * failing both, the produce path creates a missing segment itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "mq.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static int	mq_producer_id_expiration_ms = 86400000;

/*
 * mq.producer_id_expiration_ms takes units ('1d', '30min') like mq's other
 * time settings, but shows as the plain number of milliseconds: the
 * maintenance SQL of every installed extension version reads it with
 * current_setting(...)::bigint, which '1d' would break.
 */
static const char *
show_producer_id_expiration(void)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%d", mq_producer_id_expiration_ms);
	return buf;
}

void
_PG_init(void)
{
	mq_topic_cache_init();
	mq_produce_lock_init();
	mq_positions_init();
	mq_utility_init();
	mq_notify_init();
	mq_commit_wait_init();
	mq_acl_init();
	mq_record_size_init();
	mq_malloc_tune_init();
	mq_fetch_path_init();
	/* last: its pre-commit appends run before the others' (consumer_offsets.c) */
	mq_consumer_offsets_init();

	DefineCustomBoolVariable("mq.release_before_flush",
							 "Producers release the partition lock before waiting for their commit's WAL flush.",
							 "Lets producers of one partition share WAL flushes; commits are still acknowledged only once durable.",
							 &mq_release_before_flush, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.producer_id_expiration_ms",
							"Time after which an unused producer id expires.",
							"Like Kafka's producer.id.expiration.ms; maintenance removes expired ids.",
							&mq_producer_id_expiration_ms, 86400000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, show_producer_id_expiration);

	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomStringVariable("mq.database",
							   "The only database whose mq maintenance worker runs; empty: every database where mq is installed.",
							   NULL, &mq_database, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.maintenance_interval",
							"Time between two runs of mq maintenance.",
							NULL, &mq_maintenance_interval, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.maintenance_batch_topics",
							"Topics the mq maintenance worker handles per transaction.",
							"A pass commits after each batch, so that it never holds back the xmin horizon for long.",
							&mq_maintenance_batch_topics, 500, 1, 1000000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.launcher_interval",
							"Time between two looks of the mq launcher for databases that need a maintenance worker.",
							NULL, &mq_launcher_interval, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	MarkGUCPrefixReserved("mq");

	mq_launcher_init();
	mq_launcher_hook_init();
}
