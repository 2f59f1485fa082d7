/*-------------------------------------------------------------------------
 *
 * offsets.c
 *	  Consumer group positions and committed offsets: mq.commit_offset,
 *	  mq.committed_offset (and mq._committed_position, the same with the
 *	  offset's metadata, for mq-kafka's OffsetFetch), mq.commit_polled,
 *	  and the positions mq.poll (poll.c) reads from and advances.
 *
 * Within a transaction a poll advances the consumer's position (as a
 * Kafka consumer's position advances in memory), and commit_offset sets
 * it.  With auto_commit, a poll first commits what the previous
 * auto-commit poll of that group and topic returned: a group member's,
 * wherever it ran (a row of mq.poll_pending: under transaction pooling
 * each poll may run in another server session, shared with other
 * clients); without member_id, the same session's (memory, which DISCARD
 * ALL, a pooler's reset query between clients, drops, so the batch is
 * delivered again, as when a session ends; docs/operations.md).
 *
 * Locking: committed offsets are rows of mq.consumer_offset, written by
 * upsert as the extension owner (spi.c); a concurrent commit of the same
 * partition waits on the row, and a member's pending batch is a row of
 * mq.poll_pending per group partition, taken over by the member that
 * polls the partition next.  Each commit that changed a row is then
 * appended to __consumer_offsets (consumer_offsets.c), under that topic
 * partition's produce lock.  A commit holds its topic's table in
 * AccessShareLock to its end (hold_topic), so that drop_topic, which takes
 * it in AccessExclusiveLock, waits for it, and so does add_partitions.
 * The positions themselves are backend-local
 * (positions.c), taken back with the (sub)transaction that changed them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_commit_offset);
PG_FUNCTION_INFO_V1(mq_check_offset_metadata_sql);
PG_FUNCTION_INFO_V1(mq_committed_offset);
PG_FUNCTION_INFO_V1(mq_committed_position);
PG_FUNCTION_INFO_V1(mq_commit_polled);

/*
 * The group's committed offset of a partition and its metadata, as the
 * latest snapshot has them, into values[0..1] (nulls[] true where there
 * is none; the metadata copied out of SPI's memory).
 */
static void
committed_row(text *group, MqTopic *topic, int32 partition, Datum *values, bool *nulls)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[3] = {TEXTOID, INT4OID, INT4OID};
	Datum		args[3] = {PointerGetDatum(group), Int32GetDatum(topic->topic_id),
					 Int32GetDatum(partition)};
	MqSpiSave	spi;

	nulls[0] = nulls[1] = true;
	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
		plan = mq_spi_prepare("SELECT next_offset, metadata FROM mq.consumer_offset "
							  "WHERE group_id = $1 AND topic_id = $2 AND partition = $3",
							  3, argtypes);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: the committed offset could not be read");
	if (SPI_processed == 1)
		for (int i = 0; i < 2; i++)
		{
			values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1,
									  &nulls[i]);
			if (!nulls[i])
				values[i] = SPI_datumTransfer(values[i], i == 0, i == 0 ? sizeof(int64) : -1);
		}
	mq_spi_end(&spi);
	PopActiveSnapshot();
}

/* The group's committed position, or -1 when it has none. */
static int64
committed_position(text *group, MqTopic *topic, int32 partition)
{
	Datum		values[2];
	bool		nulls[2];

	committed_row(group, topic, partition, values, nulls);
	return nulls[0] ? -1 : DatumGetInt64(values[0]);
}

/*
 * An offset commit's metadata, at most MQ_OFFSET_METADATA_MAX bytes (Kafka's
 * offset.metadata.max.bytes); NULL is none.
 */
void
mq_check_offset_metadata(text *metadata)
{
	if (metadata && VARSIZE_ANY_EXHDR(metadata) > MQ_OFFSET_METADATA_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_METADATA_TOO_LARGE),
				 errmsg("offset metadata of %zu bytes is over the limit of %d bytes",
						(size_t) VARSIZE_ANY_EXHDR(metadata), MQ_OFFSET_METADATA_MAX)));
}

/* mq._check_offset_metadata(metadata): the same check for SQL callers */
Datum
mq_check_offset_metadata_sql(PG_FUNCTION_ARGS)
{
	mq_check_offset_metadata(PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0));
	PG_RETURN_VOID();
}

