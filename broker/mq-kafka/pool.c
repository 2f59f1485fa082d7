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
 * Loop thread only: no locking.  Nothing here waits on the database except
 * (re)connecting to this node's, which is blocking with a 5 s
 * connect_timeout and tried at most once a second per connection (other
 * databases are connected asynchronously, with the same limits); while the database is down, jobs
 * fail at once with connection_lost, and the request's client connection
 * is closed after its answer (server.c), as is every new one: clients
 * then treat this broker as down and turn to the others.  A parked fetch
 * or join holds no connection.  Only the local pool's failures close
 * client connections: another node being down is the caller's to map.
 *
 * Acting as a client's role (sasl.c): a request with a role sends, in
 * each statement's transaction and before it, set_config('role', role,
 * true), i.e. SET LOCAL ROLE.  If that fails, the statement is not run
 * (the pipeline aborts up to its sync point); the role lasts until the
 * transaction ends, so a connection never carries one principal's role
 * into another's statement, and the daemon's own jobs (no role) run as
 * the daemon's role.  The pool's bound stays --pool connections.
 *
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <stdlib.h>
#include <string.h>

#include "kjob.h"
#include "kmetrics.h"
#include "mqconn.h"
#include "util.h"

typedef struct KPool KPool;

typedef struct Slot
{
	KPool	   *pool;
	PGconn	   *conn;
	struct event *ev;
	bool		writing;		/* output not flushed: also wait for EV_WRITE */
	bool		connecting;		/* other databases: connecting asynchronously */
	KRequest   *req;			/* the running job's request, or NULL */
	int			next;			/* statement whose results come next */
	bool		saw_null;
	bool		role_result;	/* the next result is set_config's */
	int64_t		retry_at_us;	/* no reconnect attempt before */
} Slot;

struct KPool
{
	char	   *conninfo;		/* NULL: libpq's environment */
	char	   *name;			/* for messages */
	bool		local;			/* this node's: failures close client connections */
	int			size;
	Slot	   *slots;
	KRequest   *wait_head,
			   *wait_tail;
	bool		db_down;		/* the last connection attempt failed */
	struct event *retry_ev;		/* while db_down: try again every second */
};

static KPool *local_pool;

static void slot_io(evutil_socket_t fd, short what, void *arg);

static const struct timeval one_second = {1, 0};

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

static void
drop_conn(Slot *s)
{
	if (s->ev)
		event_free(s->ev);
	s->ev = NULL;
	if (s->conn)
		PQfinish(s->conn);
	s->conn = NULL;
	s->writing = false;
}

static void
watch(Slot *s, bool writing)
{
	if (s->ev)
		event_free(s->ev);
	s->writing = writing;
	s->ev = event_new(kbase, PQsocket(s->conn), EV_READ | EV_PERSIST | (writing ? EV_WRITE : 0),
					  slot_io, s);
	event_add(s->ev, NULL);
}

static bool connect_start(Slot *s);

/*
 * A connection in pipeline mode, reconnecting if allowed; false if none.
 * Other databases than this node's are connected asynchronously: false
 * then, with s->connecting set, and the waiting requests run once it is up.
 */
static bool
slot_ready(Slot *s)
{
	static const char *const keys[] = {"connect_timeout", NULL};
	static const char *const vals[] = {"5", NULL};
	MqError		err = MQ_ERROR_INIT;

	if (s->conn && PQstatus(s->conn) == CONNECTION_OK && !s->connecting)
		return true;
	if (s->connecting)
		return false;
	drop_conn(s);
	if (mq_now_us() < s->retry_at_us)
		return false;
	if (!s->pool->local)
	{
		(void) connect_start(s);
		return false;
	}
	s->conn = mq_connect_with(s->pool->conninfo, "mq-kafka", keys, vals, &err);
	if (s->conn == NULL || PQsetnonblocking(s->conn, 1) != 0 ||
		PQenterPipelineMode(s->conn) != 1)
	{
		const char *msg = err.message ? err.message : PQerrorMessage(s->conn);

		if (!s->pool->db_down)
			mq_log_warning("cannot connect to %s: %.*s", s->pool->name,
						   (int) strcspn(msg, "\n"), msg);
		s->pool->db_down = true;
		mq_error_free(&err);
		drop_conn(s);
		s->retry_at_us = mq_now_us() + 1000000;
		/* only this node's pool looks for its database in the background */
		if (s->pool->local && !evtimer_pending(s->pool->retry_ev, NULL))
			evtimer_add(s->pool->retry_ev, &one_second);
		return false;
	}
	if (s->pool->db_down)
		mq_log_info("connected to %s again", s->pool->name);
	s->pool->db_down = false;
	mq_log_notices(s->conn);
	watch(s, false);
	return true;
}

