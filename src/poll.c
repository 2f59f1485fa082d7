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
 * Where a consumer whose position is out of the log reads next, as
 * auto_offset_reset says (Kafka's auto.offset.reset): no position (-1),
 * one below the log start (retention, delete_records), or one beyond the
 * log end (a commit past it, as Kafka stores any offset).
 */
static int64
reset_position(int64 pos, int64 end, MqTopic *topic, MqPartition *part, OffsetReset reset,
			   TimestampTz since, Snapshot snapshot)
{
	if (reset == RESET_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OFFSET_OUT_OF_RANGE),
				 pos < 0 ?
				 errmsg("group has no committed offset for topic \"%s\" partition %d",
						topic->name, part->partition) :
				 pos < part->log_start ?
				 errmsg("the group's committed offset " INT64_FORMAT " for topic \"%s\" partition %d is below the log start " INT64_FORMAT,
						pos, topic->name, part->partition, part->log_start) :
				 errmsg("the group's committed offset " INT64_FORMAT " for topic \"%s\" partition %d is beyond the log end " INT64_FORMAT,
						pos, topic->name, part->partition, end),
				 errhint("Commit a position with mq.commit_offset(), or poll with auto_offset_reset => 'earliest' or 'latest'.")));
	if (reset == RESET_LATEST)
		return end >= 0 ? end : mq_log_end_offset(part, snapshot);
	if (reset == RESET_BY_DURATION)
	{
		int			descents = 0;

		return mq_offset_for_time(part, since, snapshot, &descents);
	}
	return part->log_start;
}

/*
 * Where a consumer reads next: its position (-1 for none) when that is
 * not below the log start; beyond the log end is found once its read
 * comes back empty (poll_read_done), which spares a read of the log end
 * on every poll.
 */
static int64
start_position(int64 pos, MqTopic *topic, MqPartition *part, OffsetReset reset,
			   TimestampTz since, Snapshot snapshot)
{
	if (pos >= part->log_start)
		return pos;
	return reset_position(pos, -1, topic, part, reset, since, snapshot);
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
		int32		p;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("partitions must not contain null")));
		p = DatumGetInt32(elems[i]);
		if (p < 0 || p >= topic->npartitions)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
					 errmsg("topic \"%s\" has no partition %d", topic->name, p)));
		listed[p] = true;
	}
	return listed;
}

/* What a poll keeps between its reads. */
typedef struct PollState
{
	text	   *group;
	bool		autocommit;
	text	   *member;			/* NULL: not a group member */
	OffsetReset reset;
	TimestampTz since;
	bool	   *owned;			/* the member's partitions in this pass */
	bool	   *listed;			/* the partitions argument, or NULL */
	uint32		rotation;		/* where this pass starts */
	int			visited;		/* partitions of this pass looked at */
	MqPositionKey key;			/* of the partition being read */
} PollState;

/*
 * The pass's next partition this caller owns (if a member), the call
 * lists (if it does) and could claim, read from the group's position.
 * Partitions are visited from a rotating start so that one busy partition
 * does not starve the others.
 */
static bool
poll_start_read(MqFeed *f)
{
	static uint32 rotation = 0;
	PollState  *ps = f->priv;
	MqTopic    *topic = f->topic;

	if (f->step++ == 0)
	{
		if (ps->member != NULL)
			ps->owned = member_partitions(ps->group, topic, ps->member);
		ps->rotation = ++rotation;
		ps->visited = 0;
	}
	while (ps->visited < topic->npartitions)
	{
		MqPartition *part = &topic->parts[(ps->rotation + ps->visited++) % topic->npartitions];
		int64		pos;

		if ((ps->owned != NULL && !ps->owned[part->partition]) ||
			(ps->listed != NULL && !ps->listed[part->partition]))
			continue;
		mq_position_key(&ps->key, ps->group, topic, part->partition);
		if (!claim_partition(&ps->key))
			continue;
		pos = start_position(mq_position_current(&ps->key, ps->group, topic),
							 topic, part, ps->reset, ps->since, f->snapshot);
		mq_feed_read_partition(f, part, pos, NULL);
		return true;
	}
	return false;
}

