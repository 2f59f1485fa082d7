/*-------------------------------------------------------------------------
 *
 * pipeline.c
 *	  One exactly-once step of "mqctl pipeline": read a batch of an input
 *	  partition, run the application's SQL for each record and commit the
 *	  group's offset on the input's leader, send the records to the output
 *	  partitions' leaders, and commit all of it across those nodes with
 *	  two-phase commit (docs/delivery.md, "Exactly-once in a cluster").
 *
 * The order, and why:
 *   1. every part is a transaction on its node, each prepared with gid
 *      "mq:<txn>:<n>" (n = 0: the input side, offsets and application
 *      rows; 1..: one per output leader);
 *   2. the commit decision, with what each part wrote (mq.txn_notes), is
 *      written durably on the coordinator (mq_coord.txn_decide); before
 *      it, any failure rolls every part back (and recovery rolls back
 *      parts left prepared without a decision after txn.timeout.ms);
 *   3. the outputs commit, and each is waited for on its in-sync replicas
 *      (mq.await_commit); one whose commit or wait failed is sent again
 *      to the partition's current leader with acks=all and the same
 *      producer id, epoch and sequence, so it is written once whether the
 *      first commit survived or not (mq.produce drops the retry);
 *   4. only when every output is durable (mq_coord.txn_output_durable)
 *      does the input side commit: its offsets never run ahead of the
 *      outputs.  If its commit or wait fails, the offset is committed
 *      again on the input's current leader (forward only), and the
 *      prepared part commits where it was (its broker, or on the old
 *      leader's return), keeping the application rows;
 *   5. mq_coord.txn_done.
 *
 * The decision also stores every output partition's records on the
 * coordinator (mq_coord.txn_output): if we die after it and an output's
 * leader changes before that output is known durable, the broker that
 * leads the partition then sends them again (broker/mq-broker/recover.c).
 * So a new run of the same id first waits until such a step is complete
 * (mq_coord.init_producer refuses it with MQ056 until then).
 *
 * For tests of the crash windows: with MQCTL_PIPELINE_TEST_STOP set to
 * "prepared:N", "decided:N" or "prepared+decided:N", the process stops
 * itself (SIGSTOP) in its N-th step that has records, after every part is
 * prepared and/or after the decision is recorded, once at each point, so
 * that a test can act (or kill it) exactly there.
 *
 * Locking: none here; each prepared part holds its node's locks (the
 * output partitions' produce locks, the input partition's offsets row)
 * until it is finished.
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mqctl.h"
#include "pipeline.h"
#include "pipeline_step.h"

/* Step 0 on the input's leader: the batch from the committed offset. */
static int
read_batch(Step *s, MqError *err)
{
	Pipeline   *pl = s->pl;
	MqParams	prm;
	PGresult   *res;

	s->in.broker = mq_router_leader(&pl->rin, s->partition);
	s->in.conn = mq_router_conn(&pl->rin, s->partition, err);
	if (s->in.conn == NULL || !step_run_ok(s, &s->in, "BEGIN", NULL, err))
		return -1;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.input);
	mq_param_int(&prm, MQ_INT4OID, s->partition);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.group);
	mq_param_int(&prm, MQ_INT4OID, pl->opt.batch);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.output);
	mq_param_int(&prm, MQ_INT4OID, pl->n_out);
	res = step_run(s, &s->in,
				   "SELECT f.msg_offset, f.key, f.value, CASE WHEN f.key IS NULL THEN $2 % $6 "
				   "ELSE mq.partition_for($5, f.key) END "
				   "FROM mq.fetch($1, $2, coalesce(mq.committed_offset($3, $1, $2), 0), $4) f "
				   "ORDER BY f.msg_offset", &prm, err);
	if (res == NULL)
		return -1;
	s->n = PQntuples(res);
	s->recs = mq_malloc0((s->n + 1) * sizeof(Rec));
	for (int i = 0; i < s->n; i++)
	{
		s->recs[i].key = PQgetisnull(res, i, 1) ? NULL : mq_strdup(PQgetvalue(res, i, 1));
		s->recs[i].value = mq_strdup(PQgetisnull(res, i, 2) ? "\\x" : PQgetvalue(res, i, 2));
		s->recs[i].out = atoi(PQgetvalue(res, i, 3));
		s->next_offset = atoll(PQgetvalue(res, i, 0)) + 1;
	}
	PQclear(res);
	return s->n;
}

