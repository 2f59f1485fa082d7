/*-------------------------------------------------------------------------
 *
 * h_produce.c
 *	  Produce (v3-v7) and InitProducerId (v0-v1), decoded and run on a
 *	  database worker; waking parked fetches runs on the loop thread.
 *
 * Each partition's batch is checked (batch.c) and appended with one
 * mq.send_batch call, its own transaction; the batch's producer id,
 * epoch and base sequence go along, so mq's idempotence applies: a retry
 * of one of the producer's last five batches returns the original
 * offsets (Kafka's broker does the same), a gap is MQ011 and becomes
 * OUT_OF_ORDER_SEQUENCE_NUMBER.  acks=0 gets no response; acks=1 and
 * acks=-1 are the same on a single node (the record is committed when
 * answered).  Transactional produce is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

#define SEND_SQL \
	"SELECT min(msg_offset) FROM mq.send_batch($1, $2::bytea[], $3::bytea[], NULL," \
	" $4, $5, $6, $7)"

/* topics written to, whose parked fetches are woken afterwards */
typedef struct ProduceState
{
	int			n;
	char	  **topics;
} ProduceState;

static void
produce_state_free(void *p)
{
	ProduceState *s = p;

	for (int i = 0; i < s->n; i++)
		free(s->topics[i]);
	free(s->topics);
	free(s);
}

/* append one decoded batch; returns the Kafka error, *base the first offset */
static int16_t
append_batch(PGconn *db, const char *topic, int32_t partition, const KBatch *b,
			 int64_t *base)
{
	MqArray		keys,
				vals;
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	const char *bytes;
	int			len;
	bool		idem = b->producer_id >= 0;
	int16_t		code = KERR_NONE;

	mq_array_init(&keys, MQ_BYTEAOID);
	mq_array_init(&vals, MQ_BYTEAOID);
	for (int32_t i = 0; i < b->count; i++)
	{
		const KRecord *rec = &b->records[i];

		mq_array_add(&keys, rec->key.len < 0 ? NULL : rec->key.p, rec->key.len < 0 ? 0 : rec->key.len);
		mq_array_add(&vals, rec->value.len < 0 ? NULL : rec->value.p, rec->value.len < 0 ? 0 : rec->value.len);
	}
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	bytes = mq_array_bytes(&keys, &len);
	mq_param_binary(&params, MQ_BYTEAARRAYOID, bytes, len);
	bytes = mq_array_bytes(&vals, &len);
	mq_param_binary(&params, MQ_BYTEAARRAYOID, bytes, len);
	mq_param_int(&params, MQ_INT4OID, partition);
	if (idem)
	{
		mq_param_int(&params, MQ_INT8OID, b->producer_id);
		mq_param_int(&params, MQ_INT4OID, b->producer_epoch);
		mq_param_int(&params, MQ_INT4OID, b->base_sequence);
	}
	else
		for (int i = 0; i < 3; i++)
			mq_param_text(&params, i == 0 ? MQ_INT8OID : MQ_INT4OID, NULL);
	res = kdb_exec(db, SEND_SQL, &params, 0, &err);
	if (res == NULL)
	{
		code = kerr_from_mq(&err);
		if (code == KERR_UNKNOWN_SERVER_ERROR)
			mq_log_warning("produce to %s/%d: %s", topic, partition, err.message);
	}
	else
		*base = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	mq_error_free(&err);
	mq_array_free(&keys);
	mq_array_free(&vals);
	return code;
}

/* one partition of the request: decode, check, append, answer */
static bool
produce_partition(KRequest *req, PGconn *db, const char *topic, bool txn)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		partition = kr_i32(r);
	KSlice		records = kr_bytes(r);
	KBatch		b;
	int64_t		base = -1;
	int16_t		code;

	if (r->err)
		return false;
	if (txn)
		code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	else if ((code = batch_decode(records.p, records.len < 0 ? 0 : records.len,
								  kconfig.max_inflated_bytes, &b)) == KERR_NONE &&
			 (code = batch_check_storable(&b)) == KERR_NONE)
		code = append_batch(db, topic, partition, &b, &base);
	if (!txn)
		batch_free(&b);
	kw_i32(w, partition);
	kw_i16(w, code);
	kw_i64(w, base);
	kw_i64(w, -1);				/* log_append_time: not known here */
	if (req->api_version >= 5)
		kw_i64(w, -1);			/* log_start_offset */
	return code == KERR_NONE;
}

static void
produce_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	ProduceState *s = mq_malloc0(sizeof(ProduceState));
	bool		txn = kr_str(r).len >= 0;
	int32_t		ntopics;

	req->state = s;
	req->free_state = produce_state_free;
	req->no_response = kr_i16(r) == 0;	/* acks */
	(void) kr_i32(r);			/* timeout_ms */
	ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(char *) * (ntopics > 0 ? ntopics : 1));
	kw_i32(w, ntopics);
	for (int32_t t = 0; t < ntopics && !r->err; t++)
	{
		KSlice		name = kr_str(r);
		char	   *topic = kslice_dup(name);
		int32_t		nparts = kr_array(r, 8);
		bool		wrote = false;

		kw_strn(w, name.p, name.len);
		kw_i32(w, nparts);
		for (int32_t p = 0; p < nparts && !r->err; p++)
			wrote |= produce_partition(req, db, topic ? topic : "", txn);
		if (wrote)
			s->topics[s->n++] = topic;
		else
			free(topic);
	}
	kw_i32(w, 0);				/* throttle_time_ms */
}

static void
produce_done(KRequest *req)
{
	ProduceState *s = req->state;

	for (int i = 0; i < s->n; i++)
		fetch_wake_topic(s->topics[i]);
	if (req->body.err)
		req_abort(req);			/* malformed: the response would be too */
	else
		req_finish(req);
}

void
h_produce(KRequest *req)
{
	pool_submit(req, produce_db, produce_done);
}

static void
init_producer_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	bool		txn = kr_str(r).len >= 0;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = NULL;
	int16_t		code = KERR_NONE;

	(void) kr_i32(r);			/* transaction_timeout_ms */
	if (txn)
		code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;	/* no transactions */
	else if ((res = kdb_exec(db, "SELECT producer_id, producer_epoch FROM mq.init_producer()",
							 NULL, 0, &err)) == NULL)
		code = kerr_from_mq(&err);
	kw_i32(w, 0);
	kw_i16(w, code);
	kw_i64(w, res ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1);
	kw_i16(w, res ? (int16_t) atoi(PQgetvalue(res, 0, 1)) : -1);
	PQclear(res);
	mq_error_free(&err);
}

void
h_init_producer_id(KRequest *req)
{
	pool_submit(req, init_producer_db, NULL);
}