/*
 * drop_topic drops the topic's tables, then deletes its committed offsets
 * (a trigger on mq.partition_state).  A commit holds the topic's table in
 * AccessShareLock until it ends: a drop waits for it and then deletes what
 * it committed, and a commit that waited for a drop finds the topic gone
 * (MQ001) instead of storing an offset nothing would delete.  A cache
 * rebuilt meanwhile leaves topic valid (topic.c keeps the old one to the
 * end of the transaction).
 */
static void
hold_topic(MqTopic *topic)
{
	if (!OidIsValid(topic->relid))
		return;
	LockRelationOid(topic->relid, AccessShareLock);
	if (mq_topic_by_id(topic->topic_id, true) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_TOPIC),
				 errmsg("topic \"%s\" was dropped while an offset of it was committed", topic->name)));
}

/*
 * Store a committed offset.  Forward-only commits (auto-commit) never move
 * a group's position back over what another consumer committed meanwhile,
 * except from replaces (>= 0), a commit beyond the log end a poll reset.
 */
static void
store_offset(text *group, MqTopic *topic, int32 partition, int64 next,
			 Datum metadata, bool metadata_null, bool forward_only, int64 replaces)
{
	static SPIPlanPtr plans[2] = {NULL, NULL};
	Datum		args[6];
	char		argnulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	MqSpiSave	spi;
	MemoryContext outer = CurrentMemoryContext;

	hold_topic(topic);
	/* replicated: the leader alone takes commits, and followers copy them */
	if (mq_topic_partition(topic, partition)->replicated)
		mq_commit_note_offsets(topic, partition);
	args[0] = PointerGetDatum(group);
	args[1] = Int32GetDatum(topic->topic_id);
	args[2] = Int32GetDatum(partition);
	args[3] = Int64GetDatum(next);
	args[4] = metadata;
	if (metadata_null)
		argnulls[4] = 'n';
	args[5] = Int64GetDatum(replaces);
	if (replaces < 0)
		argnulls[5] = 'n';

	mq_spi_begin(&spi);
	if (plans[forward_only] == NULL)
	{
		Oid			argtypes[6] = {TEXTOID, INT4OID, INT4OID, INT8OID, TEXTOID, INT8OID};

		plans[forward_only] =
			mq_spi_prepare(forward_only ?
						   "INSERT INTO mq.consumer_offset AS c "
						   "  (group_id, topic_id, partition, next_offset, metadata) "
						   "VALUES ($1, $2, $3, $4, $5) "
						   "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
						   "SET next_offset = EXCLUDED.next_offset, committed_at = pg_catalog.now() "
						   "WHERE c.next_offset < EXCLUDED.next_offset "
						   "   OR c.next_offset = $6 RETURNING c.metadata" :
						   "INSERT INTO mq.consumer_offset AS c "
						   "  (group_id, topic_id, partition, next_offset, metadata) "
						   "VALUES ($1, $2, $3, $4, $5) "
						   "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
						   "SET next_offset = EXCLUDED.next_offset, metadata = EXCLUDED.metadata, "
						   "    committed_at = pg_catalog.now() RETURNING c.metadata",
						   6, argtypes);
	}
	if (SPI_execute_plan(plans[forward_only], args, argnulls, false, 0) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "mq: offset commit failed");
	/* the commit's record in __consumer_offsets, unless nothing changed */
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		stored = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext spi_cxt = MemoryContextSwitchTo(outer);
		text	   *meta = isnull ? NULL : (text *) PG_DETOAST_DATUM_COPY(stored);

		MemoryContextSwitchTo(spi_cxt);

		mq_spi_end(&spi);
		mq_consumer_offsets_note(group, topic->name, partition, next, meta,
								 GetCurrentTimestamp());
		return;
	}
	mq_spi_end(&spi);
}

/* A member's poll (member_id given), whose batch is a row: not on a
 * standby, which writes nothing (the session keeps it, and commits fail) */
static bool
is_member(text *member)
{
	return member != NULL && VARSIZE_ANY_EXHDR(member) > 0 && !RecoveryInProgress();
}

