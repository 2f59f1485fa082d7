/*-------------------------------------------------------------------------
 *
 * h_txn.c
 *	  The transaction APIs (KIP-98): AddOffsetsToTxn (v0-v4),
 *	  TxnOffsetCommit (v0-v4) and EndTxn (v0-v4), and what they share with
 *	  AddPartitionsToTxn (h_txn_add.c, through txn.h).  Loop thread: each
 *	  request is decoded here into statements of src/sql/67_kafka_txn.sql
 *	  (one per partition, each its own database transaction) run as one job.
 *
 * The transaction's state is in the database (mq.kafka_txn), so any
 * daemon coordinates any transactional id; transactional batches are
 * staged by Produce (h_produce.c) and appended, with the staged offsets,
 * by EndTxn's one statement, after which the fetches parked on the topics
 * it appended to are woken.  Fencing, the timeout and authorization
 * (WRITE on the transactional id) are the SQL's; their SQLSTATEs become
 * Kafka's codes in kerr.c, except that a fenced epoch (MQ012) is
 * PRODUCER_FENCED from the versions that know it (v2+ of the three
 * coordinator APIs), as Kafka answers.
 *
 * In a replicated cluster the transaction lives in the database of one
 * node, chosen by the transactional id (cluster_txn_pool), whichever
 * daemon the client asks: AddPartitionsToTxn, AddOffsetsToTxn and
 * TxnOffsetCommit (sent to the group's coordinator) run there, through
 * that node's pool when it is another's, and
 * EndTxn commits across the partitions' leaders through the cluster's
 * coordinator (h_txn_end.c; docs/kafka.md, "Transactions").  There
 * TxnOffsetCommit also notes what it staged on the coordinator before it
 * answers (offsets_stable.c), for OffsetFetch's require_stable while the
 * transaction's node is down.
 *
 * TxnOffsetCommit v3+'s generation, member and instance ids are checked
 * first, on the group's coordinator (this daemon, which knows its
 * members: group_txn_commit_check), so a zombie member is fenced (KIP-447).
 *
 *-------------------------------------------------------------------------
 */
#include "txn.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "kerr.h"
#include "mq_sqlstates.h"
#include "offsets.h"
#include "util.h"

static void
txn_state_free(void *p)
{
	TxnState   *s = p;

	kjob_free(&s->job);
	kjob_free(&s->note.job);
	free(s->group);
	for (int32_t i = 0; s->txn_jobs && i < s->ntxns; i++)
		kjob_free(&s->txn_jobs[i]);
	free(s->txn_jobs);
	free(s->txn_remotes);
	free(s->txns);
	free(s->topics);
	free(s->topic_txn);
	free(s->parts);
	free(s);
}

TxnState *
txn_state_new(KRequest *req, size_t left)
{
	TxnState   *s = mq_malloc0(sizeof(TxnState));

	req->state = s;
	req->free_state = txn_state_free;
	s->txns = mq_malloc0(sizeof(TId) * (left / 8 + 1));
	s->txn_jobs = mq_malloc0(sizeof(KJob) * (left / 8 + 1));
	s->txn_remotes = mq_malloc0(sizeof(TxnRemote) * (left / 8 + 1));
	s->topics = mq_malloc0(sizeof(KSlice) * (left / 2 + 1));
	s->topic_txn = mq_malloc0(sizeof(int32_t) * (left / 2 + 1));
	s->parts = mq_malloc0(sizeof(TPart) * (left / 4 + 1));
	return s;
}

/* a failed statement's code (txn_cluster_code's); fenced_code: a fenced
 * epoch is PRODUCER_FENCED from v2 */
int16_t
txn_code(const KStmt *st, int16_t v, bool fenced_code)
{
	return txn_cluster_code(st, fenced_code ? v : 0);
}

/* a statement of job whose first parameters are transactional id, producer id, epoch */
KStmt *
job_stmt(KJob *job, const char *sql, const TId *t)
{
	KStmt	   *st = kjob_add(job, sql, 0);
	char	   *id = kslice_dup(t->id);

	kstmt_text(st, MQ_TEXTOID, id ? id : "");
	kstmt_int(st, MQ_INT8OID, t->producer_id);
	kstmt_int(st, MQ_INT4OID, t->epoch);
	free(id);
	return st;
}

