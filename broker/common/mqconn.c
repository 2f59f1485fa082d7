/*-------------------------------------------------------------------------
 *
 * mqconn.c
 *	  Connections, statements and errors on libpq for mqctl and mq-broker
 *	  (see mqconn.h).
 *
 * Passwords: a connection string may hold one, so no message of ours ever
 * quotes the connection string, and libpq's own parse errors, which may
 * quote a fragment of it, are not passed on.  Connections are named by
 * mq_conn_label(), built from what libpq reports after connecting.
 *
 * Non-blocking statements (mq_send / mq_collect, mq_exec_timeout) serve
 * the broker's replication loops, next to their blocking counterparts.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "mqconn.h"
#include "util.h"

/* A copy of s without its trailing newlines (libpq ends messages with one). */
static char *
chomp_dup(const char *s)
{
	char	   *copy = mq_strdup(s ? s : "");
	size_t		len = strlen(copy);

	while (len > 0 && (copy[len - 1] == '\n' || copy[len - 1] == '\r'))
		copy[--len] = '\0';
	return copy;
}

void
mq_error_free(MqError *err)
{
	free(err->message);
	free(err->detail);
	free(err->hint);
	free(err->table_name);
	memset(err, 0, sizeof(*err));
}

static void
prefix_message(MqError *err, const char *prefix)
{
	char	   *msg = mq_malloc(strlen(prefix) + strlen(err->message) + 1);

	sprintf(msg, "%s%s", prefix, err->message);
	free(err->message);
	err->message = msg;
}

static void
error_from_conn(PGconn *conn, const PGresult *res, MqError *err)
{
	const char *field;

	mq_error_free(err);
	if (res != NULL && PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) != NULL)
	{
		field = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (field != NULL)
			snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", field);
		err->message = chomp_dup(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
		field = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		if (field != NULL)
			err->detail = chomp_dup(field);
		field = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
		if (field != NULL)
			err->hint = chomp_dup(field);
		field = PQresultErrorField(res, PG_DIAG_TABLE_NAME);
		if (field != NULL)
			err->table_name = chomp_dup(field);
	}
	else if (res != NULL && *PQresultErrorMessage(res) != '\0')
		err->message = chomp_dup(PQresultErrorMessage(res));
	else
		err->message = chomp_dup(conn ? PQerrorMessage(conn) : "out of memory");
	if (err->message[0] == '\0')
	{
		free(err->message);
		err->message = mq_strdup("unknown error");
	}
	err->connection_lost = (conn == NULL || PQstatus(conn) == CONNECTION_BAD);
	if (err->connection_lost && err->sqlstate[0] == '\0')
		prefix_message(err, "connection lost: ");
}

void
mq_error_report(const MqError *err)
{
	const char *msg = err->message ? err->message : "unknown error";

	if (err->sqlstate[0] != '\0')
		mq_log_error("%s [SQLSTATE %s]", msg, err->sqlstate);
	else
		mq_log_error("%s", msg);
	/* same prefix on every line, so that grep finds the whole report */
	if (err->detail)
		fprintf(stderr, "%s: detail: %s\n", mq_progname, err->detail);
	if (err->hint)
		fprintf(stderr, "%s: hint: %s\n", mq_progname, err->hint);
}

int
mq_error_exit_code(const MqError *err)
{
	/* a FATAL from a dying server has a SQLSTATE but still loses us the link */
	if (err->connection_lost)
		return MQ_EXIT_CONNECT;
	return MQ_EXIT_SERVER;
}

bool
mq_error_is(const MqError *err, const char *sqlstate)
{
	return strcmp(err->sqlstate, sqlstate) == 0;
}

