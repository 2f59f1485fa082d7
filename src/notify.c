/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  Waking waiters when a topic changes: the primitive behind long polling
 *	  (and, for the broker, waits on the high watermark).
 *
 * Shared memory holds a fixed array of slots, each a change counter and a
 * condition variable.  A topic maps to a slot by hashing (database, topic
 * id), and each of its partitions to another by hashing (database, topic
 * id, partition), so unrelated topics may share a slot and wake each other
 * needlessly, never miss a wake-up.  A change names its partition: a
 * producer remembers the partitions it appended to and, at commit (after
 * the commit is visible to new snapshots), bumps the counters of each
 * one's topic slot and partition slot and broadcasts on both.  Waiters on
 * one partition (a follower's long poll, an acks=all wait) use its slot,
 * so a change of another partition does not wake them: with a slot per
 * topic, every event of a 64-partition topic woke all 128 of its
 * followers' long polls.  Waiters on a whole topic (consumers' long polls,
 * topic_watch.c) use the topic's slot, which every change of the topic
 * moves.  A waiter reads the counter before looking for records, and
 * sleeps only while the counter is unchanged, so a commit between its look
 * and its sleep is not lost.
 *
 * Shared memory needs shared_preload_libraries; without it the waiter
 * falls back to re-checking every 10 ms.
 *
 * Flushing what became visible (the high watermark's half of acks=all,
 * docs/replication.md "The acknowledgement path").  A leader commits an
 * acks=all write without waiting for its own WAL flush, so its records are
 * visible (to followers' fetches) before they are durable on it.  Each
 * slot therefore also keeps the end of the latest commit record of a
 * transaction that touched it (commit_lsn) and how many such transactions
 * are between their pre-commit and their commit callback (committing).  A
 * transaction counts itself in at XACT_EVENT_PRE_COMMIT (before its commit
 * record, so before it is visible) and out at XACT_EVENT_COMMIT (after
 * raising commit_lsn to its commit's end) or at abort.  Hence after a
 * snapshot is taken, committing == 0 means every commit that snapshot sees
 * has raised commit_lsn already, and flushing up to commit_lsn makes all of
 * them durable (mq_notify_flush_visible); while some are in between, the
 * current insert position is the bound.  Counted per slot, so topics
 * sharing one only flush a little more.
 *
 * Watchers (topic_watch.c, for mq-kafka's parked fetches) wait on many
 * topics at once, which a condition variable cannot do: a watcher puts its
 * proc number in one of MQ_WATCHERS entries, and every change then also
 * sets the latches of the registered watchers, which look at their topics'
 * counters again.  A changer bumps a counter and then reads the watcher
 * count; a watcher counts itself in and then reads the counters (both
 * through full barriers), so one of the two sees the other.  A backend
 * that exits clears its entry (on_shmem_exit); a stale latch set is only a
 * spurious wake-up.  With no watcher registered, a change costs one more
 * atomic read.
 *
 * A hot standby has no producers: its records arrive by WAL replay, which
 * runs no commit callbacks.  There the counter is the replay position
 * (GetXLogReplayRecPtr), and a waiter looks at it every
 * MQ_STANDBY_POLL_MS, reading again as soon as anything was replayed; the
 * last look is at the deadline itself, so a record replayed before the
 * deadline is always read.  A promotion ends recovery, and the counter
 * read before it differs from the slot's, so the waiter reads again and
 * then waits on the slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/htup_details.h"
#include "access/xlogrecovery.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "mq.h"

#define MQ_NOTIFY_SLOTS 1024
#define MQ_STANDBY_POLL_MS 10
#define MQ_WATCHERS 64

typedef struct MqNotifySlot
{
	pg_atomic_uint64 changes;
	pg_atomic_uint64 commit_lsn;	/* end of the latest commit touching it */
	pg_atomic_uint32 committing;	/* between pre-commit and commit */
	ConditionVariable cv;
} MqNotifySlot;

/* backends waiting on many topics (topic_watch.c): proc number + 1, 0 free */
typedef struct MqWatchers
{
	pg_atomic_uint32 count;
	pg_atomic_uint32 procno[MQ_WATCHERS];
} MqWatchers;

static MqNotifySlot *slots = NULL;
static MqWatchers *watchers = NULL;
static int	my_watch = -1;		/* this backend's entry, -1: none */
static bool watch_exit_set = false;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* a partition this transaction changed, to be announced at commit */
typedef struct MqTouched
{
	int32		topic_id;
	int32		partition;
} MqTouched;

/* of MqTouched *, in the transaction's memory */
static List *touched = NIL;

/* the slots this transaction counted itself in at pre-commit */
static List *counted = NIL;

static Size
notify_shmem_size(void)
{
	return add_size(mul_size(MQ_NOTIFY_SLOTS, sizeof(MqNotifySlot)), sizeof(MqWatchers));
}

static void
notify_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(notify_shmem_size());
}

static void
notify_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("mq notify slots", notify_shmem_size(), &found);
	watchers = (MqWatchers *) (slots + MQ_NOTIFY_SLOTS);
	if (!found)
	{
		pg_atomic_init_u32(&watchers->count, 0);
		for (int i = 0; i < MQ_WATCHERS; i++)
			pg_atomic_init_u32(&watchers->procno[i], 0);
		for (int i = 0; i < MQ_NOTIFY_SLOTS; i++)
		{
			pg_atomic_init_u64(&slots[i].changes, 0);
			pg_atomic_init_u64(&slots[i].commit_lsn, 0);
			pg_atomic_init_u32(&slots[i].committing, 0);
			ConditionVariableInit(&slots[i].cv);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

static MqNotifySlot *
slot_for(int32 topic_id)
{
	uint32		h = hash_combine(murmurhash32(MyDatabaseId), murmurhash32((uint32) topic_id));

	return &slots[h % MQ_NOTIFY_SLOTS];
}

static MqNotifySlot *
part_slot_for(int32 topic_id, int32 partition)
{
	uint32		h = hash_combine(murmurhash32(MyDatabaseId), murmurhash32((uint32) topic_id));

	h = hash_combine(h, murmurhash32((uint32) partition + 1));
	return &slots[h % MQ_NOTIFY_SLOTS];
}

/* Set the latch of every registered watcher (after a counter moved). */
static void
wake_watchers(void)
{
	if (pg_atomic_read_u32(&watchers->count) == 0)
		return;
	for (int i = 0; i < MQ_WATCHERS; i++)
	{
		uint32		procno = pg_atomic_read_u32(&watchers->procno[i]);

		if (procno != 0)
			SetLatch(&GetPGProcByNumber(procno - 1)->procLatch);
	}
}

static void
bump(MqNotifySlot *slot)
{
	pg_atomic_fetch_add_u64(&slot->changes, 1);
	ConditionVariableBroadcast(&slot->cv);
}

/* Wake the partition's waiters and its topic's (not the watchers). */
static void
notify_partition(int32 topic_id, int32 partition)
{
	MqNotifySlot *topic_slot = slot_for(topic_id);
	MqNotifySlot *part_slot = part_slot_for(topic_id, partition);

	bump(topic_slot);
	if (part_slot != topic_slot)
		bump(part_slot);
}

/*
 * Wake every waiter of this server.  For commits whose topics this
 * backend does not know: a prepared transaction committed by
 * mq.txn_finish (twophase.c) announces nothing itself, since its commit
 * callbacks ran at PREPARE (with the list dropped) and COMMIT PREPARED
 * runs none.
 */
void
mq_notify_all(void)
{
	if (slots == NULL)
		return;
	for (int i = 0; i < MQ_NOTIFY_SLOTS; i++)
	{
		pg_atomic_fetch_add_u64(&slots[i].changes, 1);
		ConditionVariableBroadcast(&slots[i].cv);
	}
	wake_watchers();
}

/* whether counters move without polling (false: no shared memory) */
bool
mq_notify_watchable(void)
{
	return slots != NULL && !RecoveryInProgress();
}

static void
watch_exit(int code, Datum arg)
{
	mq_notify_unwatch();
}

/*
 * Have every topic's change set this backend's latch, until
 * mq_notify_unwatch.  False when all entries are taken (the caller then
 * polls).
 */
bool
mq_notify_watch(void)
{
	if (!mq_notify_watchable())
		return false;
	if (my_watch >= 0)
		return true;
	if (!watch_exit_set)
	{
		on_shmem_exit(watch_exit, 0);
		watch_exit_set = true;
	}
	for (int i = 0; i < MQ_WATCHERS; i++)
	{
		uint32		expected = 0;

		if (pg_atomic_compare_exchange_u32(&watchers->procno[i], &expected,
										   (uint32) MyProc->pgprocno + 1))
		{
			my_watch = i;
			pg_atomic_fetch_add_u32(&watchers->count, 1);
			return true;
		}
	}
	return false;
}

void
mq_notify_unwatch(void)
{
	if (my_watch < 0)
		return;
	pg_atomic_write_u32(&watchers->procno[my_watch], 0);
	pg_atomic_fetch_sub_u32(&watchers->count, 1);
	my_watch = -1;
}

/* Wake the partition's (and its topic's) waiters when this transaction commits. */
void
mq_notify_at_commit(int32 topic_id, int32 partition)
{
	ListCell   *lc;
	MqTouched  *t;
	MemoryContext old;

	if (slots == NULL)
		return;
	foreach(lc, touched)
	{
		t = lfirst(lc);
		if (t->topic_id == topic_id && t->partition == partition)
			return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	t = palloc(sizeof(MqTouched));
	t->topic_id = topic_id;
	t->partition = partition;
	touched = lappend(touched, t);
	MemoryContextSwitchTo(old);
}

/* Pre-commit: count this transaction in on its topics' slots (before it is visible). */
static void
count_in(void)
{
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, touched)
	{
		MqNotifySlot *slot = slot_for(((MqTouched *) lfirst(lc))->topic_id);

		pg_atomic_fetch_add_u32(&slot->committing, 1);
		counted = lappend(counted, slot);
	}
	MemoryContextSwitchTo(old);
}

/* Raise the slot's commit_lsn to lsn, unless it is already past it. */
static void
raise_commit_lsn(MqNotifySlot *slot, uint64 lsn)
{
	uint64		cur = pg_atomic_read_u64(&slot->commit_lsn);

	while (cur < lsn && !pg_atomic_compare_exchange_u64(&slot->commit_lsn, &cur, lsn))
		;
}

/* Commit or abort: count out, after recording the commit's end (if any). */
static void
count_out(XLogRecPtr commit_end)
{
	ListCell   *lc;

	foreach(lc, counted)
	{
		MqNotifySlot *slot = lfirst(lc);

		if (commit_end != InvalidXLogRecPtr)
			raise_commit_lsn(slot, (uint64) commit_end);
		pg_write_barrier();
		pg_atomic_fetch_sub_u32(&slot->committing, 1);
	}
	list_free(counted);
	counted = NIL;
}

static void
notify_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			count_in();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			count_out(XactLastCommitEnd);
			foreach(lc, touched)
				notify_partition(((MqTouched *) lfirst(lc))->topic_id,
								 ((MqTouched *) lfirst(lc))->partition);
			if (touched != NIL)
				wake_watchers();
			touched = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			count_out(InvalidXLogRecPtr);
			touched = NIL;		/* the list lived in the transaction's memory */
			break;
		default:
			break;
	}
}

/*
 * The end of the WAL inserted so far, as a position XLogFlush can reach.
 * GetXLogInsertRecPtr gives the next record's start: at a page's start
 * that is past the page header, which nothing has written yet, so a
 * flush up to it fails ("xlog flush request ... is not satisfied ---
 * flushed only to" the page's start; seen in test/t/121).  PostgreSQL 17
 * has GetXLogInsertEndRecPtr for this.
 */
static XLogRecPtr
insert_end(void)
{
	XLogRecPtr	p = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(p, wal_segment_size) == SizeOfXLogLongPHD)
		return p - SizeOfXLogLongPHD;
	if (p % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		return p - SizeOfXLogShortPHD;
	return p;
}

/*
 * Make every commit that touched the topic and that a snapshot taken
 * before this call sees durable (flushed WAL): up to the slot's commit_lsn
 * when no such commit is in between its pre-commit and its callback, else
 * up to the current insert position.  Returns at once when that is already
 * flushed; on a standby nothing is written, so there is nothing to flush.
 */
void
mq_notify_flush_visible(int32 topic_id)
{
	XLogRecPtr	upto;

	if (RecoveryInProgress())
		return;
	pg_memory_barrier();
	if (slots == NULL || pg_atomic_read_u32(&slot_for(topic_id)->committing) > 0)
		upto = insert_end();
	else
	{
		pg_read_barrier();
		upto = (XLogRecPtr) pg_atomic_read_u64(&slot_for(topic_id)->commit_lsn);
	}
	XLogFlush(upto);
}

static uint64
slot_counter(MqNotifySlot *slot)
{
	if (RecoveryInProgress())
		return (uint64) GetXLogReplayRecPtr(NULL);
	return slots ? pg_atomic_read_u64(&slot->changes) : 0;
}

/* The topic's change counter: read it before looking, pass it to the wait. */
uint64
mq_notify_counter(int32 topic_id)
{
	return slots ? slot_counter(slot_for(topic_id)) : slot_counter(NULL);
}

/* The same for one partition: changes of the others do not move it. */
uint64
mq_notify_part_counter(int32 topic_id, int32 partition)
{
	return slots ? slot_counter(part_slot_for(topic_id, partition)) : slot_counter(NULL);
}

/*
 * Sleep on this backend's latch up to ms (at most what is left before the
 * deadline); false at it.  Also replica_wait.c's, whose watcher latch a
 * change sets.
 */
bool
mq_notify_nap(TimestampTz deadline, long ms)
{
	long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

	if (left <= 0)
		return false;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 Min(left, ms), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return true;
}

/*
 * On a standby: true as soon as WAL past seen was replayed, false if
 * nothing was by the deadline (looking once more at the deadline).
 */
static bool
replay_wait(uint64 seen, TimestampTz deadline)
{
	for (;;)
	{
		if (!RecoveryInProgress() ||
			(uint64) GetXLogReplayRecPtr(NULL) != seen)
			return true;
		if (!mq_notify_nap(deadline, MQ_STANDBY_POLL_MS))
			return false;
	}
}

/*
 * Sleep until the slot's counter moves past seen or the deadline passes.
 * Returns false at the deadline.
 */
static bool
slot_wait(MqNotifySlot *slot, uint64 seen, TimestampTz deadline)
{
	bool		changed = false;

	if (RecoveryInProgress())
		return replay_wait(seen, deadline);
	if (slots == NULL)
		return mq_notify_nap(deadline, 10);	/* no shared memory: re-check */

	ConditionVariablePrepareToSleep(&slot->cv);
	for (;;)
	{
		long		left;

		if (pg_atomic_read_u64(&slot->changes) != seen)
		{
			changed = true;
			break;
		}
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		(void) ConditionVariableTimedSleep(&slot->cv, left, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return changed;
}

/* Sleep until the topic changes (any partition) or the deadline passes. */
bool
mq_notify_wait(int32 topic_id, uint64 seen, TimestampTz deadline)
{
	return slot_wait(slots ? slot_for(topic_id) : NULL, seen, deadline);
}

/* Sleep until the partition changes or the deadline passes. */
bool
mq_notify_part_wait(int32 topic_id, int32 partition, uint64 seen, TimestampTz deadline)
{
	return slot_wait(slots ? part_slot_for(topic_id, partition) : NULL, seen, deadline);
}

PG_FUNCTION_INFO_V1(mq_notify_state);

/*
 * mq._notify_state(topic_id, partition): the slot a partition's waiters
 * sleep on and its change counter (partition NULL: the topic's), for
 * tests; NULL without shared memory.
 */
Datum
mq_notify_state(PG_FUNCTION_ARGS)
{
	MqNotifySlot *slot;
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (slots == NULL || PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mq: _notify_state must return a record");
	slot = PG_ARGISNULL(1) ? slot_for(PG_GETARG_INT32(0)) :
		part_slot_for(PG_GETARG_INT32(0), PG_GETARG_INT32(1));
	values[0] = Int32GetDatum((int32) (slot - slots));
	values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->changes));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

void
mq_notify_init(void)
{
	RegisterXactCallback(notify_xact_callback, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = notify_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = notify_shmem_startup;
}