/* Take (delete) the member's pending batches of group/topic; *n: how many. */
static MqPendingBatch *
take_member_pending(text *group, MqTopic *topic, text *member, int *n)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[3] = {PointerGetDatum(group), Int32GetDatum(topic->topic_id), PointerGetDatum(member)};
	MemoryContext outer = CurrentMemoryContext;
	MqPendingBatch *taken;
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[3] = {TEXTOID, INT4OID, TEXTOID};

		plan = mq_spi_prepare("DELETE FROM mq.poll_pending p WHERE p.group_id OPERATOR(pg_catalog.=) $1 "
							  "AND p.topic_id OPERATOR(pg_catalog.=) $2 AND p.member_id OPERATOR(pg_catalog.=) $3 "
							  "RETURNING p.partition, p.next_offset, p.replaces", 3, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "mq: taking the pending batches failed");
	*n = (int) SPI_processed;
	taken = MemoryContextAlloc(outer, sizeof(MqPendingBatch) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		taken[i].partition = DatumGetInt32(SPI_getbinval(row, desc, 1, &isnull));
		taken[i].next_offset = DatumGetInt64(SPI_getbinval(row, desc, 2, &isnull));
		taken[i].replaces = DatumGetInt64(SPI_getbinval(row, desc, 3, &isnull));
	}
	mq_spi_end(&spi);
	return taken;
}

/*
 * A member's poll returned records of key's partition up to next (from
 * replaces, a reset beyond the log end, or -1): its next poll commits
 * that, wherever it runs.  Another member's batch of the partition is
 * replaced, not committed: it is delivered again.
 */
static void
keep_member_pending(MqPositionKey *key, text *member, int64 next, int64 replaces)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[6] = {CStringGetTextDatum(key->group), Int32GetDatum(key->topic_id),
					 Int32GetDatum(key->partition), PointerGetDatum(member), Int64GetDatum(next),
					 Int64GetDatum(replaces)};
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[6] = {TEXTOID, INT4OID, INT4OID, TEXTOID, INT8OID, INT8OID};

		/* the same member's batch of this poll keeps the reset it began with */
		plan = mq_spi_prepare("INSERT INTO mq.poll_pending AS p "
							  "  (group_id, topic_id, partition, member_id, next_offset, replaces) "
							  "VALUES ($1, $2, $3, $4, $5, $6) "
							  "ON CONFLICT (group_id, topic_id, partition) DO UPDATE "
							  "SET next_offset = EXCLUDED.next_offset, "
							  "    replaces = CASE WHEN p.member_id OPERATOR(pg_catalog.=) EXCLUDED.member_id "
							  "                     AND EXCLUDED.replaces OPERATOR(pg_catalog.<) 0 "
							  "                    THEN p.replaces ELSE EXCLUDED.replaces END, "
							  "    member_id = EXCLUDED.member_id",
							  6, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "mq: keeping the pending batch failed");
	mq_spi_end(&spi);
}

/*
 * Commit what the previous auto-commit poll of group/topic returned: by
 * the same member, wherever it ran, or by no member in this session.
 */
void
mq_auto_commit(text *group, MqTopic *topic, text *member)
{
	MqPositionKey probe;
	MqPendingBatch *taken;
	int			n;

	mq_position_key(&probe, group, topic, 0);
	taken = is_member(member) ? take_member_pending(group, topic, member, &n)
		: mq_position_list(&probe, true, &n);
	for (int i = 0; i < n; i++)
		if (taken[i].partition < topic->npartitions)
			store_offset(group, topic, taken[i].partition, taken[i].next_offset,
						 (Datum) 0, true, true, taken[i].replaces);
	pfree(taken);
}

/*
 * Where a poll of key's partition starts, before auto_offset_reset: this
 * transaction's position, else the group's committed position (-1: none).
 */
int64
mq_position_current(MqPositionKey *key, text *group, MqTopic *topic)
{
	int64		next;

	return mq_position_xact(key, &next) ? next : committed_position(group, topic, key->partition);
}

/*
 * The batch an auto-commit poll returned, up to next (from replaces, or
 * -1), for the next poll to commit: a member's in mq.poll_pending, a poll
 * without member_id's in this session.
 */
static void
keep_pending(MqPositionKey *key, text *member, int64 next, int64 replaces)
{
	if (is_member(member))
		keep_member_pending(key, member, next, replaces);
	else
		mq_position_keep_pending(key, next, replaces);
}

/* A poll (by member, or NULL) returned records up to next: advance the positions it keeps. */
void
mq_position_advance(MqPositionKey *key, int64 next, bool autocommit, int n, text *member)
{
	mq_position_set_xact(key, next);
	if (autocommit && n > 0)
		keep_pending(key, member, next, -1);
}