bool
mq_error_is_transient(const MqError *err)
{
	static const char *const transient[] = {
		"40001",				/* serialization_failure */
		"40P01",				/* deadlock_detected */
		"55P03",				/* lock_not_available */
		"57014",				/* query_canceled */
		/*
		 * read_only_sql_transaction: a write on a hot standby, which the
		 * same session may make once the standby is promoted (PostgreSQL
		 * makes each transaction read-only while recovery runs); or under
		 * default_transaction_read_only, where clients give up at their
		 * own deadline
		 */
		"25006",
	};

	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (mq_error_is(err, transient[i]))
			return true;
	return false;
}

PGconn *
mq_connect(const char *conninfo, const char *appname, MqError *err)
{
	return mq_connect_with(conninfo, appname, NULL, NULL, err);
}

/* what libpq's expand_dbname takes for a connection string, not a database name */
static bool
is_conn_string(const char *s)
{
	return strchr(s, '=') != NULL || strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0;
}

bool
mq_conn_params(const char *conninfo, const char *appname,
			   const char *const *extra_keys, const char *const *extra_vals,
			   const char **keywords, const char **values, MqError *err)
{
	int			n = 0;

	mq_error_free(err);
	/* a database name alone is one, as psql -d takes it */
	if (conninfo != NULL && is_conn_string(conninfo))
	{
		char	   *parse_error = NULL;
		PQconninfoOption *opts = PQconninfoParse(conninfo, &parse_error);

		if (opts == NULL)
		{
			/* libpq's message may quote the string, password included */
			PQfreemem(parse_error);
			err->message = mq_strdup("cannot connect: invalid connection string: it is neither "
									 "\"key=value ...\" nor a postgresql:// URI "
									 "(libpq's message is not shown because it may quote a password)");
			err->connection_lost = true;
			return false;
		}
		PQconninfoFree(opts);
	}
	if (conninfo != NULL)
	{
		keywords[n] = "dbname"; /* with expand_dbname, the whole string */
		values[n++] = conninfo;
	}
	keywords[n] = "fallback_application_name";
	values[n++] = appname;
	/* later keywords override what the expanded string set */
	for (int i = 0; extra_keys != NULL && extra_keys[i] != NULL && n < MQ_CONN_PARAMS_MAX - 1; i++)
	{
		keywords[n] = extra_keys[i];
		values[n++] = extra_vals[i];
	}
	keywords[n] = NULL;
	values[n] = NULL;
	return true;
}

PGconn *
mq_connect_with(const char *conninfo, const char *appname,
				const char *const *extra_keys, const char *const *extra_vals,
				MqError *err)
{
	const char *keywords[MQ_CONN_PARAMS_MAX];
	const char *values[MQ_CONN_PARAMS_MAX];
	PGconn	   *conn;

	if (!mq_conn_params(conninfo, appname, extra_keys, extra_vals, keywords, values, err))
		return NULL;
	conn = PQconnectdbParams(keywords, values, 1);
	if (conn == NULL)
	{
		err->message = mq_strdup("cannot connect: out of memory");
		err->connection_lost = true;
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		mq_error_free(err);
		err->message = chomp_dup(PQerrorMessage(conn));
		prefix_message(err, "cannot connect: ");
		err->connection_lost = true;
		if (PQconnectionNeedsPassword(conn))
			err->hint = mq_strdup("The server wants a password: put it in ~/.pgpass "
								  "(or PGPASSFILE) or in PGPASSWORD; mq tools do not prompt.");
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

static void
notice_receiver(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	char	   *msg = chomp_dup(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));

	if (severity != NULL && strcmp(severity, "WARNING") == 0)
		mq_log_warning("server: %s", msg);
	else
		mq_log_info("server: %s", msg);
	free(msg);
}

void
mq_log_notices(PGconn *conn)
{
	PQsetNoticeReceiver(conn, notice_receiver, NULL);
}

const char *
mq_conn_label(PGconn *conn)
{
	static char label[512];
	const char *host = PQhost(conn);

	/* a socket directory is a path: show it the way psql's \conninfo does */
	snprintf(label, sizeof(label), "%s@%s:%s/%s",
			 PQuser(conn), host && host[0] ? host : "localhost", PQport(conn), PQdb(conn));
	return label;
}

void
mq_params_init(MqParams *p)
{
	p->n = 0;
}

static int
next_param(MqParams *p)
{
	if (p->n >= MQ_MAX_PARAMS)
		mq_fatal(MQ_EXIT_LOCAL, "internal error: more than %d statement parameters", MQ_MAX_PARAMS);
	return p->n++;
}

void
mq_param_text(MqParams *p, Oid type, const char *value)
{
	int			i = next_param(p);

	p->types[i] = type;
	p->values[i] = value;
	p->lengths[i] = 0;
	p->formats[i] = 0;
}

void
mq_param_int(MqParams *p, Oid type, int64_t value)
{
	int			i = next_param(p);

	snprintf(p->numbuf[i], sizeof(p->numbuf[i]), "%lld", (long long) value);
	p->types[i] = type;
	p->values[i] = p->numbuf[i];
	p->lengths[i] = 0;
	p->formats[i] = 0;
}

void
mq_param_binary(MqParams *p, Oid type, const char *data, int len)
{
	int			i = next_param(p);

	p->types[i] = type;
	p->values[i] = data;
	p->lengths[i] = len;
	p->formats[i] = 1;
}

/* Keep a successful result, or turn a failed one into err. */
static PGresult *
check_result(PGconn *conn, PGresult *res, MqError *err)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	error_from_conn(conn, res, err);
	PQclear(res);
	return NULL;
}