static void slot_finish(Slot *s);
static void fail_job(KPool *p, KRequest *req, const char *msg);

/* an asynchronous connection attempt failed: so do waiting requests if no other slot can serve */
static void
connect_failed(Slot *s, const char *msg)
{
	KPool	   *p = s->pool;
	bool		other = false;

	if (!p->db_down)
		mq_log_warning("cannot connect to %s: %.*s", p->name, (int) strcspn(msg, "\n"), msg);
	p->db_down = true;
	s->connecting = false;
	drop_conn(s);
	s->retry_at_us = mq_now_us() + 1000000;
	for (int i = 0; i < p->size; i++)
		other |= p->slots[i].connecting || p->slots[i].req != NULL ||
			(p->slots[i].conn && PQstatus(p->slots[i].conn) == CONNECTION_OK);
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

static void connect_step(evutil_socket_t fd, short what, void *arg);

/* wait for the socket as PQconnectPoll asks, at most connect_timeout */
static void
connect_watch(Slot *s, PostgresPollingStatusType st)
{
	static const struct timeval limit = {5, 0};

	if (s->ev)
		event_free(s->ev);
	s->ev = event_new(kbase, PQsocket(s->conn), st == PGRES_POLLING_READING ? EV_READ : EV_WRITE,
					  connect_step, s);
	event_add(s->ev, &limit);
}

static void
connect_step(evutil_socket_t fd, short what, void *arg)
{
	Slot	   *s = arg;
	PostgresPollingStatusType st;

	if (what & EV_TIMEOUT)
	{
		connect_failed(s, "timeout expired");
		return;
	}
	st = PQconnectPoll(s->conn);
	if (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING)
	{
		connect_watch(s, st);
		return;
	}
	if (st != PGRES_POLLING_OK || PQsetnonblocking(s->conn, 1) != 0 ||
		PQenterPipelineMode(s->conn) != 1)
	{
		connect_failed(s, PQerrorMessage(s->conn));
		return;
	}
	s->connecting = false;
	if (s->pool->db_down)
		mq_log_info("connected to %s again", s->pool->name);
	s->pool->db_down = false;
	mq_log_notices(s->conn);
	watch(s, false);
	slot_finish(s);				/* takes a waiting request */
}

/* begin connecting s without waiting (libpq's PQconnectStartParams) */
static bool
connect_start(Slot *s)
{
	const char *keys[] = {"dbname", "fallback_application_name", "connect_timeout", NULL};
	const char *vals[] = {s->pool->conninfo, "mq-kafka", "5", NULL};
	PQconninfoOption *opts = PQconninfoParse(s->pool->conninfo, NULL);

	if (opts == NULL)
	{
		/* libpq's message may quote the string, password included */
		connect_failed(s, "invalid connection string");
		return false;
	}
	PQconninfoFree(opts);
	s->conn = PQconnectStartParams(keys, vals, 1);
	if (s->conn == NULL || PQstatus(s->conn) == CONNECTION_BAD)
	{
		connect_failed(s, s->conn ? PQerrorMessage(s->conn) : "out of memory");
		return false;
	}
	s->connecting = true;
	connect_watch(s, PGRES_POLLING_WRITING);
	return true;
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
	if (next && (slot_ready(s) || !s->connecting))
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

static void
slot_broken(Slot *s)
{
	const char *msg = s->conn ? PQerrorMessage(s->conn) : "connection lost";

	mq_log_warning("connection to %s lost: %.*s", s->pool->name, (int) strcspn(msg, "\n"), msg);
	if (s->req)
	{
		for (int i = 0; i < s->req->job->n; i++)
			fail_stmt(&s->req->job->stmts[i], "database connection lost");
		if (s->pool->local)
			s->req->db_lost = true;
	}
	drop_conn(s);
	/* find out soon whether the database is gone, even if nobody asks */
	if (s->pool->local && !evtimer_pending(s->pool->retry_ev, NULL))
		evtimer_add(s->pool->retry_ev, &one_second);
	slot_finish(s);
}

#define SQL_SET_LOCAL_ROLE "SELECT pg_catalog.set_config('role', $1, true)"

static void
start(Slot *s, KRequest *req)
{
	KJob	   *job = req->job;
	const char *role[1] = {req->role};

	s->req = req;
	s->next = 0;
	s->saw_null = false;
	s->role_result = req->role != NULL;
	for (int i = 0; i < job->n; i++)
	{
		KStmt	   *st = &job->stmts[i];

		if ((req->role &&
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
			watch(s, true);
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

	if (st->err.message)
		return;
	snprintf(st->err.sqlstate, sizeof(st->err.sqlstate), "%s", state ? state : "");
	st->err.message = mq_strdup(msg ? msg : (PQresultStatus(r) == PGRES_PIPELINE_ABORTED
											 ? "pipeline aborted" : PQerrorMessage(conn)));
	st->err.connection_lost = PQstatus(conn) != CONNECTION_OK;
	/* the first error of a pipeline, not the statements it aborted after it */
	if (PQresultStatus(r) != PGRES_PIPELINE_ABORTED)
		kmetrics_statement_error(st->err.sqlstate);
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
				take_error(st, s->conn, r);
			PQclear(r);
			continue;
		}
		switch (PQresultStatus(r))
		{
			case PGRES_PIPELINE_SYNC:
				PQclear(r);
				s->role_result = s->req->role != NULL;
				if (++s->next == s->req->job->n)
					slot_finish(s);
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
slot_io(evutil_socket_t fd, short what, void *arg)
{
	Slot	   *s = arg;

	if (what & EV_WRITE)
	{
		int			rc = PQflush(s->conn);

		if (rc < 0)
		{
			slot_broken(s);
			return;
		}
		if (rc == 0)
			watch(s, false);
	}
	if ((what & EV_READ) && !PQconsumeInput(s->conn))
	{
		slot_broken(s);
		return;
	}
	if (s->req == NULL && PQstatus(s->conn) != CONNECTION_OK)
	{
		drop_conn(s);			/* idle and gone: reconnect on next use */
		if (s->pool->local && !evtimer_pending(s->pool->retry_ev, NULL))
			evtimer_add(s->pool->retry_ev, &one_second);	/* or in a second */
		return;
	}
	drain(s);
}

/* reconnect idle slots whose connection was lost (slot_ready re-arms on failure) */
static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	KPool	   *p = arg;

	bool		missing = false;

	for (int i = 0; i < p->size; i++)
		if (p->slots[i].req == NULL && p->slots[i].conn == NULL)
			missing |= !slot_ready(&p->slots[i]);
	/* a slot not due yet (retry_at_us) arms nothing itself: try again */
	if (missing && !evtimer_pending(p->retry_ev, NULL))
		evtimer_add(p->retry_ev, &one_second);
}

KPool *
pool_new(const char *conninfo, int size, const char *name, bool local)
{
	KPool	   *p = mq_malloc0(sizeof(KPool));

	p->conninfo = conninfo ? mq_strdup(conninfo) : NULL;
	p->name = mq_strdup(name);
	p->local = local;
	p->size = size;
	p->retry_ev = evtimer_new(kbase, on_retry, p);
	p->slots = mq_malloc0(sizeof(Slot) * size);
	for (int i = 0; i < size; i++)
	{
		p->slots[i].pool = p;
		(void) slot_ready(&p->slots[i]);
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

		if (s->req == NULL && s->conn != NULL && PQstatus(s->conn) == CONNECTION_OK)
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
		else if (slot_ready(s))
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
pool_run(KRequest *req, KJob *job, KDoneFn done_fn)
{
	pool_run_on(local_pool, req, job, done_fn);
}
