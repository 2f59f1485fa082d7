/*-------------------------------------------------------------------------
 *
 * consume.c
 *	  Reading the log: mq.fetch (stateless, by offset), mq.poll (from a
 *	  consumer group's committed positions), and the committed offsets
 *	  themselves (mq.commit_offset, mq.committed_offset).
 *
 * Reads use the caller's MVCC snapshot, so a consumer never sees records
 * of transactions that have not committed, and because offsets become
 * visible in order it never sees a hole.  On a replicated partition reads
 * also stop at the high watermark.
 *
 * Poll claims each partition it reads for the group with an advisory lock
 * that lasts until the poller's transaction ends.  Claims are taken with
 * a conditional acquire: a concurrent poller of the same group skips the
 * claimed partitions instead of waiting, so the two get disjoint records.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_fetch);
PG_FUNCTION_INFO_V1(mq_poll);
PG_FUNCTION_INFO_V1(mq_commit_offset);
PG_FUNCTION_INFO_V1(mq_committed_offset);

#define MQ_MAX_FETCH 1000000

/* Run a one-row, one-column int8 query with cached plan; false if no row. */
static bool
spi_get_int64(SPIPlanPtr *plan, const char *sql, int nargs, Oid *argtypes,
			  Datum *args, int64 *result)
{
	bool		isnull = true;

	SPI_connect();
	if (*plan == NULL)
	{
		*plan = SPI_prepare(sql, nargs, argtypes);
		if (*plan == NULL)
			elog(ERROR, "mq: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(*plan);
	}
	if (SPI_execute_plan(*plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: query failed: %s", sql);
	if (SPI_processed == 1)
		*result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return !isnull;
}

/* The high watermark of a replicated partition, from the catalog. */
static int64
partition_high_watermark(MqTopic *topic, MqPartition *part)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(topic->topic_id), Int32GetDatum(part->partition)};
	int64		hwm = PG_INT64_MAX;

	(void) spi_get_int64(&plan,
						 "SELECT high_watermark FROM mq.partition_state "
						 "WHERE topic_id = $1 AND partition = $2",
						 2, argtypes, args, &hwm);
	return hwm;
}

/*
 * Append up to max records of one partition, from offset on, to the
 * tuplestore.  Returns how many were appended.
 */
static int
read_partition(MqTopic *topic, MqPartition *part, int64 from, int max,
			   Datum topic_datum, Tuplestorestate *store, TupleDesc outdesc)
{
	Snapshot	snapshot = GetActiveSnapshot();
	int64		stop = part->replicated ? partition_high_watermark(topic, part) : PG_INT64_MAX;
	int64		next = from;
	int			count = 0;

	for (int i = 0; i < part->nsegs && count < max && next < stop; i++)
	{
		MqSegment  *seg = &part->segs[i];
		Relation	rel;
		Relation	irel;
		IndexScanDesc scan;
		TupleTableSlot *slot;
		ScanKeyData key;

		if (seg->end <= next)
			continue;
		if (seg->base > next)
			break;				/* only after a crash mid-roll; nothing to read */

		rel = table_open(seg->relid, AccessShareLock);
		irel = index_open(seg->indexid, AccessShareLock);
		slot = table_slot_create(rel, NULL);
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(next));
		scan = index_beginscan(rel, irel, snapshot, 1, 0);
		index_rescan(scan, &key, 1, NULL, 0);

		while (count < max && next < stop &&
			   index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			Datum		values[7];
			bool		nulls[7];
			int64		offset;

			slot_getsomeattrs(slot, Anum_log_headers);
			offset = DatumGetInt64(slot->tts_values[Anum_log_msg_offset - 1]);
			if (offset != next)
				break;			/* not visible yet (cannot happen when committed in order) */
			values[0] = topic_datum;
			nulls[0] = false;
			values[1] = Int32GetDatum(part->partition);
			nulls[1] = false;
			/* record columns after (topic, partition) are log columns 2..6 */
			for (int a = Anum_log_msg_offset; a <= Anum_log_headers; a++)
			{
				values[a] = slot->tts_values[a - 1];
				nulls[a] = slot->tts_isnull[a - 1];
			}
			tuplestore_putvalues(store, outdesc, values, nulls);
			count++;
			next++;
		}
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		index_close(irel, AccessShareLock);
		table_close(rel, AccessShareLock);

		if (next < seg->end)
			break;				/* the segment ended before its range did: log end */
	}
	return count;
}

static void
check_max_records(int32 max)
{
	if (max < 1 || max > MQ_MAX_FETCH)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_records must be between 1 and %d, not %d", MQ_MAX_FETCH, max)));
}

static void
check_not_null(FunctionCallInfo fcinfo, int nargs, const char *const *names)
{
	for (int i = 0; i < nargs; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s must not be null", names[i])));
}

/* mq.fetch(topic, partition, from_offset, max_records) */
Datum
mq_fetch(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"topic", "partition", "from_offset", "max_records"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqTopic    *topic;
	MqPartition *part;
	int64		from;
	int32		max;

	check_not_null(fcinfo, 4, names);
	topic = mq_topic_lookup_text(PG_GETARG_TEXT_PP(0));
	part = mq_topic_partition(topic, PG_GETARG_INT32(1));
	from = PG_GETARG_INT64(2);
	max = PG_GETARG_INT32(3);
	check_max_records(max);

	if (from < part->log_start)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " is below the log start offset " INT64_FORMAT " of topic \"%s\" partition %d",
						from, part->log_start, topic->name, part->partition),
				 errhint("Records below the log start were removed by retention; fetch from " INT64_FORMAT ".",
						 part->log_start)));

	InitMaterializedSRF(fcinfo, 0);
	if (read_partition(topic, part, from, max, PG_GETARG_DATUM(0),
					   rsinfo->setResult, rsinfo->setDesc) == 0)
	{
		int64		end = mq_log_end_offset(part, GetActiveSnapshot());

		if (from > end)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
					 errmsg("offset " INT64_FORMAT " is beyond the log end offset " INT64_FORMAT " of topic \"%s\" partition %d",
							from, end, topic->name, part->partition),
					 errhint("The next record will get offset " INT64_FORMAT ".", end)));
	}
	return (Datum) 0;
}

