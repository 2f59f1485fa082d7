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
 * The committed position is read after the claim, with the latest
 * snapshot, so a poller that takes over a partition right after another
 * committed starts where that one stopped.
 *
 * Within a transaction a poll advances the consumer's position (as a
 * Kafka consumer's position advances in memory), and commit_offset sets
 * it.  With auto_commit, a poll first commits what the same session's
 * previous auto-commit poll of that group and topic returned.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
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
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_fetch);
PG_FUNCTION_INFO_V1(mq_poll);
PG_FUNCTION_INFO_V1(mq_commit_offset);
PG_FUNCTION_INFO_V1(mq_committed_offset);
PG_FUNCTION_INFO_V1(mq_commit_polled);

#define MQ_MAX_FETCH 1000000

/*
 * Run a one-row, one-column int8 query with a cached plan, as the extension
 * owner and with the latest snapshot; false if there is no row or it is null.
 */
static bool
spi_get_int64(SPIPlanPtr *plan, const char *sql, int nargs, Oid *argtypes,
			  Datum *args, int64 *result)
{
	bool		isnull = true;
	MqSpiSave	spi;

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (*plan == NULL)
		*plan = mq_spi_prepare(sql, nargs, argtypes);
	if (SPI_execute_plan(*plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: query failed: %s", sql);
	if (SPI_processed == 1)
		*result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	mq_spi_end(&spi);
	PopActiveSnapshot();
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

/* Append one log row to the caller's result as an mq.record. */
static void
emit_record(TupleTableSlot *slot, Datum topic_datum, int32 partition,
			Tuplestorestate *store, TupleDesc outdesc)
{
	Datum		values[7];
	bool		nulls[7];

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
	tuplestore_putvalues(store, outdesc, values, nulls);
}

static int64
slot_offset(TupleTableSlot *slot)
{
	slot_getsomeattrs(slot, Anum_log_headers);
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
 */
static int
read_segment(MqSegment *seg, Snapshot snapshot, int64 *next, int64 stop, int max,
			 Datum topic_datum, int32 partition, Tuplestorestate *store, TupleDesc outdesc)
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
			slot_offset(slot) == *next;
		if (found)
		{
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
		count += read_segment(seg, snapshot, &next, stop, max - count, topic_datum,
							  part->partition, store, outdesc);
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

/*
 * Long polling.  A read that returned fewer than min_records waits, until
 * max_wait_ms has passed, for a commit to the topic and reads again with a
 * new snapshot.  Only READ COMMITTED can see newer commits within a
 * statement; under REPEATABLE READ and SERIALIZABLE the snapshot is the
 * transaction's, so these calls return at once with what it shows.
 */
typedef struct LongPoll
{
	bool		enabled;
	int			min_records;
	TimestampTz deadline;
	uint64		seen;			/* the topic's change counter before the read */
	bool		pushed;			/* a fresh snapshot is pushed */
} LongPoll;

static void
long_poll_start(LongPoll *lp, FunctionCallInfo fcinfo, int wait_arg, int min_arg, int32 topic_id)
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
static bool
long_poll_again(LongPoll *lp, int got, int max, int32 topic_id)
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

/* mq.fetch(topic, partition, from_offset, max_records, max_wait_ms, min_records) */
Datum
mq_fetch(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"topic", "partition", "from_offset", "max_records"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqTopic    *topic;
	MqPartition *part;
	int64		from;
	int32		max;
	int			got = 0;
	LongPoll	lp;

	check_not_null(fcinfo, 4, names);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(0), MQ_ACL_READ);
	part = mq_topic_partition(topic, PG_GETARG_INT32(1));
	from = PG_GETARG_INT64(2);
	max = PG_GETARG_INT32(3);
	check_max_records(max);
	long_poll_start(&lp, fcinfo, 4, 5, topic->topic_id);

	if (from < part->log_start)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " is below the log start offset " INT64_FORMAT " of topic \"%s\" partition %d",
						from, part->log_start, topic->name, part->partition),
				 errhint("Records below the log start were removed by retention; fetch from " INT64_FORMAT ".",
						 part->log_start)));

	InitMaterializedSRF(fcinfo, 0);
	do
	{
		int			n = read_partition(topic, part, from + got, max - got, PG_GETARG_DATUM(0),
									   rsinfo->setResult, rsinfo->setDesc);

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
	} while (long_poll_again(&lp, got, max, topic->topic_id));
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

/*
 * Positions: where a consumer (group, topic, partition) reads next.  One
 * table lives for the transaction (what polls returned and commit_offset
 * set), one for the session (what the last auto-commit poll returned,
 * to be committed by the next).
 */
typedef struct PositionKey
{
	uint32		group_hash;
	int32		topic_id;
	int32		partition;
	char		group[NAMEDATALEN * 4];
} PositionKey;

typedef struct Position
{
	PositionKey key;
	int64		next_offset;
} Position;

static HTAB *xact_positions = NULL;
static HTAB *pending_autocommit = NULL;

static HTAB *
position_table(MemoryContext cxt, const char *name)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(PositionKey);
	ctl.entrysize = sizeof(Position);
	ctl.hcxt = cxt;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static void
consume_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		xact_positions = NULL;	/* its memory goes with the transaction */
}

void
mq_consume_init(void)
{
	RegisterXactCallback(consume_xact_callback, NULL);
}

static void
position_key(PositionKey *key, text *group, MqTopic *topic, int32 partition)
{
	int			len = VARSIZE_ANY_EXHDR(group);

	if (len >= (int) sizeof(key->group))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("group_id is longer than %d bytes", (int) sizeof(key->group) - 1)));
	memset(key, 0, sizeof(*key));
	memcpy(key->group, VARDATA_ANY(group), len);
	key->group_hash = hash_any((unsigned char *) key->group, len);
	key->topic_id = topic->topic_id;
	key->partition = partition;
}

