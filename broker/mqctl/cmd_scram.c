/*-------------------------------------------------------------------------
 *
 * cmd_scram.c
 *	  mqctl scram set / describe / delete: the SCRAM credentials of Kafka
 *	  clients (mq-kafka --sasl=scram-sha-256,scram-sha-512), as Kafka's
 *	  `kafka-configs --entity-type users --alter --add-config
 *	  'SCRAM-SHA-256=[iterations=...,password=...]'` manages them, on
 *	  mq.set_scram_keys, mq.drop_scram_credential and the view
 *	  mq.scram_credentials (src/sql/91_scram.sql; docs/kafka.md, "SCRAM").
 *
 * The password never comes from the command line: it is read from the
 * terminal without echo, from standard input when that is not a
 * terminal, from a file (--password-file, first line) or from an
 * environment variable (--password-env).  It never leaves the process
 * either: the verifier (a random salt, StoredKey, ServerKey) is computed
 * here (common/scram_keys.c) and sent, and the password is zeroed after.
 * No state, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "mqctl.h"
#include "scram_keys.h"

#define PASSWORD_MAX 1024

const char	scram_set_help[] =
"Usage: mqctl scram set USER [OPTIONS]\n"
"\n"
"Set (or replace) USER's SCRAM credential for Kafka clients of mq-kafka: mq\n"
"stores a salted verifier, never the password.  Like Kafka's\n"
"kafka-configs --alter --entity-type users --entity-name USER\n"
"  --add-config 'SCRAM-SHA-256=[iterations=N,password=...]'\n"
"but the password is never an argument.  Needs ALTER on the cluster, or USER\n"
"being the connecting role.\n"
"\n"
"Options:\n"
"      --mechanism=MECH     SCRAM-SHA-256 or SCRAM-SHA-512 (default: both)\n"
"      --iterations=N       4096 to 16384 (default 4096)\n"
"      --password-file=FILE read the password from FILE's first line\n"
"      --password-env=VAR   read it from the environment variable VAR\n"
"Without either, the password is asked for on the terminal, or read from the\n"
"first line of standard input when that is not a terminal.\n";

const char	scram_describe_help[] =
"Usage: mqctl scram describe [USER]\n"
"\n"
"List the SCRAM credentials (user, mechanism, iterations, when set) that the\n"
"connecting role may see: all of them with DESCRIBE on the cluster, else its\n"
"own.  Like kafka-configs --describe --entity-type users.\n";

const char	scram_delete_help[] =
"Usage: mqctl scram delete USER [--mechanism=MECH]\n"
"\n"
"Delete USER's SCRAM credential for MECH (default: both mechanisms), as\n"
"kafka-configs --alter --delete-config SCRAM-SHA-256 --entity-type users does.\n"
"A user without such a credential is an error (MQ062).\n";

enum
{
	OPT_MECH = CLI_OPT_LONG_BASE,
	OPT_ITERS,
	OPT_PWFILE,
	OPT_PWENV
};

typedef struct ScramOptions
{
	const char *mechanism;		/* NULL: both */
	int			iterations;
	const char *password_file;
	const char *password_env;
} ScramOptions;

static const char *
parse_scram(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, ScramOptions *o, int nargs)
{
	static const struct option longopts[] = {
		{"mechanism", required_argument, NULL, OPT_MECH},
		{"iterations", required_argument, NULL, OPT_ITERS},
		{"password-file", required_argument, NULL, OPT_PWFILE},
		{"password-env", required_argument, NULL, OPT_PWENV},
		{NULL, 0, NULL, 0}
	};
	char	  **args;
	int			c,
				n;

	memset(o, 0, sizeof(*o));
	o->iterations = 4096;
	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == OPT_MECH)
			o->mechanism = optarg;
		else if (c == OPT_ITERS)
			o->iterations = (int) cli_int(p, "--iterations", optarg, 4096, 16384);
		else if (c == OPT_PWFILE)
			o->password_file = optarg;
		else if (c == OPT_PWENV)
			o->password_env = optarg;
	}
	if (o->password_file && o->password_env)
		cli_usage_error(p, "give at most one of --password-file and --password-env");
	args = cli_positionals(p, nargs, 1, "user name", &n);
	return n > 0 ? args[0] : NULL;
}

/* the first line of f into buf, without its newline; false if none */
static bool
read_line(FILE *f, char *buf, size_t size)
{
	if (fgets(buf, (int) size, f) == NULL)
		return false;
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf[0] != '\0';
}

