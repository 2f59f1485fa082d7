/*-------------------------------------------------------------------------
 *
 * mqconn.h
 *	  The libpq layer shared by mqctl and mq-broker: connecting, running
 *	  parameterised statements, and errors that carry the server's SQLSTATE.
 *
 * Nothing here exits or prints on its own: a failure fills an MqError and
 * the caller decides.  mqctl reports and exits; the broker will look at
 * the SQLSTATE (not_leader, fenced epoch, ...) and carry on.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_MQCONN_H
#define MQ_MQCONN_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

/*
 * Type OIDs of the built-in types we pass as parameters or read back.
 * libpq ships no header for them (catalog/pg_type_d.h is a server
 * header), and they are fixed in pg_type.dat for good.
 */
#define MQ_BOOLOID			16
#define MQ_BYTEAOID			17
#define MQ_INT8OID			20
#define MQ_INT2OID			21
#define MQ_INT4OID			23
#define MQ_TEXTOID			25
#define MQ_JSONOID			114
#define MQ_TIMESTAMPTZOID	1184
#define MQ_NUMERICOID		1700
#define MQ_JSONBOID			3802
#define MQ_BYTEAARRAYOID	1001
#define MQ_TIMESTAMPTZARRAYOID 1185
#define MQ_JSONBARRAYOID	3807
#define MQ_INT4ARRAYOID		1007
#define MQ_TEXTARRAYOID		1009
#define MQ_INT8ARRAYOID		1016

/* The extension's SQLSTATEs: MQ_SQLSTATE_*, generated from src/errcodes.txt */
#include "mq_sqlstates.h"

/* A failed connection attempt or statement. */
typedef struct MqError
{
	char		sqlstate[6];	/* "" when the server sent none */
	bool		connection_lost;	/* the connection is unusable now */
	char	   *message;		/* primary message, never NULL once set */
	char	   *detail;
	char	   *hint;
	char	   *table_name; /* the error's table field, or NULL: for mq's
								 * authorization refusals (42501) the kind of
								 * resource refused, "topic", "group" or
								 * "cluster" (docs/errors.md) */
} MqError;

#define MQ_ERROR_INIT {{0}, false, NULL, NULL, NULL, NULL}

extern void mq_error_report(const MqError *err);
extern int	mq_error_exit_code(const MqError *err);
extern bool mq_error_is(const MqError *err, const char *sqlstate);

/*
 * A transient refusal: the statement's transaction was rolled back and the
 * statement may succeed when sent again (a serialization failure, a
 * deadlock, lock_timeout, statement_timeout or a cancel, a write on a hot
 * standby that may yet be promoted).  A procedure
 * that commits inside (mq.produce) may have committed before it, so only
 * an idempotent producer sends again, as after a lost connection;
 * mq-kafka answers it as retriable (kerr.c).
 */
extern bool mq_error_is_transient(const MqError *err);
extern void mq_error_free(MqError *err);

/*
 * Connect.  conninfo is a database name, connection string or URI (as
 * psql -d takes it), or NULL to use only libpq's environment (PGHOST,
 * PGSERVICE, ~/.pg_service.conf, ...).
 * appname becomes application_name unless the user set one.
 */
extern PGconn *mq_connect(const char *conninfo, const char *appname, MqError *err);

/*
 * Connect with extra libpq keywords (keepalives, connect_timeout, ...)
 * that override the connection string's; keys and vals end with NULL.
 */
extern PGconn *mq_connect_with(const char *conninfo, const char *appname,
							   const char *const *keys, const char *const *vals,
							   MqError *err);

/*
 * The keywords and values libpq's *Params calls take for the above:
 * conninfo (if not NULL) as an expanded dbname, appname as
 * fallback_application_name, then keys and vals.  keywords and values
 * hold MQ_CONN_PARAMS_MAX entries, the NULL that ends them included.
 * False, with err set, for a string libpq cannot parse (err never quotes
 * it: it may hold a password).  For connections libpq starts without
 * waiting (PQconnectStartParams).
 */
