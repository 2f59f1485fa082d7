/*-------------------------------------------------------------------------
 *
 * cmd_topic.c
 *	  The topic commands of mqctl, "topic create", "list", "describe",
 *	  "alter", "add-partitions" and "delete": their options and their calls
 *	  of mq.create_topic(), mq.alter_topic(), mq.add_partitions(),
 *	  mq.drop_topic() and the views mq.topics, mq.partitions, mq.segments.
 *
 * Configuration travels as two text arrays turned into jsonb by the
 * server (jsonb_object), so values such as "7d" or "256MB" reach
 * mq.validate_config() exactly as typed and the client needs no JSON
 * quoting of its own.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "output.h"
#include "pgbinary.h"

/* A jsonb config as "key=value,key=value" (sorted), for tables. */
#define CONFIG_TEXT(col) \
	"coalesce((SELECT string_agg(e.key || '=' || e.value, ',' ORDER BY e.key) " \
	"FROM pg_catalog.jsonb_each_text(" col ") e), '')"

const char	topic_create_help[] =
"Usage: mqctl topic create NAME [OPTIONS]\n"
"\n"
"Create a topic.  A name has 1 to 249 characters from [A-Za-z0-9._-], and\n"
"may not differ from an existing topic's only in '.' against '_' (Kafka's rule).\n"
"Connected to a cluster's coordinator, the topic is replicated, placed on the\n"
"brokers (-c replication.factor=N, default 1).\n"
"\n"
"Options:\n"
"  -p, --partitions=N     number of partitions (default 1)\n"
"  -c, --config=KEY=VALUE topic configuration, Kafka's names; repeat for\n"
"                         more keys, e.g. -c retention.ms=7d -c segment.bytes=256MB\n"
"      --if-not-exists    succeed without change when the topic exists\n";

const char	topic_list_help[] =
"Usage: mqctl topic list [OPTIONS]\n"
"\n"
"List the topics with their partition count, records, size and configuration.\n"
"\n"
"Options:\n"
"      --format=FORMAT    table (default) or json\n";

const char	topic_describe_help[] =
"Usage: mqctl topic describe NAME [OPTIONS]\n"
"\n"
"Show a topic and, per partition, its leader and in-sync replicas (\"-\" until\n"
"replication exists), log start and end offsets, high watermark, segments and\n"
"size on disk.\n"
"\n"
"Options:\n"
"      --format=FORMAT    table (default) or json\n";

const char	topic_alter_help[] =
"Usage: mqctl topic alter NAME OPTIONS\n"
"\n"
"Change a topic's configuration; keys not named keep their values.  With\n"
"--partitions, also grow the topic to N partitions (never fewer).  All in one\n"
"transaction: on any error nothing changes.  Connected to a cluster's\n"
"coordinator, a replicated topic changes there (partitions as with\n"
"add-partitions), for every replica.\n"
"\n"
"Options:\n"
"  -c, --config=KEY=VALUE set a key (repeatable)\n"
"      --delete-config=KEY\n"
"                         reset a key to its default (repeatable)\n"
"      --partitions=N     the partition count to reach (1 to 10000)\n";

const char	topic_add_partitions_help[] =
"Usage: mqctl topic add-partitions NAME --count=N\n"
"\n"
"Add N partitions to a topic.  Partitions are never removed, and keys may map\n"
"to other partitions afterwards (as in Kafka).  Connected to a cluster's\n"
"coordinator, a replicated topic gets them there, placed on the brokers, which\n"
"add them on their nodes.\n"
"\n"
"Options:\n"
"      --count=N          number of partitions to add (required)\n";

const char	topic_delete_help[] =
"Usage: mqctl topic delete NAME [OPTIONS]\n"
"\n"
"Delete a topic with all its records and committed offsets.  Connected to a\n"
"cluster's coordinator, a replicated topic is deleted there, and every broker\n"
"drops its node's copy (as Kafka's controller deletes a topic).\n"
"\n"
"Options:\n"
"      --if-exists        succeed without change when there is no such topic\n";

enum
{
	OPT_IF_EXISTS = CLI_OPT_LONG_BASE,
	OPT_IF_NOT_EXISTS,
	OPT_FORMAT,
	OPT_DELETE_CONFIG,
	OPT_COUNT
};

/* KEY=VALUE options collected into the text arrays of jsonb_object(). */
typedef struct ConfigArgs
{
	MqArray		keys;
	MqArray		values;
} ConfigArgs;

