/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  mq.fetch: reading a partition from an offset; the argument checks
 *	  of reads, and long polling.
 *
 * The reading itself is a feed (feed.c) over the log reader
 * (log_reader.c): mq.fetch materializes it, the custom scan
 * (fetch_scan.c) streams it.  On a replicated partition reads stop at the
 * high watermark.
 *
 * Locking: the reader takes only AccessShareLock on the segment tables
 * and indexes it reads; it never waits on the produce lock.  Long polling
 * waits on the topic's change counter (notify.c) and holds no lock while
 * it waits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_fetch);

#define MQ_MAX_FETCH 1000000

/* The high watermark of a replicated partition, from the catalog. */
int64
mq_partition_high_watermark(MqTopic *topic, MqPartition *part)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(topic->topic_id), Int32GetDatum(part->partition)};
	int64		hwm = PG_INT64_MAX;

	(void) mq_spi_get_int64(&plan,
							"SELECT high_watermark FROM mq.partition_state "
							"WHERE topic_id = $1 AND partition = $2",
							2, argtypes, args, &hwm);
	return hwm;
}

void
mq_check_max_records(int32 max)
{
	if (max < 1 || max > MQ_MAX_FETCH)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_records must be between 1 and %d, not %d", MQ_MAX_FETCH, max)));
}

void
mq_check_not_null(NullableDatum *args, int nargs, const char *const *names)
{
	for (int i = 0; i < nargs; i++)
		if (args[i].isnull)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s must not be null", names[i])));
}

/*
 * Long polling.  A read that returned fewer than min_records waits, until
 * max_wait_ms has passed, for a commit to the topic and reads again with a
 * new snapshot (feed.c).  Only READ COMMITTED can see newer commits within
 * a statement; under REPEATABLE READ and SERIALIZABLE the snapshot is the
 * transaction's, so these calls return at once with what it shows.
 */
void
mq_long_poll_start(MqLongPoll *lp, NullableDatum wait, NullableDatum min, int32 topic_id)
{
	int32		wait_ms = wait.isnull ? 0 : DatumGetInt32(wait.value);
	int32		min_records = min.isnull ? 1 : DatumGetInt32(min.value);

	if (wait_ms < 0 || min_records < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_wait_ms must not be negative and min_records must be at least 1")));
	lp->enabled = wait_ms > 0 && !IsolationUsesXactSnapshot();
	lp->min_records = min_records;
	lp->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	lp->seen = mq_notify_counter(topic_id);
}

/* After reads that got `got` records in all: wait, then read again? */
bool
mq_long_poll_wait(MqLongPoll *lp, int got, int max, int32 topic_id)
{
	if (!lp->enabled || got >= lp->min_records || got >= max)
		return false;
	if (!mq_notify_wait(topic_id, lp->seen, lp->deadline))
		return false;
	lp->seen = mq_notify_counter(topic_id);
	return true;
}

/* What a fetch keeps between its reads. */
typedef struct FetchState
{
	MqPartition *part;
	int64		from;
	int64		next;
	MqByteBudget budget;
	MqByteBudget *limit;		/* &budget with max_bytes, else NULL */
} FetchState;

/* A fetch reads its partition once per pass. */
static bool
fetch_start_read(MqFeed *f)
{
	FetchState *fs = f->priv;

	if (f->step++ > 0)
		return false;
	mq_feed_read_partition(f, fs->part, fs->next, fs->limit);
	return true;
}

/* Nothing to read at all: a from_offset beyond the log end is an error. */
static void
fetch_read_done(MqFeed *f)
{
	FetchState *fs = f->priv;
	MqPartition *part = fs->part;

	fs->next = f->reader.last;
	if (f->reader.count == 0 && f->got == 0)
	{
		int64		end = mq_log_end_offset(part, f->snapshot);

		if (fs->from > end)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
					 errmsg("offset " INT64_FORMAT " is beyond the log end offset " INT64_FORMAT " of topic \"%s\" partition %d",
							fs->from, end, f->topic->name, part->partition),
					 errhint("The next record will get offset " INT64_FORMAT ".", end)));
	}
}

static void
check_max_bytes(FetchState *fs, NullableDatum *args, int nargs)
{
	if (nargs <= 6 || args[6].isnull)
		return;
	fs->budget.max = DatumGetInt64(args[6].value);
	if (fs->budget.max < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_bytes must be positive, not " INT64_FORMAT, fs->budget.max)));
	fs->limit = &fs->budget;
}

/*
 * A call of mq.fetch(topic, partition, from_offset, max_records,
 * max_wait_ms, min_records, max_bytes), checked, as a feed.
 */
void
mq_fetch_feed_begin(MqFeed *f, NullableDatum *args, int nargs)
{
	static const char *const names[] = {"topic", "partition", "from_offset", "max_records"};
	FetchState *fs = palloc0(sizeof(FetchState));
	MqTopic    *topic;
	MqPartition *part;
	int32		max;

	mq_check_not_null(args, 4, names);
	topic = mq_topic_authorized(DatumGetTextPP(args[0].value), MQ_ACL_READ);
	part = mq_topic_partition(topic, DatumGetInt32(args[1].value));
	fs->part = part;
	fs->from = fs->next = DatumGetInt64(args[2].value);
	max = DatumGetInt32(args[3].value);
	mq_check_max_records(max);
	check_max_bytes(fs, args, nargs);
	mq_feed_init(f, topic, args[0].value, max);
	mq_long_poll_start(&f->lp, args[4], args[5], topic->topic_id);

	if (fs->from < part->log_start)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " is below the log start offset " INT64_FORMAT " of topic \"%s\" partition %d",
						fs->from, part->log_start, topic->name, part->partition),
				 errhint("Records below the log start were removed by retention; fetch from " INT64_FORMAT ".",
						 part->log_start)));
	f->priv = fs;
	f->start_read = fetch_start_read;
	f->read_done = fetch_read_done;
}

/*
 * mq.fetch(topic, partition, from_offset, max_records, max_wait_ms,
 * min_records, max_bytes)
 */
Datum
mq_fetch(PG_FUNCTION_ARGS)
{
	MqFeed		feed;

	mq_fetch_feed_begin(&feed, fcinfo->args, PG_NARGS());
	mq_feed_materialize(fcinfo, &feed);
	return (Datum) 0;
}
