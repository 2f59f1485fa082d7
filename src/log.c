/*-------------------------------------------------------------------------
 *
 * log.c
 *	  The storage engine: appending records to a partition's segments with
 *	  gapless offsets (a follower copying a compacted range places them
 *	  at the leader's offsets, gaps included), and finding a partition's
 *	  log end offset.
 *
 * Offsets.  A producer takes the partition's produce lock (produce_lock.c:
 * an advisory lock tag of our own, held until its commit) and then reads the
 * last offset from the newest non-empty segment's index with SnapshotSelf,
 * which sees every committed row and the backend's own, but not rows of
 * aborted transactions or rolled-back subtransactions.  So no counter row
 * is written, an abort leaves no hole (the next producer reuses the
 * offsets), and because a commit becomes visible before its locks are
 * released, offsets become visible in offset order.
 *
 * Inserts bypass the executor: the segment is chosen from the offset and
 * rows go straight to the heap (multi-insert for batches, as COPY does)
 * and its indexes.  Rules, statement triggers and BEFORE row triggers on
 * log tables therefore do not fire for produced records; the only trigger
 * mq puts there refuses INSERT (which would bypass offset assignment),
 * UPDATE, DELETE and TRUNCATE.  AFTER INSERT row triggers do fire, as
 * COPY fires them: pg_repack puts one on the table it rebuilds to copy
 * the rows inserted meanwhile, and without it every record produced into
 * a segment during its rebuild was lost at the swap.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "replication/syncrep.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_refuse_log_change);

/* Set by the code paths that may remove records (replica truncation). */
bool		mq_allow_log_change = false;

/* Rows handed to one table_multi_insert call, as COPY does. */
#define MQ_MULTI_INSERT_ROWS 1000

/* segment_last_offset's answer when the segment's table is gone */
#define SEGMENT_GONE (-2)

/*
 * Last offset in one segment as seen by the snapshot, or -1 if it has none;
 * with max_ts, also the segment's largest timestamp (the last record's
 * running maximum, timeindex.c).  The index is scanned backwards, so this
 * touches the rightmost leaf page and, past rows of aborted producers, the
 * heap tuples behind it.  With missing_ok, SEGMENT_GONE when the table was
 * dropped (retention, a roll, drop_topic) after the topic cache listed it:
 * locking it processed the drop's invalidation, so the cache is stale now.
 */
