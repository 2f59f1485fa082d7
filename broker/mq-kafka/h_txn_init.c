/*-------------------------------------------------------------------------
 *
 * h_txn_init.c
 *	  InitProducerId with a transactional id in a replicated cluster
 *	  (--coordinator), and the statements the daemons of other nodes run
 *	  on the transaction's node (staged batches, staged offsets).  Loop
 *	  thread; each request is a chain of jobs, none waiting in the loop.
 *
 * InitProducerId: the arguments, the client's right to the id and its
 * current producer id and epoch (v3+, KIP-360) are checked on the id's
 * node (mq.kafka_txn_init_check: a retry of the last call is answered
 * from there, a stale pair is PRODUCER_FENCED), the id's producer id and
 * next epoch come from the cluster's coordinator (mq_coord.init_producer,
 * which refuses while an earlier transaction of the id is decided and not
 * complete: CONCURRENT_TRANSACTIONS, which clients retry), and the id's
 * node takes them (mq.kafka_txn_adopt).  So the id keeps one producer id
 * wherever it is coordinated, and a zombie's epoch is older everywhere.
 * The check and the new epoch are two transactions, so the adopt checks
 * the client's pair again on the locked row and refuses an epoch the row
 * has passed (CONCURRENT_TRANSACTIONS: the client asks again): of two
 * InitProducerIds of one id at once, a zombie's is fenced and a newer
 * instance's wins, as with Kafka's coordinator.
 * The answer's form and code are written here for h_init_producer.c's
 * single-node path too (init_producer_answer, init_producer_code).
 *
 * The transaction's node: every statement on an id's transaction runs on
 * the pool of the node the id maps to (cluster_txn_pool; staged batches
 * from the partitions' leaders too), as the client's role, through a
 * request of its own (TxnRemote); the transaction's database checks
 * fencing and rights.  While that node is down the id's calls fail with
 * COORDINATOR_NOT_AVAILABLE, which clients retry.  An open transaction
 * whose id maps to another node since it began (a broker was added or
 * removed) is found on the node where it is: the node the id maps to has
 * no transaction of the id (INVALID_PRODUCER_ID_MAPPING), and the other
 * live nodes are asked in turn.  The id's next InitProducerId moves it
 * to the node it maps to.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kerr.h"
#include "mq_sqlstates.h"
#include "util.h"

/*
 * A transaction API's statement's Kafka code; a fenced epoch is
 * PRODUCER_FENCED from v2.  A lost connection or a transient refusal (a
 * database read-only during a failover, lock_timeout, a deadlock, a
 * cancel) is COORDINATOR_NOT_AVAILABLE, the transaction coordinator's
 * retriable answer: the KAFKA_STORAGE_ERROR kerr.c gives other APIs is
 * no transaction API's error, and clients abort on it (and fail the
 * abort too while the database stays read-only).  A retried step is
 * idempotent: an EndTxn finds what was decided.
 */
int16_t
txn_cluster_code(const KStmt *st, int16_t v)
{
	int16_t		code = KERR_NONE;

	if (st == NULL || !kstmt_failed(st, &code))
		return code;
	if (v >= 2 && mq_error_is(&st->err, MQ_SQLSTATE_PRODUCER_FENCED))
		return KERR_PRODUCER_FENCED;
	if (mq_error_is(&st->err, MQ_SQLSTATE_CONCURRENT_TRANSACTIONS))
		return KERR_CONCURRENT_TRANSACTIONS;	/* retriable */
	if (st->err.connection_lost || mq_error_is_transient(&st->err))
		return KERR_COORDINATOR_NOT_AVAILABLE;	/* ask again */
	if (code == KERR_UNKNOWN_SERVER_ERROR)
		mq_log_warning("transaction: %s", st->err.message);
	return code;
}

/* the next live node after r->next, other than the id's own; NULL: none */
static KPool *
next_node(TxnRemote *r)
{
	while (r->next < cluster_nbrokers())
	{
		const KBroker *b = cluster_broker_at(r->next++);
		KPool	   *pool = b->id == kconfig.node_id ? pool_local() :
			b->live ? cluster_node_pool(b) : NULL;

		if (pool != NULL && pool != r->first)
			return pool;
	}
	return NULL;
}

/* the id has no transaction on that node: its first statement said so */
static bool
not_there(const KJob *job)
{
	return job->n > 0 && job->stmts[0].res == NULL &&
		mq_error_is(&job->stmts[0].err, MQ_SQLSTATE_INVALID_PRODUCER_ID_MAPPING);
}

static void
remote_done(KRequest *sub)
{
	TxnRemote  *r = (TxnRemote *) sub;
	KRequest   *req = sub->state;
	KPool	   *pool;

	if (sub->db_lost && r->pool == pool_local())
		req->db_lost = true;
	if (cluster_enabled() && not_there(r->job) && (pool = next_node(r)) != NULL)
	{
		kjob_reset(r->job);
		r->pool = pool;
		pool_run_on(pool, &r->sub, r->job, remote_done);
		return;
	}
	r->done(req);
}

/*
 * Run job on the id's node (cluster_txn_pool).  A transaction stays on the
 * node where it began until it ends: when the id maps to another node
 * since (a broker was added or removed), that node has no transaction of
 * the id (MQ073) and the others are asked in turn.
 */
