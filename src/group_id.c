/*-------------------------------------------------------------------------
 *
 * group_id.c
 *	  What a consumer group id may be, for every way one comes in (SQL
 *	  consumers, mq.join_group, Kafka's transactional offsets): named, and
 *	  at most MQ_GROUP_ID_MAX bytes, what a session's group position key
 *	  (MqPositionKey, offsets.c) holds.  Kafka limits group ids only by
 *	  its string size; one that could be joined but never committed for
 *	  would be worse than a refusal at the door.  A read of such an id
 *	  (a Kafka consumer's OffsetFetch) finds nothing, as for any group
 *	  without offsets.
 *
 * No state, no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_check_group_sql);

/*
 * For a read: an empty id is refused; one too long to be stored has
 * nothing stored (false), which a read answers as "none", as a Kafka
 * consumer's offset fetch expects of a group without offsets.
 */
bool
mq_check_group_read(text *group)
{
	if (VARSIZE_ANY_EXHDR(group) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("group_id must not be empty")));
	return VARSIZE_ANY_EXHDR(group) <= MQ_GROUP_ID_MAX;
}

void
mq_check_group(text *group)
{
	if (!mq_check_group_read(group))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("group_id is longer than %d bytes", MQ_GROUP_ID_MAX)));
}

/*
 * mq._check_group(group_id, reading): the same checks for SQL callers;
 * NULL is refused too.  Returns false for a read of an id too long to be
 * stored.
 */
Datum
mq_check_group_sql(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("group_id must not be null")));
	if (!PG_ARGISNULL(1) && PG_GETARG_BOOL(1))
		PG_RETURN_BOOL(mq_check_group_read(PG_GETARG_TEXT_PP(0)));
	mq_check_group(PG_GETARG_TEXT_PP(0));
	PG_RETURN_BOOL(true);
}