/* from the terminal without echo, or the first line of standard input */
static bool
read_password_prompt(char *buf, size_t size)
{
	FILE	   *tty = fopen("/dev/tty", "r+");
	struct termios old,
				quiet;
	bool		ok;

	if (tty == NULL || !isatty(STDIN_FILENO))
	{
		if (tty)
			fclose(tty);
		return read_line(stdin, buf, size);
	}
	fputs("Password: ", tty);
	fflush(tty);
	tcgetattr(fileno(tty), &old);
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t) ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	ok = read_line(tty, buf, size);
	tcsetattr(fileno(tty), TCSAFLUSH, &old);
	fputs("\n", tty);
	fclose(tty);
	return ok;
}

static void
read_password(const ScramOptions *o, char *buf, size_t size)
{
	bool		ok;

	if (o->password_env)
	{
		const char *v = getenv(o->password_env);

		if (v == NULL || v[0] == '\0')
			mq_fatal(MQ_EXIT_USAGE, "no password given: the environment variable %s is %s",
					 o->password_env, v == NULL ? "not set" : "empty");
		ok = strlen(v) < size;
		if (ok)
			strcpy(buf, v);
	}
	else if (o->password_file)
	{
		FILE	   *f = fopen(o->password_file, "r");

		if (f == NULL)
			mq_fatal(MQ_EXIT_LOCAL, "cannot open \"%s\": %s", o->password_file, strerror(errno));
		ok = read_line(f, buf, size);
		fclose(f);
	}
	else
		ok = read_password_prompt(buf, size);
	if (!ok)
		mq_fatal(MQ_EXIT_USAGE, "no password given");
}

int
cmd_scram_set(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ScramOptions o;
	const char *user = parse_scram(&p, cmd, argc, argv, &o, 1);
	const char *mechs[2] = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
	char		password[PASSWORD_MAX];
	MqParams	params;
	PGconn	   *conn;

	read_password(&o, password, sizeof(password));
	conn = mqctl_connect();
	mqctl_command(conn, "BEGIN");
	for (int i = 0; i < (o.mechanism ? 1 : 2); i++)
	{
		const char *mech = o.mechanism ? o.mechanism : mechs[i];
		uint8_t		salt[SCRAM_SALT_LEN];
		ScramKeys	keys = {0};

		/*
		 * The verifier, computed here: the password never reaches the
		 * server.  A mechanism we cannot compute for goes with empty keys,
		 * and the server refuses it with its own SQLSTATE (MQ061).
		 */
		if (!scram_random(salt, sizeof(salt)))
			mq_fatal(MQ_EXIT_LOCAL, "cannot generate a random salt");
		if (scram_keys_len(mech) > 0 &&
			!scram_keys_from_password(mech, password, salt, sizeof(salt), o.iterations, &keys))
			mq_fatal(MQ_EXIT_LOCAL, "cannot compute the scram verifier");
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, user);
		mq_param_text(&params, MQ_TEXTOID, mech);
		mq_param_int(&params, MQ_INT4OID, o.iterations);
		mq_param_binary(&params, MQ_BYTEAOID, (const char *) salt, sizeof(salt));
		mq_param_binary(&params, MQ_BYTEAOID, (const char *) keys.stored, keys.len);
		mq_param_binary(&params, MQ_BYTEAOID, (const char *) keys.server, keys.len);
		PQclear(mqctl_exec(conn, "SELECT mq.set_scram_keys($1, $2, $3, $4, $5, $6)", &params, 0));
		explicit_bzero(&keys, sizeof(keys));
	}
	explicit_bzero(password, sizeof(password));
	mqctl_command(conn, "COMMIT");
	printf("SCRAM credential%s of %s set (%d iterations).\n",
		   o.mechanism ? "" : "s", user, o.iterations);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_scram_describe(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ScramOptions o;
	const char *user = parse_scram(&p, cmd, argc, argv, &o, 0);
	MqParams	params;
	PGconn	   *conn = mqctl_connect();
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, user);
	res = mqctl_exec(conn, "SELECT user_name AS \"user\", mechanism, iterations, "
					 "pg_catalog.to_char(set_at, 'YYYY-MM-DD HH24:MI:SS TZ') AS set_at "
					 "FROM mq.scram_credentials WHERE $1::text IS NULL OR user_name = $1 "
					 "ORDER BY 1, 2", &params, 0);
	output_table(res);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_scram_delete(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ScramOptions o;
	const char *user = parse_scram(&p, cmd, argc, argv, &o, 1);
	MqParams	params;
	PGconn	   *conn = mqctl_connect();
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, user);
	mq_param_text(&params, MQ_TEXTOID, o.mechanism);
	res = mqctl_exec(conn, "SELECT mq.drop_scram_credential($1, $2)", &params, 0);
	printf("%s SCRAM credential%s of %s deleted.\n", PQgetvalue(res, 0, 0),
		   strcmp(PQgetvalue(res, 0, 0), "1") == 0 ? "" : "s", user);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
