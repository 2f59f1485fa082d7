/*-------------------------------------------------------------------------
 *
 * conn.c
 *	  mq-broker's connections to its own data node and to the coordinator,
 *	  and its liveness.
 *
 * Both are made under the broker's connection policy (connpolicy.h:
 * connect timeout, keepalives, retries with back-off and jitter) and every
 * statement on them has a deadline (node.timeout.ms,
 * coordinator.timeout.ms); a statement that misses it counts as a lost
 * connection.
 *
 * Liveness: the coordinator session holds the advisory lock
 * (broker_lock_class, broker id) and heartbeats.  A broker that loses its
 * node gives up its liveness lock and every leadership lock at once, so
 * the other brokers elect new leaders and drop it from the ISR (event
 * node_lost: every partition to NONE).  One that loses the coordinator
 * keeps leading and following in the epochs it has (event coord_lost):
 * another leader can only be elected in a new epoch, which the data nodes
 * fence, so acks=all stays safe; back on the coordinator it takes its
 * leadership locks back or steps down.
 *
 * A highly available coordinator (a primary with a synchronous standby,
 * docs/replication.md, "A highly available coordinator"): the broker
 * acts only on what a coordinator statement returned when the server sent
 * no WARNING with it.  A commit whose wait for the synchronous standby was
 * cancelled (our deadline, the server's statement_timeout, a terminated
 * session) returns with such a WARNING: it is committed on that server
 * only and a promoted standby may never have it, so the statement counts
 * as failed and the connection as lost.
 *
 * Waiting for the coordinator holds nothing else (docs/design.md,
 * "Waiting for the coordinator"): connecting runs on a thread of its own
 * (connpolicy.h, mq_connect_start), looked at each tick, and while a
 * statement is under way loop.c serves the followers' fetches, the
 * leaders' progress reads and scrapes (broker_serve_while_waiting).  None
 * of those calls the coordinator: a statement asked for meanwhile is
 * refused, and a node lost meanwhile gives its roles and locks up once
 * the statement is over, which then counts as failed (node_lost_pending).
 * A statement that missed its deadline is cancelled without waiting for
 * the cancel request: its connection is dropped anyway.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "util.h"

static void coord_lost(Broker *b, const MqError *err);
static void node_lost_drop_roles(Broker *b);

void
broker_init(Broker *b, BrokerConfig *cfg)
{
	memset(b, 0, sizeof(*b));
	b->cfg = cfg;
	mq_conn_policy_default(&b->policy);
	b->policy.retry_initial_ms = cfg->retry_ms;
	b->policy.retry_max_ms = cfg->retry_max_ms;
}

void
log_mq_error(const char *what, const MqError *err)
{
	mq_log_error("%s: %s%s%s%s", what, err->message ? err->message : "unknown error",
				 err->sqlstate[0] ? " [SQLSTATE " : "", err->sqlstate,
				 err->sqlstate[0] ? "]" : "");
}

static PGresult *
not_connected(MqError *err, const char *what)
{
	mq_error_free(err);
	err->message = mq_strdup(what);
	err->connection_lost = true;
	return NULL;
}

PGresult *
node_exec(Broker *b, const char *sql, const MqParams *params, int fmt, MqError *err)
{
	PGresult   *res;

	if (b->node == NULL)
		return not_connected(err, "no connection to the node");
	res = mq_exec_timeout(b->node, sql, params, fmt, b->cfg->node_timeout_ms, err);
	if (res == NULL && (err->connection_lost || PQstatus(b->node) != CONNECTION_OK))
		broker_node_lost(b, err);
	return res;
}

/*
 * The coordinator's notices: logged, and a WARNING marks the statement
 * under way as unconfirmed (see the file header).
 */
static void
coord_notice(void *arg, const PGresult *res)
{
	Broker	   *b = arg;
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (severity != NULL && strcmp(severity, "WARNING") == 0)
	{
		b->coord_warned = true;
		mq_log_warning("coordinator: %s", msg ? msg : "(no message)");
	}
	else
		mq_log_info("coordinator: %s", msg ? msg : "(no message)");
}

/*
 * Wait for the answer to the statement just sent, serving meanwhile what
 * needs no coordinator (loop.c), at most coordinator.timeout.ms.
 */
static PGresult *
coord_wait(Broker *b, MqError *err)
{
	int64_t		deadline = mq_now_us() + (int64_t) b->cfg->coordinator_timeout_ms * 1000;
	bool		done;
	PGresult   *res;

	b->coord_busy = true;
	b->wait_refresh_us = mq_now_us() + (int64_t) b->cfg->tick_ms * 1000;
	for (;;)
	{
		res = mq_collect(b->coord, &done, err);
		if (done || mq_now_us() >= deadline)
			break;
		broker_serve_while_waiting(b, PQsocket(b->coord), deadline);
	}
	b->coord_busy = false;
	if (done)
		return res;
	/* the connection is dropped next: no need to wait for the request */
	(void) mq_cancel_bounded(b->coord, 0);
	mq_error_free(err);
	err->message = mq_strdup("the server did not answer in time");
	err->connection_lost = true;
	return NULL;
}