/* The application's rows and the group's offset, on the input side. */
static bool
apply_and_commit(Step *s, MqError *err)
{
	Pipeline   *pl = s->pl;
	MqParams	prm;

	if (pl->opt.apply)
	{
		/* one round trip for the batch's rows (libpq's pipeline mode) */
		MqParams   *each = mq_malloc(s->n * sizeof(MqParams));
		bool		ok;

		for (int i = 0; i < s->n; i++)
		{
			mq_params_init(&each[i]);
			mq_param_text(&each[i], MQ_BYTEAOID, s->recs[i].key);
			mq_param_text(&each[i], MQ_BYTEAOID, s->recs[i].value);
			mq_param_int(&each[i], MQ_INT4OID, s->partition);
			mq_param_int(&each[i], MQ_INT8OID, s->next_offset - s->n + i);
		}
		ok = mq_exec_many(s->in.conn, pl->opt.apply, each, s->n, err);
		free(each);
		if (!ok)
		{
			if (err->connection_lost)
			{
				(void) mq_router_conn_lost(&pl->rin, s->in.conn);
				s->in.conn = NULL;
			}
			return false;
		}
	}
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.group);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.input);
	mq_param_int(&prm, MQ_INT4OID, s->partition);
	mq_param_int(&prm, MQ_INT8OID, s->next_offset);

	/*
	 * Not a fenced commit (producer id and epoch): that registers the
	 * producer on the node in this transaction, and the step's output part
	 * on the same node would wait for it.  The decision fences instead.
	 */
	return step_run_ok(s, &s->in, "SELECT mq.commit_offset($1, $2, $3, $4)", &prm, err);
}

/*
 * Before the first prepared part on an output leader's node: register our
 * producer epoch there in a transaction of its own (an empty idempotent
 * batch at sequence 0).  The first send of an epoch would register it
 * inside the prepared part, whose lock on the producer's row would then
 * hold every follower append of that node carrying our records (other
 * output partitions) until the part commits.
 */
static bool
register_epoch(Step *s, Participant *p, int q, MqError *err)
{
	Pipeline   *pl = s->pl;
	MqParams	prm;

	for (int i = 0; i < pl->n_registered; i++)
		if (pl->registered[i] == p->broker)
			return true;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, pl->opt.output);
	mq_param_int(&prm, MQ_INT4OID, q);
	mq_param_int(&prm, MQ_INT8OID, pl->producer_id);
	mq_param_int(&prm, MQ_INT4OID, pl->producer_epoch);
	if (!step_run_ok(s, p, "SELECT count(*) FROM mq.send_batch($1, '{}'::bytea[], '{}'::bytea[], NULL, $2, $3, $4, 0)",
					 &prm, err))
		return false;
	if (pl->n_registered < PIPELINE_MAX_BROKERS)
		pl->registered[pl->n_registered++] = p->broker;
	return true;
}

static Participant *
output_part(Step *s, int q, MqError *err)
{
	int32_t		leader = mq_router_leader(&s->pl->rout, q);
	Participant *p;

	for (int i = 0; i < s->n_outs; i++)
		if (s->outs[i].broker == leader)
			return s->outs[i].conn ? &s->outs[i] : NULL;
	if (s->n_outs == PIPELINE_MAX_BROKERS)
	{
		err->message = mq_strdup("too many brokers");
		return NULL;
	}
	p = &s->outs[s->n_outs++];
	p->broker = leader;
	snprintf(p->gid, sizeof(p->gid), "mq:%s:%d", s->txn, s->n_outs);
	p->conn = mq_router_conn(&s->pl->rout, q, err);
	if (p->conn == NULL || !register_epoch(s, p, q, err) || !step_run_ok(s, p, "BEGIN", NULL, err))
		return NULL;
	return p;
}

