/*-------------------------------------------------------------------------
 *
 * h_init_producer.c
 *	  InitProducerId (v0-v5).  Loop thread: one statement, run as the
 *	  client's role.
 *
 * Without a transactional id it is mq.kafka_init_producer, for a client
 * that may write some topic (KIP-679): an idempotent producer always gets
 * a new id, as from Kafka.  With one it is mq.kafka_txn_init: the id's
 * producer id with the next epoch, which fences the older instance and
 * aborts its open transaction (in a cluster the coordinator's id and
 * epoch, h_txn_init.c); a timeout outside 1 ms .. 15 min (Kafka's
 * transaction.max.timeout.ms) is INVALID_TRANSACTION_TIMEOUT.  v3+'s
 * current producer id and epoch (KIP-360) must come together, or neither
 * (INVALID_REQUEST, as Kafka answers); with a transactional id they are
 * compared with the id's (mq.kafka_txn_init_check): a retry of the last
 * call gets its pair again, a stale pair is PRODUCER_FENCED.  Without one
 * they are not looked at: a new id, as from Kafka.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>

#include "cluster.h"
#include "kerr.h"
#include "util.h"

typedef struct InitState
{
	KJob		job;
	int16_t		code;			/* refused before the database */
} InitState;

/* Kafka's transaction.max.timeout.ms default: 15 minutes */
#define TXN_MAX_TIMEOUT_MS 900000

static void
init_state_free(void *p)
{
	kjob_free(&((InitState *) p)->job);
	free(p);
}

static void
init_producer_done(KRequest *req)
{
	InitState  *s = req->state;
	PGresult   *res = s->job.n > 0 ? s->job.stmts[0].res : NULL;
	int16_t		code = s->job.n > 0 ? init_producer_code(&s->job.stmts[0], req->api_version) : s->code;

	if (code != KERR_NONE)
		res = NULL;
	/* may write no topic: Kafka's IdempotentWrite on the cluster (KIP-679) */
	if (code == KERR_TOPIC_AUTHORIZATION_FAILED)
		code = KERR_CLUSTER_AUTHORIZATION_FAILED;
	init_producer_answer(req, code, res);
}

void
h_init_producer_id(KRequest *req)
{
	KReader    *r = &req->body;
	InitState  *s = mq_malloc0(sizeof(InitState));
	char	   *txn;
	int32_t		timeout_ms;
	int64_t		producer_id = -1;
	int16_t		producer_epoch = -1;

	req->state = s;
	req->free_state = init_state_free;
	txn = kslice_dup(kr_str(r));
	timeout_ms = kr_i32(r);
	if (req->api_version >= 3)
	{
		producer_id = kr_i64(r);
		producer_epoch = kr_i16(r);
	}
	if (r->err)
	{
		free(txn);
		req_abort(req);
		return;
	}
	if ((producer_id == -1) != (producer_epoch == -1))
		s->code = KERR_INVALID_REQUEST;	/* one without the other */
	else if (txn == NULL)
		(void) kjob_add(&s->job, "SELECT producer_id, producer_epoch FROM mq.kafka_init_producer()", 0);
	else if (timeout_ms <= 0 || timeout_ms > TXN_MAX_TIMEOUT_MS)
		s->code = KERR_INVALID_TRANSACTION_TIMEOUT;
	else if (cluster_enabled())
	{
		/* the coordinator's producer id and epoch (h_txn_init.c) */
		free(s);
		txn_cluster_init(req, txn, timeout_ms, producer_id, producer_epoch);
		free(txn);
		return;
	}
	else
	{
		KStmt	   *st = kjob_add(&s->job, "SELECT producer_id, producer_epoch FROM mq.kafka_txn_init($1, $2, $3, $4)", 0);

		kstmt_text(st, MQ_TEXTOID, txn);
		kstmt_int(st, MQ_INT4OID, timeout_ms);
		kstmt_int(st, MQ_INT8OID, producer_id);
		kstmt_int(st, MQ_INT4OID, producer_epoch);
	}
	free(txn);
	pool_run(req, &s->job, init_producer_done);
}
