/*-------------------------------------------------------------------------
 *
 * topic_watch.c
 *	  mq._await_partitions: one statement that waits until the high
 *	  watermark of any of many partitions moves, for a daemon that parks
 *	  many fetches without holding a connection for each (mq-kafka's
 *	  parked fetches, broker/mq-kafka/fetch_watch.c).
 *
 * The caller passes the high watermarks it saw last (null: none) and gets
 * the current ones back as soon as one differs, or at max_wait_ms.  The
 * high watermark is mq.partitions' (a replicated partition's, else the
 * log end).  Partitions that do not exist, or whose topic the caller may
 * not read, have none and never end the wait.  Between looks the call
 * sleeps on this backend's latch, which notify.c sets at every change of
 * a topic (a commit that appended to it or moved a high watermark) while
 * the backend is registered as a watcher; it reads the high watermarks
 * again only when a change counter of its topics moved, reading the
 * counters before the high watermarks so that a commit after the read
 * moves them afterwards.  On a standby, or with every watcher entry
 * taken, it looks every 10 ms instead.  Returns null when the counters
 * cannot move at all (mq not in shared_preload_libraries): the caller
 * then has to re-read on a timer.
 *
 * Locking: none held while waiting; each read is a query with the latest
 * snapshot, as the extension owner (spi.c), after the caller's READ right
 * on each topic was checked (acl.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "mq.h"

#define WATCH_POLL_MS 10

#define HWM_SQL \
	"SELECT pg_catalog.array_agg(s.high_watermark ORDER BY u.i)" \
	"  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.int4[]))" \
	"       WITH ORDINALITY AS u(t, p, i)" \
	"  LEFT JOIN mq.partitions s ON s.topic OPERATOR(pg_catalog.=) u.t" \
	"   AND s.partition OPERATOR(pg_catalog.=) u.p"

PG_FUNCTION_INFO_V1(mq_await_partitions);

/* what one call watches */
typedef struct Watch
{
	int			n;
	int32	   *ids;			/* topic ids (-1: none, not readable) */
	Datum		names;			/* text[] with NULL for those */
	Datum		parts;			/* int4[] */
	Datum	   *seen;
	bool	   *seen_null;
	uint64	   *counters;		/* at the last read */
	int64	   *hwm;			/* the last read */
	bool	   *hwm_null;
} Watch;

/* the readable topics' ids, and the names array with the others null */
static void
watched_topics(Watch *w, ArrayType *arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	w->n = n;
	w->ids = palloc(sizeof(int32) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++)
	{
		char	   *name = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
		MqTopic    *topic = name ? mq_topic_lookup(name, true) : NULL;

		w->ids[i] = topic && mq_acl_allowed(GetUserId(), MQ_RES_TOPIC, name, MQ_ACL_READ) ?
			topic->topic_id : -1;
		nulls[i] = w->ids[i] < 0;
	}
	w->names = PointerGetDatum(construct_md_array(elems, nulls, 1, &n, (int[]){1}, TEXTOID, -1,
												  false, TYPALIGN_INT));
}

/* read the change counters; true if one moved since the last read */
static bool
counters_moved(Watch *w)
{
	bool		moved = false;

	for (int i = 0; i < w->n; i++)
	{
		uint64		c;

		if (w->ids[i] < 0)
			continue;
		c = mq_notify_counter(w->ids[i]);
		if (c != w->counters[i])
			moved = true;
		w->counters[i] = c;
	}
	return moved;
}

/* read the high watermarks; true if one is not the caller's */
static bool
hwm_moved(Watch *w)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {TEXTARRAYOID, INT4ARRAYOID};
	Datum		args[2] = {w->names, w->parts};
	MqSpiSave	spi;
	bool		isnull,
				moved = false;
	Datum		d;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
		plan = mq_spi_prepare(HWM_SQL, 2, types);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "mq: query failed: %s", HWM_SQL);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &nulls, &n);
		for (int i = 0; i < w->n && i < n; i++)
		{
			w->hwm_null[i] = nulls[i];	/* copied: SPI's memory goes at its end */
			w->hwm[i] = nulls[i] ? 0 : DatumGetInt64(elems[i]);
			if (!w->hwm_null[i] && (w->seen_null[i] || DatumGetInt64(w->seen[i]) != w->hwm[i]))
				moved = true;
		}
	}
	mq_spi_end(&spi);
	PopActiveSnapshot();
	return moved;
}

/* sleep on the latch until a high watermark moves or the deadline passes */
static void
wait_moved(Watch *w, TimestampTz deadline)
{
	bool		latched = mq_notify_watch();

	PG_TRY();
	{
		for (;;)
		{
			long		left;

			ResetLatch(MyLatch);
			if (counters_moved(w) && hwm_moved(w))
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

/* mq._await_partitions(topics text[], partitions integer[], seen bigint[], max_wait_ms integer) */
Datum
mq_await_partitions(PG_FUNCTION_ARGS)
{
	ArrayType  *parts = PG_GETARG_ARRAYTYPE_P(1);
	int32		wait_ms = PG_GETARG_INT32(3);
	Watch		w;
	int			nseen;
	Datum	   *out;

	memset(&w, 0, sizeof(w));
	watched_topics(&w, PG_GETARG_ARRAYTYPE_P(0));
	w.parts = PointerGetDatum(parts);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &w.seen, &w.seen_null, &nseen);
	if (nseen != w.n || ArrayGetNItems(ARR_NDIM(parts), ARR_DIMS(parts)) != w.n || wait_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topics, partitions and seen must have the same length and max_wait_ms must not be negative")));
	if (w.n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	if (!mq_notify_watchable() && !RecoveryInProgress())
		PG_RETURN_NULL();
	w.counters = palloc0(sizeof(uint64) * w.n);
	w.hwm = palloc0(sizeof(int64) * w.n);
	w.hwm_null = palloc(sizeof(bool) * w.n);
	memset(w.hwm_null, true, sizeof(bool) * w.n);
	(void) counters_moved(&w);
	if (!hwm_moved(&w))
		wait_moved(&w, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms));
	out = palloc(sizeof(Datum) * w.n);
	for (int i = 0; i < w.n; i++)
		out[i] = Int64GetDatum(w.hwm[i]);
	PG_RETURN_ARRAYTYPE_P(construct_md_array(out, w.hwm_null, 1, &w.n, (int[]){1}, INT8OID,
											 sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
