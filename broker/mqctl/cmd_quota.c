/*-------------------------------------------------------------------------
 *
 * cmd_quota.c
 *	  mqctl quota set / describe / delete: the client quotas mq-kafka
 *	  enforces, as Kafka's `kafka-configs --entity-type users|clients
 *	  --alter --add-config producer_byte_rate=...` manages them, on
 *	  mq.set_client_quota and mq.list_client_quotas
 *	  (src/sql/93_client_quotas.sql; docs/kafka.md, "Client quotas").
 *	  The keys and values are checked by the database (MQ063).  No state,
 *	  no locking.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"

#define ENTITY_HELP \
"Entity (kafka-configs' --entity-name and --entity-default; set and delete\n" \
"need a user, a client id, or both):\n" \
"      --user=USER          a Kafka user: the role its requests run as\n" \
"      --user-default       every user without a quota of its own\n" \
"      --client-id=ID       a client id\n" \
"      --client-default     every client id without a quota of its own\n"

const char	quota_set_help[] =
"Usage: mqctl quota set ENTITY KEY=VALUE...\n"
"\n"
"Set client quotas of an entity, all in one transaction, as\n"
"kafka-configs --alter --add-config 'producer_byte_rate=1048576' does.  Keys:\n"
"producer_byte_rate and consumer_byte_rate (bytes a second, whole numbers),\n"
"request_percentage (percent of one thread's time).  Needs ALTER on the\n"
"cluster.\n"
"\n"
ENTITY_HELP;

const char	quota_describe_help[] =
"Usage: mqctl quota describe [ENTITY]\n"
"\n"
"List client quotas (user, client id, key, value; <default> for a default):\n"
"all of them, or those of the entities that have the parts given.  Needs\n"
"DESCRIBE on the cluster.  Like kafka-configs --describe --entity-type users.\n"
"\n"
ENTITY_HELP;

const char	quota_delete_help[] =
"Usage: mqctl quota delete ENTITY KEY...\n"
"\n"
"Remove client quotas of an entity, as kafka-configs --alter --delete-config\n"
"does; a key that is not set is no error.  Needs ALTER on the cluster.\n"
"\n"
ENTITY_HELP;

enum
{
	OPT_USER = CLI_OPT_LONG_BASE,
	OPT_USER_DEFAULT,
	OPT_CLIENT,
	OPT_CLIENT_DEFAULT
};

typedef struct QuotaEntity
{
	const char *user;
	bool		user_default;
	const char *client;
	bool		client_default;
} QuotaEntity;

/* the entity's options; the positionals after them (min to max) */
static char **
parse_quota(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, QuotaEntity *e,
			int min, int max, const char *names, int *n)
{
	static const struct option longopts[] = {
		{"user", required_argument, NULL, OPT_USER},
		{"user-default", no_argument, NULL, OPT_USER_DEFAULT},
		{"client-id", required_argument, NULL, OPT_CLIENT},
		{"client-default", no_argument, NULL, OPT_CLIENT_DEFAULT},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(e, 0, sizeof(*e));
	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == OPT_USER)
			e->user = optarg;
		else if (c == OPT_USER_DEFAULT)
			e->user_default = true;
		else if (c == OPT_CLIENT)
			e->client = optarg;
		else if (c == OPT_CLIENT_DEFAULT)
			e->client_default = true;
	}
	if ((e->user && e->user_default) || (e->client && e->client_default))
		cli_usage_error(p, "give a name or its default, not both");
	if (min > 0 && !e->user && !e->user_default && !e->client && !e->client_default)
		cli_usage_error(p, "give a user (--user or --user-default), a client id, or both");
	return cli_positionals(p, min, max, names, n);
}

/* mq.set_client_quota($1 key, $2 value, the entity) */
static void
set_quota(PGconn *conn, const QuotaEntity *e, const char *key, const char *value)
{
	MqParams	params;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, key);
	mq_param_text(&params, 0, value);	/* the function's double precision */
	mq_param_text(&params, MQ_TEXTOID, e->user);
	mq_param_text(&params, MQ_TEXTOID, e->client);
	mq_param_text(&params, MQ_BOOLOID, e->user_default ? "t" : "f");
	mq_param_text(&params, MQ_BOOLOID, e->client_default ? "t" : "f");
	PQclear(mqctl_exec(conn, "SELECT mq.set_client_quota($1, $2, $3, $4, $5, $6)", &params, 0));
}

/* set (values) or remove (no values) keys[0..n) of e in one transaction */
static void
change_quotas(const QuotaEntity *e, char **keys, char **values, int n)
{
	PGconn	   *conn = mqctl_connect();

	mqctl_command(conn, "BEGIN");
	for (int i = 0; i < n; i++)
		set_quota(conn, e, keys[i], values ? values[i] : NULL);
	mqctl_command(conn, "COMMIT");
	PQfinish(conn);
}

int
cmd_quota_set(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	QuotaEntity e;
	int			n;
	char	  **args = parse_quota(&p, cmd, argc, argv, &e, 1, argc, "KEY=VALUE", &n);
	char	  **keys = mq_malloc(sizeof(char *) * n);
	char	  **values = mq_malloc(sizeof(char *) * n);

	for (int i = 0; i < n; i++)
		cli_key_value(&p, "quota", args[i], &keys[i], &values[i]);
	change_quotas(&e, keys, values, n);
	printf("%d client quota%s set.\n", n, n == 1 ? "" : "s");
	free(keys);
	free(values);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_quota_delete(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	QuotaEntity e;
	int			n;
	char	  **keys = parse_quota(&p, cmd, argc, argv, &e, 1, argc, "KEY", &n);

	change_quotas(&e, keys, NULL, n);
	printf("%d client quota%s removed.\n", n, n == 1 ? "" : "s");
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_quota_describe(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	QuotaEntity e;
	int			n;
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;

	(void) parse_quota(&p, cmd, argc, argv, &e, 0, 0, "argument", &n);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, e.user);
	mq_param_text(&params, MQ_TEXTOID, e.client);
	mq_param_text(&params, MQ_BOOLOID, e.user_default ? "t" : "f");
	mq_param_text(&params, MQ_BOOLOID, e.client_default ? "t" : "f");
	res = mqctl_exec(conn,
					 "SELECT CASE WHEN default_user THEN '<default>' ELSE user_name END AS \"user\","
					 " CASE WHEN default_client THEN '<default>' ELSE client_id END AS client_id,"
					 " quota_key AS key, quota_value AS value FROM mq.list_client_quotas()"
					 " WHERE ($1::text IS NULL OR user_name = $1) AND ($2::text IS NULL OR client_id = $2)"
					 " AND (NOT $3 OR default_user) AND (NOT $4 OR default_client)", &params, 0);
	output_table(res);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
