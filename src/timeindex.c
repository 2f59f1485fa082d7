/*-------------------------------------------------------------------------
 *
 * timeindex.c
 *	  The lookup by time: the first offset at or after a time
 *	  (mq.offsets_for_times, Kafka's ListOffsets by timestamp), which
 *	  mq.poll's auto_offset_reset 'by_duration:' and mq.reset_offsets use
 *	  too.  What the append writes (each record's timestamp and the time
 *	  index column) is timeindex_write.c's.
 *
 * Layer: above the log (log.c, for a segment's last record and the log
 * end) and the high watermark (longpoll.c); below poll.c.
 *
 * The time index.  With CreateTime, timestamps need not grow with the
 * offset, so the lookup relies on what Kafka's time index keeps: the
 * running maximum of the timestamps, per segment.  Every log row stores
 * it in max_timestamp, but only when it exceeds the row's own timestamp
 * (NULL otherwise, which costs nothing when timestamps do grow, the usual
 * case); log.c computes it at append under the produce lock.  Within a
 * segment the running maximum grows with the offset, and the first record
 * whose running maximum reaches ts is the first record whose own
 * timestamp does.  So the lookup takes each segment's maximum from its
 * last record (one backward index probe per segment) and, in the first
 * segment that reaches ts, bisects over the unique index on msg_offset:
 * about log2(records in the segment) index probes, no scan.  A forward
 * read then confirms the record's own timestamp, which only matters when
 * records were removed from the segment (compaction).
 *
 * Locking: AccessShareLock on the segments and their indexes, the
 * caller's snapshot; no produce lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_offsets_for_times);

/*
 * The first row of the segment visible to the scan's snapshot with an
 * offset of at least from, in slot; returns its offset, or -1 when there
 * is none.  One scan is rescanned for every probe of a segment.
 */
static int64
probe(IndexScanDesc scan, int64 from, TupleTableSlot *slot, int *descents)
{
	ScanKeyData key;
	int64		result = -1;

	ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(from));
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;

		result = DatumGetInt64(slot_getattr(slot, Anum_log_msg_offset, &isnull));
	}
	(*descents)++;
	return result;
}

/*
 * In one segment whose last record (offset last) has a running maximum of
 * at least ts: the first record whose own timestamp is at least ts, or -1
 * when records that reached it were removed.
 */
static int64
search_segment(MqSegment *seg, int64 from, int64 last, TimestampTz ts, Snapshot snapshot,
			   int *descents)
{
	Relation	rel = mq_segment_open(seg, AccessShareLock);
	Relation	irel = mq_segment_index_open(seg, rel, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	IndexScanDesc scan = index_beginscan(rel, irel, snapshot, 1, 0);
	int64		lo = Max(from, seg->base);
	int64		hi = last - 1;
	int64		best = last;
	int64		result = -1;

	/* bisect: the smallest visible offset whose running maximum reaches ts */
	while (lo <= hi)
	{
		int64		mid = lo + (hi - lo) / 2;
		int64		o = probe(scan, mid, slot, descents);

		if (o < 0 || o > hi)
			hi = mid - 1;		/* nothing visible in [mid, hi] */
		else if (mq_slot_max_timestamp(slot) >= ts)
		{
			best = o;
			hi = mid - 1;
		}
		else
			lo = o + 1;
	}

	/* then the first record from there whose own timestamp reaches ts */
	for (int64 o = best; o >= 0 && o <= last; o++)
	{
		o = probe(scan, o, slot, descents);
		if (o >= 0 && mq_slot_timestamp(slot) >= ts)
		{
			result = o;
			break;
		}
		if (o < 0)
			break;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(irel, AccessShareLock);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * The earliest offset at or above the log start whose timestamp is at
 * least ts, or the log end offset when there is none.  *descents counts
 * the index probes (for the benchmark in docs/design.md).
 */
int64
mq_offset_for_time(MqPartition *part, TimestampTz ts, Snapshot snapshot, int *descents)
{
	for (int i = 0; i < part->nsegs; i++)
	{
		MqSegment  *seg = &part->segs[i];
		TimestampTz max_ts = DT_NOBEGIN;
		int64		last;
		int64		found;

		if (seg->end <= part->log_start)
			continue;
		last = mq_segment_last_offset(seg, snapshot, &max_ts);
		(*descents)++;
		if (last < 0)
			continue;			/* empty: ahead of the log end, or compacted away */
		if (max_ts < ts)
			continue;
		found = search_segment(seg, part->log_start, last, ts, snapshot, descents);
		if (found >= 0)
			return found;
	}
	return mq_log_end_offset(part, snapshot);
}

/* mq.offsets_for_times(topic, partition, ts) */
Datum
mq_offsets_for_times(PG_FUNCTION_ARGS)
{
	MqTopic    *topic;
	MqPartition *part;
	int64		offset;
	int			descents = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topic, partition and ts must not be null")));
	/* Kafka's ListOffsets needs DESCRIBE on the topic */
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(0), MQ_ACL_DESCRIBE);
	part = mq_topic_partition(topic, PG_GETARG_INT32(1));
	if (part->replicated)
		mq_replica_check_leader(topic, part->partition);
	offset = mq_offset_for_time(part, PG_GETARG_TIMESTAMPTZ(2), GetActiveSnapshot(), &descents);
	if (part->replicated)
		offset = Min(offset, mq_partition_high_watermark(topic, part));
	elog(DEBUG1, "mq: offsets_for_times took %d index probes", descents);
	PG_RETURN_INT64(offset);
}
