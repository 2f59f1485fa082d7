/*-------------------------------------------------------------------------
 *
 * session.c
 *	  mq-broker's sessions on its own data node and on the coordinator:
 *	  every statement on them, its deadline, and what a lost connection
 *	  means for the connection itself.
 *
 * Layer: below the typed calls (calls_*.c), which run every statement
 * through node_exec and coord_exec; it calls nothing above them.  What a
 * lost connection means for the broker's roles and liveness, and what is
 * served while a coordinator statement is waited for, are the upper
 * layers' (step.c, loop.c): this file reports up through the pointers
 * they handed down in Broker.hooks (broker.h), never by name.  Connecting
 * and liveness are liveness.c's, above the typed calls.
 *
 * Every statement has a deadline (node.timeout.ms,
 * coordinator.timeout.ms); a statement that misses it counts as a lost
 * connection.  A lost node: its connection is closed, reconnecting backs
 * off, and hooks.node_lost gives up every role and the liveness lock at
 * once, so the other brokers elect new leaders and drop us from the ISR.
 * A lost coordinator: its connection is closed, we are no longer live
 * (the locks went with the session), and hooks.coord_lost keeps leading
 * and following in the epochs we have (liveness.c says why that is safe).
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
 * "Waiting for the coordinator"): while a statement is under way,
 * hooks.serve_while_waiting (loop.c) serves the followers' fetches, the
 * leaders' progress reads and scrapes.  None of those calls the
 * coordinator: a statement asked for meanwhile is refused, and a node lost
 * meanwhile gives its roles and locks up once the statement is over,
 * which then counts as failed (node_lost_pending).  A statement that
 * missed its deadline is cancelled without waiting for the cancel
 * request: its connection is dropped anyway.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "util.h"

static void coord_lost(Broker *b, const MqError *err);
static void node_gone(Broker *b);

void
broker_init(Broker *b, BrokerConfig *cfg, const BrokerHooks *hooks)
{
	memset(b, 0, sizeof(*b));
	b->cfg = cfg;
	b->hooks = *hooks;
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

/* A new coordinator connection (liveness.c): its notices come here. */
void
coord_session_start(Broker *b)
{
	PQsetNoticeReceiver(b->coord, coord_notice, b);
}

/*
 * Wait for the answer to the statement just sent, serving meanwhile what
 * needs no coordinator (hooks.serve_while_waiting: loop.c), at most
 * coordinator.timeout.ms.
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
		b->hooks.serve_while_waiting(b, PQsocket(b->coord), deadline);
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
		node_gone(b);
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

/* The node is gone and no coordinator statement is under way: roles go. */
static void
node_gone(Broker *b)
{
	b->node_lost_pending = false;
	b->hooks.node_lost(b);
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
		node_gone(b);
}

static void
coord_lost(Broker *b, const MqError *err)
{
	if (b->coord == NULL)
		return;
	log_mq_error("lost the connection to the coordinator", err);
	PQfinish(b->coord);
	b->coord = NULL;
	b->live = false;
	b->hooks.coord_lost(b, mq_retry_failed(&b->coord_retry, &b->policy));
}
