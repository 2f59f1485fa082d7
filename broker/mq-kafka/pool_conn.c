/*-------------------------------------------------------------------------
 *
 * pool_conn.c
 *	  The connections of mq-kafka's pools (pool.c): connecting,
 *	  reconnecting and giving up, all under the shared connection policy
 *	  (broker/common/connpolicy.c), as mq-broker and mqctl connect.  Every
 *	  connection carries the policy's libpq settings (connect_timeout, TCP
 *	  keepalives, tcp_user_timeout), so a cut link or a silent server ends
 *	  an idle or blocked connection within seconds; a failed slot is tried
 *	  again after MqRetry's back-off with jitter (the policy's 0.5..5 s),
 *	  not in lockstep with the other brokers that lost the same server.
 *	  This node's database is connected blocking (the pool cannot serve
 *	  anything without it); other nodes and the coordinator asynchronously
 *	  (PQconnectStartParams), within the policy's connect timeout.
 *	  It reports to pool.c through the callbacks the pool holds (io_fn,
 *	  connected_fn, failed_fn), never by calling it.
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "pool_conn.h"

#include <string.h>

#include "mqconn.h"
#include "util.h"

static void
slot_io(evutil_socket_t fd, short what, void *arg)
{
	Slot	   *s = arg;

	s->pool->io_fn(s);
}

void
pool_slot_drop(Slot *s)
{
	if (s->ev)
		event_free(s->ev);
	s->ev = NULL;
	if (s->conn)
		PQfinish(s->conn);
	s->conn = NULL;
	s->writing = false;
	s->connecting = false;
}

void
pool_slot_watch(Slot *s, bool writing)
{
	if (s->ev)
		event_free(s->ev);
	s->writing = writing;
	s->ev = event_new(kbase, PQsocket(s->conn), EV_READ | EV_PERSIST | (writing ? EV_WRITE : 0),
					  slot_io, s);
	event_add(s->ev, NULL);
}

/* arm the pool's retry timer for the earliest slot that is due */
static void
arm_retry(KPool *p)
{
	int64_t		due = 0;
	int64_t		now = mq_now_us();
	struct timeval tv;

	for (int i = 0; i < p->size; i++)
	{
		Slot	   *s = &p->slots[i];

		if (s->conn == NULL && s->req == NULL && (due == 0 || s->retry.next_us < due))
			due = s->retry.next_us;
	}
	if (due == 0 && p->size > 0)
		due = now;
	if (due < now)
		due = now;
	tv.tv_sec = (due - now) / 1000000;
	tv.tv_usec = (due - now) % 1000000;
	evtimer_del(p->retry_ev);
	evtimer_add(p->retry_ev, &tv);
}

void
pool_slot_lost(Slot *s)
{
	pool_slot_drop(s);
	/* only this node's pool looks for its database in the background */
	if (s->pool->local)
		arm_retry(s->pool);
}

bool
pool_slot_connected(const Slot *s)
{
	return s->conn && !s->connecting && PQstatus(s->conn) == CONNECTION_OK;
}

/*
 * An idle connection the server has not closed: one it closed (its
 * idle_session_timeout, a DBA's pg_terminate_backend) may not have been
 * read yet by the event loop, and a request sent on it would fail.  Also
 * the event loop's test when an idle connection's socket is readable.
 */
bool
pool_slot_idle_alive(Slot *s)
{
	return PQconsumeInput(s->conn) == 1 && !PQisBusy(s->conn) &&
		PQstatus(s->conn) == CONNECTION_OK;
}

/* another slot of s's pool holds a connection */
static bool
other_connected(const Slot *s)
{
	const KPool *p = s->pool;

	for (int i = 0; i < p->size; i++)
		if (&p->slots[i] != s && pool_slot_connected(&p->slots[i]))
			return true;
	return false;
}

/*
 * A connection attempt failed.  The database is down (db_down) unless the
 * server answered the attempt with a refusal while other connections of
 * the pool work: a role's CONNECTION LIMIT or max_connections below the
 * pool's size leaves fewer connections, not none, and the pool serves with
 * those.  An attempt that timed out is a silent server (paused, cut off),
 * whose other connections have merely not noticed yet.
 */
