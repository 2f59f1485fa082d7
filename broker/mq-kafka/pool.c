/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  Bounded pools of asynchronous database connections: libpq
 *	  connections in non-blocking pipeline mode, watched by the event loop.
 *	  The local pool (--pool connections to this node's database) serves
 *	  every request; in a replicated cluster, small pools to other nodes
 *	  and to the coordinator (cluster.c) carry forwarded offset commits and
 *	  the cluster's view.
 *	  A request's job (kjob.h) runs on one idle connection: all its
 *	  statements are sent at once, each followed by a sync point (so each
 *	  is its own transaction), and the results are read as the socket
 *	  becomes readable; then the request's done callback runs.  Requests
 *	  that find no idle connection wait in a FIFO.
 *
 * Loop thread only: no locking.  Connections are pool_conn.c's, under the
 * shared connection policy (connect timeout, keepalives, back-off with
 * jitter); while the database is down, jobs fail at once with
 * connection_lost, and the request's client connection is closed after
 * its answer (server.c), as is every new one: clients then treat this
 * broker as down and turn to the others.  A server that refuses some of
 * the connections while others work (a role's CONNECTION LIMIT below
 * --pool) is not down: the pool serves with fewer (pool_conn.c).  A
 * parked fetch or join holds no connection.  Only the local pool's
 * failures close client connections:
 * another node being down is the caller's to map.
 *
 * A statement deadline per job (--statement-timeout-ms; the cluster's
 * pools at most CLUSTER_STATEMENT_TIMEOUT_MS): a job whose results have not
 * all arrived by then is cancelled (mq_cancel_bounded, so a cut link cannot
 * hold us either), its connection dropped and reconnected under the
 * policy, and its outstanding statements fail as connection lost, as
 * when a connection breaks (a local request's client connection is then
 * closed; other pools' callers map the failure): no request waits for
 * ever on a silent database.
 *
 * Acting as a client's role (sasl.c): a request with a role sends, in
 * each statement's transaction and before it, set_config('role', role,
 * true), i.e. SET LOCAL ROLE.  If that fails, the statement is not run
 * (the pipeline aborts up to its sync point); the role lasts until the
 * transaction ends, so a connection never carries one principal's role
 * into another's statement, and the daemon's own jobs (no role) run as
 * the daemon's role.  The pool's bound stays --pool connections.
 *
 * Each request adds the time its jobs took, from sending to the last
 * result, to its db_us: the time the database worked for it, which its
 * client's request_percentage quota counts (quota.c).
 *
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <stdlib.h>
#include <string.h>

#include "kjob.h"
#include "kmetrics.h"
#include "mqconn.h"
#include "pool_conn.h"
#include "util.h"

/* the coordinator's and other nodes' pools: their jobs are short reads */
#define CLUSTER_STATEMENT_TIMEOUT_MS 10000

static KPool *local_pool;

bool
pool_available(void)
{
	return !local_pool->db_down;
}

bool
pool_up(const KPool *p)
{
	return !p->db_down;
}

static void
fail_stmt(KStmt *s, const char *msg)
{
	if (s->res || s->err.message)
		return;
	s->err.connection_lost = true;
	s->err.message = mq_strdup(msg);
	kmetrics_statement_error("08006");	/* connection_failure */
}

static void slot_finish(Slot *s);
static void fail_job(KPool *p, KRequest *req, const char *msg);

/* an asynchronous connection attempt failed: so do waiting requests if no other slot can serve */
static void
connect_failed(Slot *s)
{
	KPool	   *p = s->pool;
	bool		other = false;

	for (int i = 0; i < p->size; i++)
		other |= p->slots[i].connecting || p->slots[i].req != NULL ||
			pool_slot_connected(&p->slots[i]);
	while (!other && p->wait_head)
	{
		KRequest   *req = p->wait_head;

		p->wait_head = req->next;
		if (p->wait_head == NULL)
			p->wait_tail = NULL;
		req->next = NULL;
		fail_job(p, req, "no database connection");
	}
}

static void
job_done(KRequest *req)
{
	if (req->done_fn)
		req->done_fn(req);
	else
		req_finish(req);
}

/* every statement without an outcome fails; the request is answered */
static void
fail_job(KPool *p, KRequest *req, const char *msg)
{
	for (int i = 0; i < req->job->n; i++)
		fail_stmt(&req->job->stmts[i], msg);
	if (p->local)
		req->db_lost = true;
	job_done(req);
}

static void start(Slot *s, KRequest *req);

/* the slot's job is complete: take the next waiting request, answer this one */
static void
slot_finish(Slot *s)
{
	KPool	   *p = s->pool;
	KRequest   *req = s->req;
	KRequest   *next = p->wait_head;

	s->req = NULL;
	evtimer_del(s->deadline_ev);
	if (req)
		req->db_us += mq_now_us() - s->started_us;
	if (next && (pool_slot_ready(s) || !s->connecting))
	{
		p->wait_head = next->next;
		if (p->wait_head == NULL)
			p->wait_tail = NULL;
		next->next = NULL;
		if (s->conn && !s->connecting)
			start(s, next);
		else
			fail_job(p, next, "no database connection");
	}
	if (req)
		job_done(req);
}

/* the slot's connection is gone: its job's statements fail, it reconnects */
static void
slot_lost(Slot *s, const char *why)
{
	if (s->req)
	{
		for (int i = 0; i < s->req->job->n; i++)
			fail_stmt(&s->req->job->stmts[i], why);
		if (s->pool->local)
			s->req->db_lost = true;
	}
	pool_slot_lost(s);
	slot_finish(s);
}

static void
slot_broken(Slot *s)
{
	const char *msg = s->conn ? PQerrorMessage(s->conn) : "connection lost";

	mq_log_warning("connection to %s lost: %.*s", s->pool->name, (int) strcspn(msg, "\n"), msg);
	slot_lost(s, "database connection lost");
}

/*
 * An idle connection is gone: the server closed it (its
 * idle_session_timeout, a DBA's pg_terminate_backend, a shutdown) or the
 * link broke.  No request is lost, so no warning: the slot reconnects,
 * and a database that is down shows when that fails.
 */
static void
idle_lost(Slot *s)
{
	const char *msg = PQerrorMessage(s->conn);

	mq_log_info("an idle connection to %s closed: %.*s; reconnecting", s->pool->name,
				(int) strcspn(msg, "\n"), msg);
	pool_slot_lost(s);
}

/* the job's deadline passed: cancel it, give the connection up */
static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	Slot	   *s = arg;

	if (s->req == NULL || s->conn == NULL)
		return;
	mq_log_warning("statement timeout on %s after %d ms: cancelling, reconnecting",
				   s->pool->name, s->pool->statement_timeout_ms);
	(void) mq_cancel_bounded(s->conn, s->pool->policy.cancel_wait_ms);
	slot_lost(s, "database connection lost: statement timeout");
}

