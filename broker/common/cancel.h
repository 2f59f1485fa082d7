/*-------------------------------------------------------------------------
 *
 * cancel.h
 *	  A cancel request that cannot block for long (cancel.c).
 *
 * libpq 15's PQcancel() opens a new connection with a blocking connect()
 * that ignores connect_timeout, so a peer cut without a RST freezes it for
 * the kernel's SYN retries (about two minutes, issue 13).
 * mq_cancel_bounded() therefore runs PQcancel() on a detached thread and
 * waits for it at most wait_ms; at most MQ_CANCEL_MAX_PENDING such threads
 * exist at once (beyond that the request is skipped: the caller drops the
 * connection anyway, and the server's own statement_timeout and
 * keepalives end the statement).  connpolicy.h includes this header; a
 * policy's cancel_wait_ms is the usual wait.
 *
 * Locking: callable from any thread (see cancel.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CANCEL_H
#define MQ_CANCEL_H

#include <stdbool.h>

#include <libpq-fe.h>

#define MQ_CANCEL_MAX_PENDING 4

/*
 * Ask the server to cancel what conn runs, waiting at most wait_ms.
 * Returns true if the request was sent within that time.
 */
extern bool mq_cancel_bounded(PGconn *conn, int wait_ms);

#endif							/* MQ_CANCEL_H */
