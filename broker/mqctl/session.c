/*-------------------------------------------------------------------------
 *
 * session.c
 *	  What every mqctl command shares, below the commands and the engines:
 *	  the common options (-d and its help text), the option parser set up
 *	  with them, connecting (with the check that the mq extension is
 *	  there), running SQL and giving up with the right exit code.
 *
 * Layer: below main.c (the dispatcher) and the cmd_*.c commands, and below
 * the engines (producer.c, consumer.c, pipeline*.c); it calls none of
 * them, only broker/common.  State: the -d connection string, set while
 * options are parsed and read when connecting.
 *
 * Locking: none; mqctl has one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"

const char	mqctl_common_help[] =
"Connection options:\n"
"  -d, --dbname=CONNINFO  database name, connection string or URI\n"
"                         (postgresql://...), as psql takes it; without it\n"
"                         libpq's environment decides: PGHOST, PGPORT,\n"
"                         PGUSER, PGDATABASE, PGSERVICE, ~/.pgpass, ...\n"
"      --help             show this help, then exit\n";

/* Set by -d, before the command or among its options. */
static const char *conninfo = NULL;

static bool
handle_common(int opt, const char *arg, void *ctx)
{
	if (opt != 'd')
		return false;
	conninfo = arg;
	return true;
}

static const struct option common_longopts[] = {
	{"dbname", required_argument, NULL, 'd'},
	{NULL, 0, NULL, 0}
};

const CliCommon mqctl_common = {"d:", common_longopts, mqctl_common_help, handle_common, NULL};

void
mqctl_parser_init(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
				  const char *shortopts, const struct option *longopts)
{
	static char name[128];

	snprintf(name, sizeof(name), "%s %s", mq_progname, cmd->words);
	cli_init(p, argc, argv, name, cmd->help, &mqctl_common, shortopts, longopts);
}

void
mqctl_fail(PGconn *conn, MqError *err)
{
	int			code = mq_error_exit_code(err);

	mq_error_report(err);
	mq_error_free(err);
	PQfinish(conn);
	exit(code);
}

const char *
mqctl_conninfo(void)
{
	return conninfo;
}

PGconn *
mqctl_try_connect(MqError *err)
{
	PGconn	   *conn = mq_connect(conninfo, mq_progname, err);
	PGresult   *res;

	if (conn == NULL)
		return NULL;
	mq_log_notices(conn);
	/* our JSON output and topic names are UTF-8, whatever the locale */
	if (PQsetClientEncoding(conn, "UTF8") != 0)
		mq_log_warning("could not set client_encoding to UTF8");

	res = mq_exec(conn, "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'mq'",
				  NULL, 0, err);
	if (res == NULL)
	{
		PQfinish(conn);
		return NULL;
	}
	if (PQntuples(res) == 0)
	{
		/* not worth a retry: say so and stop */
		mq_log_error("the mq extension is not installed in database \"%s\" (%s)"
					 MQCTL_SQLSTATE("3F000"), PQdb(conn), mq_conn_label(conn));	/* schema "mq" does not exist */
		fprintf(stderr, "%s: hint: Run CREATE EXTENSION mq; in that database, or choose another with -d.\n",
				mq_progname);
		PQclear(res);
		PQfinish(conn);
		exit(MQ_EXIT_SERVER);
	}
	PQclear(res);
	return conn;
}

PGconn *
mqctl_connect(void)
{
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn = mqctl_try_connect(&err);

	if (conn == NULL)
		mqctl_fail(NULL, &err);
	return conn;
}

PGresult *
mqctl_exec(PGconn *conn, const char *sql, const MqParams *params, int result_format)
{
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = mq_exec(conn, sql, params, result_format, &err);

	if (res == NULL)
		mqctl_fail(conn, &err);
	return res;
}

PGresult *
mqctl_exec_unless_missing(PGconn *conn, const char *sql, const char *name,
						  const char *missing_sqlstate, bool if_exists)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, name);
	res = mq_exec(conn, sql, &params, 0, &err);
	if (res == NULL && !(if_exists && mq_error_is(&err, missing_sqlstate)))
		mqctl_fail(conn, &err);
	mq_error_free(&err);
	return res;
}

void
mqctl_command(PGconn *conn, const char *sql)
{
	PQclear(mqctl_exec(conn, sql, NULL, 0));
}