static void
config_init(ConfigArgs *c)
{
	mq_array_init(&c->keys, MQ_TEXTOID);
	mq_array_init(&c->values, MQ_TEXTOID);
}

static void
config_set(ConfigArgs *c, const char *key, const char *value)
{
	/* a NULL value becomes JSON null, which mq.alter_topic reads as reset */
	mq_array_add(&c->keys, key, strlen(key));
	mq_array_add(&c->values, value, value ? strlen(value) : 0);
}

static void
config_params(ConfigArgs *c, MqParams *params)
{
	const char *data;
	int			len;

	data = mq_array_bytes(&c->keys, &len);
	mq_param_binary(params, MQ_TEXTARRAYOID, data, len);
	data = mq_array_bytes(&c->values, &len);
	mq_param_binary(params, MQ_TEXTARRAYOID, data, len);
}

static void
config_free(ConfigArgs *c)
{
	mq_array_free(&c->keys);
	mq_array_free(&c->values);
}

/* The single topic name argument. */
static const char *
topic_argument(CliParser *p)
{
	return cli_positionals(p, 1, 1, "topic name", NULL)[0];
}

/* What the command line of topic create says. */
typedef struct CreateOptions
{
	const char *topic;
	int64_t		partitions;
	ConfigArgs	config;
	bool		if_not_exists;
} CreateOptions;

static void
parse_create_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
					 CreateOptions *o)
{
	static const struct option longopts[] = {
		{"partitions", required_argument, NULL, 'p'},
		{"config", required_argument, NULL, 'c'},
		{"if-not-exists", no_argument, NULL, OPT_IF_NOT_EXISTS},
		{NULL, 0, NULL, 0}
	};
	char	   *key,
			   *value;
	int			c;

	o->partitions = 1;
	o->if_not_exists = false;
	config_init(&o->config);
	mqctl_parser_init(p, cmd, argc, argv, "p:c:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		switch (c)
		{
			case 'p':
				o->partitions = cli_int(p, "--partitions", optarg, 1, 10000);
				break;
			case 'c':
				cli_key_value(p, "--config", optarg, &key, &value);
				config_set(&o->config, key, value);
				break;
			case OPT_IF_NOT_EXISTS:
				o->if_not_exists = true;
				break;
		}
	}
	o->topic = topic_argument(p);
}

int
cmd_topic_create(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	CreateOptions o;
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn;
	PGresult   *res;

	parse_create_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, o.topic);
	mq_param_int(&params, MQ_INT4OID, o.partitions);
	config_params(&o.config, &params);
	/* on a cluster's coordinator, a replicated topic, placed on its brokers */
	res = mq_exec(conn, cluster_coordinator(conn) ?
				  "SELECT mq_coord.create_topic($1, $2, pg_catalog.jsonb_object($3, $4))" :
				  "SELECT mq.create_topic($1, $2, pg_catalog.jsonb_object($3, $4))",
				  &params, 0, &err);
	if (res != NULL)
		printf("Created topic %s.\n", o.topic);
	else if (o.if_not_exists && mq_error_is(&err, MQ_SQLSTATE_TOPIC_EXISTS))
		printf("Topic %s exists already.\n", o.topic);
	else
		mqctl_fail(conn, &err);
	mq_error_free(&err);
	PQclear(res);
	PQfinish(conn);
	config_free(&o.config);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_topic_list(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	OutputFormat format = OUTPUT_TABLE;
	char		sql[2048];
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(&p)) != -1)
		if (c == OPT_FORMAT)
			format = output_parse_format(&p, optarg);
	(void) cli_positionals(&p, 0, 0, "", NULL);

	/* people read sizes and config as text; programs get numbers and JSON */
	snprintf(sql, sizeof(sql),
			 "SELECT t.topic, t.partitions, coalesce(p.records, 0) AS records, %s, %s AS config"
			 "  FROM mq.topics t"
			 "  LEFT JOIN (SELECT topic, sum(high_watermark - log_start_offset)::bigint AS records"
			 "               FROM mq.partitions GROUP BY topic) p USING (topic)"
			 "  LEFT JOIN (SELECT topic, sum(bytes)::bigint AS bytes"
			 "               FROM mq.segments GROUP BY topic) s USING (topic)"
			 " ORDER BY t.topic",
			 format == OUTPUT_TABLE ? "pg_catalog.pg_size_pretty(coalesce(s.bytes, 0)) AS size"
			 : "coalesce(s.bytes, 0) AS bytes",
			 format == OUTPUT_TABLE ? CONFIG_TEXT("t.config") : "t.config");

	conn = mqctl_connect();
	res = mqctl_exec(conn, sql, NULL, 0);
	output_rows(res, format);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