/* Each output partition's records, in a transaction on its leader. */
static bool
send_outputs(Step *s, MqError *err)
{
	Pipeline   *pl = s->pl;

	for (int q = 0; q < pl->n_out; q++)
	{
		Participant *p;
		MqParams	prm;
		char	   *keys;
		char	   *vals;
		bool		ok;

		if (count_for(s, q) == 0)
			continue;
		if ((p = output_part(s, q, err)) == NULL)
			return false;
		s->sent_via[q] = (int) (p - s->outs);
		keys = bytea_array(s, q, true);
		vals = bytea_array(s, q, false);
		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, pl->opt.output);
		mq_param_text(&prm, MQ_BYTEAARRAYOID, keys);
		mq_param_text(&prm, MQ_BYTEAARRAYOID, vals);
		mq_param_int(&prm, MQ_INT4OID, q);
		mq_param_int(&prm, MQ_INT8OID, pl->producer_id);
		mq_param_int(&prm, MQ_INT4OID, pl->producer_epoch);
		mq_param_int(&prm, MQ_INT4OID, pl->seq[q]);
		ok = step_run_ok(s, p, "SELECT count(*) FROM mq.send_batch($1, $2, $3, NULL, $4, $5, $6, $7)",
						 &prm, err);
		free(keys);
		free(vals);
		if (!ok)
			return false;
	}
	return true;
}

/* What the part wrote to replicated partitions, then PREPARE TRANSACTION. */
static bool
prepare(Step *s, Participant *p, MqError *err)
{
	PGresult   *res = step_run(s, p, "SELECT mq.txn_notes()::text", NULL, err);
	char		sql[200];

	if (res == NULL)
		return false;
	p->notes = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
	PQclear(res);
	snprintf(sql, sizeof(sql), "PREPARE TRANSACTION '%s'", p->gid);
	if (!step_run_ok(s, p, sql, NULL, err))
		return false;
	p->prepared = true;
	return true;
}

static bool
prepare_all(Step *s, MqError *err)
{
	if (!prepare(s, &s->in, err))
		return false;
	for (int i = 0; i < s->n_outs; i++)
		if (!prepare(s, &s->outs[i], err))
			return false;
	return true;
}

/* Roll back what was prepared or begun; recovery finishes what we cannot. */
static void
undo_part(Step *s, Participant *p)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;

	if (p->conn == NULL)
		return;
	if (p->prepared)
	{
		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, p->gid);
		(void) step_run_ok(s, p, "SELECT mq.txn_finish($1, false)", &prm, &err);
	}
	else
		(void) step_run_ok(s, p, "ROLLBACK", NULL, &err);
	mq_error_free(&err);
}

static void
abort_step(Step *s, const char *why)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGconn	   *coord;
	PGresult   *res;
	bool		prepared = s->in.prepared;

	for (int i = 0; i < s->n_outs; i++)
		prepared |= s->outs[i].prepared;
	if (!prepared)
	{
		/* nothing to recover: plain rollbacks, no decision needed */
		undo_part(s, &s->in);
		for (int i = 0; i < s->n_outs; i++)
			undo_part(s, &s->outs[i]);
		return;
	}
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, s->txn);
	mq_param_text(&prm, MQ_TEXTOID, why);
	coord = mq_router_coord(&s->pl->rin, &err);
	res = coord ? mq_exec(coord, "SELECT mq_coord.txn_abort($1, $2)", &prm, 0, &err) : NULL;
	if (res)
		PQclear(res);
	mq_error_free(&err);
	undo_part(s, &s->in);
	for (int i = 0; i < s->n_outs; i++)
		undo_part(s, &s->outs[i]);
}

static void
step_free(Step *s)
{
	for (int i = 0; i < s->n; i++)
	{
		free(s->recs[i].key);
		free(s->recs[i].value);
	}
	free(s->recs);
	free(s->sent_via);
	json_decref(s->in.notes);
	for (int i = 0; i < s->n_outs; i++)
		json_decref(s->outs[i].notes);
}