static void
conn_failed(Slot *s, const char *msg)
{
	KPool	   *p = s->pool;
	bool		refused = strstr(msg, "timeout expired") == NULL && other_connected(s);

	if (!p->db_down && !p->refusing)
		mq_log_warning("cannot connect to %s%s: %.*s", p->name,
					   refused ? " (going on with fewer connections)" : "",
					   (int) strcspn(msg, "\n"), msg);
	if (refused)
		p->refusing = true;
	else
		p->db_down = true;
	pool_slot_drop(s);
	(void) mq_retry_failed(&s->retry, &p->policy);
	if (p->local)
		arm_retry(p);
}

static void
conn_ok(Slot *s)
{
	s->connecting = false;
	if (s->pool->db_down)
		mq_log_info("connected to %s again", s->pool->name);
	s->pool->db_down = false;
	s->pool->refusing = false;
	mq_retry_succeeded(&s->retry);
	mq_log_notices(s->conn);
	pool_slot_watch(s, false);
}

static void connect_step(evutil_socket_t fd, short what, void *arg);

/* wait for the socket as PQconnectPoll asks, at most the connect timeout */
static void
connect_watch(Slot *s, PostgresPollingStatusType st)
{
	struct timeval limit = {s->pool->policy.connect_timeout_s, 0};

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
		conn_failed(s, "timeout expired");
		s->pool->failed_fn(s);
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
		conn_failed(s, PQerrorMessage(s->conn));
		s->pool->failed_fn(s);
		return;
	}
	conn_ok(s);
	s->pool->connected_fn(s);	/* takes a waiting request */
}

/* begin connecting s without waiting (libpq's PQconnectStartParams) */
static void
connect_start(Slot *s)
{
	MqConnParams pp;
	const char *keys[MQ_CONN_PARAMS_MAX];
	const char *vals[MQ_CONN_PARAMS_MAX];
	MqError		err = MQ_ERROR_INIT;

	mq_conn_policy_params(&s->pool->policy, &pp);
	if (!mq_conn_params(s->pool->conninfo, "mq-kafka", pp.keys, pp.vals, keys, vals, &err))
	{
		conn_failed(s, err.message);
		mq_error_free(&err);
		s->pool->failed_fn(s);
		return;
	}
	s->conn = PQconnectStartParams(keys, vals, 1);
	if (s->conn == NULL || PQstatus(s->conn) == CONNECTION_BAD)
	{
		conn_failed(s, s->conn ? PQerrorMessage(s->conn) : "out of memory");
		s->pool->failed_fn(s);
		return;
	}
	s->connecting = true;
	connect_watch(s, PGRES_POLLING_WRITING);
}

/*
 * A connection in pipeline mode, reconnecting if due; false if none.
 * Other databases than this node's are connected asynchronously: false
 * then, with s->connecting set, and connected_fn runs once it is up.
 */
bool
pool_slot_ready(Slot *s)
{
	MqError		err = MQ_ERROR_INIT;

	if (pool_slot_connected(s) && (s->req != NULL || pool_slot_idle_alive(s)))
		return true;
	if (s->connecting)
		return false;
	pool_slot_drop(s);
	if (!mq_retry_due(&s->retry))
		return false;
	if (!s->pool->local)
	{
		connect_start(s);
		return false;
	}
	s->conn = mq_connect_policy(s->pool->conninfo, "mq-kafka", &s->pool->policy, &err);
	if (s->conn == NULL || PQsetnonblocking(s->conn, 1) != 0 ||
		PQenterPipelineMode(s->conn) != 1)
	{
		const char *msg = err.message ? err.message : PQerrorMessage(s->conn);

		conn_failed(s, msg);
		mq_error_free(&err);
		return false;
	}
	conn_ok(s);
	return true;
}

/* reconnect idle slots whose connection was lost */
static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	KPool	   *p = arg;
	bool		missing = false;

	for (int i = 0; i < p->size; i++)
		if (p->slots[i].req == NULL && p->slots[i].conn == NULL)
			missing |= !pool_slot_ready(&p->slots[i]);
	/* a slot not due yet arms nothing itself: come back when it is */
	if (missing && !evtimer_pending(p->retry_ev, NULL))
		arm_retry(p);
}

void
pool_conn_init(KPool *p)
{
	mq_conn_policy_default(&p->policy);
	p->retry_ev = evtimer_new(kbase, on_retry, p);
}
