/*-------------------------------------------------------------------------
 *
 * connpolicy.h
 *	  How mq's tools connect, keep a connection and try again: one policy
 *	  object (connect timeout, TCP keepalives, retry with exponential
 *	  back-off and jitter, the bound on a cancel request) that every
 *	  mq-broker connection (its node, the coordinator, a leader's node) is
 *	  made with, in the manner of pg_auto_failover's connection retry
 *	  policies.
 *
 * Every blocking step of a connection has a deadline under a policy:
 *	 - connecting: libpq's connect_timeout (per host address tried);
 *	 - a dead or silently cut peer: client-side TCP keepalives end an idle
 *	   connection after keepalives_idle + keepalives_interval *
 *	   keepalives_count seconds, and tcp_user_timeout one whose sent data
 *	   stays unacknowledged (a write blocked on a full socket buffer)
 *	   after tcp_user_timeout_ms;
 *	 - a statement: mq_exec_timeout() (mqconn.h) waits at most its timeout;
 *	 - cancelling it: libpq 15's PQcancel() opens a new connection with a
 *	   blocking connect() that ignores connect_timeout, so a peer cut
 *	   without a RST freezes it for the kernel's SYN retries (about two
 *	   minutes, issue 13).  mq_cancel_bounded() (cancel.h, cancel.c) therefore runs PQcancel() on
 *	   a detached thread and waits for it at most cancel_wait_ms; at most
 *	   MQ_CANCEL_MAX_PENDING such threads exist at once (beyond that the
 *	   request is skipped: the caller drops the connection anyway, and the
 *	   server's own statement_timeout and keepalives end the statement);
 *	 - waiting for a connection at all: mq_connect_start() connects on a
 *	   detached thread of its own (libpq's blocking connect, so its
 *	   multi-host rules and per-host connect_timeout stay as they are) and
 *	   the caller looks at the result when it likes (mq_connect_finish),
 *	   so an event loop goes on serving while a silent host is tried.
 *
 * The retry state (MqRetry) belongs to whoever owns the connection and is
 * touched by that thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CONNPOLICY_H
#define MQ_CONNPOLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "cancel.h"
#include "mqconn.h"

typedef struct MqConnPolicy
{
	int			connect_timeout_s;	/* libpq connect_timeout, seconds (>= 2) */
	int			keepalives_idle_s;	/* 0: no client keepalive settings */
	int			keepalives_interval_s;
	int			keepalives_count;
	int			tcp_user_timeout_ms;	/* 0: the kernel's default */
	int			retry_initial_ms;	/* first pause after a failure */
	int			retry_max_ms;	/* the back-off never exceeds this */
	int			cancel_wait_ms; /* how long a cancel request may block us */
} MqConnPolicy;

/* The defaults: 2 s connect timeout, dead peer noticed in 4 s, 0.5..5 s retries. */
extern void mq_conn_policy_default(MqConnPolicy *policy);

/*
 * A policy's libpq keywords and values (connect_timeout, keepalives*,
 * tcp_user_timeout), NULL-terminated, for whoever connects by other means
 * (PQconnectStartParams): the one owner of how a policy becomes libpq
 * settings.  The values point into out->buf.
 */
typedef struct MqConnParams
{
	const char *keys[8];
	const char *vals[8];
	char		buf[5][16];
	int			n;				/* keywords before the NULL */
} MqConnParams;

extern void mq_conn_policy_params(const MqConnPolicy *policy, MqConnParams *out);

/* Connect under a policy (its timeout and keepalives override the string's). */
extern PGconn *mq_connect_policy(const char *conninfo, const char *appname,
								 const MqConnPolicy *policy, MqError *err);
/* The same with more libpq keywords (host, port, ...) over the string's. */
extern PGconn *mq_connect_policy_with(const char *conninfo, const char *appname,
									  const MqConnPolicy *policy,
									  const char *const *extra_keys,
									  const char *const *extra_vals, MqError *err);

/*
 * Retry scheduling: exponential back-off with decorrelated jitter (each
 * pause is drawn between retry_initial_ms and three times the previous
 * one, capped at retry_max_ms), so that brokers that lost the same server
 * do not come back in lockstep.
 */
typedef struct MqRetry
{
	int64_t		next_us;		/* no attempt before this (0: at once) */
	int			last_ms;		/* the previous pause, 0 after a success */
	int			failures;		/* consecutive */
} MqRetry;

/* May we try now? */
extern bool mq_retry_due(const MqRetry *r);
/* A failure: schedule the next attempt; returns the pause in ms. */
extern int	mq_retry_failed(MqRetry *r, const MqConnPolicy *policy);
/* A success: the next failure starts again from retry_initial_ms. */
extern void mq_retry_succeeded(MqRetry *r);
/* The pause after last_ms, for the given random value (exposed for tests). */
extern int	mq_retry_next_pause(const MqConnPolicy *policy, int last_ms, uint32_t rnd);

/*
 * A connection attempt under a policy on a thread of its own: start it,
 * then ask whether it is over.  mq_connect_finish() returns false while
 * it runs; once it is over it returns true with *conn (NULL after filling
 * err) and the job is gone.  mq_connect_abandon() gives the job up: the
 * thread closes whatever it connects.  The thread touches nothing but the
 * job (its own copies of the strings and the policy).  NULL from
 * mq_connect_start: no thread could be started (err filled).
 */
typedef struct MqConnectJob MqConnectJob;

extern MqConnectJob *mq_connect_start(const char *conninfo, const char *appname,
									  const MqConnPolicy *policy, MqError *err);
extern bool mq_connect_finish(MqConnectJob *job, PGconn **conn, MqError *err);
extern void mq_connect_abandon(MqConnectJob *job);

#endif							/* MQ_CONNPOLICY_H */