#define SQL_SET_LOCAL_ROLE "SELECT pg_catalog.set_config('role', $1, true)"

/* whether statement i of req goes after a set_config of the role */
static bool
sends_role(const KRequest *req, int i)
{
	return req->role != NULL && i < req->job->n && !req->job->stmts[i].as_daemon;
}

static void
start(Slot *s, KRequest *req)
{
	KJob	   *job = req->job;
	const char *role[1] = {req->role};
	struct timeval tv;

	s->req = req;
	s->started_us = mq_now_us();
	s->next = 0;
	s->saw_null = false;
	s->role_result = sends_role(req, 0);
	tv.tv_sec = s->pool->statement_timeout_ms / 1000;
	tv.tv_usec = (s->pool->statement_timeout_ms % 1000) * 1000;
	evtimer_add(s->deadline_ev, &tv);
	for (int i = 0; i < job->n; i++)
	{
		KStmt	   *st = &job->stmts[i];

		if ((sends_role(req, i) &&
			 !PQsendQueryParams(s->conn, SQL_SET_LOCAL_ROLE, 1, NULL, role, NULL, NULL, 0)) ||
			!PQsendQueryParams(s->conn, st->sql, st->nparams, st->types,
							   (const char *const *) st->values, st->lengths, st->formats,
							   st->result_format) ||
			!PQpipelineSync(s->conn))
		{
			slot_broken(s);
			return;
		}
	}
	switch (PQflush(s->conn))
	{
		case 0:
			break;
		case 1:
			pool_slot_watch(s, true);
			break;
		default:
			slot_broken(s);
	}
}

static void
take_error(KStmt *st, PGconn *conn, const PGresult *r)
{
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	const char *table = PQresultErrorField(r, PG_DIAG_TABLE_NAME);

	if (st->err.message)
		return;
	/* an authorization refusal's resource kind (kerr.c) */
	st->err.table_name = table ? mq_strdup(table) : NULL;
	snprintf(st->err.sqlstate, sizeof(st->err.sqlstate), "%s", state ? state : "");
	st->err.message = mq_strdup(msg ? msg : (PQresultStatus(r) == PGRES_PIPELINE_ABORTED
											 ? "pipeline aborted" : PQerrorMessage(conn)));
	st->err.connection_lost = PQstatus(conn) != CONNECTION_OK;
	/* the first error of a pipeline, not the statements it aborted after it */
	if (PQresultStatus(r) != PGRES_PIPELINE_ABORTED)
		kmetrics_statement_error(st->err.sqlstate);
}

/*
 * The job's last result arrived.  A job leaves no transaction open; one
 * that did (a bug) would hold its locks and snapshot and fail the next
 * job's statements, so the connection is given up.
 */
static void
job_end(Slot *s)
{
	if (PQtransactionStatus(s->conn) != PQTRANS_IDLE)
	{
		mq_log_warning("a job left a transaction open on %s: reconnecting", s->pool->name);
		pool_slot_lost(s);
	}
	slot_finish(s);
}