PGresult *
coord_exec(Broker *b, const char *sql, const MqParams *params, MqError *err)
{
	PGresult   *res = NULL;

	if (b->coord == NULL)
		return not_connected(err, "no connection to the coordinator");
	if (b->coord_busy)
	{
		/* a bug: what is served while waiting must not need the coordinator */
		mq_error_free(err);
		err->message = mq_strdup("internal error: a coordinator statement while one is under way");
		mq_log_error("%s", err->message);
		return NULL;
	}
	b->coord_warned = false;
	if (mq_send(b->coord, sql, params, 0, err))
		res = coord_wait(b, err);
	if (res != NULL && b->coord_warned)
	{
		PQclear(res);
		res = NULL;
		mq_error_free(err);
		err->message = mq_strdup("the coordinator answered with a warning (a commit not "
								 "confirmed by its synchronous standby?); not acting on it");
		err->connection_lost = true;
	}
	if (res == NULL && (err->connection_lost || PQstatus(b->coord) != CONNECTION_OK))
		coord_lost(b, err);
	if (b->node_lost_pending)
	{
		/* what we asked assumed a node: not acting on the answer */
		if (res != NULL)
		{
			PQclear(res);
			res = NULL;
			mq_error_free(err);
			err->message = mq_strdup("lost the node while waiting for the coordinator; "
									 "not acting on its answer");
		}
		node_lost_drop_roles(b);
	}
	return res;
}

/*
 * The node's connection is idle between ticks, so when it turns readable
 * the server spoke on its own: almost always to say it is going away
 * (FATAL, then EOF).  loop.c watches it, so that a leader whose node dies
 * gives up leadership and liveness at once instead of at its next tick.
 */
void
broker_node_readable(Broker *b)
{
	PGresult   *res;

	if (b->node == NULL)
		return;
	if (!PQconsumeInput(b->node) || PQstatus(b->node) != CONNECTION_OK)
	{
		MqError		err = MQ_ERROR_INIT;

		err.message = mq_strdup(PQerrorMessage(b->node));
		err.connection_lost = true;
		broker_node_lost(b, &err);
		mq_error_free(&err);
		return;
	}
	/* nothing is in flight: whatever arrived is not for a statement of ours */
	while (!PQisBusy(b->node) && (res = PQgetResult(b->node)) != NULL)
		PQclear(res);
}

/* Give up the leadership lock of one partition (no-op when not held). */
void
release_lock(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;

	if (!p->lock_held)
		return;
	p->lock_held = false;
	if (b->coord == NULL)
		return;
	(void) coord_unlock_partition(b, p, &err);
	mq_error_free(&err);
}

static void
drop_roles(Broker *b, FsmEvent why)
{
	for (Part *p = b->parts; p; p = p->next)
		fsm_fire(b, p, why);
}

/* The node is gone: leadership and liveness go, others elect and shrink us out. */
static void
node_lost_drop_roles(Broker *b)
{
	int			led = 0;

	b->node_lost_pending = false;
	for (Part *p = b->parts; p; p = p->next)
		led += (p->state == PART_LEADER);
	drop_roles(b, EV_NODE_LOST);
	if (b->coord != NULL && b->live)
	{
		MqError		e2 = MQ_ERROR_INIT;

		(void) coord_unlock_broker(b, &e2);
		mq_error_free(&e2);
	}
	b->live = false;
	mq_log_warning("gave up leadership of %d partition(s) and liveness; "
				   "reconnecting to the node in %d ms", led, b->node_retry.last_ms);
}

void
broker_node_lost(Broker *b, const MqError *err)
{
	if (b->node == NULL)
		return;
	log_mq_error("lost the connection to the node", err);
	PQfinish(b->node);
	b->node = NULL;
	(void) mq_retry_failed(&b->node_retry, &b->policy);
	/*
	 * Giving the locks up takes coordinator statements: while one is under
	 * way (we are serving fetches meanwhile), they follow it (coord_exec).
	 */
	if (b->coord_busy)
		b->node_lost_pending = true;
	else
		node_lost_drop_roles(b);
}