/* The test hook above. */
static void
test_stop(Pipeline *pl, const char *where)
{
	char	   *at = strstr(pl->test_stop_at, where);

	if (at == NULL || pl->done_steps + 1 != pl->test_stop_step)
		return;
	/*
	 * Once at each point: when the step fails after the stop (recovery rolled
	 * it back), the next try is no step for the test to stop at again.
	 */
	memset(at, '-', strlen(where));
	raise(SIGSTOP);
}

int
pipeline_step(Pipeline *pl, int partition, MqError *err)
{
	Step		s;
	int			n;

	memset(&s, 0, sizeof(s));
	s.pl = pl;
	s.partition = partition;
	snprintf(s.txn, sizeof(s.txn), "p%lld-e%d-s%ld", (long long) pl->producer_id,
			 pl->producer_epoch, pl->steps++);
	snprintf(s.in.gid, sizeof(s.in.gid), "mq:%s:0", s.txn);
	s.sent_via = mq_malloc(pl->n_out * sizeof(int));
	for (int q = 0; q < pl->n_out; q++)
		s.sent_via[q] = -1;
	n = read_batch(&s, err);
	if (n > 0 && (!apply_and_commit(&s, err) || !send_outputs(&s, err) || !prepare_all(&s, err)))
		n = -1;
	if (n > 0)
		test_stop(pl, "prepared");
	if (n <= 0)
		abort_step(&s, n < 0 ? "a part failed before the decision" : "nothing to read");
	else if (!pipeline_decide(&s))
	{
		abort_step(&s, "refused");
		n = -1;
	}
	else
	{
		test_stop(pl, "decided");
		pipeline_complete(&s);
		pl->done_steps++;
	}
	step_free(&s);
	return n;
}

bool
pipeline_init(Pipeline *pl, PGconn *coord, const char *bootstrap,
			  const PipelineOptions *opt, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	memset(pl, 0, sizeof(*pl));
	pl->opt = *opt;
	/* the input's router owns coord from here on (pipeline_close ends it) */
	if (!mq_router_open(&pl->rin, coord, bootstrap, "mqctl-pipeline", opt->input,
						NULL, NULL, err) ||
		!mq_router_open_beside(&pl->rout, &pl->rin, opt->output, NULL, NULL, err))
	{
		if (mq_error_is(err, MQ_SQLSTATE_UNKNOWN_TOPIC))
		{
			mq_error_free(err);
			err->message = mq_strdup("the input and output topics must be replicated topics of the coordinator");
		}
		return false;
	}
	/* the counts the step's partitioning uses (mq.partition_for's) */
	pl->n_in = pl->rin.npartitions;
	pl->n_out = pl->rout.npartitions;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, opt->id);
	while ((res = mq_exec(coord, "SELECT producer_id, producer_epoch FROM mq_coord.init_producer($1)",
						  &prm, 0, err)) == NULL &&
		   mq_error_is(err, MQ_SQLSTATE_CONCURRENT_TRANSACTIONS))
	{
		/* a step of the previous run is decided: it completes first */
		mq_log_warning("waiting for the previous run's step to complete: %s", err->message);
		mq_error_free(err);
		mq_sleep_ms(1000);
	}
	if (res == NULL)
		return false;
	pl->producer_id = atoll(PQgetvalue(res, 0, 0));
	pl->producer_epoch = atoi(PQgetvalue(res, 0, 1));
	PQclear(res);
	pl->seq = mq_malloc0(pl->n_out * sizeof(int32_t));
	if (getenv("MQCTL_PIPELINE_TEST_STOP"))
		(void) sscanf(getenv("MQCTL_PIPELINE_TEST_STOP"), "%31[a-z+]:%ld",
					  pl->test_stop_at, &pl->test_stop_step);
	return true;
}

void
pipeline_close(Pipeline *pl)
{
	mq_router_close(&pl->rout);
	mq_router_close(&pl->rin);
	free(pl->seq);
	pl->seq = NULL;
}