static int64
segment_last_offset(MqSegment *seg, Snapshot snapshot, TimestampTz *max_ts, bool missing_ok)
{
	Relation	rel;
	Relation	irel;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	int64		result = -1;

	rel = missing_ok ? try_table_open(seg->relid, AccessShareLock)
		: mq_segment_open(seg, AccessShareLock);
	if (rel == NULL)
		return SEGMENT_GONE;
	irel = mq_segment_index_open(seg, rel, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	scan = index_beginscan(rel, irel, snapshot, 0, 0);
	index_rescan(scan, NULL, 0, NULL, 0);
	if (index_getnext_slot(scan, BackwardScanDirection, slot))
	{
		bool		isnull;

		result = DatumGetInt64(slot_getattr(slot, Anum_log_msg_offset, &isnull));
		if (max_ts != NULL)
			*max_ts = mq_slot_max_timestamp(slot);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(irel, AccessShareLock);
	table_close(rel, AccessShareLock);
	return result;
}

int64
mq_segment_last_offset(MqSegment *seg, Snapshot snapshot, TimestampTz *max_ts)
{
	return segment_last_offset(seg, snapshot, max_ts, false);
}

/*
 * The offset the next record of this partition gets, as seen by the
 * snapshot.  Segments are contiguous, so the newest non-empty one decides;
 * when all are empty, the log ends where it starts: the oldest segment's
 * base or, when segments were made below it, the log start.  With
 * missing_ok, -1 when a segment's table is gone (segment_last_offset).
 */
static int64
log_end_offset(MqPartition *part, Snapshot snapshot, TimestampTz *max_ts, bool missing_ok)
{
	for (int i = part->nsegs - 1; i >= 0; i--)
	{
		int64		last = segment_last_offset(&part->segs[i], snapshot, max_ts, missing_ok);

		if (last == SEGMENT_GONE)
			return -1;
		if (last >= 0)
			return last + 1;
	}
	return part->nsegs > 0 ? Max(part->segs[0].base, part->log_start) : part->log_start;
}

int64
mq_log_end_offset(MqPartition *part, Snapshot snapshot)
{
	return log_end_offset(part, snapshot, NULL, false);
}

/* the same, -1 when a segment's table is gone (the topic cache is stale) */
int64
mq_log_end_offset_ok(MqPartition *part, Snapshot snapshot)
{
	return log_end_offset(part, snapshot, NULL, true);
}

static MqSegment *
segment_for_offset(MqPartition *part, int64 offset)
{
	for (int i = part->nsegs - 1; i >= 0; i--)
	{
		if (part->segs[i].base <= offset && offset < part->segs[i].end)
			return &part->segs[i];
		if (part->segs[i].end <= offset)
			break;
	}
	return NULL;
}

/*
 * Create the segments the rest of a batch, through offset upto, goes into
 * (at most 32, the last covering the rest: mq._ensure_segments_to), from
 * where this view of the segments, the newest committed one, ends: the
 * function would read the transaction's snapshot, which under REPEATABLE
 * READ misses segments made since.  Maintenance normally keeps one
 * segment ahead so that this runs only for a batch longer than it; it
 * runs as the extension owner because the function is SECURITY DEFINER.
 * Looked up each time, as rare as it is; under 0.1.0's schema (until
 * ALTER EXTENSION UPDATE) its form without the start, which reads it.
 */
static void
create_missing_segments(MqTopic *topic, int32 partition, int64 upto)
{
	MqPartition *part = mq_topic_partition(topic, partition);
	List	   *name = list_make2(makeString("mq"), makeString("_ensure_segments_to"));
	Oid			argtypes[4] = {INT4OID, INT4OID, INT8OID, INT8OID};
	Oid			fn = LookupFuncName(name, 4, argtypes, true);

	elog(DEBUG1, "mq: creating a segment for topic \"%s\" partition %d on the produce path",
		 topic->name, partition);
	if (OidIsValid(fn))
		(void) OidFunctionCall4(fn, Int32GetDatum(topic->topic_id), Int32GetDatum(partition),
								Int64GetDatum(part->nsegs > 0 ? part->segs[part->nsegs - 1].end
											  : part->log_start),
								Int64GetDatum(upto));
	else
		(void) OidFunctionCall3(LookupFuncName(name, 3, argtypes, false),
								Int32GetDatum(topic->topic_id), Int32GetDatum(partition),
								Int64GetDatum(upto));
	CommandCounterIncrement();
	mq_topic_cache_reset();
}

/*
 * A record lands in the partition's empty last segment: note it for
 * maintenance, which makes the next segment ahead (src/sql/85_maintenance.sql;
 * mq._note_last_segment_written is SECURITY DEFINER).  Once per segment,
 * under the produce lock; looked up each time, as rare as it is, so that
 * a backend outliving DROP EXTENSION calls the current function.  Not
 * there while the schema is 0.1.0's under this library (until ALTER
 * EXTENSION UPDATE, which notes every partition): its maintenance reads
 * every partition's log end, nothing to note.
 */
static void
note_last_segment_written(MqTopic *topic, int32 partition)
{
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Oid			fn;

	fn = LookupFuncName(list_make2(makeString("mq"), makeString("_note_last_segment_written")),
						2, argtypes, true);
	if (OidIsValid(fn))
		(void) OidFunctionCall2(fn, Int32GetDatum(topic->topic_id), Int32GetDatum(partition));
}

/*
 * One log row: the record r at offset, appended now by producer, or with
 * the leader's fields m on the replication follower path.
 */
static HeapTuple
form_row(TupleDesc desc, int32 partition, int64 offset, MqRecordIn *r, TimestampTz now,
		 MqProducer *producer, MqRecordMeta *m, TimestampTz *running)
{
	Datum		values[Natts_log];
	bool		nulls[Natts_log];

	memset(nulls, 0, sizeof(nulls));
	values[Anum_log_partition - 1] = Int32GetDatum(partition);
	values[Anum_log_msg_offset - 1] = Int64GetDatum(offset);
	values[Anum_log_created_at - 1] = TimestampTzGetDatum(m ? m->created_at : now);
	values[Anum_log_key - 1] = PointerGetDatum(r->key);
	nulls[Anum_log_key - 1] = (r->key == NULL);
	values[Anum_log_value - 1] = PointerGetDatum(r->value);
	nulls[Anum_log_value - 1] = (r->value == NULL);
	values[Anum_log_headers - 1] = r->headers;
	nulls[Anum_log_headers - 1] = (r->headers == (Datum) 0);
	if (m != NULL)				/* replication: the leader's fields */
	{
		values[Anum_log_producer_id - 1] = Int64GetDatum(m->producer_id);
		values[Anum_log_producer_epoch - 1] = Int32GetDatum(m->producer_epoch);
		values[Anum_log_sequence - 1] = Int32GetDatum(m->sequence);
		nulls[Anum_log_producer_id - 1] = !m->has_producer;
		nulls[Anum_log_producer_epoch - 1] = !m->has_producer;
		nulls[Anum_log_sequence - 1] = !m->has_producer;
	}
	else if (producer != NULL && producer->present)
	{
		values[Anum_log_producer_id - 1] = Int64GetDatum(producer->producer_id);
		values[Anum_log_producer_epoch - 1] = Int32GetDatum(producer->producer_epoch);
		values[Anum_log_sequence - 1] = Int32GetDatum(producer->base_sequence + r->input_index);
	}
	else
	{
		nulls[Anum_log_producer_id - 1] = true;
		nulls[Anum_log_producer_epoch - 1] = true;
		nulls[Anum_log_sequence - 1] = true;
	}
	mq_row_timestamps(r, values, nulls, running);
	return heap_form_tuple(desc, values, nulls);
}

/*
 * Write records [0, n) with offsets base.. (or offsets[0..n), when not
 * NULL) into one segment.  meta, when
 * not NULL (the replication follower path), gives each record's append
 * time and producer fields instead of now and producer.  *running is the
 * segment's largest timestamp so far (DT_NOBEGIN when it is empty): each
 * record stores it in max_timestamp when it exceeds its own (timeindex_write.c).
 */
static void
append_to_segment(MqSegment *seg, int32 partition, MqRecordIn *recs, int n,
				  int64 base, const int64 *offsets, MqProducer *producer, TimestampTz now,
				  MqRecordMeta *meta, TimestampTz *running)
{
	Relation	rel = mq_segment_open(seg, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	CommandId	cid = GetCurrentCommandId(true);
	MemoryContext batch_cxt;
	MemoryContext old;
	BulkInsertState bistate = n > 1 ? GetBulkInsertState() : NULL;
	TupleTableSlot **slots;
	TupleDesc	slot_desc;
	int			nslots = Min(n, MQ_MULTI_INSERT_ROWS);
	bool		fire_after = rel->trigdesc != NULL && rel->trigdesc->trig_insert_after_row;

	if (desc->natts != Natts_log)
		elog(ERROR, "mq: segment \"%s\" has %d columns, expected %d",
			 RelationGetRelationName(rel), desc->natts, Natts_log);

	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	if (fire_after)
	{
		/* the events find the table's ResultRelInfo here when they fire */
		estate->es_opened_result_relations = list_make1(rri);
		AfterTriggerBeginQuery();
	}

	/*
	 * The slots get a private copy of the descriptor: the relcache's is
	 * reference-counted, and pinning it once per slot makes the resource
	 * owner track (and linearly search) a thousand pins per batch.
	 */
	slot_desc = CreateTupleDescCopy(desc);
	slots = palloc(sizeof(TupleTableSlot *) * nslots);
	for (int i = 0; i < nslots; i++)
		slots[i] = MakeSingleTupleTableSlot(slot_desc, &TTSOpsHeapTuple);

	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "mq append",
									  ALLOCSET_DEFAULT_SIZES);

	for (int done = 0; done < n;)
	{
		int			k = Min(n - done, nslots);

		old = MemoryContextSwitchTo(batch_cxt);
		for (int i = 0; i < k; i++)
			ExecStoreHeapTuple(form_row(desc, partition,
										offsets ? offsets[done + i] : base + done + i,
										&recs[done + i], now, producer,
										meta ? &meta[done + i] : NULL, running),
							   slots[i], false);
		MemoryContextSwitchTo(old);

		if (k == 1)
			table_tuple_insert(rel, slots[0], cid, 0, NULL);
		else
			table_multi_insert(rel, slots, k, cid, 0, bistate);

		for (int i = 0; i < k; i++)
		{
			if (rri->ri_NumIndices > 0)
				(void) ExecInsertIndexTuples(rri, slots[i], estate, false, false, NULL, NIL);
			if (fire_after)
				ExecARInsertTriggers(estate, rri, slots[i], NIL, NULL);
			ExecClearTuple(slots[i]);
			ResetPerTupleExprContext(estate);
		}
		MemoryContextReset(batch_cxt);
		done += k;
	}

	if (fire_after)
		AfterTriggerEndQuery(estate);
	if (bistate)
		FreeBulkInsertState(bistate);
	for (int i = 0; i < nslots; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	MemoryContextDelete(batch_cxt);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
}

/*
 * Take the partition's produce lock, then look the topic up again: it may
 * have changed (or been dropped and created anew under another id) while
 * we waited, and the segments we append to must be the current ones.
 */
static MqTopic *
lock_for_append(const char *topic_name, int32 partition)
{
	MqTopic    *topic;
	int32		locked_id;

	/*
	 * The heap inserts below bypass the executor and its read-only check:
	 * refuse here (25006, also on a hot standby) before taking any lock.
	 */
	PreventCommandIfReadOnly("a produce to a topic");
	topic = mq_topic_lookup(topic_name, false);

	(void) mq_topic_partition(topic, partition);
	do
	{
		locked_id = topic->topic_id;
		mq_lock_partition(topic->topic_id, partition);
		AcceptInvalidationMessages();
		topic = mq_topic_lookup(topic_name, false);
	} while (topic->topic_id != locked_id);
	return topic;
}

/*
 * Write records [0, n) at offsets next.. (or, on a follower copying a
 * range with compaction gaps, at offsets[0..n), rising from next) into the
 * segments covering them, creating a missing segment if maintenance has
 * not (the topic is looked up again afterwards, hence *topic).
 */
static void
write_records(const char *topic_name, MqTopic **topic, int32 partition,
			  MqRecordIn *recs, int n, int64 next, const int64 *offsets,
			  MqProducer *producer, TimestampTz now, MqRecordMeta *meta,
			  TimestampTz last_max)
{
	MqPartition *part = mq_topic_partition(*topic, partition);

	for (int done = 0; done < n;)
	{
		int64		at = offsets ? offsets[done] : next;
		MqSegment  *seg = segment_for_offset(part, at);
		int			k;

		if (seg == NULL)
		{
			create_missing_segments(*topic, partition,
									offsets ? offsets[n - 1] : next + (n - done) - 1);
			*topic = mq_topic_lookup(topic_name, false);
			part = mq_topic_partition(*topic, partition);
			seg = segment_for_offset(part, at);
			if (seg == NULL)
				elog(ERROR, "mq: no segment covers offset " INT64_FORMAT " of \"%s\" partition %d",
					 at, topic_name, partition);
		}
		if (offsets == NULL)
			k = (int) Min((int64) (n - done), seg->end - next);
		else
			for (k = 1; done + k < n && offsets[done + k] < seg->end; k++)
				;
		/*
		 * The segment's running maximum continues from its last record:
		 * the record before this one (next - 1) is in it, or it is new.
		 */
		if (next - 1 < seg->base)
		{
			last_max = DT_NOBEGIN;
			if (seg == &part->segs[part->nsegs - 1])
				note_last_segment_written(*topic, partition);
		}
		append_to_segment(seg, partition, recs + done, k, at,
						  offsets ? offsets + done : NULL, producer, now,
						  meta ? meta + done : NULL, &last_max);
		next = (offsets ? offsets[done + k - 1] : next + k - 1) + 1;
		done += k;
	}
}

/*
 * The log end under the produce lock, as SnapshotSelf sees it (with
 * *last_max, the last record's running maximum).  Retention takes no
 * produce lock and drops closed segments, and the one holding the last
 * record is closed once it is full: when the topic cache listed it and a
 * maintenance pass dropped it meanwhile, locking it waited for that pass
 * and found it gone (which brought the drop's invalidation).  The topic
 * is looked up again, once, and the log end read from the segments the
 * catalog lists now; a table still missing then was dropped behind mq's
 * back: MQ074.
 */
static int64
append_log_end(const char *topic_name, MqTopic **topic, int32 partition, TimestampTz *last_max)
{
	int64		end = log_end_offset(mq_topic_partition(*topic, partition), SnapshotSelf,
									 last_max, true);

	if (end >= 0)
		return end;
	mq_topic_cache_reset();
	*topic = mq_topic_lookup(topic_name, false);
	*last_max = DT_NOBEGIN;
	return log_end_offset(mq_topic_partition(*topic, partition), SnapshotSelf, last_max, false);
}

/*
 * Append records to one partition; returns the offset of the first.  The
 * records get consecutive offsets in array order.  Callers have checked
 * the records' sizes (mq_check_record_sizes) before appending anything.  With a producer, a batch
 * that repeats one of the producer's last five returns the offset the
 * original got and writes nothing.
 */
int64
mq_log_append(const char *topic_name, int32 partition, MqRecordIn *recs,
			  int nrecs, MqProducer *producer)
{
	MqTopic    *topic = lock_for_append(topic_name, partition);
	MqPartition *part = mq_topic_partition(topic, partition);
	int64		base;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz last_max = DT_NOBEGIN;
	int32		epoch = -1;

	/* replication hook: only the current leader of a replicated partition appends */
	if (part->replicated)
		epoch = mq_replica_check_produce(topic, partition);

	base = append_log_end(topic_name, &topic, partition, &last_max);
	if (producer != NULL &&
		mq_producer_check_sequence(topic, partition, producer, nrecs, &base))
	{
		/* a retry: the original offsets, nothing written */
		if (epoch >= 0)
			mq_commit_note_records(topic, partition, epoch, base + nrecs);
		return base;
	}
	mq_stamp_records(topic, recs, nrecs, now);
	write_records(topic_name, &topic, partition, recs, nrecs, base, NULL, producer,
				  now, NULL, last_max);
	if (producer != NULL)
		mq_producer_record_batch(topic, partition, producer, nrecs, base);
	if (epoch >= 0)
		mq_commit_note_records(topic, partition, epoch, base + nrecs);
	mq_notify_at_commit(topic->topic_id, partition);
	return base;
}

/*
 * Replication hook: a follower appends records it fetched from the leader
 * at the leader's offsets, with the leader's timestamps and producer
 * fields (replica.c checks the leader epoch first).  base_offset must be
 * the log end offset.  The records go at base_offset, base_offset + 1, ...
 * or, when offsets is not NULL, at offsets[i] (rising from base_offset,
 * checked by the caller): the leader's gaps that compaction left, copied.
 * Returns the new log end, the last record's offset + 1.  The records'
 * timestamps (recs[].has_timestamp, .timestamp) are the leader's too.
 */
int64
mq_log_append_at(const char *topic_name, int32 partition, MqRecordIn *recs,
				 MqRecordMeta *meta, int nrecs, int64 base_offset, const int64 *offsets)
{
	MqTopic    *topic = lock_for_append(topic_name, partition);
	TimestampTz last_max = DT_NOBEGIN;
	int64		next = append_log_end(topic_name, &topic, partition, &last_max);

	if (next != base_offset)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("replica of \"%s\" partition %d ends at offset " INT64_FORMAT ", not " INT64_FORMAT,
						topic_name, partition, next, base_offset),
				 errhint("The broker truncates or refetches from the log end offset.")));
	write_records(topic_name, &topic, partition, recs, nrecs, next, offsets, NULL, 0, meta,
				  last_max);
	next = (offsets ? offsets[nrecs - 1] : next + nrecs - 1) + 1;
	mq_notify_at_commit(topic->topic_id, partition);
	return next;
}

/*
 * Statement trigger on every log table: records are appended only by mq's
 * produce path (which bypasses triggers), never updated, and removed only
 * by retention (dropping whole segments) or replica truncation.
 */
Datum
mq_refuse_log_change(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "mq._refuse_log_change() must be called as a trigger");
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_LOG_IMMUTABLE),
				 errmsg("records cannot be inserted into an mq log directly"),
				 errdetail("Table \"%s\" is part of a topic's log; offsets are assigned by mq.",
						   RelationGetRelationName(trigdata->tg_relation)),
				 errhint("Produce with mq.send() or mq.send_batch(); a data-only restore needs --disable-triggers.")));
	if (!mq_allow_log_change)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_LOG_IMMUTABLE),
				 errmsg("records of an mq log cannot be %s",
						TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? "updated" :
						TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ? "deleted" : "truncated"),
				 errdetail("Table \"%s\" is part of a topic's log, which is append-only.",
						   RelationGetRelationName(trigdata->tg_relation)),
				 errhint("Records leave the log through retention (retention.ms, retention.bytes) or mq.drop_topic().")));
	return PointerGetDatum(NULL);
}
