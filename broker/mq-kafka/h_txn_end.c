/*-------------------------------------------------------------------------
 *
 * h_txn_end.c
 *	  EndTxn of Kafka transactions in a replicated cluster
 *	  (--coordinator), where a transaction's partitions and group
 *	  offsets may have different leaders.  Loop thread; each request is a
 *	  chain of jobs, none waiting in the loop.
 *
 * The transaction lives in the database of the node the transactional id
 * maps to (cluster_txn_pool), whichever daemon the client asks: the id's
 * row and everything the leaders' daemons staged for it (h_produce.c,
 * h_txn.c); this daemon runs its statements there (the "local" ones).
 * src/sql/68_kafka_txn_cluster.sql has the protocol; here it runs:
 *
 *   EndTxn: mq.kafka_txn_collect here (the client's role); the decision on
 *   the coordinator (mq_coord.kafka_txn_decide, or mq_coord.txn_abort,
 *   which loses to a commit decided before); for a commit, each output
 *   partition's records sent to its leader (mq.txn_redo_output, then
 *   mq.await_commit), reported durable, then each offset committed
 *   forward on its leader (mq.txn_redo_offset, mq.await_commit) and the
 *   transaction reported done; finally mq.kafka_txn_finish here.  Once
 *   the commit is decided nothing fails it: a leader that cannot be
 *   reached is left to the brokers' recovery, which sends the decision's
 *   records to the partitions they lead (broker/mq-broker/recover.c), and
 *   the answer is success, as Kafka answers once its commit is in the
 *   transaction log.  A later commit of the same id is refused with
 *   CONCURRENT_TRANSACTIONS until this one is complete, so each leader
 *   gets the id's batches in order.
 *
 * The coordinator's statements run as the daemon's role; the outputs and
 * offsets too (the broker's rights on mq.txn_redo_output and
 * mq.txn_redo_offset): the client's rights were checked when they were
 * staged.  Without a coordinator this file is not used (h_txn.c commits
 * in one database transaction).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster.h"
#include "kerr.h"
#include "kfan.h"
#include "mq_sqlstates.h"
#include "util.h"

#define COMMIT_WAIT_MS "10000"

#define COLLECT_SQL \
	"SELECT action, txn_id, participants, outputs, keys, vals, headers, timestamps" \
	"  FROM mq.kafka_txn_collect($1, $2, $3, $4)"
#define DECIDE_SQL "SELECT mq_coord.kafka_txn_decide($1, $2, $3, $4, $5, $6, $7, $8, $9)"
#define ABORT_SQL "SELECT mq_coord.kafka_txn_abort($1, $2)"
#define LEADER_EPOCH_SQL(t, p) \
	"(SELECT s.leader_epoch FROM mq.replica_status s WHERE s.topic = " t \
	"    AND s.partition = " p " AND s.role = 'leader')"
#define OUTPUT_SQL \
	"SELECT mq.txn_redo_output($1, $2, " LEADER_EPOCH_SQL("$1", "$2") ", $3, $4, $5," \
	"                          ($6::bytea[])[$8:$8 + $9 - 1], ($7::bytea[])[$8:$8 + $9 - 1]," \
	"                          ($10::jsonb[])[$8:$8 + $9 - 1], ($11::timestamptz[])[$8:$8 + $9 - 1])"
#define OFFSET_SQL \
	"SELECT mq.txn_redo_offset($1, $2, $3, " LEADER_EPOCH_SQL("$2", "$3") ", $4)"
#define AWAIT_SQL "SELECT mq.await_commit(" COMMIT_WAIT_MS ")"
#define FINISH_SQL "SELECT mq.kafka_txn_finish($1, $2, $3, $4, $5)"

typedef struct EndState
{
	KJob		local;			/* collect, then finish */
	KJob		coord;			/* the decision, then the reports */
	KRequest	coord_req;		/* no role: the daemon's on the coordinator */
	TxnRemote	remote;			/* local: on the transaction's node */
	KFan		fan;			/* outputs, then offsets, on their leaders */
	int			nparts;			/* the fan's parts: gid, or NULL for offsets */
	char	  **gids;
	KJob	  **jobs;
	int		   *stmts;
	char	   *id;
	int64_t		producer_id;
	int16_t		epoch;
	bool		commit;			/* asked for */
	bool		committed;		/* decided */
	char	   *txn;			/* the decision's name */
	json_t	   *participants;
	bool		incomplete;		/* a part left to the brokers' recovery */
	int16_t		code;
} EndState;

