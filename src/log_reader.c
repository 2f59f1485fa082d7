/*-------------------------------------------------------------------------
 *
 * log_reader.c
 *	  Reading one partition from an offset, one record at a time: the
 *	  iterator under mq.fetch, mq.poll and their custom scan (feed.c).
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
 * partition's cleaner point, leaving gaps there (and a follower copies a
 * leader's gaps: part->cleaner_point is the end of both): the index then
 * finds the next surviving record, and the reader goes on from it when
 * everything it skips lies below that point.  Anywhere else a missing offset
 * is the end of the log for this snapshot (a REPEATABLE READ producer
 * sees its own records but not those committed after its snapshot).
 *
 * The slot mq_reader_next returns is the reader's own: it holds a pin on
 * the heap page, and its values stay valid until the next call.
 *
 * Locking: AccessShareLock on the segment table and index being read,
 * until the transaction ends; never the produce lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "mq.h"

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
	slot_getsomeattrs(slot, Anum_log_value);
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
	slot_getsomeattrs(slot, Anum_log_msg_offset);
	return DatumGetInt64(slot->tts_values[Anum_log_msg_offset - 1]);
}

void
mq_reader_start(MqLogReader *r, int32 topic_id, MqPartition *part, int64 from, int max,
				Snapshot snapshot, int64 stop, MqByteBudget *budget)
{
	memset(r, 0, sizeof(*r));
	r->topic_id = topic_id;
	r->part = part;
	r->snapshot = snapshot;
	r->from = from;
	r->next = from;
	r->last = from;
	r->stop = stop;
	r->max = max;
	r->budget = budget;
	r->seg = -1;
}

static void
close_segment(MqLogReader *r)
{
	if (r->hscan != NULL)
		table_endscan(r->hscan);
	r->hscan = NULL;
	if (r->rel == NULL)
		return;
	ExecDropSingleTupleTableSlot(r->slot);
	index_close(r->irel, AccessShareLock);
	table_close(r->rel, AccessShareLock);
	r->rel = NULL;
	r->slot = NULL;
}

/* Close what is open; the reader returns nothing more. */
void
mq_reader_close(MqLogReader *r)
{
	close_segment(r);
	r->done = true;
}

/* A read from below the log start: retention removed those records. */
void
mq_raise_below_log_start(const char *topic, int32 partition, int64 offset, int64 log_start)
{
	ereport(ERROR,
			(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
			 errmsg("offset " INT64_FORMAT " is below the log start offset " INT64_FORMAT " of topic \"%s\" partition %d",
					offset, log_start, topic, partition),
			 errhint("Records below the log start were removed by retention; fetch from " INT64_FORMAT ".",
					 log_start)));
}

/*
 * The segment holding r->next was dropped after the topic cache listed it
 * (retention, a roll dropping empty segments ahead, drop_topic): waiting
 * for its lock brought in the drop's invalidation.  Answer what a read
 * starting now would: below the new log start the out-of-range error,
 * the topic gone its error; otherwise (an empty segment ahead of the log
 * end) there is nothing more to read.
 */
static void
segment_gone(MqLogReader *r)
{
	MqTopic    *topic = mq_topic_by_id(r->topic_id, true);
	MqPartition *part;

	if (topic == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_TOPIC),
				 errmsg("topic with id %d was dropped while it was read", r->topic_id)));
	part = mq_topic_partition(topic, r->part->partition);
	if (r->next < part->log_start)
		mq_raise_below_log_start(topic->name, part->partition, r->next, part->log_start);
}

/* Open the segment holding r->next; false if there is none. */
static bool
open_segment(MqLogReader *r)
{
	MqPartition *part = r->part;
	MqSegment  *seg;

	while (++r->seg < part->nsegs && part->segs[r->seg].end <= r->next)
		;
	if (r->seg >= part->nsegs)
		return false;
	seg = &part->segs[r->seg];
	if (seg->base > r->next)
		return false;			/* only after a crash mid-roll; nothing to read */
	r->rel = try_table_open(seg->relid, AccessShareLock);
	if (r->rel == NULL)
	{
		segment_gone(r);
		return false;
	}
	r->irel = mq_segment_index_open(seg, r->rel, AccessShareLock);
	r->slot = table_slot_create(r->rel, NULL);
	return true;
}

/* The record just read is returned: account for it. */
static TupleTableSlot *
take(MqLogReader *r, int64 offset)
{
	r->next = offset + 1;
	r->last = r->next;
	r->count++;
	return r->slot;
}

/*
 * The index finds the next record, perhaps past a gap that compaction
 * left; from it a TID range scan reads on.  NULL: none here.
 */
static TupleTableSlot *
index_step(MqLogReader *r)
{
	IndexScanDesc iscan;
	ScanKeyData key;
	ItemPointerData from;
	ItemPointerData to;
	int64		offset = -1;
	bool		found;

	ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(r->next));
	iscan = index_beginscan(r->rel, r->irel, r->snapshot, 1, 0);
	index_rescan(iscan, &key, 1, NULL, 0);
	found = index_getnext_slot(iscan, ForwardScanDirection, r->slot);
	if (found)
	{
		offset = slot_offset(r->slot);
		found = offset < r->stop &&
			(offset == r->next || offset <= r->part->cleaner_point) &&
			fits_budget(r->slot, r->budget);
	}
	index_endscan(iscan);
	if (!found)
		return NULL;
	from = r->slot->tts_tid;
	ItemPointerSet(&to, MaxBlockNumber, MaxOffsetNumber);
	r->hscan = table_beginscan_tidrange(r->rel, r->snapshot, &from, &to);
	return take(r, offset);
}

/*
 * The heap, in physical order, while the offsets follow on.  NULL: back to
 * the index (out of order, or the heap ended); *full: the budget is spent.
 */
static TupleTableSlot *
heap_step(MqLogReader *r, bool *full)
{
	while (table_scan_getnextslot_tidrange(r->hscan, ForwardScanDirection, r->slot))
	{
		int64		offset = slot_offset(r->slot);

		if (offset < r->next)
			continue;			/* read already */
		if (offset > r->next)
			break;				/* out of order: back to the index */
		if (!fits_budget(r->slot, r->budget))
		{
			*full = true;
			break;
		}
		return take(r, offset);
	}
	table_endscan(r->hscan);
	r->hscan = NULL;
	return NULL;
}

/*
 * The next record, or NULL at the end of what this read returns (and then
 * everything is closed).
 */
TupleTableSlot *
mq_reader_next(MqLogReader *r)
{
	while (!r->done && r->count < r->max && r->next < r->stop)
	{
		TupleTableSlot *slot;
		bool		full = false;
		MqSegment  *seg;

		if (r->rel == NULL && !open_segment(r))
			break;
		if (r->hscan != NULL)
		{
			slot = heap_step(r, &full);
			if (slot != NULL)
				return slot;
			if (full)
				break;
		}
		slot = index_step(r);
		if (slot != NULL)
			return slot;

		/*
		 * The segment ended before its range did: records that compaction
		 * removed at its end, or else the log end.
		 */
		seg = &r->part->segs[r->seg];
		close_segment(r);
		if (r->next < seg->end)
		{
			if (seg->end > r->part->cleaner_point)
				break;
			r->next = seg->end;
		}
	}
	mq_reader_close(r);
	return NULL;
}