/* topic describe's output: the topic, then its partitions. */
static void
print_description(const PGresult *topic_res, const PGresult *parts_res, OutputFormat format)
{
	if (format == OUTPUT_JSON)
	{
		json_t	   *obj = output_row_json(topic_res, 0);

		json_object_set_new(obj, "partition_details", output_rows_json(parts_res));
		output_json(obj, JSON_INDENT(2));
	}
	else
	{
		printf("Topic: %s\tPartitions: %s\tConfig: %s\tCreated: %s\n\n",
			   PQgetvalue(topic_res, 0, 0), PQgetvalue(topic_res, 0, 2),
			   *PQgetvalue(topic_res, 0, 3) ? PQgetvalue(topic_res, 0, 3) : "(defaults)",
			   PQgetvalue(topic_res, 0, 4));
		output_table(parts_res);
	}
}

int
cmd_topic_describe(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	OutputFormat format = OUTPUT_TABLE;
	const char *topic;
	char		sql[2048];
	MqParams	params;
	PGconn	   *conn;
	PGresult   *topic_res;
	PGresult   *parts_res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(&p)) != -1)
		if (c == OPT_FORMAT)
			format = output_parse_format(&p, optarg);
	topic = topic_argument(&p);

	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);

	snprintf(sql, sizeof(sql),
			 "SELECT topic, topic_id, partitions, %s AS config, %s AS created_at"
			 "  FROM mq.topics WHERE topic = $1",
			 format == OUTPUT_TABLE ? CONFIG_TEXT("config") : "config",
			 format == OUTPUT_TABLE ? "pg_catalog.date_trunc('second', created_at)"
			 : "pg_catalog.to_json(created_at)");	/* ISO 8601 */
	topic_res = mqctl_exec(conn, sql, &params, 0);
	if (PQntuples(topic_res) == 0)
	{
		/* the same words as the server's MQ001, which a view cannot raise */
		mq_log_error(MQCTL_NO_TOPIC, topic);
		PQclear(topic_res);
		PQfinish(conn);
		cli_free(&p);
		return MQ_EXIT_SERVER;
	}

	/*
	 * Leader and ISR are NULL (shown as "-") until the broker records them;
	 * the columns are here already so that scripts need not change then.
	 */
	snprintf(sql, sizeof(sql),
			 "SELECT p.partition, NULL::integer AS leader, NULL::text AS isr,"
			 "       p.log_start_offset AS log_start, p.log_end_offset AS log_end,"
			 "       p.high_watermark, p.leader_epoch, p.role,"
			 "       count(s.base_offset) AS segments, %s"
			 "  FROM mq.partitions p"
			 "  LEFT JOIN mq.segments s ON s.topic = p.topic AND s.partition = p.partition"
			 " WHERE p.topic = $1"
			 " GROUP BY p.partition, p.log_start_offset, p.log_end_offset,"
			 "          p.high_watermark, p.leader_epoch, p.role"
			 " ORDER BY p.partition",
			 format == OUTPUT_TABLE ? "pg_catalog.pg_size_pretty(coalesce(sum(s.bytes), 0)) AS size"
			 : "coalesce(sum(s.bytes), 0)::bigint AS bytes");
	parts_res = mqctl_exec(conn, sql, &params, 0);

	print_description(topic_res, parts_res, format);
	output_flush();
	PQclear(topic_res);
	PQclear(parts_res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

/*
 * topic alter's config change, in the caller's transaction: every key
 * named must be one the server knows, including those --delete-config
 * resets (mq.alter_topic reads a JSON null as "reset" and would not look
 * at the key), so that a misspelt key is refused either way.  The key list
 * is the server's (mq._config_key, which mq.validate_config asks too).
 * Returns the resulting config as text (malloc'd; "" for the defaults).
 */
static char *
alter_config(PGconn *conn, const char *topic, ConfigArgs *config)
{
	MqParams	params;
	PGresult   *res;
	const char *keys;
	int			len;
	char	   *text;

	mq_params_init(&params);
	keys = mq_array_bytes(&config->keys, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, keys, len);
	PQclear(mqctl_exec(conn, "SELECT count(*) FROM pg_catalog.unnest($1::text[]) AS u(k),"
					   " LATERAL mq._config_key(u.k) AS c", &params, 0));

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	config_params(config, &params);
	/* a replicated topic's config is the coordinator's (its brokers bring the nodes to it) */
	res = mqctl_exec(conn, cluster_topic(conn, topic) ?
					 "SELECT " CONFIG_TEXT("c.config") "  FROM (SELECT mq_coord.alter_topic_config($1, "
					 "pg_catalog.jsonb_strip_nulls(t.config OPERATOR(pg_catalog.||) pg_catalog.jsonb_object($2, $3)))"
					 " AS config FROM mq_coord.topic t WHERE t.topic OPERATOR(pg_catalog.=) $1) c" :
					 "SELECT " CONFIG_TEXT("c.config")
					 "  FROM (SELECT mq.alter_topic($1, pg_catalog.jsonb_object($2, $3)) AS config) c",
					 &params, 0);
	if (PQntuples(res) == 0)
		mq_fatal(MQ_EXIT_SERVER, MQCTL_NO_TOPIC, topic);
	text = mq_strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return text;
}

/*
 * topic alter: the config, then the partition count, in one transaction,
 * so that an error in either changes nothing (an exit before the COMMIT
 * ends the session, which rolls it back).  What changed is printed once
 * committed.
 */
int
cmd_topic_alter(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"delete-config", required_argument, NULL, OPT_DELETE_CONFIG},
		{"partitions", required_argument, NULL, OPT_COUNT},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	ConfigArgs	config;
	int			partitions = 0;
	const char *topic;
	char	   *key,
			   *value;
	char	   *config_text = NULL;
	char	   *partitions_text = NULL;
	PGconn	   *conn;
	int			c;

	config_init(&config);
	mqctl_parser_init(&p, cmd, argc, argv, "c:", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		switch (c)
		{
			case 'c':
				cli_key_value(&p, "--config", optarg, &key, &value);
				config_set(&config, key, value);
				break;
			case OPT_DELETE_CONFIG:
				if (optarg[0] == '\0' || strchr(optarg, '=') != NULL)
					cli_usage_error(&p, "--delete-config takes a key alone, not \"%s\"", optarg);
				config_set(&config, optarg, NULL);
				break;
			case OPT_COUNT:
				partitions = (int) cli_int(&p, "--partitions", optarg, 1, 10000);
				break;
		}
	}
	topic = topic_argument(&p);
	if (config.keys.nelems == 0 && partitions == 0)
		cli_usage_error(&p, "nothing to change: give --config, --delete-config or --partitions");

	conn = mqctl_connect();
	mqctl_command(conn, "BEGIN");
	if (config.keys.nelems > 0)
		config_text = alter_config(conn, topic, &config);
	if (partitions > 0)
		partitions_text = alter_partition_count(conn, topic, partitions);
	mqctl_command(conn, "COMMIT");

	if (config_text != NULL)
		printf("Altered topic %s: config %s\n", topic, *config_text ? config_text : "(defaults)");
	if (partitions_text != NULL)
		printf("%s\n", partitions_text);
	free(config_text);
	free(partitions_text);
	PQfinish(conn);
	config_free(&config);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_topic_add_partitions(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"count", required_argument, NULL, OPT_COUNT},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	int64_t		count = 0;
	int			total;
	const char *topic;
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(&p)) != -1)
		if (c == OPT_COUNT)
			count = cli_int(&p, "--count", optarg, 1, 10000);
	topic = topic_argument(&p);
	if (count == 0)
		cli_usage_error(&p, "--count is required");

	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_int(&params, MQ_INT4OID, count);
	if (cluster_add_partitions(conn, topic, (int) count, &total))
	{
		printf("Replicated topic %s now has %d partitions.\n", topic, total);
		PQfinish(conn);
		cli_free(&p);
		return MQ_EXIT_OK;
	}
	res = mqctl_exec(conn, "SELECT mq.add_partitions($1, $2)", &params, 0);
	printf("Topic %s now has %s partitions.\n", topic, PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_topic_delete(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"if-exists", no_argument, NULL, OPT_IF_EXISTS},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	bool		if_exists = false;
	const char *topic;
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(&p)) != -1)
		if (c == OPT_IF_EXISTS)
			if_exists = true;
	topic = topic_argument(&p);

	conn = mqctl_connect();
	res = mqctl_exec_unless_missing(conn, cluster_topic(conn, topic) ? "SELECT mq_coord.delete_topic($1)"
									: "SELECT mq.drop_topic($1)", topic,
									MQ_SQLSTATE_UNKNOWN_TOPIC, if_exists);
	if (res != NULL)
		printf("Deleted topic %s.\n", topic);
	else
		printf("Topic %s does not exist.\n", topic);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