/*
 * A poll found the position (from) beyond the log end and resets it to
 * next: the next auto-commit may store next although it is lower, as a
 * Kafka consumer commits its reset position.
 */
void
mq_position_reset(MqPositionKey *key, int64 from, int64 next, bool autocommit, text *member)
{
	mq_position_set_xact(key, next);
	if (autocommit)
		keep_pending(key, member, next, from);
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
 * producer_id, producer_epoch, member_id, generation_id).  Any offset not
 * negative is stored, beyond the log end too, as Kafka's coordinator
 * stores what a client commits; a poll from beyond the end resets as
 * auto_offset_reset says (poll.c).  With a producer,
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
	MqPositionKey key;
	int64		next;

	mq_check_not_null(fcinfo->args, 4, names);
	group = PG_GETARG_TEXT_PP(0);
	mq_check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	part = mq_topic_partition(topic, PG_GETARG_INT32(2));
	next = PG_GETARG_INT64(3);

	if (PG_ARGISNULL(5) != PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_id and producer_epoch must be given together")));
	if (!PG_ARGISNULL(5))
		mq_producer_check_epoch(PG_GETARG_INT64(5), PG_GETARG_INT32(6), -1);
	if (!PG_ARGISNULL(7) || !PG_ARGISNULL(8))
		check_member_commit(group, topic, part->partition, fcinfo->args[7], fcinfo->args[8]);

	mq_check_offset_metadata(PG_ARGISNULL(4) ? NULL : PG_GETARG_TEXT_PP(4));
	if (next < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 errmsg("cannot commit negative offset " INT64_FORMAT, next),
				 errhint("Commit the offset of the next record to read: the last processed offset plus one.")));
	if (part->replicated)
		mq_replica_check_leader(topic, part->partition);

	store_offset(group, topic, part->partition, next,
				 PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4), PG_ARGISNULL(4), false, -1);
	mq_position_key(&key, group, topic, part->partition);
	mq_position_set_xact(&key, next);
	PG_RETURN_VOID();
}

/*
 * The checks of mq.committed_offset and mq._committed_position: the
 * partition's topic, or NULL for a group id too long to have been stored
 */
static MqTopic *
committed_topic(FunctionCallInfo fcinfo)
{
	static const char *const names[] = {"group_id", "topic", "partition"};
	MqTopic    *topic;

	mq_check_not_null(fcinfo->args, 3, names);
	if (!mq_check_group_read(PG_GETARG_TEXT_PP(0)))
		return NULL;
	mq_group_authorize(PG_GETARG_TEXT_PP(0), MQ_ACL_DESCRIBE);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_DESCRIBE);
	(void) mq_topic_partition(topic, PG_GETARG_INT32(2));
	return topic;
}

/* mq.committed_offset(group_id, topic, partition): NULL when none */
Datum
mq_committed_offset(PG_FUNCTION_ARGS)
{
	MqTopic    *topic = committed_topic(fcinfo);
	int64		pos;

	if (topic == NULL)
		PG_RETURN_NULL();
	pos = committed_position(PG_GETARG_TEXT_PP(0), topic, PG_GETARG_INT32(2));
	if (pos < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(pos);
}

/*
 * mq._committed_position(group_id, topic, partition): the committed
 * offset and its metadata, read together (both null when none), with
 * mq.committed_offset's checks.  mq-kafka's OffsetFetch reads it per
 * partition; it read the metadata from all of the group's offsets before,
 * for each partition asked (quadratic in the group's partitions).
 */
Datum
mq_committed_position(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	MqTopic    *topic;
	Datum		values[2];
	bool		nulls[2] = {true, true};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mq: _committed_position must return a record");
	topic = committed_topic(fcinfo);
	if (topic != NULL)
		committed_row(PG_GETARG_TEXT_PP(0), topic, PG_GETARG_INT32(2), values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
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
	MqPositionKey probe;
	MqPendingBatch *polled;
	int			n;

	mq_check_not_null(fcinfo->args, 2, names);
	group = PG_GETARG_TEXT_PP(0);
	mq_check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	mq_position_key(&probe, group, topic, 0);
	polled = mq_position_list(&probe, false, &n);
	for (int i = 0; i < n; i++)
		store_offset(group, topic, polled[i].partition, polled[i].next_offset, (Datum) 0, true, false, -1);
	pfree(polled);
	PG_RETURN_INT32(n);
}
