/*-------------------------------------------------------------------------
 *
 * poll.c
 *	  mq.poll: reading from a consumer group's positions, over the
 *	  partitions the caller could claim and, for a group member, owns.
 *
 * Locking: poll claims each partition it reads for the group with an
 * advisory lock (MQ_LOCK_CLAIM) that lasts until the poller's transaction
 * ends.  Claims are taken with a conditional acquire: a concurrent poller
 * of the same group skips the claimed partitions instead of waiting, so
 * the two get disjoint records.  The committed position is read after the
 * claim, with the latest snapshot, so a poller that takes over a
 * partition right after another committed starts where that one stopped.
 * A member's partitions are looked up again on every read of a long poll.
 * The partitions argument restricts a poll to the partitions it names: a
 * client of a replicated cluster polls each leader for the partitions that
 * leader leads (a partition named but not led still raises MQ020).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_poll);

/* Claim a group's partition for this transaction, without waiting. */
static bool
claim_partition(MqPositionKey *key)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash_combine(key->group_hash, (uint32) key->topic_id),
						 (uint32) key->partition, MQ_LOCK_CLAIM);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

typedef enum OffsetReset
{
	RESET_EARLIEST,
	RESET_LATEST,
	RESET_NONE,
	RESET_BY_DURATION
} OffsetReset;

#define BY_DURATION "by_duration:"

/*
 * earliest, latest, none, or Kafka's by_duration:<ISO 8601 duration>
 * (KIP-1106): the first record at or after now minus the duration, whose
 * time *since is set to.
 */
static OffsetReset
parse_offset_reset(text *t, TimestampTz *since)
{
	char	   *s = text_to_cstring(t);

	if (strcmp(s, "earliest") == 0)
		return RESET_EARLIEST;
	if (strcmp(s, "latest") == 0)
		return RESET_LATEST;
	if (strcmp(s, "none") == 0)
		return RESET_NONE;
	if (strncmp(s, BY_DURATION, strlen(BY_DURATION)) == 0 && s[strlen(BY_DURATION)] == 'P')
	{
		MemoryContext cxt = CurrentMemoryContext;

		/*
		 * A bad or huge duration is a bad argument (MQ010), not the
		 * datetime SQLSTATE interval_in would raise: rethrown at once.
		 */
		PG_TRY();
		{
			Datum		iv = DirectFunctionCall3(interval_in,
												 CStringGetDatum(s + strlen(BY_DURATION)),
												 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));

			*since = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
															 TimestampTzGetDatum(GetCurrentTimestamp()), iv));
		}
		PG_CATCH();
		{
			ErrorData  *e;

			MemoryContextSwitchTo(cxt);
			e = CopyErrorData();
			FlushErrorState();
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("invalid auto_offset_reset \"%s\": %s", s, e->message),
					 errhint("Use earliest, latest, none or by_duration:<ISO 8601 duration> (by_duration:PT1H).")));
		}
		PG_END_TRY();
		return RESET_BY_DURATION;
	}
	ereport(ERROR,
			(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
			 errmsg("invalid auto_offset_reset \"%s\"", s),
			 errhint("Use earliest, latest, none or by_duration:<ISO 8601 duration> (by_duration:PT1H).")));
	return RESET_NONE;			/* keep the compiler quiet */
}

/*
 * Where a consumer reads next: its position (-1 for none) when that is
 * still in the log, else as auto_offset_reset says (Kafka's
 * auto.offset.reset).
 */
static int64
start_position(int64 pos, MqTopic *topic, MqPartition *part, OffsetReset reset,
			   TimestampTz since)
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
	if (reset == RESET_BY_DURATION)
	{
		int			descents = 0;

		return mq_offset_for_time(part, since, GetActiveSnapshot(), &descents);
	}
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

/* The partitions argument as a bitmap over the topic's partitions. */
static bool *
listed_partitions(ArrayType *arr, MqTopic *topic)
{
	bool	   *listed = palloc0(sizeof(bool) * topic->npartitions);
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(arr, INT4OID, sizeof(int32), true, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		int32		p = nulls[i] ? -1 : DatumGetInt32(elems[i]);

		if (p < 0 || p >= topic->npartitions)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
					 errmsg("topic \"%s\" has no partition %d", topic->name, p)));
		listed[p] = true;
	}
	return listed;
}

/*
 * mq.poll(group_id, topic, max_records, auto_commit, max_wait_ms, min_records,
 * member_id, auto_offset_reset, partitions): records from the group's positions, over
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
	bool	   *listed = NULL;
	OffsetReset reset = RESET_EARLIEST;
	TimestampTz since = 0;
	int			got = 0;
	MqLongPoll	lp;

	mq_check_not_null(fcinfo, 4, names);
	group = PG_GETARG_TEXT_PP(0);
	mq_check_group(group);
	mq_group_authorize(group, MQ_ACL_READ);
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(1), MQ_ACL_READ);
	max = PG_GETARG_INT32(2);
	mq_check_max_records(max);
	autocommit = PG_GETARG_BOOL(3);
	mq_long_poll_start(&lp, fcinfo, 4, 5, topic->topic_id);
	if (!PG_ARGISNULL(7))
		reset = parse_offset_reset(PG_GETARG_TEXT_PP(7), &since);
	if (PG_NARGS() > 8 && !PG_ARGISNULL(8))
		listed = listed_partitions(PG_GETARG_ARRAYTYPE_P(8), topic);

	if (autocommit)
		mq_auto_commit(group, topic);

	InitMaterializedSRF(fcinfo, 0);
	do
	{
		if (!PG_ARGISNULL(6))
			owned = member_partitions(group, topic, PG_GETARG_TEXT_PP(6));
		rotation++;
		for (int i = 0; i < topic->npartitions && got < max; i++)
		{
			MqPartition *part = &topic->parts[(rotation + i) % topic->npartitions];
			MqPositionKey key;
			int64		pos;
			int64		next;
			int			n;

			if ((owned != NULL && !owned[part->partition]) ||
				(listed != NULL && !listed[part->partition]))
				continue;
			mq_position_key(&key, group, topic, part->partition);
			if (!claim_partition(&key))
				continue;
			pos = start_position(mq_position_current(&key, group, topic),
								 topic, part, reset, since);
			n = mq_read_partition(topic, part, pos, max - got, PG_GETARG_DATUM(1),
								  rsinfo->setResult, rsinfo->setDesc, &next, NULL);
			got += n;
			mq_position_advance(&key, next, autocommit, n);
		}
	} while (mq_long_poll_again(&lp, got, max, topic->topic_id));
	return (Datum) 0;
}
