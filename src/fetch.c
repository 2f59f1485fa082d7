/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  mq.fetch: reading a partition from an offset, and the argument
 *	  checks of reads.
 *
 * The reading itself is a feed (feed.c) over the log reader
 * (log_reader.c): mq.fetch materializes it, the custom scan
 * (fetch_scan.c) streams it.  On a replicated partition reads stop at the
 * high watermark, and a read that got too little waits (long polling);
 * both live in longpoll.c, below the feed.
 *
 * Locking: the reader takes only AccessShareLock on the segment tables
 * and indexes it reads; it never waits on the produce lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_fetch);

#define MQ_MAX_FETCH 1000000

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
		mq_raise_below_log_start(topic->name, part->partition, fs->from, part->log_start);
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
