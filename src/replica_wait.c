/*-------------------------------------------------------------------------
 *
 * replica_wait.c
 *	  The leader side of a follower's long poll: waiting until a partition
 *	  has news for a follower (mq._replica_wait_records, one partition,
 *	  for mq.replica_fetch), or any of many partitions has
 *	  (mq._replica_wait_any, for mq.replica_fetch_many: one fetch per
 *	  leader and follower, src/sql/60_replica_fetch.sql).  News is what
 *	  the follower should hear of: records beyond its fetch offset, a
 *	  committed offsets' version other than the one it was looked at with,
 *	  or the partition gone.  A new high watermark is not news: the
 *	  follower hears of it with its next records, or when its long poll
 *	  runs out, as Kafka's followers do.  Waking for it cost a fetch and
 *	  an append per follower and acks=all record, all but one of them on
 *	  the next record's path (docs/design.md, "acks=all: where a record's
 *	  time goes").
 *
 * One partition sleeps on its notify.c slot's condition variable.  Many
 * partitions cannot (a condition variable is one slot's): the backend
 * registers as a notify.c watcher, whose latch every commit that changes
 * a partition sets, and looks again at the partitions whose change
 * counters moved; with every watcher entry taken (or on a standby) it
 * looks every WAIT_POLL_MS.  Each counter is read before its partition is
 * looked at, so a change between the look and the sleep moves the counter
 * and is seen at the next look.  The caller's own looks count as the
 * first: it passes the counters it read before them, and only partitions
 * whose counters moved since are looked at again (a wait of 256 idle
 * partitions began with 256 looks, 15 ms, before).
 *
 * Locking: none held while waiting; each look reads with the latest
 * snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/timestamp.h"

#include "mq.h"

#define WAIT_POLL_MS 10

PG_FUNCTION_INFO_V1(mq_replica_wait_records);
PG_FUNCTION_INFO_V1(mq_replica_wait_any);

/* Does the partition have news for a follower at offset? */
static bool
has_news(int32 topic_id, int32 partition, int64 offset, int64 known_offsets)
{
	MqReplicaState st;
	int64		leo = mq_replica_log_end_fresh(topic_id, partition);

	/* a partition whose topic was dropped since the caller looked is news */
	if (leo < 0 || leo > offset)
		return true;
	mq_replica_read_state(topic_id, partition, &st);
	return !st.found || mq_offsets_version(topic_id, partition) != known_offsets;
}

/*
 * mq._replica_wait_records(topic_id, partition, fetch_offset, wait_ms,
 * known_offsets_version): true as soon as the partition has news, false
 * when wait_ms passed first.  0.1.0's install script declares it with the
 * high watermark the caller knew before the offsets' version: that
 * argument is passed over.
 */
Datum
mq_replica_wait_records(PG_FUNCTION_ARGS)
{
	int32		topic_id = PG_GETARG_INT32(0);
	int32		partition = PG_GETARG_INT32(1);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   Max(PG_GETARG_INT32(3), 0));
	int64		known_offsets = PG_GETARG_INT64(PG_NARGS() == 6 ? 5 : 4);

	for (;;)
	{
		uint64		seen = mq_notify_part_counter(topic_id, partition);

		if (has_news(topic_id, partition, PG_GETARG_INT64(2), known_offsets))
			PG_RETURN_BOOL(true);
		if (!mq_notify_part_wait(topic_id, partition, seen, deadline) &&
			GetCurrentTimestamp() >= deadline)
			PG_RETURN_BOOL(false);
		CHECK_FOR_INTERRUPTS();
	}
}

/* the n elements of a one-dimensional array without nulls, as Datums */
static Datum *
array_elems(ArrayType *a, Oid type, int *n)
{
	bool	   *nulls;
	Datum	   *elems = mq_array_elems(a, type, &nulls, n);

	for (int i = 0; i < *n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("the arrays of _replica_wait_any must not hold nulls")));
	return elems;
}

/*
 * Look at every partition (all), or at those whose counters moved since
 * seen; true when one has news.
 */
static bool
any_news(int n, Datum *ids, Datum *parts, Datum *offsets, Datum *ovs, uint64 *seen, bool all)
{
	for (int i = 0; i < n; i++)
	{
		int32		id = DatumGetInt32(ids[i]);
		int32		part = DatumGetInt32(parts[i]);
		uint64		c = mq_notify_part_counter(id, part);

		if (c == seen[i] && !all)
			continue;
		seen[i] = c;
		if (has_news(id, part, DatumGetInt64(offsets[i]), DatumGetInt64(ovs[i])))
			return true;
	}
	return false;
}

/*
 * The counters the caller read before its looks, as the first pass's seen
 * ones; a null (no counter read) never matches, so its partition is
 * looked at.
 */
static uint64 *
seen_counters(ArrayType *a, int n)
{
	Datum	   *d;
	bool	   *nulls;
	int			m;
	uint64	   *seen = palloc0(sizeof(uint64) * Max(n, 1));

	deconstruct_array(a, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &d, &nulls, &m);
	if (m != n)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("the arrays of _replica_wait_any must have one length")));
	for (int i = 0; i < n; i++)
		seen[i] = nulls[i] ? PG_UINT64_MAX : (uint64) DatumGetInt64(d[i]);
	return seen;
}

/*
 * mq._replica_wait_any(topic_ids, partitions, fetch_offsets, wait_ms,
 * known_offsets_versions, counters): mq._replica_wait_records over many
 * partitions, arrays of one length: true as soon as any has news, false
 * when wait_ms passed first.  counters: each partition's change counter
 * as read before the caller looked at it.
 */
Datum
mq_replica_wait_any(PG_FUNCTION_ARGS)
{
	int			n,
				n2,
				n3,
				n4;
	Datum	   *ids = array_elems(PG_GETARG_ARRAYTYPE_P(0), INT4OID, &n);
	Datum	   *parts = array_elems(PG_GETARG_ARRAYTYPE_P(1), INT4OID, &n2);
	Datum	   *offsets = array_elems(PG_GETARG_ARRAYTYPE_P(2), INT8OID, &n3);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   Max(PG_GETARG_INT32(3), 0));
	Datum	   *ovs = array_elems(PG_GETARG_ARRAYTYPE_P(4), INT8OID, &n4);
	uint64	   *seen = seen_counters(PG_GETARG_ARRAYTYPE_P(5), n);
	bool		watching;
	volatile bool news = false;

	if (n2 != n || n3 != n || n4 != n)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("the arrays of _replica_wait_any must have one length")));
	watching = mq_notify_watch();
	PG_TRY();
	{
		/* polling (not watching), counters may not move: look at all */
		do
			news = any_news(n, ids, parts, offsets, ovs, seen, !watching);
		while (!news && mq_notify_nap(deadline, watching ? LONG_MAX : WAIT_POLL_MS));
	}
	PG_FINALLY();
	{
		if (watching)
			mq_notify_unwatch();
	}
	PG_END_TRY();
	PG_RETURN_BOOL(news);
}