/* The group's committed position, or -1 when it has none. */
static int64
committed_position(text *group, MqTopic *topic, int32 partition)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[3] = {TEXTOID, INT4OID, INT4OID};
	Datum		args[3] = {PointerGetDatum(group), Int32GetDatum(topic->topic_id),
	Int32GetDatum(partition)};
	int64		pos = -1;

	(void) spi_get_int64(&plan,
						 "SELECT next_offset FROM mq.consumer_offset "
						 "WHERE group_id = $1 AND topic_id = $2 AND partition = $3",
						 3, argtypes, args, &pos);
	return pos;
}

static void
check_group(text *group)
{
	if (VARSIZE_ANY_EXHDR(group) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("group_id must not be empty")));
}

/* Claim a group's partition for this transaction, without waiting. */
static bool
claim_partition(text *group, MqTopic *topic, int32 partition)
{
	LOCKTAG		tag;
	uint32		h = hash_any((unsigned char *) VARDATA_ANY(group), VARSIZE_ANY_EXHDR(group));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash_combine(h, (uint32) topic->topic_id),
						 (uint32) partition, MQ_LOCK_CLAIM);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * mq.poll(group_id, topic, max_records): records from the group's committed
 * positions, over the partitions this caller could claim.  Partitions are
 * visited from a rotating start so that one busy partition does not starve
 * the others.  A group with no committed offset starts at the log start.
 */
Datum
mq_poll(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic", "max_records"};
	static uint32 rotation = 0;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *group;
	MqTopic    *topic;
	int32		max;
	int			got = 0;

	check_not_null(fcinfo, 3, names);
	group = PG_GETARG_TEXT_PP(0);
	check_group(group);
	topic = mq_topic_lookup_text(PG_GETARG_TEXT_PP(1));
	max = PG_GETARG_INT32(2);
	check_max_records(max);

	InitMaterializedSRF(fcinfo, 0);
	rotation++;
	for (int i = 0; i < topic->npartitions && got < max; i++)
	{
		MqPartition *part = &topic->parts[(rotation + i) % topic->npartitions];
		int64		pos;

		if (!claim_partition(group, topic, part->partition))
			continue;
		pos = committed_position(group, topic, part->partition);
		if (pos < part->log_start)
			pos = part->log_start;
		got += read_partition(topic, part, pos, max - got, PG_GETARG_DATUM(1),
							  rsinfo->setResult, rsinfo->setDesc);
	}
	return (Datum) 0;
}

/* mq.commit_offset(group_id, topic, partition, next_offset, metadata) */
Datum
mq_commit_offset(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic", "partition", "next_offset"};
	static SPIPlanPtr plan = NULL;
	text	   *group;
	MqTopic    *topic;
	MqPartition *part;
	int64		next;
	int64		end;
	Datum		args[5];
	char		argnulls[5] = {' ', ' ', ' ', ' ', ' '};

	check_not_null(fcinfo, 4, names);
	group = PG_GETARG_TEXT_PP(0);
	check_group(group);
	topic = mq_topic_lookup_text(PG_GETARG_TEXT_PP(1));
	part = mq_topic_partition(topic, PG_GETARG_INT32(2));
	next = PG_GETARG_INT64(3);

	end = mq_log_end_offset(part, GetActiveSnapshot());
	if (next < 0 || next > end)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("cannot commit offset " INT64_FORMAT " for topic \"%s\" partition %d: the log ends at " INT64_FORMAT,
						next, topic->name, part->partition, end),
				 errhint("Commit the offset of the next record to read: the last processed offset plus one.")));

	args[0] = PointerGetDatum(group);
	args[1] = Int32GetDatum(topic->topic_id);
	args[2] = Int32GetDatum(part->partition);
	args[3] = Int64GetDatum(next);
	args[4] = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
	if (PG_ARGISNULL(4))
		argnulls[4] = 'n';

	SPI_connect();
	if (plan == NULL)
	{
		Oid			argtypes[5] = {TEXTOID, INT4OID, INT4OID, INT8OID, TEXTOID};

		plan = SPI_prepare("INSERT INTO mq.consumer_offset AS c "
						   "  (group_id, topic_id, partition, next_offset, metadata) "
						   "VALUES ($1, $2, $3, $4, $5) "
						   "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
						   "SET next_offset = EXCLUDED.next_offset, metadata = EXCLUDED.metadata, "
						   "    committed_at = pg_catalog.now()",
						   5, argtypes);
		if (plan == NULL)
			elog(ERROR, "mq: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
	}
	if (SPI_execute_plan(plan, args, argnulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "mq: offset commit failed");
	SPI_finish();
	PG_RETURN_VOID();
}

/* mq.committed_offset(group_id, topic, partition): NULL when none */
Datum
mq_committed_offset(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic", "partition"};
	MqTopic    *topic;
	int64		pos;

	check_not_null(fcinfo, 3, names);
	topic = mq_topic_lookup_text(PG_GETARG_TEXT_PP(1));
	(void) mq_topic_partition(topic, PG_GETARG_INT32(2));
	pos = committed_position(PG_GETARG_TEXT_PP(0), topic, PG_GETARG_INT32(2));
	if (pos < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(pos);
}