/*
 * The log end as the latest snapshot sees it: the committed position was
 * read with a newer snapshot than the read's (READ COMMITTED), and may
 * be past records another consumer read after the read's snapshot was
 * taken; those are in the log, so the position is not beyond its end.
 */
static int64
latest_log_end(MqPartition *part)
{
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
	int64		end = mq_log_end_offset(part, latest);

	UnregisterSnapshot(latest);
	return end;
}

/*
 * Did a read that found nothing start beyond the log end?  Then the
 * position resets, and the pass reads the partition again from there.
 * The log end is read once per position this backend has not seen inside
 * the log yet (offsets.c).
 */
static bool
reset_if_beyond_end(MqFeed *f, PollState *ps)
{
	MqPartition *part = f->reader.part;
	int64		end;

	if (f->reader.from <= part->log_start || mq_position_in_log(&ps->key, f->reader.from))
		return false;
	end = latest_log_end(part);
	if (f->reader.from <= end)
	{
		mq_position_note_in_log(&ps->key, f->reader.from);
		return false;
	}
	mq_position_reset(&ps->key, f->reader.from,
					  reset_position(f->reader.from, end, f->topic, part, ps->reset,
									 ps->since, f->snapshot),
					  ps->autocommit, ps->member);
	ps->visited--;
	return true;
}

/* A partition's read ended: the group's position moves past it. */
static void
poll_read_done(MqFeed *f)
{
	PollState  *ps = f->priv;

	if (f->reader.count == 0 && reset_if_beyond_end(f, ps))
		return;
	if (f->reader.count > 0)
		mq_position_note_in_log(&ps->key, f->reader.last);
	mq_position_advance(&ps->key, f->reader.last, ps->autocommit, f->reader.count,
						ps->member);
}

/*
 * A call of mq.poll(group_id, topic, max_records, auto_commit, max_wait_ms,
 * min_records, member_id, auto_offset_reset, partitions), checked, as a
 * feed: records from the group's positions, over the partitions this
 * caller could claim (and, for a group member, owns; with partitions, of
 * those named).
 */
void
mq_poll_feed_begin(MqFeed *f, NullableDatum *args, int nargs)
{
	static const char *const names[] = {"group_id", "topic", "max_records", "auto_commit"};
	PollState  *ps = palloc0(sizeof(PollState));
	MqTopic    *topic;
	int32		max;

	mq_check_not_null(args, 4, names);
	ps->group = DatumGetTextPP(args[0].value);
	mq_check_group(ps->group);
	mq_group_authorize(ps->group, MQ_ACL_READ);
	topic = mq_topic_authorized(DatumGetTextPP(args[1].value), MQ_ACL_READ);
	max = DatumGetInt32(args[2].value);
	mq_check_max_records(max);
	ps->autocommit = DatumGetBool(args[3].value);
	mq_feed_init(f, topic, args[1].value, max);
	mq_long_poll_start(&f->lp, args[4], args[5], topic->topic_id);
	ps->reset = RESET_EARLIEST;
	if (!args[7].isnull)
		ps->reset = parse_offset_reset(DatumGetTextPP(args[7].value), &ps->since);
	if (!args[6].isnull)
		ps->member = DatumGetTextPP(args[6].value);
	if (nargs > 8 && !args[8].isnull)
		ps->listed = listed_partitions(DatumGetArrayTypeP(args[8].value), topic);

	if (ps->autocommit)
		mq_auto_commit(ps->group, topic, ps->member);
	f->priv = ps;
	f->start_read = poll_start_read;
	f->read_done = poll_read_done;
	f->drain_at_end = true;
}

/* mq.poll(group_id, topic, max_records, ...): see mq_poll_feed_begin */
Datum
mq_poll(PG_FUNCTION_ARGS)
{
	MqFeed		feed;

	mq_poll_feed_begin(&feed, fcinfo->args, PG_NARGS());
	mq_feed_materialize(fcinfo, &feed);
	return (Datum) 0;
}