static void
set_position(HTAB **table, MemoryContext cxt, PositionKey *key, int64 next)
{
	Position   *pos;

	if (*table == NULL)
		*table = position_table(cxt, "mq positions");
	pos = hash_search(*table, key, HASH_ENTER, NULL);
	pos->next_offset = next;
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
claim_partition(PositionKey *key)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash_combine(key->group_hash, (uint32) key->topic_id),
						 (uint32) key->partition, MQ_LOCK_CLAIM);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Store a committed offset.  Forward-only commits (auto-commit) never move
 * a group's position back over what another consumer committed meanwhile.
 */
static void
store_offset(text *group, MqTopic *topic, int32 partition, int64 next,
			 Datum metadata, bool metadata_null, bool forward_only)
{
	static SPIPlanPtr plans[2] = {NULL, NULL};
	Datum		args[5];
	char		argnulls[5] = {' ', ' ', ' ', ' ', ' '};
	MqSpiSave	spi;

	args[0] = PointerGetDatum(group);
	args[1] = Int32GetDatum(topic->topic_id);
	args[2] = Int32GetDatum(partition);
	args[3] = Int64GetDatum(next);
	args[4] = metadata;
	if (metadata_null)
		argnulls[4] = 'n';

	mq_spi_begin(&spi);
	if (plans[forward_only] == NULL)
	{
		Oid			argtypes[5] = {TEXTOID, INT4OID, INT4OID, INT8OID, TEXTOID};

		plans[forward_only] =
			mq_spi_prepare(forward_only ?
						   "INSERT INTO mq.consumer_offset AS c "
						   "  (group_id, topic_id, partition, next_offset, metadata) "
						   "VALUES ($1, $2, $3, $4, $5) "
						   "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
						   "SET next_offset = EXCLUDED.next_offset, committed_at = pg_catalog.now() "
						   "WHERE c.next_offset < EXCLUDED.next_offset" :
						   "INSERT INTO mq.consumer_offset AS c "
						   "  (group_id, topic_id, partition, next_offset, metadata) "
						   "VALUES ($1, $2, $3, $4, $5) "
						   "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
						   "SET next_offset = EXCLUDED.next_offset, metadata = EXCLUDED.metadata, "
						   "    committed_at = pg_catalog.now()",
						   5, argtypes);
	}
	if (SPI_execute_plan(plans[forward_only], args, argnulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "mq: offset commit failed");
	mq_spi_end(&spi);
}

/* Commit what this session's previous auto-commit poll of group/topic returned. */
static void
auto_commit(text *group, MqTopic *topic)
{
	HASH_SEQ_STATUS status;
	Position   *pos;
	PositionKey probe;

	if (pending_autocommit == NULL)
		return;
	position_key(&probe, group, topic, 0);
	hash_seq_init(&status, pending_autocommit);
	while ((pos = hash_seq_search(&status)) != NULL)
	{
		if (pos->key.topic_id != probe.topic_id ||
			strcmp(pos->key.group, probe.group) != 0)
			continue;
		if (pos->key.partition < topic->npartitions)
			store_offset(group, topic, pos->key.partition, pos->next_offset,
						 (Datum) 0, true, true);
		hash_search(pending_autocommit, &pos->key, HASH_REMOVE, NULL);
	}
}

typedef enum OffsetReset
{
	RESET_EARLIEST,
	RESET_LATEST,
	RESET_NONE
} OffsetReset;

static OffsetReset
parse_offset_reset(text *t)
{
	char	   *s = text_to_cstring(t);

	if (strcmp(s, "earliest") == 0)
		return RESET_EARLIEST;
	if (strcmp(s, "latest") == 0)
		return RESET_LATEST;
	if (strcmp(s, "none") == 0)
		return RESET_NONE;
	ereport(ERROR,
			(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
			 errmsg("invalid auto_offset_reset \"%s\"", s),
			 errhint("Use earliest, latest or none.")));
	return RESET_NONE;			/* keep the compiler quiet */
}

/*
 * Where a consumer reads next: its position (-1 for none) when that is
 * still in the log, else as auto_offset_reset says (Kafka's
 * auto.offset.reset).
 */
static int64
start_position(int64 pos, MqTopic *topic, MqPartition *part, OffsetReset reset)
{
	if (pos >= part->log_start)
		return pos;
	if (reset == RESET_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 pos < 0 ?
				 errmsg("group has no committed offset for topic \"%s\" partition %d",
						topic->name, part->partition) :
				 errmsg("the group's committed offset " INT64_FORMAT " for topic \"%s\" partition %d is below the log start " INT64_FORMAT,
						pos, topic->name, part->partition, part->log_start),
				 errhint("Commit a position with mq.commit_offset(), or poll with auto_offset_reset => 'earliest' or 'latest'.")));
	if (reset == RESET_LATEST)
		return mq_log_end_offset(part, GetActiveSnapshot());
	return part->log_start;
}

