/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  The log reader: reading a partition from an offset (mq.fetch, and
 *	  for mq.poll in poll.c), and long polling.
 *
 * Reads use the caller's MVCC snapshot, so a consumer never sees records
 * of transactions that have not committed, and because offsets become
 * visible in order it never sees a hole.  On a replicated partition reads
 * also stop at the high watermark.
 *
 * Locking: the reader takes only AccessShareLock on the segment tables
 * and indexes it reads; it never waits on the produce lock.  Long polling
 * waits on the topic's change counter (notify.c) and holds no lock while
 * it waits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

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

/*
 * Append one log row to the caller's result as an mq.record: the log's
 * columns, then Kafka's timestamp and its type (a NULL timestamp column
 * is a LogAppendTime record, whose timestamp is created_at) and the
 * headers as Kafka's list (headers.c).
 */
static void
emit_record(TupleTableSlot *slot, Datum topic_datum, int32 partition,
			Tuplestorestate *store, TupleDesc outdesc)
{
	Datum		values[Natts_record];
	bool		nulls[Natts_record];
	bool		log_append;

	values[0] = topic_datum;
	nulls[0] = false;
	values[1] = Int32GetDatum(partition);
	nulls[1] = false;
	/* record columns after (topic, partition) are log columns 2..6 */
	for (int a = Anum_log_msg_offset; a <= Anum_log_headers; a++)
	{
		values[a] = slot->tts_values[a - 1];
		nulls[a] = slot->tts_isnull[a - 1];
	}
	log_append = slot->tts_isnull[Anum_log_timestamp - 1];
	values[7] = slot->tts_values[log_append ? Anum_log_created_at - 1 : Anum_log_timestamp - 1];
	nulls[7] = false;
	values[8] = timestamp_type_text(log_append);
	nulls[8] = false;
	nulls[9] = true;
	values[9] = (Datum) 0;
	if (!slot->tts_isnull[Anum_log_headers - 1])
		values[9] = mq_header_list_from_jsonb(DatumGetJsonbP(slot->tts_values[Anum_log_headers - 1]),
											  get_element_type(TupleDescAttr(outdesc, 9)->atttypid),
											  &nulls[9]);
	tuplestore_putvalues(store, outdesc, values, nulls);
}

/*
 * The byte budget of mq.fetch(max_bytes): a record costs its key and value
 * sizes plus 24 bytes (about a Kafka record's overhead); the first record
 * is always returned (KIP-74), later ones only while they fit.  NULL
 * budget: no limit.
 */
static bool
fits_budget(TupleTableSlot *slot, MqByteBudget *budget)
{
	int64		size = 24;

	if (budget == NULL)
		return true;
	for (int a = Anum_log_key; a <= Anum_log_value; a++)
		if (!slot->tts_isnull[a - 1])
			size += toast_raw_datum_size(slot->tts_values[a - 1]) - VARHDRSZ;
	if (budget->used > 0 && budget->used + size > budget->max)
		return false;
	budget->used += size;
	return true;
}

static int64
slot_offset(TupleTableSlot *slot)
{
	slot_getsomeattrs(slot, Anum_log_timestamp);
	return DatumGetInt64(slot->tts_values[Anum_log_msg_offset - 1]);
}

/*
 * Read one segment from *next on, up to max records and below stop.
 *
 * Records are appended in offset order under the produce lock, so the heap
 * almost always holds them in offset order too.  The index finds the first
 * record; from there the heap is read in physical order with a TID range
 * scan (page at a time, no index descent per row) for as long as each row
 * is the next offset.  Rows of aborted producers are invisible and skipped.
 * Anything out of order (a row placed in space that VACUUM freed) sends the
 * reader back to the index, so the result is always the gapless sequence.
 *
 * Compaction (src/sql/72_compaction.sql) removes records below a
 * partition's cleaner point, leaving gaps there: the index then finds the
 * next surviving record, and the reader goes on from it when everything
 * it skips lies below the cleaner point.  Anywhere else a missing offset
 * is the end of the log for this snapshot (a REPEATABLE READ producer
 * sees its own records but not those committed after its snapshot).
 */
