/*-------------------------------------------------------------------------
 *
 * pipeline_commit.c
 *	  The second phase of a "mqctl pipeline" step, once its commit is
 *	  decided on the coordinator (pipeline.c has the whole protocol):
 *	  commit every output and wait for its in-sync replicas, or send it
 *	  again, idempotently, to the partition's current leader; report the
 *	  outputs durable; then commit the input side (offsets and application
 *	  rows) and wait for it, or commit the offset again on the input's
 *	  current leader; then mark the step done.
 *
 * Nothing here gives up: the decision is made, so each action is retried
 * (with a pause growing to a second) until it succeeds, while the nodes'
 * brokers may finish the prepared parts at the same time (recover.c).
 *
 * Locking: none; one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "pipeline_step.h"

/* Tell the coordinator (until it answers) an output is durable, or done. */
static void
coord_until_ok(Pipeline *pl, const char *sql, const char *txn, const char *gid)
{
	for (int attempt = 0;; attempt++)
	{
		MqError		err = MQ_ERROR_INIT;
		MqParams	prm;
		PGconn	   *coord;
		PGresult   *res = NULL;

		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, txn);
		if (gid)
			mq_param_text(&prm, MQ_TEXTOID, gid);
		if ((coord = mq_router_coord(&pl->rin, &err)) != NULL)
			res = mq_exec(coord, sql, &prm, 0, &err);
		if (res)
		{
			PQclear(res);
			return;
		}
		mq_log_warning("step %s: %s", txn, err.message);
		mq_error_free(&err);
		mq_sleep_ms(attempt < 10 ? 100 : 1000);
	}
}

/* COMMIT PREPARED through mq.txn_finish, then wait for the ISR. */
static bool
finish_and_await(Step *s, Participant *p)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *res;
	bool		ok;

	if (p->conn == NULL)
		return false;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->gid);
	res = step_run(s, p, "SELECT mq.txn_finish($1, true)", &prm, &err);
	ok = res != NULL && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	if (res)
		PQclear(res);
	if (ok)
	{
		mq_params_init(&prm);
		mq_param_int(&prm, MQ_INT4OID, s->pl->opt.timeout_ms);
		ok = step_run_ok(s, p, "SELECT mq.await_commit($1)", &prm, &err);
	}
	if (!ok)
		mq_log_warning("step %s: %s not acknowledged (%s); %s", s->txn, p->gid,
					   err.message ? err.message : "finished elsewhere",
					   p == &s->in ? "committing the offset again" : "sending it again");
	mq_error_free(&err);
	return ok;
}

/* acks=all with the same producer id, epoch and sequence: written once. */
static void
redo_output(Step *s, int q)
{
	Pipeline   *pl = s->pl;
	char	   *keys = bytea_array(s, q, true);
	char	   *vals = bytea_array(s, q, false);

	for (int attempt = 0;; attempt++)
	{
		MqError		err = MQ_ERROR_INIT;
		MqParams	prm;
		Participant p = {0};
		PGresult   *res = NULL;

		if (attempt > 0)
			mq_sleep_ms(attempt < 10 ? 100 : 1000);
		if (!mq_router_refresh(&pl->rout, &err) ||
			(p.conn = mq_router_conn(&pl->rout, q, &err)) == NULL)
		{
			mq_error_free(&err);
			continue;
		}
		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, pl->opt.output);
		mq_param_text(&prm, MQ_BYTEAARRAYOID, keys);
		mq_param_text(&prm, MQ_BYTEAARRAYOID, vals);
		mq_param_int(&prm, MQ_INT4OID, q);
		mq_param_int(&prm, MQ_INT8OID, pl->producer_id);
		mq_param_int(&prm, MQ_INT4OID, pl->producer_epoch);
		mq_param_int(&prm, MQ_INT4OID, pl->seq[q]);
		mq_param_int(&prm, MQ_INT4OID, pl->opt.timeout_ms);
		res = step_run(s, &p, "CALL mq.produce($1, $2, $3, $4, 'all', $5, $6, $7, $8)", &prm, &err);
		if (res)
		{
			PQclear(res);
			break;
		}
		mq_log_warning("step %s: sending partition %d again: %s", s->txn, q, err.message);
		mq_error_free(&err);
	}
	pl->redone++;
	free(keys);
	free(vals);
}

/*
 * The offset again on the input's current leader, forward only, acknowledged.
 * The commit is made even when the node has the offset already: a node
 * that resigned keeps the offset its prepared part committed, and a commit
 * skipped there left mq.await_commit nothing to wait for, so the step
 * counted as acknowledged while the partition's new leader lacked the
 * offset and the next step processed the records again.  The commit
 * checks that the node leads the partition, and the wait that its ISR has
 * the offset.
 */
static void
recommit_offset(Step *s)
{
	Pipeline   *pl = s->pl;

	for (int attempt = 0;; attempt++)
	{
		MqError		err = MQ_ERROR_INIT;
		MqParams	prm;
		Participant p = {0};

		if (attempt > 0)
			mq_sleep_ms(attempt < 10 ? 100 : 1000);
		if (!mq_router_refresh(&pl->rin, &err))
		{
			mq_error_free(&err);
			continue;
		}
		p.conn = mq_router_conn(&pl->rin, s->partition, &err);
		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, pl->opt.group);
		mq_param_text(&prm, MQ_TEXTOID, pl->opt.input);
		mq_param_int(&prm, MQ_INT4OID, s->partition);
		mq_param_int(&prm, MQ_INT8OID, s->next_offset);
		if (p.conn && step_run_ok(s, &p, "BEGIN", NULL, &err) &&
			step_run_ok(s, &p, "SELECT mq.commit_offset($1, $2, $3, "
						"greatest(mq.committed_offset($1, $2, $3), $4))", &prm, &err) &&
			step_run_ok(s, &p, "COMMIT", NULL, &err))
		{
			mq_params_init(&prm);
			mq_param_int(&prm, MQ_INT4OID, pl->opt.timeout_ms);
			if (step_run_ok(s, &p, "SELECT mq.await_commit($1)", &prm, &err))
				return;
		}
		if (p.conn)
			(void) mq_command(p.conn, "ROLLBACK", NULL);
		mq_log_warning("step %s: committing the offset again: %s", s->txn,
					   err.message ? err.message : "no leader");
		mq_error_free(&err);
	}
}

/* After the decision: outputs durable, then the offsets, then done. */
void
pipeline_complete(Step *s)
{
	Pipeline   *pl = s->pl;

	for (int i = 0; i < s->n_outs; i++)
	{
		Participant *p = &s->outs[i];

		if (!finish_and_await(s, p))
			for (int q = 0; q < pl->n_out; q++)
				if (s->sent_via[q] == i)	/* not the leaders now: routes change */
					redo_output(s, q);
		coord_until_ok(pl, "SELECT mq_coord.txn_output_durable($1, $2)", s->txn, p->gid);
	}
	for (int q = 0; q < pl->n_out; q++)
		pl->seq[q] += count_for(s, q);
	if (!finish_and_await(s, &s->in))
		recommit_offset(s);
	coord_until_ok(pl, "SELECT mq_coord.txn_done($1)", s->txn, NULL);
}
