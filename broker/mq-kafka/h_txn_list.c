/*-------------------------------------------------------------------------
 *
 * h_txn_list.c
 *	  DescribeTransactions (v0) and ListTransactions (v0-v1), read from
 *	  the view mq.kafka_transactions (src/sql/67_kafka_txn.sql), which
 *	  shows the transactional ids the role may describe.  Loop thread.
 *
 * A transaction's state is Kafka's name for it: Empty, Ongoing,
 * CompleteCommit or CompleteAbort (mq has no Prepare states: a commit is
 * one database transaction).  Its partitions are those it has staged
 * batches for; one added by AddPartitionsToTxn and not yet produced to
 * is not listed.  DescribeTransactions answers an id the role may not
 * describe TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one that does not exist
 * TRANSACTIONAL_ID_NOT_FOUND.  ListTransactions filters by state,
 * producer id and (v1) how long the transaction has been open; a state
 * filter that is not one of Kafka's is answered in unknown_state_filters.
 * Both are flexible from v0.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

#define DESCRIBE_SQL \
	"SELECT d.ok, t.producer_id, t.producer_epoch, t.kafka_state, t.timeout_ms," \
	"       coalesce((extract(epoch FROM t.started_at) * 1000)::bigint, -1), u.topic, u.partition" \
	"  FROM (SELECT mq._describable('transactional_id', $1) AS ok) d" \
	"  LEFT JOIN mq.kafka_transactions t ON t.transactional_id = $1" \
	"  LEFT JOIN LATERAL unnest(t.topics, t.partitions) u(topic, partition) ON true" \
	" ORDER BY u.topic, u.partition"

#define LIST_SQL \
	"SELECT t.transactional_id, t.producer_id, t.kafka_state," \
	"       coalesce((extract(epoch FROM now() - t.started_at) * 1000)::bigint, -1)" \
	"  FROM mq.kafka_transactions t ORDER BY 1"

static const char *const kafka_states[] = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
										   "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"};

typedef struct ListState
{
	KJob		job;
	int32_t		nids;
	KSlice	   *ids;			/* DescribeTransactions */
	int32_t		nstates;
	KSlice	   *states;			/* ListTransactions' filters */
	int32_t		npids;
	int64_t    *pids;
	int64_t		duration_ms;
} ListState;

static void
list_state_free(void *p)
{
	ListState  *s = p;

	kjob_free(&s->job);
	free(s->ids);
	free(s->states);
	free(s->pids);
	free(s);
}

static ListState *
list_state_new(KRequest *req)
{
	ListState  *s = mq_malloc0(sizeof(ListState));
	size_t		left = kr_left(&req->body);

	req->state = s;
	req->free_state = list_state_free;
	s->ids = mq_malloc0(sizeof(KSlice) * (left + 1));
	s->states = mq_malloc0(sizeof(KSlice) * (left + 1));
	s->pids = mq_malloc0(sizeof(int64_t) * (left / 8 + 1));
	s->duration_ms = -1;
	return s;
}

/* one id's rows: its fields, then each partition grouped by topic */
static void
write_description(KWriter *w, const KSlice *id, const KStmt *st)
{
	PGresult   *res = st->res;
	int			n = res ? PQntuples(res) : 0;
	int16_t		code = KERR_NONE;
	bool		found = n > 0 && !PQgetisnull(res, 0, 1);

	if (kstmt_failed(st, &code))
		found = false;
	else if (n == 0 || strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	else if (!found)
		code = KERR_TRANSACTIONAL_ID_NOT_FOUND;
	kw_i16(w, code);
	kw_strn(w, id->p, id->len);
	kw_str(w, found ? PQgetvalue(res, 0, 3) : "");
	kw_i32(w, found ? atoi(PQgetvalue(res, 0, 4)) : 0);
	kw_i64(w, found ? strtoll(PQgetvalue(res, 0, 5), NULL, 10) : -1);
	kw_i64(w, found ? strtoll(PQgetvalue(res, 0, 1), NULL, 10) : -1);
	kw_i16(w, found ? (int16_t) atoi(PQgetvalue(res, 0, 2)) : -1);
	{
		size_t		topics_at = kw_later(w);
		int32_t		ntopics = 0;

		for (int i = 0; found && i < n && !PQgetisnull(res, i, 6);)
		{
			const char *topic = PQgetvalue(res, i, 6);
			size_t		parts_at;
			int32_t		nparts = 0;

			kw_str(w, topic);
			parts_at = kw_later(w);
			for (; i < n && strcmp(PQgetvalue(res, i, 6), topic) == 0; i++, nparts++)
				kw_i32(w, atoi(PQgetvalue(res, i, 7)));
			kw_fill_count(w, parts_at, nparts);
			kw_tags(w);
			ntopics++;
		}
		kw_fill_count(w, topics_at, ntopics);
	}
	kw_tags(w);
}

static void
describe_done(KRequest *req)
{
	ListState  *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->nids);
	for (int32_t i = 0; i < s->nids; i++)
		write_description(w, &s->ids[i], &s->job.stmts[i]);
	req_finish(req);
}