/* Partitions a group member owns now, as a bitmap over the topic's partitions. */
static bool *
member_partitions(text *group, MqTopic *topic, text *member)
{
	static SPIPlanPtr plan = NULL;
	bool	   *owned = palloc0(sizeof(bool) * topic->npartitions);
	Datum		args[3] = {PointerGetDatum(group), Int32GetDatum(topic->topic_id), PointerGetDatum(member)};
	MqSpiSave	spi;
	bool		isnull;

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[3] = {TEXTOID, INT4OID, TEXTOID};

		plan = mq_spi_prepare("SELECT unnest(mq._member_partitions($1, $2, $3))", 3, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "mq: member assignment lookup failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int32		p = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && p >= 0 && p < topic->npartitions)
			owned[p] = true;
	}
	mq_spi_end(&spi);
	return owned;
}

/*
 * mq.poll(group_id, topic, max_records, auto_commit, max_wait_ms, min_records,
 * member_id, auto_offset_reset): records from the group's positions, over
 * the partitions this caller could claim (and, for a group member, owns).
 * Partitions are visited from a rotating start so that one busy partition
 * does not starve the others.
 */
Datum
mq_poll(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic", "max_records", "auto_commit"};
	static uint32 rotation = 0;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *group;
	MqTopic    *topic;
	int32		max;
	bool		autocommit;
	bool	   *owned = NULL;
	OffsetReset reset = RESET_EARLIEST;
	int			got = 0;
	LongPoll	lp;

	check_not_null(fcinfo, 4, names);
	group = PG_GETARG_TEXT_PP(0);
	check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	max = PG_GETARG_INT32(2);
	check_max_records(max);
	autocommit = PG_GETARG_BOOL(3);
	long_poll_start(&lp, fcinfo, 4, 5, topic->topic_id);
	if (!PG_ARGISNULL(7))
		reset = parse_offset_reset(PG_GETARG_TEXT_PP(7));

	if (autocommit)
		auto_commit(group, topic);

	InitMaterializedSRF(fcinfo, 0);
	do
	{
		if (!PG_ARGISNULL(6))
			owned = member_partitions(group, topic, PG_GETARG_TEXT_PP(6));
		rotation++;
		for (int i = 0; i < topic->npartitions && got < max; i++)
		{
			MqPartition *part = &topic->parts[(rotation + i) % topic->npartitions];
			PositionKey key;
			Position   *known = NULL;
			int64		pos;
			int			n;

			if (owned != NULL && !owned[part->partition])
				continue;
			position_key(&key, group, topic, part->partition);
			if (!claim_partition(&key))
				continue;
			if (xact_positions != NULL)
				known = hash_search(xact_positions, &key, HASH_FIND, NULL);
			pos = start_position(known ? known->next_offset :
								 committed_position(group, topic, part->partition),
								 topic, part, reset);
			n = read_partition(topic, part, pos, max - got, PG_GETARG_DATUM(1),
							   rsinfo->setResult, rsinfo->setDesc);
			got += n;
			set_position(&xact_positions, TopTransactionContext, &key, pos + n);
			if (autocommit && n > 0)
				set_position(&pending_autocommit, TopMemoryContext, &key, pos + n);
		}
	} while (long_poll_again(&lp, got, max, topic->topic_id));
	return (Datum) 0;
}

