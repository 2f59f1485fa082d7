/*-------------------------------------------------------------------------
 *
 * log_end.c
 *	  mq._log_end_offset: a partition's log end for SQL (the views,
 *	  maintenance, the caller's snapshot), read again when maintenance
 *	  dropped a segment the topic cache listed.
 *
 * Layer: above the log (log.c), the topic cache (topic.c) and the
 * rights (acl.c).
 *
 * Locking: AccessShareLock on the segments read (log.c); no produce lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_log_end_offset_sql);

/*
 * mq._log_end_offset(topic_id, partition), as the caller's snapshot sees it.
 * Views (mq.partitions) call it for every partition while maintenance may
 * drop segments: when one listed by the topic cache is gone by the time it
 * is locked, the cache is read again (the newest committed segments) and
 * the log end taken from those, never "could not open relation".
 */
/* reads of the catalog after which a segment still missing is an error */
#define MAX_LOG_END_READS 3

Datum
mq_log_end_offset_sql(PG_FUNCTION_ARGS)
{
	for (int reads = 1;; reads++)
	{
		MqTopic    *topic = mq_topic_by_id(PG_GETARG_INT32(0), true);
		int64		end;

		/*
		 * NULL, not an error, so that views filtering on DESCRIBE never
		 * fail; and NULL for an id no topic has, so that the answer does not
		 * tell a hidden topic from a missing one
		 */
		if (topic == NULL ||
			!mq_acl_allowed(GetUserId(), MQ_RES_TOPIC, topic->name, MQ_ACL_DESCRIBE))
			PG_RETURN_NULL();
		end = mq_log_end_offset_ok(mq_topic_partition(topic, PG_GETARG_INT32(1)),
								   GetActiveSnapshot());
		if (end >= 0)
			PG_RETURN_INT64(end);

		/*
		 * A segment the freshly read catalog lists is gone too: dropped
		 * behind mq's back, not by maintenance.  Say so rather than read
		 * again for ever (a maintenance worker did, holding its locks, under
		 * pg_restore --clean).
		 */
		if (reads >= MAX_LOG_END_READS)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_LOG_TABLE_MISSING),
					 errmsg("a log table of topic \"%s\" partition %d is missing", topic->name,
							PG_GETARG_INT32(1)),
					 errdetail("mq.segment lists a segment table that was dropped by something other than mq."),
					 errhint("Restore the database into a new one from a dump; drop topics with mq.drop_topic.")));
		mq_topic_cache_reset();
		CHECK_FOR_INTERRUPTS();
	}
}
