/*-------------------------------------------------------------------------
 *
 * feed.c
 *	  One call of mq.fetch or mq.poll as a stream of log rows: passes of
 *	  partition reads (log_reader.c), long polling between passes, and the
 *	  mq.record each row becomes.
 *
 * fetch.c and poll.c check a call's arguments and say, through two
 * callbacks, which partition to read next and what a finished read means
 * (poll moves the group's positions).  The SQL functions materialize the
 * stream into their result (mq_feed_materialize); the custom scan
 * (fetch_scan.c) hands each row to the executor as it is read.
 *
 * Reads use the caller's MVCC snapshot, so a consumer never sees records
 * of transactions that have not committed, and because offsets become
 * visible in order it never sees a hole.  A long poll reads again with a
 * newer snapshot.  Every snapshot a feed reads with stays registered until
 * mq_feed_end, so that a rewind (a rescan of the custom scan) replays each
 * read with the snapshot and the record count it had: the same rows, and
 * no second claim or position move.
 *
 * Locking: none of its own (see log_reader.c and poll.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "mq.h"

/* One read that returned records: enough to read them again. */
typedef struct FeedRun
{
	MqPartition *part;
	int64		from;
	int			count;
	Snapshot	snapshot;
} FeedRun;

static void
use_snapshot(MqFeed *f, Snapshot snapshot)
{
	f->snapshot = RegisterSnapshot(snapshot);
	f->snapshots = lappend(f->snapshots, f->snapshot);
}

void
mq_feed_init(MqFeed *f, MqTopic *topic, Datum topic_datum, int max)
{
	memset(f, 0, sizeof(*f));
	f->topic = topic;
	f->topic_datum = topic_datum;
	f->max = max;
	use_snapshot(f, GetActiveSnapshot());
}

/*
 * Start reading a partition from an offset for as many records as the
 * call still wants: on a replicated partition only below the high
 * watermark, and only on its leader (replica.c).
 */
void
mq_feed_read_partition(MqFeed *f, MqPartition *part, int64 from, MqByteBudget *budget)
{
	int64		stop = part->replicated ?
		mq_partition_high_watermark(f->topic, part) : PG_INT64_MAX;

	if (part->replicated)
		mq_replica_check_leader(f->topic, part->partition);
	mq_reader_start(&f->reader, f->topic->topic_id, part, from, f->max - f->got, f->snapshot,
					stop, budget);
}

/* A read ended: keep it for rewinds, and let fetch.c or poll.c see it. */
static void
read_ended(MqFeed *f)
{
	f->reading = false;
	if (f->replaying)
		return;
	if (f->reader.count > 0)
	{
		FeedRun    *run = palloc(sizeof(FeedRun));

		run->part = f->reader.part;
		run->from = f->reader.from;
		run->count = f->reader.count;
		run->snapshot = f->snapshot;
		f->runs = lappend(f->runs, run);
	}
	f->read_done(f);
}

/* Start the next read: a replayed one, the pass's next, or a new pass. */
static bool
start_next_read(MqFeed *f)
{
	if (f->replaying)
	{
		FeedRun    *run;

		if (f->replay_next >= list_length(f->runs))
			return false;
		run = list_nth(f->runs, f->replay_next++);
		mq_reader_start(&f->reader, f->topic->topic_id, run->part, run->from, run->count, run->snapshot,
						PG_INT64_MAX, NULL);
		return true;
	}
	for (;;)
	{
		if (f->got < f->max && f->start_read(f))
			return true;
		/* the pass is over: wait for more (long poll), then read again */
		if (!mq_long_poll_wait(&f->lp, f->got, f->max, f->topic->topic_id))
			return false;
		use_snapshot(f, GetLatestSnapshot());
		f->step = 0;
	}
}

/* The next log row of the call, or NULL at its end. */
TupleTableSlot *
mq_feed_next(MqFeed *f)
{
	while (!f->done)
	{
		CHECK_FOR_INTERRUPTS();
		if (f->reading)
		{
			TupleTableSlot *slot = mq_reader_next(&f->reader);

			if (slot != NULL)
			{
				if (!f->replaying)
					f->got++;
				return slot;
			}
			read_ended(f);
		}
		else if (start_next_read(f))
			f->reading = true;
		else
			f->done = true;
	}
	return NULL;
}

/*
 * Back to the first row: finish the call (what it would have read, it
 * reads now, without returning it), then replay its reads.
 */