/* A group member's commit: current generation, owned partition. */
static void
check_member_commit(text *group, MqTopic *topic, int32 partition,
					NullableDatum member, NullableDatum generation)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[5] = {PointerGetDatum(group), Int32GetDatum(topic->topic_id),
	Int32GetDatum(partition), member.value, generation.value};
	char		nulls[5] = {' ', ' ', ' ', member.isnull ? 'n' : ' ', generation.isnull ? 'n' : ' '};
	MqSpiSave	spi;

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[5] = {TEXTOID, INT4OID, INT4OID, TEXTOID, INT4OID};

		plan = mq_spi_prepare("SELECT mq._check_member_commit($1, $2, $3, $4, $5)", 5, argtypes);
	}
	if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "mq: member check failed");
	mq_spi_end(&spi);
	PopActiveSnapshot();
}

/*
 * mq.commit_offset(group_id, topic, partition, next_offset, metadata,
 * producer_id, producer_epoch, member_id, generation_id).  With a producer,
 * the commit is fenced like a send: a zombie instance of a transactional
 * consumer cannot commit.  With a member, the commit must come from the
 * group's current generation and from the partition's owner.
 */
Datum
mq_commit_offset(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic", "partition", "next_offset"};
	text	   *group;
	MqTopic    *topic;
	MqPartition *part;
	PositionKey key;
	int64		next;
	int64		end;

	check_not_null(fcinfo, 4, names);
	group = PG_GETARG_TEXT_PP(0);
	check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	part = mq_topic_partition(topic, PG_GETARG_INT32(2));
	next = PG_GETARG_INT64(3);

	if (PG_ARGISNULL(5) != PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_id and producer_epoch must be given together")));
	if (!PG_ARGISNULL(5))
		mq_producer_check_epoch(PG_GETARG_INT64(5), PG_GETARG_INT32(6));
	if (!PG_ARGISNULL(7) || !PG_ARGISNULL(8))
		check_member_commit(group, topic, part->partition, fcinfo->args[7], fcinfo->args[8]);

	if (next < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("cannot commit negative offset " INT64_FORMAT, next),
				 errhint("Commit the offset of the next record to read: the last processed offset plus one.")));
	end = mq_log_end_offset(part, GetActiveSnapshot());
	if (next > end)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("cannot commit offset " INT64_FORMAT " for topic \"%s\" partition %d: the log ends at " INT64_FORMAT,
						next, topic->name, part->partition, end),
				 errhint("Commit the offset of the next record to read: the last processed offset plus one.")));

	store_offset(group, topic, part->partition, next,
				 PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4), PG_ARGISNULL(4), false);
	position_key(&key, group, topic, part->partition);
	set_position(&xact_positions, TopTransactionContext, &key, next);
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
	check_group(PG_GETARG_TEXT_PP(0));
	mq_group_authorize(PG_GETARG_TEXT_PP(0), MQ_ACL_DESCRIBE);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_DESCRIBE);
	(void) mq_topic_partition(topic, PG_GETARG_INT32(2));
	pos = committed_position(PG_GETARG_TEXT_PP(0), topic, PG_GETARG_INT32(2));
	if (pos < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(pos);
}

/*
 * mq.commit_polled(group_id, topic): commit, for every partition this
 * transaction polled, the position after the last record polled (or the
 * offset commit_offset set since).  Returns the number of partitions.
 * The exactly-once loop is then BEGIN; poll; work; commit_polled; COMMIT.
 */
Datum
mq_commit_polled(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"group_id", "topic"};
	text	   *group;
	MqTopic    *topic;
	PositionKey probe;
	HASH_SEQ_STATUS status;
	Position   *pos;
	int			n = 0;

	check_not_null(fcinfo, 2, names);
	group = PG_GETARG_TEXT_PP(0);
	check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	if (xact_positions == NULL)
		PG_RETURN_INT32(0);

	position_key(&probe, group, topic, 0);
	hash_seq_init(&status, xact_positions);
	while ((pos = hash_seq_search(&status)) != NULL)
	{
		if (pos->key.topic_id != probe.topic_id || strcmp(pos->key.group, probe.group) != 0)
			continue;
		store_offset(group, topic, pos->key.partition, pos->next_offset, (Datum) 0, true, false);
		n++;
	}
	PG_RETURN_INT32(n);
}