/* the same, in the request's one job */
static KStmt *
txn_stmt(TxnState *s, const char *sql, const TId *t)
{
	return job_stmt(&s->job, sql, t);
}

/* run the job on the node of transactional id t (h_txn_init.c) */
static void
txn_run(KRequest *req, TxnState *s, const TId *t, KDoneFn done)
{
	char	   *id = kslice_dup(t->id);

	txn_cluster_stage(req, &s->remote, &s->job, id ? id : "", done);
	free(id);
}

/* a transaction API's transactional id, producer id and epoch */
void
read_ids(KReader *r, TId *t)
{
	t->id = kr_str(r);
	t->producer_id = kr_i64(r);
	t->epoch = kr_i16(r);
}

int32_t
tpart_topic(const void *arg, int32_t i)
{
	return ((const TWrite *) arg)->s->parts[i].topic;
}

/* ---------------------------------------------------------------- */
/* AddOffsetsToTxn and EndTxn: one statement, one error code         */
/* ---------------------------------------------------------------- */

static void
one_code_done(KRequest *req)
{
	TxnState   *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, s->job.n > 0 ? txn_code(&s->job.stmts[0], req->api_version, true) : s->code);
	req_finish(req);
}

void
h_add_offsets_to_txn(KRequest *req)
{
	KReader    *r = &req->body;
	TxnState   *s = txn_state_new(req, 0);
	KSlice		group;
	char	   *g;

	read_ids(r, &s->txns[0]);
	group = kr_str(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	g = kslice_dup(group);
	kstmt_text(txn_stmt(s, "SELECT mq.kafka_txn_add_offsets($1, $2, $3, $4)", &s->txns[0]),
			   MQ_TEXTOID, g ? g : "");
	free(g);
	txn_run(req, s, &s->txns[0], one_code_done);
}

/* committed: wake the fetches parked on the topics appended to */
static void
end_txn_done(KRequest *req)
{
	TxnState   *s = req->state;
	PGresult   *res = s->job.stmts[0].res;

	for (int i = 0; res && i < PQntuples(res); i++)
		if (!PQgetisnull(res, i, 0))
			fetch_wake_topic(PQgetvalue(res, i, 0));
	one_code_done(req);
}

void
h_end_txn(KRequest *req)
{
	KReader    *r = &req->body;
	TxnState   *s = txn_state_new(req, 0);
	bool		commit;

	read_ids(r, &s->txns[0]);
	commit = kr_i8(r) != 0;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (cluster_enabled())
	{
		TId			t = s->txns[0];

		txn_state_free(s);		/* the cluster's EndTxn has its own state */
		req->state = NULL;
		txn_cluster_end(req, t.id, t.producer_id, t.epoch, commit);
		return;
	}
	kstmt_text(txn_stmt(s, "SELECT unnest(mq.kafka_txn_end($1, $2, $3, $4))", &s->txns[0]),
			   MQ_BOOLOID, commit ? "true" : "false");
	pool_run(req, &s->job, end_txn_done);
}

/* ---------------------------------------------------------------- */
/* TxnOffsetCommit                                                  */
/* ---------------------------------------------------------------- */

#define TXN_OFFSET_SQL "SELECT mq.kafka_txn_offset($1, $2, $3, $4, $5, $6, $7, $8)"

static void
read_offset_part(KRequest *req, TxnState *s, TPart *pp, const char *group, const char *topic)
{
	KReader    *r = &req->body;
	int64_t		off;
	char	   *meta;
	KStmt	   *st;

	pp->partition = kr_i32(r);
	off = kr_i64(r);
	if (req->api_version >= 2)
		(void) kr_i32(r);		/* committed_leader_epoch */
	meta = kslice_dup(kr_str(r));
	kr_tags(r);
	pp->stmt = -1;
	if (!r->err && s->code != KERR_NONE)
		pp->code = s->code;
	else if (!r->err)
	{
		st = txn_stmt(s, TXN_OFFSET_SQL, &s->txns[0]);
		kstmt_text(st, MQ_TEXTOID, group);
		kstmt_text(st, MQ_TEXTOID, topic);
		kstmt_int(st, MQ_INT4OID, pp->partition);
		kstmt_int(st, MQ_INT8OID, off);
		kstmt_text(st, MQ_TEXTOID, meta);
		pp->stmt = s->job.n - 1;
	}
	free(meta);
}

/* a TxnOffsetCommit partition: its index and error */
static void
write_offset_part(KWriter *w, void *arg, int32_t i)
{
	TWrite	   *o = arg;
	TPart	   *pp = &o->s->parts[i];

	kw_i32(w, pp->partition);
	kw_i16(w, pp->stmt >= 0 ? txn_code(&o->s->job.stmts[pp->stmt], o->req->api_version, false) : pp->code);
}

static void
txn_offset_done(KRequest *req)
{
	TxnState   *s = req->state;
	TWrite		o = {req, s};

	kw_i32(&req->resp, 0);		/* throttle_time_ms */
	kw_topic_parts(&req->resp, s->topics, 0, s->ntopics, s->nparts, tpart_topic, write_offset_part, &o);
	req_finish(req);
}

/*
 * In a cluster the offsets staged on the transaction's node are noted on
 * the coordinator before the answer (offsets_stable.c), with the
 * transaction's deadline, which the node's statement returns.  A
 * partition whose note failed is COORDINATOR_NOT_AVAILABLE: the client
 * sends it again.
 */
static bool
offset_staged(const TxnState *s, const TPart *pp)
{
	int16_t		code;

	return pp->stmt >= 0 && !kstmt_failed(&s->job.stmts[pp->stmt], &code);
}

static void
txn_offset_noted(KRequest *req)
{
	TxnState   *s = req->state;

	for (int32_t i = 0; !stable_noted(&s->note) && i < s->nparts; i++)
		if (offset_staged(s, &s->parts[i]))
		{
			s->parts[i].stmt = -1;
			s->parts[i].code = KERR_COORDINATOR_NOT_AVAILABLE;
		}
	txn_offset_done(req);
}

static void
txn_offset_staged(KRequest *req)
{
	TxnState   *s = req->state;
	const char *deadline = NULL;
	char	   *id = kslice_dup(s->txns[0].id);
	MqArray		topics,
				parts;

	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int32_t i = 0; i < s->nparts; i++)
	{
		const TPart *pp = &s->parts[i];

		if (!offset_staged(s, pp))
			continue;
		deadline = PQgetvalue(s->job.stmts[pp->stmt].res, 0, 0);
		mq_array_add(&topics, s->topics[pp->topic].p, s->topics[pp->topic].len);
		mq_array_add_int32(&parts, pp->partition);
	}
	if (deadline == NULL)
		txn_offset_done(req);
	else
		stable_note(req, &s->note, id ? id : "", s->group, &topics, &parts, deadline, txn_offset_noted);
	free(id);
	mq_array_free(&topics);
	mq_array_free(&parts);
}