void
mq_feed_rewind(MqFeed *f)
{
	if (f->replaying)
	{
		if (f->reading)
			mq_reader_close(&f->reader);
		f->reading = false;
	}
	else
		while (mq_feed_next(f) != NULL)
			;
	f->replaying = true;
	f->replay_next = 0;
	f->done = false;
}

/*
 * The caller is done with the feed.  A poll left before its end reads the
 * rest first: the group's positions then move exactly as far as the SQL
 * function's would have.
 */
void
mq_feed_end(MqFeed *f)
{
	ListCell   *lc;

	if (f->drain_at_end && !f->replaying)
		while (mq_feed_next(f) != NULL)
			;
	if (f->reading)
		mq_reader_close(&f->reader);
	f->reading = false;
	f->done = true;
	foreach(lc, f->snapshots)
		UnregisterSnapshot((Snapshot) lfirst(lc));
	f->snapshots = NIL;
}

/* 'CreateTime' or 'LogAppendTime' as text, made once per backend */
static Datum
timestamp_type_text(bool log_append)
{
	static Datum names[2];

	if (names[0] == (Datum) 0)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		names[0] = CStringGetTextDatum("CreateTime");
		names[1] = CStringGetTextDatum("LogAppendTime");
		MemoryContextSwitchTo(old);
	}
	return names[log_append ? 1 : 0];
}

/* The log column each column of mq.record comes from (0: none). */
static const int record_source[Natts_record] = {
	0, 0, Anum_log_msg_offset, Anum_log_created_at, Anum_log_key, Anum_log_value,
	Anum_log_headers, Anum_log_timestamp, Anum_log_timestamp, Anum_log_headers
};

/*
 * A log row as an mq.record: the log's columns, then Kafka's timestamp and
 * its type (a NULL timestamp column is a LogAppendTime record, whose
 * timestamp is created_at) and the headers as Kafka's list (headers.c;
 * header_elem is mq.header).  Only the columns in the set are filled (the
 * others are null), and the log row is deformed only as far as they need.
 * Values of the log row point into its slot.
 */
void
mq_feed_record(MqFeed *f, TupleTableSlot *log, Oid header_elem, uint32 columns,
			   Datum *values, bool *nulls)
{
	int			deform = Anum_log_msg_offset;
	bool		log_append;

	for (int c = 0; c < Natts_record; c++)
	{
		nulls[c] = true;
		values[c] = (Datum) 0;
		if ((columns & MQ_RECORD_COLUMN(c + 1)) && record_source[c] > deform)
			deform = record_source[c];
	}
	slot_getsomeattrs(log, deform);
	values[0] = f->topic_datum;
	nulls[0] = false;
	values[1] = Int32GetDatum(f->reader.part->partition);
	nulls[1] = false;
	/* record columns after (topic, partition) are log columns 2..6 */
	for (int a = Anum_log_msg_offset; a <= Min(Anum_log_headers, deform); a++)
	{
		values[a] = log->tts_values[a - 1];
		nulls[a] = log->tts_isnull[a - 1];
	}
	if (deform >= Anum_log_timestamp)
	{
		log_append = log->tts_isnull[Anum_log_timestamp - 1];
		values[7] = log->tts_values[log_append ? Anum_log_created_at - 1 : Anum_log_timestamp - 1];
		nulls[7] = false;
		values[8] = timestamp_type_text(log_append);
		nulls[8] = false;
	}
	if ((columns & MQ_RECORD_COLUMN(Natts_record)) && !log->tts_isnull[Anum_log_headers - 1])
		values[9] = mq_header_list_from_jsonb(DatumGetJsonbP(log->tts_values[Anum_log_headers - 1]),
											  header_elem, &nulls[9]);
}

/* The SQL function's result: every row of the feed, in a tuplestore. */
void
mq_feed_materialize(FunctionCallInfo fcinfo, MqFeed *f)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			header_elem;
	TupleTableSlot *log;
	Datum		values[Natts_record];
	bool		nulls[Natts_record];

	InitMaterializedSRF(fcinfo, 0);
	header_elem = get_element_type(TupleDescAttr(rsinfo->setDesc, 9)->atttypid);
	while ((log = mq_feed_next(f)) != NULL)
	{
		mq_feed_record(f, log, header_elem, MQ_RECORD_ALL, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	mq_feed_end(f);
}