static int
read_segment(MqSegment *seg, Snapshot snapshot, int64 *next, int64 stop, int max,
			 int64 cleaner_point, Datum topic_datum, int32 partition,
			 Tuplestorestate *store, TupleDesc outdesc, MqByteBudget *budget)
{
	Relation	rel = table_open(seg->relid, AccessShareLock);
	Relation	irel = index_open(seg->indexid, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int			count = 0;

	while (count < max && *next < stop)
	{
		IndexScanDesc iscan;
		TableScanDesc hscan;
		ScanKeyData key;
		ItemPointerData from;
		ItemPointerData to;
		bool		found;

		/* the index finds the next record, if it is visible */
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(*next));
		iscan = index_beginscan(rel, irel, snapshot, 1, 0);
		index_rescan(iscan, &key, 1, NULL, 0);
		found = index_getnext_slot(iscan, ForwardScanDirection, slot) &&
			slot_offset(slot) < stop &&
			(slot_offset(slot) == *next || slot_offset(slot) <= cleaner_point) &&
			fits_budget(slot, budget);
		if (found)
		{
			/* perhaps past a gap that compaction left */
			*next = slot_offset(slot);
			emit_record(slot, topic_datum, partition, store, outdesc);
			count++;
			(*next)++;
			from = slot->tts_tid;
		}
		index_endscan(iscan);
		if (!found)
			break;				/* the log ends here for this snapshot */

		/* then the heap, in physical order, while the offsets follow on */
		ItemPointerSet(&to, MaxBlockNumber, MaxOffsetNumber);
		hscan = table_beginscan_tidrange(rel, snapshot, &from, &to);
		while (count < max && *next < stop &&
			   table_scan_getnextslot_tidrange(hscan, ForwardScanDirection, slot))
		{
			int64		offset = slot_offset(slot);

			if (offset < *next)
				continue;		/* read already */
			if (offset > *next)
				break;			/* out of order: back to the index */
			if (!fits_budget(slot, budget))
			{
				max = count;	/* full */
				break;
			}
			emit_record(slot, topic_datum, partition, store, outdesc);
			count++;
			(*next)++;
		}
		table_endscan(hscan);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(irel, AccessShareLock);
	table_close(rel, AccessShareLock);
	return count;
}

/*
 * Append up to max records of one partition, from offset on, to the
 * tuplestore.  Returns how many were appended; *next_out is the offset
 * after the last one (from if none), which on a compacted partition may
 * be more than from + count.
 */
int
mq_read_partition(MqTopic *topic, MqPartition *part, int64 from, int max,
				  Datum topic_datum, Tuplestorestate *store, TupleDesc outdesc,
				  int64 *next_out, MqByteBudget *budget)
{
	Snapshot	snapshot = GetActiveSnapshot();
	int64		stop = part->replicated ? mq_partition_high_watermark(topic, part) : PG_INT64_MAX;
	int64		next = from;
	int64		last = from;
	int			count = 0;
	int			n;

	/* replication hook (replica.c): only the partition's leader serves reads */
	if (part->replicated)
		mq_replica_check_leader(topic, part->partition);
	for (int i = 0; i < part->nsegs && count < max && next < stop; i++)
	{
		MqSegment  *seg = &part->segs[i];

		if (seg->end <= next)
			continue;
		if (seg->base > next)
			break;				/* only after a crash mid-roll; nothing to read */
		n = read_segment(seg, snapshot, &next, stop, max - count, part->cleaner_point,
						 topic_datum, part->partition, store, outdesc, budget);
		count += n;
		if (n > 0)
			last = next;
		/*
		 * The segment ended before its range did: records that compaction
		 * removed at its end, or else the log end.
		 */
		if (next < seg->end && count < max)
		{
			if (seg->end > part->cleaner_point)
				break;
			next = seg->end;
		}
	}
	*next_out = last;
	return count;
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
mq_check_not_null(FunctionCallInfo fcinfo, int nargs, const char *const *names)
{
	for (int i = 0; i < nargs; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s must not be null", names[i])));
}

/*
 * Long polling.  A read that returned fewer than min_records waits, until
 * max_wait_ms has passed, for a commit to the topic and reads again with a
 * new snapshot.  Only READ COMMITTED can see newer commits within a
 * statement; under REPEATABLE READ and SERIALIZABLE the snapshot is the
 * transaction's, so these calls return at once with what it shows.
 */
void
mq_long_poll_start(MqLongPoll *lp, FunctionCallInfo fcinfo, int wait_arg, int min_arg, int32 topic_id)
{
	int32		wait_ms = PG_ARGISNULL(wait_arg) ? 0 : PG_GETARG_INT32(wait_arg);
	int32		min_records = PG_ARGISNULL(min_arg) ? 1 : PG_GETARG_INT32(min_arg);

	if (wait_ms < 0 || min_records < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_wait_ms must not be negative and min_records must be at least 1")));
	lp->enabled = wait_ms > 0 && !IsolationUsesXactSnapshot();
	lp->min_records = min_records;
	lp->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	lp->pushed = false;
	lp->seen = mq_notify_counter(topic_id);
}

/* After a read that got `got` records in all: wait and prepare a new read? */
bool
mq_long_poll_again(MqLongPoll *lp, int got, int max, int32 topic_id)
{
	if (lp->pushed)
	{
		PopActiveSnapshot();
		lp->pushed = false;
	}
	if (!lp->enabled || got >= lp->min_records || got >= max)
		return false;
	if (!mq_notify_wait(topic_id, lp->seen, lp->deadline))
		return false;
	lp->seen = mq_notify_counter(topic_id);
	PushActiveSnapshot(GetLatestSnapshot());
	lp->pushed = true;
	return true;
}

/*
 * mq.fetch(topic, partition, from_offset, max_records, max_wait_ms,
 * min_records, max_bytes)
 */
Datum
mq_fetch(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"topic", "partition", "from_offset", "max_records"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqTopic    *topic;
	MqPartition *part;
	int64		from;
	int64		next;
	int32		max;
	int			got = 0;
	MqLongPoll	lp;
	MqByteBudget budget = {0, 0};
	MqByteBudget *limit = NULL;

	mq_check_not_null(fcinfo, 4, names);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(0), MQ_ACL_READ);
	part = mq_topic_partition(topic, PG_GETARG_INT32(1));
	from = PG_GETARG_INT64(2);
	max = PG_GETARG_INT32(3);
	mq_check_max_records(max);
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		budget.max = PG_GETARG_INT64(6);
		if (budget.max < 1)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("max_bytes must be positive, not " INT64_FORMAT, budget.max)));
		limit = &budget;
	}
	mq_long_poll_start(&lp, fcinfo, 4, 5, topic->topic_id);

	if (from < part->log_start)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " is below the log start offset " INT64_FORMAT " of topic \"%s\" partition %d",
						from, part->log_start, topic->name, part->partition),
				 errhint("Records below the log start were removed by retention; fetch from " INT64_FORMAT ".",
						 part->log_start)));

	InitMaterializedSRF(fcinfo, 0);
	next = from;
	do
	{
		int			n = mq_read_partition(topic, part, next, max - got, PG_GETARG_DATUM(0),
										  rsinfo->setResult, rsinfo->setDesc, &next, limit);

		if (n == 0 && got == 0)
		{
			int64		end = mq_log_end_offset(part, GetActiveSnapshot());

			if (from > end)
				ereport(ERROR,
						(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
						 errmsg("offset " INT64_FORMAT " is beyond the log end offset " INT64_FORMAT " of topic \"%s\" partition %d",
								from, end, topic->name, part->partition),
						 errhint("The next record will get offset " INT64_FORMAT ".", end)));
		}
		got += n;
	} while (mq_long_poll_again(&lp, got, max, topic->topic_id));
	return (Datum) 0;
}