PGresult *
mq_exec(PGconn *conn, const char *sql, const MqParams *params,
		int result_format, MqError *err)
{
	static const MqParams none = {0};

	if (params == NULL)
		params = &none;
	return check_result(conn,
						PQexecParams(conn, sql, params->n, params->types,
									 params->values, params->lengths,
									 params->formats, result_format),
						err);
}

/* "mq_" and 16 hex digits of the text's 64-bit FNV-1a hash */
static void
statement_name(const char *sql, char name[20])
{
	uint64_t	h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *) sql; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	snprintf(name, 20, "mq_%016llx", (unsigned long long) h);
}

bool
mq_prepare(PGconn *conn, const char *sql, const MqParams *types, MqError *err)
{
	char		name[20];
	PGresult   *res;

	statement_name(sql, name);
	res = check_result(conn, PQprepare(conn, name, sql, types->n, types->types), err);
	if (res == NULL && mq_error_is(err, "42P05"))	/* the session has it */
	{
		mq_error_free(err);
		return true;
	}
	PQclear(res);
	return res != NULL;
}

/*
 * Tries at most: each may land on another session of a pooler.  After
 * them the statement runs unnamed, which needs no session's state: a
 * pooler that keeps handing the prepare and the execution to different
 * sessions (several clients on a few server sessions) costs a plan, never
 * the statement.
 */
#define PREPARE_TRIES 8

PGresult *
mq_exec_prepared(PGconn *conn, const char *sql, const MqParams *params,
				 int result_format, MqError *err)
{
	char		name[20];

	if (PQtransactionStatus(conn) != PQTRANS_IDLE)
		return mq_exec(conn, sql, params, result_format, err);
	statement_name(sql, name);
	for (int try = 1;; try++)
	{
		PGresult   *res = check_result(conn,
									   PQexecPrepared(conn, name, params->n, params->values,
													  params->lengths, params->formats,
													  result_format),
									   err);

		if (res != NULL || !mq_error_is(err, "26000"))
			return res;
		mq_error_free(err);		/* missing here: nothing ran */
		if (try == PREPARE_TRIES)
			return mq_exec(conn, sql, params, result_format, err);
		if (!mq_prepare(conn, sql, params, err))
			return NULL;
	}
}

bool
mq_command(PGconn *conn, const char *sql, MqError *err)
{
	PGresult   *res = mq_exec(conn, sql, NULL, 0, err);

	PQclear(res);
	return res != NULL;
}