void
h_describe_transactions(KRequest *req)
{
	KReader    *r = &req->body;
	ListState  *s = list_state_new(req);
	int32_t		n = kr_array(r, 1);

	for (int32_t i = 0; i < n && !r->err; i++)
	{
		char	   *id;

		s->ids[s->nids] = kr_str(r);
		id = kslice_dup(s->ids[s->nids++]);
		kstmt_text(kjob_add(&s->job, DESCRIBE_SQL, 0), MQ_TEXTOID, id ? id : "");
		free(id);
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	pool_run(req, &s->job, describe_done);
}

static bool
known_state(KSlice st)
{
	for (size_t i = 0; i < sizeof(kafka_states) / sizeof(kafka_states[0]); i++)
		if (kslice_eq(st, kafka_states[i]))
			return true;
	return false;
}

/* does row i pass the request's filters? */
static bool
list_match(const ListState *s, PGresult *res, int i)
{
	bool		ok = s->nstates == 0;
	int64_t		pid = strtoll(PQgetvalue(res, i, 1), NULL, 10);
	int64_t		open_ms = strtoll(PQgetvalue(res, i, 3), NULL, 10);

	for (int32_t k = 0; k < s->nstates && !ok; k++)
		ok = kslice_eq(s->states[k], PQgetvalue(res, i, 2));
	if (ok && s->npids > 0)
	{
		ok = false;
		for (int32_t k = 0; k < s->npids && !ok; k++)
			ok = s->pids[k] == pid;
	}
	if (ok && s->duration_ms >= 0)
		ok = open_ms > s->duration_ms;
	return ok;
}

static void
list_done(KRequest *req)
{
	ListState  *s = req->state;
	KWriter    *w = &req->resp;
	const KStmt *st = &s->job.stmts[0];
	int16_t		code = KERR_NONE;
	int32_t		nunknown = 0;
	size_t		at;
	int32_t		n = 0;

	(void) kstmt_failed(st, &code);
	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, code);
	at = kw_later(w);
	for (int32_t k = 0; k < s->nstates; k++)
	{
		if (known_state(s->states[k]))
			continue;
		kw_strn(w, s->states[k].p, s->states[k].len);
		nunknown++;
	}
	kw_fill_count(w, at, nunknown);
	at = kw_later(w);
	for (int i = 0; st->res && i < PQntuples(st->res); i++)
	{
		if (!list_match(s, st->res, i))
			continue;
		kw_str(w, PQgetvalue(st->res, i, 0));
		kw_i64(w, strtoll(PQgetvalue(st->res, i, 1), NULL, 10));
		kw_str(w, PQgetvalue(st->res, i, 2));
		kw_tags(w);
		n++;
	}
	kw_fill_count(w, at, n);
	req_finish(req);
}

void
h_list_transactions(KRequest *req)
{
	KReader    *r = &req->body;
	ListState  *s = list_state_new(req);
	int32_t		n = kr_array(r, 1);

	for (int32_t i = 0; i < n && !r->err; i++)
		s->states[s->nstates++] = kr_str(r);
	n = kr_array(r, 8);
	for (int32_t i = 0; i < n && !r->err; i++)
		s->pids[s->npids++] = kr_i64(r);
	if (req->api_version >= 1)
		s->duration_ms = kr_i64(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	(void) kjob_add(&s->job, LIST_SQL, 0);
	pool_run(req, &s->job, list_done);
}