static void
end_state_free(void *p)
{
	EndState   *s = p;

	kjob_free(&s->local);
	kjob_free(&s->coord);
	kfan_free(&s->fan);
	for (int i = 0; i < s->nparts; i++)
		free(s->gids[i]);
	free(s->gids);
	free(s->jobs);
	free(s->stmts);
	free(s->id);
	free(s->txn);
	if (s->participants)
		json_decref(s->participants);
	free(s);
}

static void
end_answer(KRequest *req)
{
	EndState   *s = req->state;

	kw_i32(&req->resp, 0);		/* throttle_time_ms */
	kw_i16(&req->resp, s->code);
	req_finish(req);
}

static void
ids_params(KStmt *st, const EndState *s)
{
	kstmt_text(st, MQ_TEXTOID, s->id);
	kstmt_int(st, MQ_INT8OID, s->producer_id);
	kstmt_int(st, MQ_INT4OID, s->epoch);
}

/* ---------------------------------------------------------------- */
/* the last step: the stage goes                                     */
/* ---------------------------------------------------------------- */

static void
finished(KRequest *req)
{
	EndState   *s = req->state;
	int16_t		code = txn_cluster_code(&s->local.stmts[0], req->api_version);

	/* a stage left behind must not join the next transaction: retry */
	if (code != KERR_NONE && s->code == KERR_NONE)
		s->code = code == KERR_PRODUCER_FENCED || code == KERR_INVALID_PRODUCER_EPOCH
			? code : KERR_COORDINATOR_NOT_AVAILABLE;
	end_answer(req);
}

static void
finish(KRequest *req)
{
	EndState   *s = req->state;
	KStmt	   *st;

	kjob_free(&s->local);
	st = kjob_add(&s->local, FINISH_SQL, 0);
	ids_params(st, s);
	kstmt_text(st, MQ_TEXTOID, s->txn);
	kstmt_text(st, MQ_BOOLOID, s->committed ? "true" : "false");
	txn_cluster_stage(req, &s->remote, &s->local, s->id, finished);
}

/* ---------------------------------------------------------------- */
/* after a commit decision: outputs, reports, offsets, done          */
/* ---------------------------------------------------------------- */

static void
fan_reset(EndState *s)
{
	kfan_free(&s->fan);
	for (int i = 0; i < s->nparts; i++)
		free(s->gids[i]);
	s->nparts = 0;
}

/* a part's job on its leader's node; false when none is reachable now */
static bool
part_job(EndState *s, const char *topic, int partition, const char *gid)
{
	int16_t		code;
	KPool	   *pool = cluster_leader_pool(topic, partition, &code);
	KJob	   *job = pool ? kfan_job(&s->fan, pool) : NULL;

	if (job == NULL)
	{
		s->incomplete = true;
		return false;
	}
	s->gids[s->nparts] = gid ? mq_strdup(gid) : NULL;
	s->jobs[s->nparts] = job;
	s->stmts[s->nparts++] = job->n;
	return true;
}

/* did part i's statement and its wait succeed? */
static bool
part_ok(const EndState *s, int i)
{
	const KJob *job = s->jobs[i];
	int			k = s->stmts[i];

	if (job->stmts[k].res == NULL || job->stmts[k + 1].res == NULL)
	{
		const KStmt *bad = job->stmts[k].res == NULL ? &job->stmts[k] : &job->stmts[k + 1];

		mq_log_warning("transaction %s: left to the brokers' recovery: %s", ((EndState *) s)->txn,
					   bad->err.message ? bad->err.message : "no answer");
		return false;
	}
	return true;
}

static void
reported_done(KRequest *sub)
{
	finish(sub->state);
}

static void
offsets_done(KRequest *req)
{
	EndState   *s = req->state;
	bool		all = !s->incomplete;

	for (int i = 0; i < s->nparts; i++)
		all &= part_ok(s, i);
	kjob_free(&s->coord);
	if (all)
		kstmt_text(kjob_add(&s->coord, "SELECT mq_coord.txn_done($1)", 0), MQ_TEXTOID, s->txn);
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, reported_done);
}

