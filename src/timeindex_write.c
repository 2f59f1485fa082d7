/*-------------------------------------------------------------------------
 *
 * timeindex_write.c
 *	  Kafka's record timestamps at append: stamping records (CreateTime or
 *	  LogAppendTime) and the time index column of each log row (for
 *	  log.c), the producer's timestamp check (message.timestamp.before.max.ms
 *	  and message.timestamp.after.max.ms, each falling back to
 *	  message.timestamp.difference.max.ms while not set, as Kafka 3.6+
 *	  does, KIP-937), and reading a row's timestamps back (for the lookup
 *	  by time, timeindex.c, which explains the time index).
 *
 * Layer: a leaf below log.c, produce.c and timeindex.c; it calls no
 * other file of mq.
 *
 * Locking: none of its own; log.c stamps and fills the rows under the
 * produce lock (produce_lock.c), so the running maximum of a segment's
 * timestamps grows in offset order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/timestamp.h"

#include "mq.h"

/* A log row's Kafka timestamp: the CreateTime, or the append time. */
TimestampTz
mq_slot_timestamp(TupleTableSlot *slot)
{
	slot_getsomeattrs(slot, Anum_log_max_timestamp);
	if (!slot->tts_isnull[Anum_log_timestamp - 1])
		return DatumGetTimestampTz(slot->tts_values[Anum_log_timestamp - 1]);
	return DatumGetTimestampTz(slot->tts_values[Anum_log_created_at - 1]);
}

/* The largest timestamp of the row's segment up to and including the row. */
TimestampTz
mq_slot_max_timestamp(TupleTableSlot *slot)
{
	slot_getsomeattrs(slot, Anum_log_max_timestamp);
	if (!slot->tts_isnull[Anum_log_max_timestamp - 1])
		return DatumGetTimestampTz(slot->tts_values[Anum_log_max_timestamp - 1]);
	return mq_slot_timestamp(slot);
}

/*
 * Under the produce lock: Kafka's timestamp of each record to append, the
 * append time (has_timestamp false, stored as NULL) on a LogAppendTime
 * topic, else the producer's CreateTime, now when it gave none.
 */
void
mq_stamp_records(MqTopic *topic, MqRecordIn *recs, int n, TimestampTz now)
{
	for (int i = 0; i < n; i++)
	{
		if (topic->log_append_time)
			recs[i].has_timestamp = false;
		else if (!recs[i].has_timestamp)
		{
			recs[i].has_timestamp = true;
			recs[i].timestamp = now;
		}
	}
}

/*
 * A log row's timestamp columns (created_at already set): the CreateTime
 * or NULL, and the segment's running maximum *running when it exceeds the
 * record's own timestamp, else NULL.
 */
void
mq_row_timestamps(MqRecordIn *r, Datum *values, bool *nulls, TimestampTz *running)
{
	TimestampTz ts = r->has_timestamp ? r->timestamp :
		DatumGetTimestampTz(values[Anum_log_created_at - 1]);

	values[Anum_log_timestamp - 1] = TimestampTzGetDatum(r->timestamp);
	nulls[Anum_log_timestamp - 1] = !r->has_timestamp;
	if (ts > *running)
		*running = ts;
	values[Anum_log_max_timestamp - 1] = TimestampTzGetDatum(*running);
	nulls[Anum_log_max_timestamp - 1] = (*running == ts);
}

/* A limit in ms as microseconds; -1 when there is none or it is too large. */
static int64
limit_us(int64 ms)
{
	return (ms < 0 || ms > PG_INT64_MAX / 1000 / 2) ? -1 : ms * 1000;
}

/* 1970-01-01 00:00 UTC, Kafka's timestamp 0, as a TimestampTz */
#define UNIX_EPOCH_TZ ((TimestampTz) (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY)

/*
 * A Kafka timestamp is milliseconds since 1970 (-1, none, is a null
 * timestamp here): refuse an infinite or earlier CreateTime.
 */
static void
check_timestamps_kafka(MqTopic *topic, MqRecordIn *recs, int n)
{
	for (int i = 0; i < n; i++)
		if (recs[i].has_timestamp && (TIMESTAMP_NOT_FINITE(recs[i].timestamp) || recs[i].timestamp < UNIX_EPOCH_TZ))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_TIMESTAMP),
					 errmsg("timestamp %s of record %d is out of range for topic \"%s\"",
							timestamptz_to_str(recs[i].timestamp), i + 1, topic->name),
					 errdetail("A Kafka timestamp is a time from 1970-01-01 00:00 UTC on; nothing was written."),
					 errhint("Give a finite timestamp from 1970 on, or null for the broker's time.")));
}

/*
 * Refuse a call with a CreateTime more than message.timestamp.before.max.ms
 * before now or more than message.timestamp.after.max.ms after it, or one
 * Kafka cannot hold (above), before anything is written (Kafka:
 * InvalidTimestampException).  LogAppendTime topics ignore the producer's
 * timestamps.
 */
void
mq_check_timestamps(MqTopic *topic, MqRecordIn *recs, int n)
{
	TimestampTz now;
	int64		before_us = limit_us(topic->timestamp_before_ms);
	int64		after_us = limit_us(topic->timestamp_after_ms);

	if (topic->log_append_time)
		return;
	check_timestamps_kafka(topic, recs, n);
	if (before_us < 0 && after_us < 0)
		return;
	now = GetCurrentTimestamp();
	for (int i = 0; i < n; i++)
	{
		bool		early,
					late;

		if (!recs[i].has_timestamp)
			continue;
		early = before_us >= 0 && recs[i].timestamp < now - before_us;
		late = after_us >= 0 && recs[i].timestamp > now + after_us;
		if (early || late)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_TIMESTAMP),
					 errmsg("timestamp %s of record %d is out of range for topic \"%s\"",
							timestamptz_to_str(recs[i].timestamp), i + 1, topic->name),
					 errdetail("It is more than %s (" INT64_FORMAT " ms) %s the broker's time %s; nothing was written.",
							   early ? "message.timestamp.before.max.ms" : "message.timestamp.after.max.ms",
							   early ? topic->timestamp_before_ms : topic->timestamp_after_ms,
							   early ? "before" : "after", timestamptz_to_str(now)),
					 errhint("Check the producer's clock, or raise the topic's %s (or message.timestamp.difference.max.ms, which applies while it is not set).",
							 early ? "message.timestamp.before.max.ms" : "message.timestamp.after.max.ms")));
	}
}
