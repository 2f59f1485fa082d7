/*-------------------------------------------------------------------------
 *
 * topic_watch.c
 *	  mq._await_topics: one statement that waits for a change on any of
 *	  many topics, for a daemon that parks many fetches without holding a
 *	  connection for each (mq-kafka's parked fetches, broker/mq-kafka/
 *	  fetch_watch.c).
 *
 * A topic "changes" when its change counter (notify.c) moves: a commit
 * that appended to it, one that moved a replicated partition's high
 * watermark, a leadership or ISR change.  The caller passes the counters
 * it saw last (null: none) and gets the current ones back as soon as one
 * differs, or at max_wait_ms; it then reads the topics that changed again.
 * Topics that do not exist, or that the caller may not read, have a null
 * counter and never wake it.  The wait sleeps on this backend's latch,
 * which notify.c sets at every change while the backend is registered as
 * a watcher; on a standby, without shared memory, or with every watcher
 * entry taken, it looks again every 10 ms instead.  Returns null when the
 * counters cannot move at all (mq not in shared_preload_libraries): the
 * caller then has to re-read on a timer.
 *
 * Locking: none held while waiting; the topic lookups take the catalog's
 * AccessShareLock as every read does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "mq.h"

#define WATCH_POLL_MS 10

PG_FUNCTION_INFO_V1(mq_await_topics);

/* the topic ids the caller may read (-1: not one) of the array's names */
static int32 *
watched_ids(ArrayType *arr, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	int32	   *ids;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	ids = palloc(sizeof(int32) * (*n > 0 ? *n : 1));
	for (int i = 0; i < *n; i++)
	{
		char	   *name = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
		MqTopic    *topic = name ? mq_topic_lookup(name, true) : NULL;

		ids[i] = topic && mq_acl_allowed(GetUserId(), MQ_RES_TOPIC, name, MQ_ACL_READ) ?
			topic->topic_id : -1;
	}
	return ids;
}

/* the counters into cur; true if one of them is not seen's */
static bool
counters_moved(const int32 *ids, int n, const Datum *seen, const bool *seen_null, int64 *cur)
{
	bool		moved = false;

	for (int i = 0; i < n; i++)
	{
		if (ids[i] < 0)
			continue;
		cur[i] = (int64) mq_notify_counter(ids[i]);
		if (seen_null[i] || DatumGetInt64(seen[i]) != cur[i])
			moved = true;
	}
	return moved;
}

/* sleep on the latch until the counters move or the deadline passes */
static void
wait_moved(const int32 *ids, int n, const Datum *seen, const bool *seen_null, int64 *cur,
		   TimestampTz deadline)
{
	bool		latched = mq_notify_watch();

	PG_TRY();
	{
		for (;;)
		{
			long		left;

			ResetLatch(MyLatch);
			if (counters_moved(ids, n, seen, seen_null, cur))
				break;
			left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (left <= 0)
				break;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 latched ? left : Min(left, WATCH_POLL_MS), PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_FINALLY();
	{
		mq_notify_unwatch();
	}
	PG_END_TRY();
}

/* mq._await_topics(topics text[], seen bigint[], max_wait_ms integer) */
Datum
mq_await_topics(PG_FUNCTION_ARGS)
{
	ArrayType  *seen_arr = PG_GETARG_ARRAYTYPE_P(1);
	int32		wait_ms = PG_GETARG_INT32(2);
	int32	   *ids;
	int			n,
				nseen;
	Datum	   *seen,
			   *out;
	bool	   *seen_null,
			   *out_null;
	int64	   *cur;
	int			dims[1],
				lbs[1] = {1};

	ids = watched_ids(PG_GETARG_ARRAYTYPE_P(0), &n);
	if (n == 0 && ArrayGetNItems(ARR_NDIM(seen_arr), ARR_DIMS(seen_arr)) == 0 && wait_ms >= 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	deconstruct_array(seen_arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &seen, &seen_null, &nseen);
	if (nseen != n || wait_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topics and seen must have the same length and max_wait_ms must not be negative")));
	if (!mq_notify_watchable() && !RecoveryInProgress())
		PG_RETURN_NULL();
	cur = palloc0(sizeof(int64) * (n > 0 ? n : 1));
	if (!counters_moved(ids, n, seen, seen_null, cur) && n > 0)
		wait_moved(ids, n, seen, seen_null, cur,
				   TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms));
	out = palloc(sizeof(Datum) * (n > 0 ? n : 1));
	out_null = palloc(sizeof(bool) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++)
	{
		out[i] = Int64GetDatum(cur[i]);
		out_null[i] = ids[i] < 0;
	}
	dims[0] = n;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(out, out_null, 1, dims, lbs, INT8OID, sizeof(int64),
											 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