/* each offset forward on its partition's leader */
static void
send_offsets(KRequest *sub)
{
	KRequest   *req = sub->state;
	EndState   *s = req->state;
	size_t		i;
	json_t	   *part;
	bool		all = true;

	for (int k = 0; k < s->coord.n; k++)
		all &= s->coord.stmts[k].res != NULL;
	fan_reset(s);
	s->incomplete = false;
	json_array_foreach(s->participants, i, part)
	{
		size_t		j;
		json_t	   *o;
		const char *kind = json_string_value(json_object_get(part, "kind"));

		if (!all || kind == NULL || strcmp(kind, "offsets") != 0)
			continue;
		json_array_foreach(json_object_get(part, "offsets"), j, o)
		{
			const char *topic = json_string_value(json_object_get(o, "topic"));
			int			p = (int) json_integer_value(json_object_get(o, "partition"));
			KStmt	   *st;

			if (topic == NULL || !part_job(s, topic, p, NULL))
				continue;
			st = kjob_add(s->jobs[s->nparts - 1], OFFSET_SQL, 0);
			kstmt_text(st, MQ_TEXTOID, json_string_value(json_object_get(o, "group")));
			kstmt_text(st, MQ_TEXTOID, topic);
			kstmt_int(st, MQ_INT4OID, p);
			kstmt_int(st, MQ_INT8OID, json_integer_value(json_object_get(o, "next")));
			(void) kjob_add(s->jobs[s->nparts - 1], AWAIT_SQL, 0);
		}
	}
	if (!all || s->incomplete)
	{
		finish(req);			/* the brokers commit the offsets once the outputs are durable */
		return;
	}
	s->fan.daemon_role = true;
	kfan_run(&s->fan, req, offsets_done);
}

/* every output sent: report those on their in-sync replicas */
static void
outputs_done(KRequest *req)
{
	EndState   *s = req->state;

	kjob_free(&s->coord);
	for (int i = 0; i < s->nparts; i++)
	{
		KStmt	   *st;

		if (!part_ok(s, i))
			continue;
		st = kjob_add(&s->coord, "SELECT mq_coord.txn_output_durable($1, $2)", 0);
		kstmt_text(st, MQ_TEXTOID, s->txn);
		kstmt_text(st, MQ_TEXTOID, s->gids[i]);
	}
	if (s->coord.n < s->nparts || s->incomplete)
	{
		/* a partition the brokers' recovery sends: it commits the offsets too */
		pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, reported_done);
		return;
	}
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, send_offsets);
}

/* each output partition's records to its current leader, as the producer */
static void
send_outputs(KRequest *req, const KStmt *got)
{
	EndState   *s = req->state;
	bool		none = PQgetisnull(got->res, 0, 3);
	json_t	   *outputs = none ? NULL : json_loads(PQgetvalue(got->res, 0, 3), 0, NULL);
	size_t		i;
	json_t	   *o;
	int64_t		first = 1;

	json_array_foreach(outputs, i, o)
	{
		const char *topic = json_string_value(json_object_get(o, "topic"));
		int			p = (int) json_integer_value(json_object_get(o, "partition"));
		int64_t		count = json_integer_value(json_object_get(o, "count"));
		KStmt	   *st;

		if (topic == NULL)
			s->incomplete = true;
		else if (part_job(s, topic, p, json_string_value(json_object_get(o, "gid"))))
		{
			st = kjob_add(s->jobs[s->nparts - 1], OUTPUT_SQL, 0);
			kstmt_text(st, MQ_TEXTOID, topic);
			kstmt_int(st, MQ_INT4OID, p);
			kstmt_int(st, MQ_INT8OID, json_integer_value(json_object_get(o, "producer_id")));
			kstmt_int(st, MQ_INT4OID, json_integer_value(json_object_get(o, "producer_epoch")));
			kstmt_int(st, MQ_INT4OID, json_integer_value(json_object_get(o, "base_sequence")));
			kstmt_text(st, MQ_BYTEAARRAYOID, PQgetvalue(got->res, 0, 4));
			kstmt_text(st, MQ_BYTEAARRAYOID, PQgetvalue(got->res, 0, 5));
			kstmt_int(st, MQ_INT4OID, first);
			kstmt_int(st, MQ_INT4OID, count);
			kstmt_text(st, MQ_JSONBARRAYOID, PQgetisnull(got->res, 0, 6) ? NULL : PQgetvalue(got->res, 0, 6));
			kstmt_text(st, MQ_TIMESTAMPTZARRAYOID,
					   PQgetisnull(got->res, 0, 7) ? NULL : PQgetvalue(got->res, 0, 7));
			(void) kjob_add(s->jobs[s->nparts - 1], AWAIT_SQL, 0);
		}
		first += count;
	}
	if (outputs)
		json_decref(outputs);
	else if (!none)
		s->incomplete = true;	/* cannot happen: the brokers send them */
	s->fan.daemon_role = true;
	kfan_run(&s->fan, req, outputs_done);
}

