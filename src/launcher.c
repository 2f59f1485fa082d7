/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The maintenance launcher: one background worker, connected to no
 *	  database, that keeps one maintenance worker (maintenance.c) running in
 *	  every database where the extension is installed.
 *
 * Every mq.launcher_interval the launcher lists pg_database (a shared
 * catalog, readable without a database) and, for each database that
 * accepts connections and is no template (and is the one named by
 * mq.database when that is set), starts a dynamic worker unless one runs.
 * The launcher cannot see another database's pg_extension, so the worker
 * looks: where mq is not installed it says so in shared memory and exits
 * at once; the launcher probes that database again only after
 * MQ_PROBE_AGAIN_MS, or at once when a CREATE EXTENSION mq commits
 * anywhere (launcher_hook.c wakes it).  A database created later is new
 * to the launcher, so it is probed at the next listing.  A worker that
 * failed is started again after MQ_RETRY_MS.  A database that vanished
 * (dropped) is forgotten, so its worker is never started again.  When
 * mq.database names no such database (renamed, dropped, mistyped), a
 * WARNING says nothing is maintained.
 *
 * Shared memory holds one slot per database with a worker or a pause: the
 * worker's pid (set by the worker, cleared at its exit) and a pause
 * deadline that launcher_hook.c sets before DROP DATABASE, ALTER DATABASE
 * RENAME / SET TABLESPACE or CREATE DATABASE ... TEMPLATE, statements that
 * fail while another session is connected to the database: the hook
 * terminates the worker and the launcher starts none until the pause ends.
 * The slot also remembers, across the worker's restarts, that the database
 * was found read-only (so that the worker says so once, and once again
 * when it is writable), and that the worker left to be started again at
 * once (its database's or role's settings changed: a new connection
 * applies them).
 *
 * Locking: the slots and the launcher's latch are under one spinlock, held
 * only to copy or set a few fields.  The launcher alone allocates slots;
 * the worker handles (process-local) stay in the launcher's memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

/* a database without the extension is looked at again after this long */
#define MQ_PROBE_AGAIN_MS	60000
/* a worker that failed is started again after this long */
#define MQ_RETRY_MS			5000

typedef struct MqDbSlot
{
	Oid			dboid;			/* InvalidOid: free */
	pid_t		pid;			/* the worker's, 0 when none runs */
	bool		absent;			/* the worker found no extension */
	bool		read_only;		/* the worker found the database read-only */
	bool		again;			/* the worker left to start afresh at once */
	TimestampTz paused_until;	/* start no worker before this */
} MqDbSlot;

typedef struct MqLauncherShared
{
	slock_t		mutex;
	Latch	   *latch;			/* the launcher's, NULL when none runs */
	bool		probe_all;		/* a CREATE EXTENSION mq committed */
	int			nslots;
	MqDbSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} MqLauncherShared;

/* the launcher's own view of one database */
typedef struct MqLocalDb
{
	Oid			dboid;
	char		name[NAMEDATALEN];
	BackgroundWorkerHandle *handle;	/* NULL: no worker started */
	TimestampTz start_after;	/* next probe or retry */
	bool		warned;			/* told that no worker slot was free */
	bool		listed;			/* seen in this listing */
} MqLocalDb;

PGDLLEXPORT void mq_launcher_main(Datum arg);

char	   *mq_database = NULL;
int			mq_launcher_interval = 10000;

static MqLauncherShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static MqLocalDb *dbs = NULL;
static int	ndbs = 0;
static int	dbs_cap = 0;

static int
launcher_nslots(void)
{
	return max_worker_processes + 8;
}

static Size
launcher_shmem_size(void)
{
	return add_size(offsetof(MqLauncherShared, slots),
					mul_size(launcher_nslots(), sizeof(MqDbSlot)));
}

static void
launcher_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(launcher_shmem_size());
}