bool
mq_send(PGconn *conn, const char *sql, const MqParams *params,
		int result_format, MqError *err)
{
	static const MqParams none = {0};

	if (params == NULL)
		params = &none;
	if (!PQsendQueryParams(conn, sql, params->n, params->types, params->values,
						   params->lengths, params->formats, result_format))
	{
		error_from_conn(conn, NULL, err);
		return false;
	}
	return true;
}

PGresult *
mq_collect(PGconn *conn, bool *done, MqError *err)
{
	PGresult   *res = NULL;
	PGresult   *r;

	*done = false;
	if (!PQconsumeInput(conn))
	{
		*done = true;
		error_from_conn(conn, NULL, err);
		err->connection_lost = true;
		return NULL;
	}
	if (PQisBusy(conn))
		return NULL;
	/* keep the first result; read on until libpq says the statement is over */
	while ((r = PQgetResult(conn)) != NULL)
	{
		if (res == NULL)
			res = r;
		else
			PQclear(r);
		if (PQisBusy(conn) && !PQconsumeInput(conn))
			break;
	}
	*done = true;
	return check_result(conn, res, err);
}

PGresult *
mq_exec_timeout(PGconn *conn, const char *sql, const MqParams *params,
				int result_format, int timeout_ms, MqError *err)
{
	int64_t		deadline = mq_now_us() + (int64_t) timeout_ms * 1000;
	bool		done = false;
	PGresult   *res;

	if (!mq_send(conn, sql, params, result_format, err))
		return NULL;
	for (;;)
	{
		struct pollfd pfd;
		int64_t		left = (deadline - mq_now_us()) / 1000;

		res = mq_collect(conn, &done, err);
		if (done)
			return res;
		if (left <= 0)
			break;
		pfd.fd = PQsocket(conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int) (left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			break;
	}
	/*
	 * The server did not answer in time: ask it to cancel, waiting for that
	 * request no more than a second (cancel.h says why it could hang),
	 * and treat the connection as lost.
	 */
	(void) mq_cancel_bounded(conn, 1000);
	mq_error_free(err);
	err->message = mq_strdup("the server did not answer in time");
	err->connection_lost = true;
	return NULL;
}

/*
 * Run one statement n times, with params[i] each, in libpq's pipeline mode:
 * one round trip for all of them.  Stops at the first error (the ones
 * after it are not run) and returns false with err filled.  Use inside a
 * transaction block, so that an error leaves nothing half done.
 */
bool
mq_exec_many(PGconn *conn, const char *sql, const MqParams *params, int n, MqError *err)
{
	bool		ok = true;
	bool		failed = false;
	PGresult   *res;

	if (n == 0)
		return true;
	if (!PQenterPipelineMode(conn))
	{
		error_from_conn(conn, NULL, err);
		return false;
	}
	for (int i = 0; i < n && ok; i++)
		ok = PQsendQueryParams(conn, sql, params[i].n, params[i].types, params[i].values,
							   params[i].lengths, params[i].formats, 0) == 1;
	ok = ok && PQpipelineSync(conn) == 1;
	if (!ok)
		error_from_conn(conn, NULL, err);
	failed = !ok;
	/* every result up to the sync (a NULL ends each query's): keep the first error */
	for (int nulls = 0; ok && nulls <= n + 1;)
	{
		ExecStatusType st;

		if ((res = PQgetResult(conn)) == NULL)
		{
			if (PQstatus(conn) == CONNECTION_BAD)
				break;
			nulls++;
			continue;
		}
		st = PQresultStatus(res);
		if (st == PGRES_FATAL_ERROR && !failed)
		{
			error_from_conn(conn, res, err);
			failed = true;
		}
		PQclear(res);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	if (!failed && PQstatus(conn) == CONNECTION_BAD)
	{
		error_from_conn(conn, NULL, err);
		failed = true;
	}
	if (PQexitPipelineMode(conn) != 1 && !failed)
	{
		error_from_conn(conn, NULL, err);
		failed = true;
	}
	return !failed;
}