static void
coord_lost(Broker *b, const MqError *err)
{
	int			pause;
	int			led = 0;

	if (b->coord == NULL)
		return;
	log_mq_error("lost the connection to the coordinator", err);
	PQfinish(b->coord);
	b->coord = NULL;
	b->live = false;
	pause = mq_retry_failed(&b->coord_retry, &b->policy);
	for (Part *p = b->parts; p; p = p->next)
		led += (p->state == PART_LEADER);
	drop_roles(b, EV_COORD_LOST);	/* the locks went with the session */
	mq_log_warning("serving %d leadership(s) on in their epochs without the coordinator "
				   "(a new election fences them on the data nodes); reconnecting in %d ms",
				   led, pause);
}

/* A node connection that cannot be set up: drop it and retry later. */
static void
node_setup_failed(Broker *b, const char *what, MqError *err)
{
	log_mq_error(what, err);
	mq_error_free(err);
	if (b->node)
	{
		PQfinish(b->node);
		b->node = NULL;
	}
	(void) mq_retry_failed(&b->node_retry, &b->policy);
}

void
ensure_node(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	int			resigned;

	if (b->node != NULL || !mq_retry_due(&b->node_retry))
		return;
	b->node = mq_connect_policy(b->cfg->node, "mq-broker", &b->policy, &err);
	if (b->node == NULL)
	{
		int			pause = mq_retry_failed(&b->node_retry, &b->policy);

		mq_log_error("cannot connect to the node; retrying in %d ms: %s", pause, err.message);
		mq_error_free(&err);
		return;
	}
	if (!node_setup_session(b, &err))
	{
		node_setup_failed(b, "cannot make the node session's commits durable", &err);
		return;
	}
	/*
	 * A prepared transaction of a pipeline step holds its partitions'
	 * produce locks, which resigning waits for: settle what the coordinator
	 * has decided first (recover.c; without the coordinator, the resign
	 * may wait, fail and be retried until it is back).
	 */
	recover_prepared(b);
	if (b->node == NULL)
		return;
	/* whatever the node led before (say, before a crash) it does not lead now */
	if (!node_resign_all(b, &resigned, &err))
	{
		node_setup_failed(b, "cannot resign old leaderships on the node", &err);
		return;
	}
	mq_log_info("connected to the node %s; resigned %d old leadership(s); "
				"partitions will follow the coordinator's leaders",
				mq_conn_label(b->node), resigned);

	/*
	 * From now on the node trusts its leaderships only while this session
	 * lives: if we die, clients of its partitions get not_leader at once
	 * instead of waiting for acknowledgements nobody will give.
	 */
	if (!node_attach(b, &err))
	{
		node_setup_failed(b, "cannot attach to the node", &err);
		return;
	}
	mq_retry_succeeded(&b->node_retry);
	drop_roles(b, EV_NODE_ATTACHED);
}

/*
 * Connecting runs on a thread (connpolicy.h): a silent coordinator host
 * holds it for connect_timeout, not the broker.  Each tick looks whether
 * the attempt is over; true once connected.
 */
static bool
connect_coordinator(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (b->coord_job == NULL)
	{
		if (!mq_retry_due(&b->coord_retry))
			return false;
		b->coord_job = mq_connect_start(b->cfg->coordinator, "mq-broker", &b->policy, &err);
		if (b->coord_job != NULL)
			return false;
	}
	else if (!mq_connect_finish(b->coord_job, &b->coord, &err))
		return false;
	b->coord_job = NULL;
	if (b->coord == NULL)
	{
		int			pause = mq_retry_failed(&b->coord_retry, &b->policy);

		mq_log_error("cannot connect to the coordinator; retrying in %d ms: %s", pause, err.message);
		mq_error_free(&err);
		return false;
	}
	PQsetNoticeReceiver(b->coord, coord_notice, b);
	if (!coord_setup_session(b, &err))
	{
		log_mq_error("cannot set up the coordinator session", &err);
		mq_error_free(&err);
		if (b->coord == NULL)
			return false;
	}
	mq_retry_succeeded(&b->coord_retry);
	mq_log_info("connected to the coordinator %s", mq_conn_label(b->coord));
	return true;
}

void
ensure_coordinator(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	bool		got;

	if (b->coord == NULL && !connect_coordinator(b))
		return;
	if (b->live || b->node == NULL)
		return;					/* without a node we are no live replica */
	if (!coord_try_lock_broker(b, &got, &err))
	{
		mq_error_free(&err);
		return;
	}
	if (!got)
	{
		mq_log_warning("broker id %d is held by another session (another broker, or our old "
					   "session not yet gone); retrying", b->cfg->broker_id);
		return;
	}
	if (!coord_register(b, b->cfg->node_name ? b->cfg->node_name : mq_conn_label(b->node), &err))
	{
		log_mq_error("cannot register with the coordinator", &err);
		mq_error_free(&err);
		return;
	}
	b->live = true;
	b->live_since_us = mq_now_us();
	mq_log_info("registered as broker %d (liveness lock held); reading assignments",
				b->cfg->broker_id);
}