/* ---------------------------------------------------------------- */
/* the decision                                                     */
/* ---------------------------------------------------------------- */

static void
decided(KRequest *sub)
{
	KRequest   *req = sub->state;
	EndState   *s = req->state;
	const KStmt *st = &s->coord.stmts[0];

	if (st->res == NULL)
	{
		s->code = txn_cluster_code(st, req->api_version);
		end_answer(req);		/* nothing decided here: the client retries or aborts */
		return;
	}
	s->committed = strcmp(PQgetvalue(st->res, 0, 0), "abort") != 0;
	if (!s->commit && s->committed)
		s->code = KERR_INVALID_TXN_STATE;	/* a commit was decided first: it holds */
	if (!s->committed)
	{
		finish(req);
		return;
	}
	if (!s->commit)
	{
		finish(req);			/* the brokers send what that commit wrote */
		return;
	}
	send_outputs(req, &s->local.stmts[0]);
}

/* the types of kafka_txn_decide's outputs, keys, vals, headers, timestamps */
static const Oid decide_types[] = {MQ_JSONBOID, MQ_BYTEAARRAYOID, MQ_BYTEAARRAYOID,
			MQ_JSONBARRAYOID, MQ_TIMESTAMPTZARRAYOID};

static void
collected(KRequest *req)
{
	EndState   *s = req->state;
	const KStmt *st = &s->local.stmts[0];
	const char *action;
	KStmt	   *d;

	if (st->res == NULL || PQntuples(st->res) != 1)
	{
		s->code = txn_cluster_code(st, req->api_version);
		end_answer(req);
		return;
	}
	action = PQgetvalue(st->res, 0, 0);
	if (strcmp(action, "none") == 0)
	{
		end_answer(req);		/* a retry, or nothing open to abort */
		return;
	}
	s->txn = mq_strdup(PQgetvalue(st->res, 0, 1));
	if (strcmp(action, "finish") == 0)
	{
		s->committed = true;	/* nothing was written: nothing to decide */
		finish(req);
		return;
	}
	s->participants = json_loads(PQgetvalue(st->res, 0, 2), 0, NULL);
	if (strcmp(action, "decide") == 0)
	{
		int			n = json_is_array(s->participants) ? (int) json_array_size(s->participants) : 0;
		size_t		i;
		json_t	   *part;

		/* the fan's parts: one per output partition, or per offset */
		json_array_foreach(s->participants, i, part)
			n += (int) json_array_size(json_object_get(part, "offsets"));
		s->gids = mq_malloc0(sizeof(char *) * (n + 1));
		s->jobs = mq_malloc0(sizeof(KJob *) * (n + 1));
		s->stmts = mq_malloc0(sizeof(int) * (n + 1));
		d = kjob_add(&s->coord, DECIDE_SQL, 0);
		kstmt_text(d, MQ_TEXTOID, s->txn);
		kstmt_text(d, MQ_TEXTOID, s->id);
		kstmt_text(d, MQ_JSONBOID, PQgetvalue(st->res, 0, 2));
		kstmt_int(d, MQ_INT4OID, s->epoch);
		for (int c = 3; c <= 7; c++)
			kstmt_text(d, decide_types[c - 3], PQgetisnull(st->res, 0, c) ? NULL : PQgetvalue(st->res, 0, c));
	}
	else
	{
		d = kjob_add(&s->coord, ABORT_SQL, 0);
		kstmt_text(d, MQ_TEXTOID, s->txn);
		kstmt_text(d, MQ_TEXTOID, s->id);
	}
	s->coord_req.state = req;
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, decided);
}

void
txn_cluster_end(KRequest *req, KSlice id, int64_t producer_id, int16_t epoch, bool commit)
{
	EndState   *s = mq_malloc0(sizeof(EndState));
	KStmt	   *st;

	req->state = s;
	req->free_state = end_state_free;
	s->id = kslice_dup(id);
	s->producer_id = producer_id;
	s->epoch = epoch;
	s->commit = commit;
	if (s->id == NULL || cluster_coord_pool() == NULL)
	{
		s->code = KERR_COORDINATOR_NOT_AVAILABLE;
		end_answer(req);
		return;
	}
	st = kjob_add(&s->local, COLLECT_SQL, 0);
	ids_params(st, s);
	kstmt_text(st, MQ_BOOLOID, commit ? "true" : "false");
	txn_cluster_stage(req, &s->remote, &s->local, s->id, collected);
}
