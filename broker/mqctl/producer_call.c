/*-------------------------------------------------------------------------
 *
 * producer_call.c
 *	  One call of the producing engine on one connection: preparing a
 *	  session's statements (mq.produce_records for acks=0 and 1, the
 *	  procedure mq.produce for acks=all, mq.partition_for for keys) and
 *	  sending one partition's part of a batch with them.  The acks rules
 *	  themselves are the produce contract's (src/sql/31_produce_acks.sql).
 *
 * Layer: below producer.c (one node) and producer_route.c (a cluster,
 * which runs producer_setup_session on each leader's new connection);
 * it calls neither, so the engine and its router stand in one line:
 * producer.c -> producer_route.c -> producer_call.c.
 *
 * Locking: none here; a part's call takes the partition's produce lock on
 * the server for its transaction.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "producer.h"

/* the contract's names of the acks settings (MqAcks order) */
static const char *const acks_text[] = {"0", "1", "all"};

/* the statement of one part's call (prepared: mq_prepare, mq_exec_prepared) */
static const char *
send_sql(const MqProducer *pr)
{
	if (pr->acks == MQ_ACKS_ALL)
		return "CALL mq.produce($1, $2, $3, $4, $8, $5, $6, $7, $9)";
	if (pr->want_offsets)
		return "SELECT partition, msg_offset"
			   "  FROM mq.produce_records($1, $2, $3, NULL, $4, $5, $6, $7, NULL, NULL, $8)";
	return "SELECT count(*) FROM mq.produce_records($1, $2, $3, NULL, $4, $5, $6, $7, NULL, NULL, $8)";
}

/*
 * What a connection needs before it sends: the session's commit mode and
 * the prepared statements.  Run on the first connection and on each new
 * one after a loss.
 */
bool
producer_setup_session(MqProducer *pr, PGconn *conn, MqError *err)
{
	MqParams	types;

	mq_params_init(&types);
	mq_param_text(&types, MQ_TEXTOID, NULL);
	mq_param_binary(&types, MQ_BYTEAARRAYOID, NULL, 0);
	mq_param_binary(&types, MQ_BYTEAARRAYOID, NULL, 0);
	mq_param_text(&types, MQ_INT4OID, NULL);
	mq_param_text(&types, MQ_INT8OID, NULL);
	mq_param_text(&types, MQ_INT4OID, NULL);
	mq_param_text(&types, MQ_INT4OID, NULL);
	mq_param_text(&types, MQ_TEXTOID, NULL);
	if (pr->acks == MQ_ACKS_ALL)
		mq_param_text(&types, MQ_INT4OID, NULL);
	if (!mq_prepare(conn, send_sql(pr), &types, err))
		return false;

	if (pr->keyed)
	{
		mq_params_init(&types);
		mq_param_text(&types, MQ_TEXTOID, NULL);
		mq_param_binary(&types, MQ_BYTEAARRAYOID, NULL, 0);
		if (!mq_prepare(conn, PARTITION_SQL, &types, err))
			return false;
	}
	return true;
}

/* Fill the key and value arrays with records order[first .. first+count). */
void
producer_build_arrays(MqProducer *pr, int first, int count)
{
	mq_array_reset(&pr->keys);
	mq_array_reset(&pr->values);
	for (int k = first; k < first + count; k++)
	{
		const ProducerRecord *rec = &pr->records[pr->order[k]];

		if (pr->keyed)
			mq_array_add(&pr->keys, pr->data + rec->key_off, rec->key_len);
		mq_array_add(&pr->values, pr->data + rec->value_off, rec->value_len);
	}
}

/* One partition's records: one call of mq.produce_records or mq.produce. */
bool
producer_send_part(MqProducer *pr, PGconn *conn, const ProducerPart *part, MqError *err)
{
	MqParams	params;
	const char *data;
	int			len;
	PGresult   *res;

	producer_build_arrays(pr, part->first, part->count);
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, pr->topic);
	if (pr->keyed)
	{
		data = mq_array_bytes(&pr->keys, &len);
		mq_param_binary(&params, MQ_BYTEAARRAYOID, data, len);
	}
	else
		mq_param_binary(&params, MQ_BYTEAARRAYOID, NULL, 0);
	data = mq_array_bytes(&pr->values, &len);
	mq_param_binary(&params, MQ_BYTEAARRAYOID, data, len);
	if (part->partition >= 0)
		mq_param_int(&params, MQ_INT4OID, part->partition);
	else
		mq_param_text(&params, MQ_INT4OID, NULL);
	if (part->base_sequence >= 0)
	{
		mq_param_int(&params, MQ_INT8OID, pr->producer_id);
		mq_param_int(&params, MQ_INT4OID, pr->producer_epoch);
		mq_param_int(&params, MQ_INT4OID, part->base_sequence);
	}
	else
	{
		mq_param_text(&params, MQ_INT8OID, NULL);
		mq_param_text(&params, MQ_INT4OID, NULL);
		mq_param_text(&params, MQ_INT4OID, NULL);
	}
	mq_param_text(&params, MQ_TEXTOID, acks_text[pr->acks]);
	if (pr->acks == MQ_ACKS_ALL && pr->timeout_ms > 0)
		mq_param_int(&params, MQ_INT4OID, pr->timeout_ms);
	else if (pr->acks == MQ_ACKS_ALL)
		mq_param_text(&params, MQ_INT4OID, NULL);	/* the contract's default */

	res = mq_exec_prepared(conn, send_sql(pr), &params, 1, err);
	if (res == NULL)
		return false;
	if (pr->want_offsets)
	{
		for (int r = 0; r < part->count; r++)
		{
			ProducerRecord *rec = &pr->records[pr->order[part->first + r]];

			if (pr->acks == MQ_ACKS_ALL)
			{
				/* (base_offset, high_watermark): one partition, consecutive offsets */
				rec->partition = part->partition;
				rec->offset = mq_get_int64(res, 0, 0) + r;
			}
			else
			{
				rec->partition = mq_get_int32(res, r, 0);
				rec->offset = mq_get_int64(res, r, 1);
			}
		}
	}
	PQclear(res);
	return true;
}
