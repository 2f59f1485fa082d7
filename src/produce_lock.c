/*-------------------------------------------------------------------------
 *
 * produce_lock.c
 *	  The partition's produce lock, and when it is released: the lock that
 *	  makes offsets gapless (log.c reads the log end under it) and the
 *	  group commit of the producers of one partition.
 *
 * The lock is an advisory lock tag of mq's own (MQ_LOCK_PRODUCE) taken in
 * ExclusiveLock mode in the transaction's resource owner, and released in
 * the commit callback below once the commit is visible, or with the
 * transaction's other locks at abort.  The list of held tags lives in
 * TopTransactionContext; the last time this backend's locks had waiters is
 * remembered across transactions.  A partition's locks of other classes
 * (mq_lock_partition_class: a follower's progress, compaction) use the
 * same tag layout and are held, as any lock, until the transaction ends.
 *
 * Early release and invalidations.  A transaction that changed the
 * catalog under a produce lock (created a segment on the produce path,
 * maintenance's segment ahead, a roll by segment.ms) keeps its produce
 * locks until the end of its commit, as PostgreSQL keeps every lock: the
 * invalidation messages of a commit are sent after the commit callbacks
 * run and before the transaction's locks go, so a producer that got the
 * lock in the callback would still read the old segment list (topic.c)
 * and take the log end from it -- offset 400 written anew into the new
 * segment when another producer just filled it, a duplicate key error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "replication/syncrep.h"
#include "storage/lock.h"
#include "storage/sinval.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_lock_partition_sql);
PG_FUNCTION_INFO_V1(mq_try_lock_partition_sql);

/*
 * Produce locks held by this transaction, and whether its commit flush was
 * deferred until after they are released (see produce_xact_callback).
 */
static List *held_locks = NIL;	/* of LOCKTAG *, in TopTransactionContext */
/* start of the last transaction of this backend whose locks had waiters */
static TimestampTz last_contended = DT_NOBEGIN;
static bool flush_deferred = false;
static int	saved_synchronous_commit;

/* Take the lock (without waiting: false when another holds it). */
static bool
acquire_partition(int32 topic_id, int32 partition, bool wait)
{
	LOCKTAG		tag;
	ResourceOwner owner = CurrentResourceOwner;
	LockAcquireResult res;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) topic_id,
						 (uint32) partition, MQ_LOCK_PRODUCE);
	/* owned by the transaction, not the portal, so that commit can release it */
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		res = LockAcquire(&tag, ExclusiveLock, false, !wait);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = owner;
	}
	PG_END_TRY();
	if (res == LOCKACQUIRE_OK)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		LOCKTAG    *copy = palloc(sizeof(LOCKTAG));

		*copy = tag;
		held_locks = lappend(held_locks, copy);
		MemoryContextSwitchTo(old);
	}
	return res != LOCKACQUIRE_NOT_AVAIL;
}

void
mq_lock_partition(int32 topic_id, int32 partition)
{
	(void) acquire_partition(topic_id, partition, true);
}

/*
 * A partition's lock of class lock_class (MQ_LOCK_*), taken as any lock
 * and held until the transaction ends: the follower's progress lock, the
 * compaction lock, and the produce lock where no early release is wanted.
 */
void
mq_lock_partition_class(int32 topic_id, int32 partition, uint16 lock_class)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) topic_id, (uint32) partition, lock_class);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Group commit for producers of one partition.  A producer holds the
 * partition's lock until its commit, so with a synchronous commit each
 * producer's WAL flush would happen inside the lock and producers of one
 * partition could never share a flush.  With mq.release_before_flush (the
 * default) a transaction that produced commits asynchronously: its commit
 * record is written and it becomes visible, then, in the commit callback,
 * it releases its produce locks and only then waits for the WAL flush up to
 * its commit record, before the client hears of the commit.  The next
 * producer's commit record comes after this one in the WAL, so a crash can
 * never keep a later producer's records and lose an earlier one's, and
 * offsets still become visible in order.  The cost: other sessions can see
 * the records for the duration of the flush before they are durable, as
 * Kafka consumers see records before they are fsynced.
 *
 * Only a contended partition gains from it, so only a contended partition
 * pays: without a waiting producer the early release saves nothing, while
 * the asynchronous commit costs (the WAL writer is woken for full pages and
 * takes WALWriteLock between the producers' flushes; the clog is updated
 * at once, by all producers together).  Four producers on four partitions
 * made 0.9x of the sends/s they make with a plain synchronous commit.  So a
 * commit defers its flush when another producer waits for one of its locks
 * now, or did at one of this backend's commits within the last second: a
 * producer that arrives just after we looked would otherwise wait for our
 * flush, and one partition's producers would stop sharing flushes.
 */