static void
launcher_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("mq launcher", launcher_shmem_size(), &found);
	if (!found)
	{
		memset(shared, 0, launcher_shmem_size());
		SpinLockInit(&shared->mutex);
		shared->nslots = launcher_nslots();
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The slot of a database, allocating one if asked; mutex held. */
static MqDbSlot *
slot_for(Oid dboid, bool create)
{
	MqDbSlot   *free_slot = NULL;

	for (int i = 0; i < shared->nslots; i++)
	{
		if (shared->slots[i].dboid == dboid)
			return &shared->slots[i];
		if (free_slot == NULL && shared->slots[i].dboid == InvalidOid)
			free_slot = &shared->slots[i];
	}
	if (create && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->dboid = dboid;
	}
	return create ? free_slot : NULL;
}

/*
 * Pause a database's worker (launcher_hook.c): no new one before until
 * (0: resume), and the pid of the running one (0 if none) to terminate.
 */
pid_t
mq_launcher_pause(Oid dboid, TimestampTz until)
{
	MqDbSlot   *slot;
	pid_t		pid = 0;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(dboid, until != 0);
	if (slot != NULL)
	{
		slot->paused_until = until;
		pid = slot->pid;
		/* resumed with no worker: free the slot the pause may have taken */
		if (until == 0 && pid == 0)
			slot->dboid = InvalidOid;
	}
	SpinLockRelease(&shared->mutex);
	return pid;
}

/* Set the launcher's latch; with probe_all, probe every database now. */
void
mq_launcher_wake(bool probe_all)
{
	Latch	   *latch;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	shared->probe_all |= probe_all;
	latch = shared->latch;
	SpinLockRelease(&shared->mutex);
	if (latch != NULL)
		SetLatch(latch);
}

static void
worker_detach(int code, Datum arg)
{
	MqDbSlot   *slot;

	SpinLockAcquire(&shared->mutex);
	slot = slot_for(MyDatabaseId, false);
	if (slot != NULL && slot->pid == MyProcPid)
		slot->pid = 0;
	SpinLockRelease(&shared->mutex);
	mq_launcher_wake(false);
}

/*
 * A maintenance worker says it runs (absent = false) or that the extension
 * is not installed and it is leaving (absent = true).  Returns false when
 * the database is paused: the worker must leave.  Setting the pid and
 * reading the pause under one lock means that a pausing statement either
 * sees the pid (and terminates the worker) or the worker sees the pause.
 */
bool
mq_launcher_worker_state(bool absent)
{
	MqDbSlot   *slot;
	bool		paused = false;

	if (shared == NULL)
		return true;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(MyDatabaseId, true);
	if (slot != NULL)
	{
		paused = GetCurrentTimestamp() < slot->paused_until;
		slot->absent = absent;
		slot->pid = (absent || paused) ? 0 : MyProcPid;
	}
	SpinLockRelease(&shared->mutex);
	if (!absent && !paused)
		before_shmem_exit(worker_detach, 0);
	return !paused;
}

/*
 * A maintenance worker found its database read-only (or writable): true
 * when that is news, which the worker logs.
 */
bool
mq_launcher_note_read_only(bool read_only)
{
	MqDbSlot   *slot;
	bool		news = false;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(MyDatabaseId, false);
	if (slot != NULL && slot->read_only != read_only)
	{
		slot->read_only = read_only;
		news = true;
	}
	SpinLockRelease(&shared->mutex);
	return news;
}

/* A maintenance worker leaves to be started again at once (its exit wakes us). */
void
mq_launcher_restart_me(void)
{
	MqDbSlot   *slot;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(MyDatabaseId, false);
	if (slot != NULL)
		slot->again = true;
	SpinLockRelease(&shared->mutex);
}

static MqLocalDb *
local_db(Oid dboid, const char *name)
{
	for (int i = 0; i < ndbs; i++)
		if (dbs[i].dboid == dboid)
		{
			/* renamed since: new workers show the new name */
			strlcpy(dbs[i].name, name, NAMEDATALEN);
			return &dbs[i];
		}
	if (ndbs == dbs_cap)
	{
		dbs_cap = Max(16, dbs_cap * 2);
		dbs = dbs ? repalloc(dbs, dbs_cap * sizeof(MqLocalDb))
			: palloc(dbs_cap * sizeof(MqLocalDb));
	}
	memset(&dbs[ndbs], 0, sizeof(MqLocalDb));
	dbs[ndbs].dboid = dboid;
	strlcpy(dbs[ndbs].name, name, NAMEDATALEN);
	return &dbs[ndbs++];
}

/*
 * mq.database named no database a worker may run in (renamed, dropped,
 * mistyped): nothing is maintained, which a WARNING says once, and a LOG
 * line again when it is found.
 */
static void
note_named_database(bool found)
{
	static bool missing = false;

	if (mq_database[0] == '\0' || found != missing)
		return;
	missing = !found;
	if (missing)
		ereport(WARNING,
				(errmsg("mq launcher: mq.database names \"%s\", which is no database that accepts connections: no database is maintained", mq_database),
				 errhint("Set mq.database to the database that holds mq (or empty, for every database) and reload.")));
	else
		ereport(LOG, (errmsg("mq launcher: database \"%s\" (mq.database) is there again", mq_database)));
}

/* Mark listed every database a worker may run in (pg_database). */
static void
list_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	bool		named = false;

	for (int i = 0; i < ndbs; i++)
		dbs[i].listed = false;
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate || database_is_invalid_form(db))
			continue;
		if (mq_database[0] != '\0' && strcmp(NameStr(db->datname), mq_database) != 0)
			continue;
		named = true;
		old = MemoryContextSwitchTo(TopMemoryContext);
		local_db(db->oid, NameStr(db->datname))->listed = true;
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	note_named_database(named);
}

