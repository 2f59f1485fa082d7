/*-------------------------------------------------------------------------
 *
 * consumer_wait.c
 *	  The consuming engine's waits on the server and their interruption:
 *	  a statement that may wait (a long poll) runs with the connection's
 *	  cancel handle published, so that consumer_interrupt() (Ctrl-C) can
 *	  cut it short from a signal handler.
 *
 * Layer: below consumer.c and consumer_route.c, which both ask whether an
 * interrupt came; calls only session.c and broker/common.
 *
 * Locking: none; one thread, and a signal handler that only sets a
 * sig_atomic_t and calls PQcancel (async-signal-safe).
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"

/* the wait in progress, for consumer_interrupt() */
static PGcancel *volatile waiting = NULL;
static volatile sig_atomic_t interrupted = 0;

bool
consumer_interrupted(void)
{
	return interrupted != 0;
}

void
consumer_interrupt(void)
{
	PGcancel   *cancel = waiting;
	char		errbuf[256];

	interrupted = 1;
	/* PQcancel is safe in a signal handler, with a local errbuf */
	if (cancel != NULL)
		(void) PQcancel(cancel, errbuf, sizeof(errbuf));
}

/*
 * Run a statement that may wait on the server.  Returns NULL when
 * consumer_interrupt() cancelled it (or came first), and when the
 * statement failed with the SQLSTATE in may_fail, with the error in *err;
 * any other failure ends mqctl.
 */
PGresult *
consumer_exec_wait(MqConsumer *c, const char *sql, const MqParams *params,
				   const char *may_fail, MqError *err)
{
	PGresult   *res;

	waiting = c->cancel;
	res = interrupted ? NULL : mq_exec(c->conn, sql, params, 1, err);
	waiting = NULL;
	if (res != NULL || interrupted)
	{
		if (res == NULL && err->connection_lost)
			mqctl_fail(c->conn, err);
		return res;
	}
	if (may_fail != NULL && mq_error_is(err, may_fail))
		return NULL;
	mqctl_fail(c->conn, err);
}
