/*-------------------------------------------------------------------------
 *
 * consumer_offsets.c
 *	  The offsets a consumer group commits after a batch, as the
 *	  parameters of CONSUMER_COMMIT_SQL: shared by the one-node group
 *	  member (consumer_member.c, whose statement adds its member id and
 *	  generation) and the cluster group (consumer_route.c, which runs the
 *	  statement on each partition's leader).
 *
 * Layer: below consumer_member.c and consumer_route.c; calls only
 * broker/common.
 *
 * Locking: none here; the statement runs in the batch's transaction,
 * which holds the partitions' claims.
 *
 *-------------------------------------------------------------------------
 */
#include "consumer.h"
#include "pgbinary.h"

/*
 * The parameters of CONSUMER_COMMIT_SQL for the rows of a batch.  Rows of
 * one partition come in offset order, so the last row of each partition
 * has the highest offset: commit the offset after it.  The caller frees
 * the two arrays after the statement.
 */
void
consumer_commit_params(const MqConsumer *c, const PGresult *batch, int nrows,
					   MqArray *parts, MqArray *offsets, MqParams *params)
{
	const char *data;
	int			len;

	mq_array_init(parts, MQ_INT4OID);
	mq_array_init(offsets, MQ_INT8OID);
	for (int r = 0; r < nrows; r++)
	{
		int32_t		part = mq_get_int32(batch, r, REC_PARTITION);

		if (r + 1 < nrows && mq_get_int32(batch, r + 1, REC_PARTITION) == part)
			continue;
		mq_array_add_int32(parts, part);
		mq_array_add_int64(offsets, mq_get_int64(batch, r, REC_OFFSET) + 1);
	}
	mq_params_init(params);
	mq_param_text(params, MQ_TEXTOID, c->group);
	mq_param_text(params, MQ_TEXTOID, c->topic);
	data = mq_array_bytes(parts, &len);
	mq_param_binary(params, MQ_INT4ARRAYOID, data, len);
	data = mq_array_bytes(offsets, &len);
	mq_param_binary(params, MQ_INT8ARRAYOID, data, len);
}
