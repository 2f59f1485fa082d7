/*-------------------------------------------------------------------------
 *
 * longpoll.c
 *	  Where reads stop and how long they wait: the high watermark of a
 *	  replicated partition, and long polling (mq.fetch and mq.poll with
 *	  max_wait_ms and min_records, and their streaming scans).
 *
 * Layer: below the feed (feed.c) and the readers that use it (fetch.c,
 * poll.c, timeindex.c's lookup); it calls only spi.c and notify.c.
 *
 * Locking: the high watermark is read from mq.partition_state with the
 * caller's snapshot, no lock beyond the catalog's AccessShareLock.  Long
 * polling waits on the topic's change counter (notify.c) and takes no
 * lock (heavyweight or LWLock) of its own while it waits, but it waits
 * inside the caller's statement: the AccessShareLocks the statement took
 * (mq.topic, mq.segment, mq.partition_state) and its snapshot's xmin stay
 * for the whole wait, so DDL on those tables (ALTER EXTENSION mq UPDATE)
 * queues behind it and VACUUM keeps rows that died since it started
 * (docs/groups.md, "Long polling").  pg_stat_activity shows the wait as
 * wait_event Extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"

#include "mq.h"

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

/*
 * Long polling.  A read that returned fewer than min_records waits, until
 * max_wait_ms has passed, for a commit to the topic and reads again with a
 * new snapshot (feed.c).  Only READ COMMITTED can see newer commits within
 * a statement; under REPEATABLE READ and SERIALIZABLE the snapshot is the
 * transaction's, so these calls return at once with what it shows.
 */
void
mq_long_poll_start(MqLongPoll *lp, NullableDatum wait, NullableDatum min, int32 topic_id)
{
	int32		wait_ms = wait.isnull ? 0 : DatumGetInt32(wait.value);
	int32		min_records = min.isnull ? 1 : DatumGetInt32(min.value);

	if (wait_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("max_wait_ms must not be negative, not %d", wait_ms)));
	if (min_records < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("min_records must be at least 1, not %d", min_records)));
	lp->enabled = wait_ms > 0 && !IsolationUsesXactSnapshot();
	lp->min_records = min_records;
	lp->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	lp->seen = mq_notify_counter(topic_id);
	lp->last_read = false;
}

/*
 * After reads that got `got` records in all: wait, then read again?  Once
 * the deadline passes without a wake-up, the answer is what is there then,
 * as Kafka's fetch.max.wait.ms gives: one last read, for commits that woke
 * no one (COMMIT PREPARED runs no commit callback, notify.c).
 */
bool
mq_long_poll_wait(MqLongPoll *lp, int got, int max, int32 topic_id)
{
	if (!lp->enabled || lp->last_read || got >= lp->min_records || got >= max)
		return false;
	if (!mq_notify_wait(topic_id, lp->seen, lp->deadline))
		lp->last_read = true;
	lp->seen = mq_notify_counter(topic_id);
	return true;
}