bool		mq_release_before_flush = true;

/* how long a backend keeps deferring after its locks last had waiters */
#define MQ_CONTENTION_MEMORY_US (1000 * 1000)

static bool
produce_locks_contended(void)
{
	ListCell   *lc;

	if (last_contended != DT_NOBEGIN &&
		GetCurrentTransactionStartTimestamp() - last_contended < MQ_CONTENTION_MEMORY_US)
		return true;
	foreach(lc, held_locks)
	{
		if (LockHasWaiters((LOCKTAG *) lfirst(lc), ExclusiveLock, false))
		{
			last_contended = GetCurrentTransactionStartTimestamp();
			return true;
		}
	}
	return false;
}

/*
 * Does this transaction's commit send invalidation messages (it changed
 * the catalog)?  Then other backends must not get its produce locks before
 * they are sent (see the top of this file).
 */
static bool
xact_sends_invalidations(void)
{
	SharedInvalidationMessage *msgs;
	bool		init_file;

	return xactGetCommittedInvalidationMessages(&msgs, &init_file) > 0;
}

static void
produce_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (held_locks != NIL && mq_release_before_flush &&
				!xact_sends_invalidations() &&
				synchronous_commit >= SYNCHRONOUS_COMMIT_LOCAL_FLUSH &&
				(SyncRepStandbyNames == NULL || SyncRepStandbyNames[0] == '\0') &&
				produce_locks_contended())
			{
				saved_synchronous_commit = synchronous_commit;
				synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
				flush_deferred = true;
			}
			break;
		case XACT_EVENT_COMMIT:
			if (held_locks != NIL && !xact_sends_invalidations())
			{
				/*
				 * The locks belong to the transaction's resource owner
				 * (mq_lock_partition), but a procedure's COMMIT (mq.produce)
				 * runs with its portal's owner current: release them as the
				 * owner that holds them, or LockRelease refuses.
				 */
				ResourceOwner owner = CurrentResourceOwner;

				CurrentResourceOwner = TopTransactionResourceOwner;
				foreach(lc, held_locks)
					LockRelease((LOCKTAG *) lfirst(lc), ExclusiveLock, false);
				CurrentResourceOwner = owner;
			}
			held_locks = NIL;
			if (flush_deferred)
			{
				synchronous_commit = saved_synchronous_commit;
				flush_deferred = false;
				XLogFlush(XactLastCommitEnd);
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			if (flush_deferred)
			{
				synchronous_commit = saved_synchronous_commit;
				flush_deferred = false;
			}
			held_locks = NIL;	/* released with the transaction's locks */
			break;
		default:
			break;
	}
}

void
mq_produce_lock_init(void)
{
	RegisterXactCallback(produce_xact_callback, NULL);
}

/* mq._lock_partition(topic_id, partition): for maintenance that reshapes segments */
Datum
mq_lock_partition_sql(PG_FUNCTION_ARGS)
{
	mq_lock_partition(PG_GETARG_INT32(0), PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}

/*
 * mq._try_lock_partition(topic_id, partition): the same without waiting;
 * false when a producer (or a follower's append) holds it.
 */
Datum
mq_try_lock_partition_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(acquire_partition(PG_GETARG_INT32(0), PG_GETARG_INT32(1), false));
}