#define MQ_CONN_PARAMS_MAX 24
extern bool mq_conn_params(const char *conninfo, const char *appname,
						   const char *const *keys, const char *const *vals,
						   const char **keywords, const char **values, MqError *err);

/* "user@host:port/dbname" of a connection, never its password. */
extern const char *mq_conn_label(PGconn *conn);

/*
 * Report the server's notices and warnings on this connection through
 * util.c's messages ("mqctl: warning: server: ..."), rather than libpq's
 * bare "WARNING:  ..." lines.
 */
extern void mq_log_notices(PGconn *conn);

/* Parameters of one statement: text or binary values with their types. */
#define MQ_MAX_PARAMS 16

typedef struct MqParams
{
	int			n;
	Oid			types[MQ_MAX_PARAMS];
	const char *values[MQ_MAX_PARAMS];
	int			lengths[MQ_MAX_PARAMS];
	int			formats[MQ_MAX_PARAMS];
	char		numbuf[MQ_MAX_PARAMS][24];	/* text of mq_param_int values */
} MqParams;

extern void mq_params_init(MqParams *p);
/* value NULL is SQL NULL; type 0 lets the server infer it */
extern void mq_param_text(MqParams *p, Oid type, const char *value);
extern void mq_param_int(MqParams *p, Oid type, int64_t value);
extern void mq_param_binary(MqParams *p, Oid type, const char *data, int len);

/*
 * Run a statement.  result_format 0 asks for text results, 1 for binary.
 * Returns the result (tuples or command status) or NULL after filling err.
 */
extern PGresult *mq_exec(PGconn *conn, const char *sql, const MqParams *params,
						 int result_format, MqError *err);

/*
 * Prepared statements that a pooler in transaction mode (pgbouncer) cannot
 * break.  A statement is named after its text (a hash of it), so a server
 * session that another client, or another version, prepared holds the
 * same statement under a name or none under it.  mq_prepare takes "already
 * there" (42P05) as done.  mq_exec_prepared, outside a transaction block,
 * prepares the statement (with params' types) when the session it lands
 * on lacks it (26000) and runs it again, a few times, as each try may land
 * on another session; inside a block, where an error would abort the
 * transaction, it runs the text unnamed (mq_exec).
 */
extern bool mq_prepare(PGconn *conn, const char *sql, const MqParams *types, MqError *err);
extern PGresult *mq_exec_prepared(PGconn *conn, const char *sql, const MqParams *params,
								  int result_format, MqError *err);
/*
 * Non-blocking statements (mq-broker's fetch loops): mq_send starts one;
 * mq_collect reads what has arrived and returns the result once complete
 * (*done = true; NULL with err filled on failure), or NULL with *done =
 * false while the server is still working.  Wait on PQsocket() between.
 */
extern bool mq_send(PGconn *conn, const char *sql, const MqParams *params,
					int result_format, MqError *err);
extern PGresult *mq_collect(PGconn *conn, bool *done, MqError *err);

/*
 * A statement that must finish within timeout_ms: on timeout it is
 * cancelled and err says so with connection_lost set, because a server
 * that does not answer is as good as gone (the broker then gives up what
 * depends on it).
 */
extern PGresult *mq_exec_timeout(PGconn *conn, const char *sql, const MqParams *params,
								 int result_format, int timeout_ms, MqError *err);

/*
 * One statement run n times with params[i] each, pipelined (one round
 * trip); false with err filled at the first error.
 */
extern bool mq_exec_many(PGconn *conn, const char *sql, const MqParams *params, int n,
						 MqError *err);

/* A statement without parameters whose result is not needed (BEGIN, SET). */
extern bool mq_command(PGconn *conn, const char *sql, MqError *err);

#endif							/* MQ_MQCONN_H */