void
h_txn_offset_commit(KRequest *req)
{
	KReader    *r = &req->body;
	TxnState   *s = txn_state_new(req, kr_left(r));
	char	   *group;
	char	   *member = NULL;
	char	   *instance = NULL;
	int32_t		generation = -1;	/* v0-v2: no member */
	int32_t		nt;

	s->txns[0].id = kr_str(r);
	group = kslice_dup(kr_str(r));
	s->txns[0].producer_id = kr_i64(r);
	s->txns[0].epoch = kr_i16(r);
	if (req->api_version >= 3)
	{
		generation = kr_i32(r);
		member = kslice_dup(kr_str(r));
		instance = kslice_dup(kr_str(r));
	}
	/* sent to the group's coordinator, which fences a stale member */
	s->code = !cluster_coordinates(group ? group : "") ? KERR_NOT_COORDINATOR :
		group_txn_commit_check(group ? group : "", member, instance, generation);
	free(member);
	free(instance);
	nt = kr_array(r, 6);
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		char	   *topic;
		int32_t		np;

		s->topics[s->ntopics] = kr_str(r);
		topic = kslice_dup(s->topics[s->ntopics]);
		np = kr_array(r, 14);
		for (int32_t i = 0; i < np && !r->err; i++)
		{
			s->parts[s->nparts].topic = s->ntopics;
			read_offset_part(req, s, &s->parts[s->nparts++], group ? group : "", topic ? topic : "");
		}
		s->ntopics++;
		kr_tags(r);
		free(topic);
	}
	s->group = group;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	txn_run(req, s, &s->txns[0], cluster_enabled() ? txn_offset_staged : txn_offset_done);
}