/*
 * The role's set_config failed: a role that does not exist (22023, the
 * subject of a certificate a DEFAULT mapping rule passed through) is
 * refused as one the daemon may not take (42501 without a resource:
 * kerr.c), as Kafka refuses a principal no ACL names.
 */
static void
take_role_error(KStmt *st, PGconn *conn, const PGresult *r)
{
	take_error(st, conn, r);
	if (strcmp(st->err.sqlstate, "22023") == 0)
		snprintf(st->err.sqlstate, sizeof(st->err.sqlstate), "42501");
}

/* take the results that have arrived */
static void
drain(Slot *s)
{
	while (s->req && !PQisBusy(s->conn))
	{
		PGresult   *r = PQgetResult(s->conn);
		KStmt	   *st;

		if (r == NULL)
		{
			if (s->saw_null)
				return;
			s->saw_null = true;
			continue;
		}
		s->saw_null = false;
		st = &s->req->job->stmts[s->next];
		if (s->role_result && PQresultStatus(r) != PGRES_PIPELINE_SYNC)
		{
			/* set_config's: if it failed, so does the statement */
			s->role_result = false;
			if (PQresultStatus(r) != PGRES_TUPLES_OK)
				take_role_error(st, s->conn, r);
			PQclear(r);
			continue;
		}
		switch (PQresultStatus(r))
		{
			case PGRES_PIPELINE_SYNC:
				PQclear(r);
				s->role_result = sends_role(s->req, s->next + 1);
				if (++s->next == s->req->job->n)
					job_end(s);
				continue;
			case PGRES_TUPLES_OK:
			case PGRES_COMMAND_OK:
				if (st->res == NULL)
				{
					st->res = r;
					continue;
				}
				break;
			default:
				take_error(st, s->conn, r);
		}
		PQclear(r);
	}
}

static void
slot_io(Slot *s)
{
	if (s->writing)
	{
		int			rc = PQflush(s->conn);

		if (rc < 0)
		{
			slot_broken(s);
			return;
		}
		if (rc == 0)
			pool_slot_watch(s, false);
	}
	if (s->req == NULL)
	{
		/* an idle connection hears only of its end (or notices) */
		if (!pool_slot_idle_alive(s))
			idle_lost(s);
		return;
	}
	if (!PQconsumeInput(s->conn))
	{
		slot_broken(s);
		return;
	}
	drain(s);
}

KPool *
pool_new(const char *conninfo, int size, const char *name, bool local)
{
	KPool	   *p = mq_malloc0(sizeof(KPool));

	p->conninfo = conninfo ? mq_strdup(conninfo) : NULL;
	p->name = mq_strdup(name);
	p->local = local;
	p->size = size;
	p->statement_timeout_ms = kconfig.statement_timeout_ms;
	if (!local && p->statement_timeout_ms > CLUSTER_STATEMENT_TIMEOUT_MS)
		p->statement_timeout_ms = CLUSTER_STATEMENT_TIMEOUT_MS;
	p->io_fn = slot_io;
	p->connected_fn = slot_finish;
	p->failed_fn = connect_failed;
	pool_conn_init(p);
	p->slots = mq_malloc0(sizeof(Slot) * size);
	for (int i = 0; i < size; i++)
	{
		p->slots[i].pool = p;
		p->slots[i].deadline_ev = evtimer_new(kbase, on_deadline, &p->slots[i]);
		(void) pool_slot_ready(&p->slots[i]);
	}
	return p;
}

void
pool_start(void)
{
	local_pool = pool_new(kconfig.conninfo, kconfig.pool_size, "the database", true);
}

KPool *
pool_local(void)
{
	return local_pool;
}

int
pool_idle(void)
{
	int			n = 0;

	for (int i = 0; local_pool && i < local_pool->size; i++)
	{
		Slot	   *s = &local_pool->slots[i];

		if (s->req == NULL && pool_slot_connected(s))
			n++;
	}
	return n;
}

void
pool_run_on(KPool *p, KRequest *req, KJob *job, KDoneFn done_fn)
{
	bool		busy = false;

	req->job = job;
	req->done_fn = done_fn;
	if (job->n == 0)
	{
		job_done(req);
		return;
	}
	for (int i = 0; i < p->size; i++)
	{
		Slot	   *s = &p->slots[i];

		if (s->req || s->connecting)
			busy = true;
		else if (pool_slot_ready(s))
		{
			start(s, req);
			return;
		}
		else if (s->connecting)
			busy = true;		/* runs req once connected */
	}
	if (!busy)
	{
		fail_job(p, req, "no database connection");
		return;
	}
	req->next = NULL;
	if (p->wait_tail)
		p->wait_tail->next = req;
	else
		p->wait_head = req;
	p->wait_tail = req;
}

void
pool_cancel(KPool *p, const KRequest *req)
{
	for (int i = 0; i < p->size; i++)
		if (p->slots[i].req == req && p->slots[i].conn != NULL)
			(void) mq_cancel_bounded(p->slots[i].conn, 0);
}

void
pool_run(KRequest *req, KJob *job, KDoneFn done_fn)
{
	pool_run_on(local_pool, req, job, done_fn);
}