static bool
start_worker(MqLocalDb *db)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "mq");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "mq_maintenance_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "mq maintenance %s", db->name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "mq maintenance");
	worker.bgw_main_arg = ObjectIdGetDatum(db->dboid);
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, &db->handle);
}

/* Start a worker for a database that needs one and may have one. */
static void
ensure_worker(MqLocalDb *db, TimestampTz now)
{
	MqDbSlot   *slot;
	bool		paused;

	if (db->handle != NULL || now < db->start_after)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(db->dboid, true);
	/* paused, or a worker that an earlier launcher started still runs */
	paused = slot != NULL && (now < slot->paused_until || slot->pid != 0);
	if (slot != NULL && !paused)
		slot->absent = false;
	SpinLockRelease(&shared->mutex);
	if (paused)
		return;
	if (slot == NULL || !start_worker(db))
	{
		db->handle = NULL;
		if (!db->warned)
			ereport(WARNING,
					(errcode(ERRCODE_MQ_NO_WORKER_SLOT),
					 errmsg("mq launcher: no background worker slot free for the maintenance of database \"%s\"",
							db->name),
					 errdetail("max_worker_processes is %d; mq needs one for its launcher and one per database where the extension is installed, besides other extensions' and parallel queries' workers.",
							   max_worker_processes),
					 errhint("Raise max_worker_processes (a restart), or call mq.run_maintenance() in that database from a scheduler.")));
		db->warned = true;
		db->start_after = TimestampTzPlusMilliseconds(now, mq_launcher_interval);
		return;
	}
	if (db->warned)
		ereport(LOG, (errmsg("mq launcher: maintenance of database \"%s\" started", db->name)));
	db->warned = false;
}

/* A worker that stopped: when may the next one start? */
static void
reap_worker(MqLocalDb *db, TimestampTz now)
{
	pid_t		pid;
	MqDbSlot   *slot;
	bool		absent = false;
	bool		again = false;

	if (db->handle == NULL ||
		GetBackgroundWorkerPid(db->handle, &pid) != BGWH_STOPPED)
		return;
	pfree(db->handle);
	db->handle = NULL;
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(db->dboid, false);
	if (slot != NULL)
	{
		absent = slot->absent;
		again = slot->again;
		slot->again = false;
	}
	SpinLockRelease(&shared->mutex);
	if (again)
		db->start_after = 0;
	else
		db->start_after = TimestampTzPlusMilliseconds(now, absent ? MQ_PROBE_AGAIN_MS : MQ_RETRY_MS);
}

/* Forget a database no longer listed: stop its worker, free its slot. */
static void
forget_db(int i)
{
	MqDbSlot   *slot;

	if (dbs[i].handle != NULL)
	{
		TerminateBackgroundWorker(dbs[i].handle);
		pfree(dbs[i].handle);
	}
	SpinLockAcquire(&shared->mutex);
	slot = slot_for(dbs[i].dboid, false);
	if (slot != NULL)
		slot->dboid = InvalidOid;
	SpinLockRelease(&shared->mutex);
	dbs[i] = dbs[--ndbs];
}

static void
launcher_pass(void)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		probe_all;

	SpinLockAcquire(&shared->mutex);
	probe_all = shared->probe_all;
	shared->probe_all = false;
	SpinLockRelease(&shared->mutex);

	list_databases();
	for (int i = ndbs - 1; i >= 0; i--)
		if (!dbs[i].listed)
			forget_db(i);
	for (int i = 0; i < ndbs; i++)
	{
		reap_worker(&dbs[i], now);
		if (probe_all)
			dbs[i].start_after = 0;
		ensure_worker(&dbs[i], now);
	}
}

void
mq_launcher_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	SpinLockAcquire(&shared->mutex);
	shared->latch = MyLatch;
	SpinLockRelease(&shared->mutex);
	ereport(LOG, (errmsg("mq launcher started: maintaining %s",
						 mq_database[0] ? psprintf("database \"%s\" only (mq.database)", mq_database)
						 : "every database where mq is installed")));
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		launcher_pass();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 mq_launcher_interval, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

void
mq_launcher_init(void)
{
	BackgroundWorker worker;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = launcher_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = launcher_shmem_startup;

	/*
	 * pg_upgrade starts both servers in binary upgrade mode (-b) to read the
	 * old schema and restore it into the new one.  A maintenance pass there
	 * would change what it copies: retention dropping a segment after the
	 * schema dump leaves pg_upgrade a table without its file, and in the new
	 * server a pass runs against a half-restored catalog.  PostgreSQL keeps
	 * autovacuum off then for the same reason.
	 */
	if (IsBinaryUpgrade)
	{
		ereport(LOG,
				(errmsg("mq launcher not started: the server runs in binary upgrade mode")));
		return;
	}

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "mq");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "mq_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "mq launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "mq launcher");
	RegisterBackgroundWorker(&worker);
}