void
txn_cluster_stage(KRequest *req, TxnRemote *r, KJob *job, const char *id, KDoneFn done)
{
	r->sub.state = req;
	r->sub.role = req->role;	/* borrowed: sub is never freed */
	r->done = done;
	r->job = job;
	r->first = r->pool = cluster_txn_pool(id);
	r->next = 0;
	pool_run_on(r->first, &r->sub, job, remote_done);
}

/* ---------------------------------------------------------------- */
/* InitProducerId                                                   */
/* ---------------------------------------------------------------- */

#define CHECK_SQL "SELECT producer_id, producer_epoch FROM mq.kafka_txn_init_check($1, $2, $3, $4)"
#define ADOPT_SQL "SELECT mq.kafka_txn_adopt($1, $2, $3, $4, $5, $6)"

typedef struct InitState
{
	KJob		local;			/* checked, then adopted */
	KJob		coord;
	KRequest	coord_req;
	TxnRemote	remote;			/* local: on the transaction's node */
	const PGresult *ids;		/* the answer's producer id and epoch */
	char	   *id;
	int32_t		timeout_ms;
	int64_t		current_id;		/* the client's pair (KIP-360), or -1 */
	int16_t		current_epoch;
	int16_t		code;
} InitState;

static void
init_state_free(void *p)
{
	InitState  *s = p;

	kjob_free(&s->local);
	kjob_free(&s->coord);
	free(s->id);
	free(s);
}

/*
 * An InitProducerId answer: code, and the producer id and epoch of res's
 * first row (-1 and -1 without one), h_init_producer.c's too
 */
void
init_producer_answer(KRequest *req, int16_t code, const PGresult *res)
{
	kw_i32(&req->resp, 0);
	kw_i16(&req->resp, code);
	kw_i64(&req->resp, res ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1);
	kw_i16(&req->resp, res ? (int16_t) atoi(PQgetvalue(res, 0, 1)) : -1);
	req_finish(req);
}

/*
 * An InitProducerId statement's Kafka code: a stale producer id and epoch
 * (MQ012) is PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before (as
 * Kafka answers clients that do not know the newer code)
 */
int16_t
init_producer_code(const KStmt *st, int16_t v)
{
	return txn_cluster_code(st, v >= 4 ? v : 0);
}

static void
init_answer(KRequest *req)
{
	InitState  *s = req->state;

	init_producer_answer(req, s->code, s->code == KERR_NONE ? s->ids : NULL);
}

static void
adopted(KRequest *req)
{
	InitState  *s = req->state;

	s->code = init_producer_code(&s->local.stmts[0], req->api_version);
	init_answer(req);
}

/* the id and timeout, a check's and an adopt's first parameters */
static void
ids_params(KStmt *st, const InitState *s)
{
	kstmt_text(st, MQ_TEXTOID, s->id);
	kstmt_int(st, MQ_INT4OID, s->timeout_ms);
}

/* the coordinator's producer id and epoch, taken here */
static void
got_ids(KRequest *sub)
{
	KRequest   *req = sub->state;
	InitState  *s = req->state;
	const KStmt *st = &s->coord.stmts[0];
	KStmt	   *a;

	if (st->res == NULL)
	{
		s->code = txn_cluster_code(st, 0);
		if (s->code == KERR_UNKNOWN_SERVER_ERROR || s->code == KERR_KAFKA_STORAGE_ERROR)
			s->code = KERR_COORDINATOR_NOT_AVAILABLE;
		init_answer(req);
		return;
	}
	s->ids = st->res;
	kjob_free(&s->local);
	a = kjob_add(&s->local, ADOPT_SQL, 0);
	ids_params(a, s);
	kstmt_text(a, MQ_INT8OID, PQgetvalue(st->res, 0, 0));
	kstmt_text(a, MQ_INT4OID, PQgetvalue(st->res, 0, 1));
	kstmt_int(a, MQ_INT8OID, s->current_id);
	kstmt_int(a, MQ_INT4OID, s->current_epoch);
	txn_cluster_stage(req, &s->remote, &s->local, s->id, adopted);
}

/*
 * Checked on the id's node: a retry is answered with the pair it got, a
 * new epoch is asked of the coordinator
 */
static void
checked(KRequest *req)
{
	InitState  *s = req->state;
	const KStmt *st = &s->local.stmts[0];

	s->code = init_producer_code(st, req->api_version);
	if (s->code != KERR_NONE || !PQgetisnull(st->res, 0, 0))
	{
		s->ids = st->res;
		init_answer(req);
		return;
	}
	kstmt_text(kjob_add(&s->coord, "SELECT producer_id, producer_epoch FROM mq_coord.init_producer($1)", 0),
			   MQ_TEXTOID, s->id);
	s->coord_req.state = req;
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, got_ids);
}

void
txn_cluster_init(KRequest *req, const char *id, int32_t timeout_ms, int64_t current_id, int16_t current_epoch)
{
	InitState  *s = mq_malloc0(sizeof(InitState));
	KStmt	   *st;

	req->state = s;
	req->free_state = init_state_free;
	s->id = mq_strdup(id);
	s->timeout_ms = timeout_ms;
	s->current_id = current_id;
	s->current_epoch = current_epoch;
	if (cluster_coord_pool() == NULL)
	{
		s->code = KERR_COORDINATOR_NOT_AVAILABLE;
		init_answer(req);
		return;
	}
	st = kjob_add(&s->local, CHECK_SQL, 0);
	ids_params(st, s);
	kstmt_int(st, MQ_INT8OID, current_id);
	kstmt_int(st, MQ_INT4OID, current_epoch);
	txn_cluster_stage(req, &s->remote, &s->local, s->id, checked);
}
