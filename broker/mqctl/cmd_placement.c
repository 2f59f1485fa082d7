/*-------------------------------------------------------------------------
 *
 * cmd_placement.c
 *	  Where a replicated cluster keeps its replicas, as Kafka's
 *	  kafka-reassign-partitions and kafka-topics --alter --partitions do it
 *	  (docs/cli.md, "Placement and reassignment"):
 *	    mqctl reassign --generate   a placement of topics on given brokers
 *	    mqctl reassign --execute    start moving partitions (a plan file),
 *	                                with --throttle and --dry-run
 *	    mqctl reassign --verify     progress; --wait until complete
 *	    mqctl broker remove ID      a stopped broker that holds nothing
 *	    mqctl broker set-rack ID R  the rack placement spreads over
 *	  and the partitions of a replicated topic (topic add-partitions asks
 *	  cluster_add_partitions first; topic create, cluster_coordinator).  All run against the coordinator
 *	  database (-d): mq_coord.reassign, propose_reassignment,
 *	  remove_broker, set_broker_rack and add_partitions
 *	  (src/sql/66_placement.sql) do the work and the checks.
 *
 * A plan is Kafka's JSON: {"version": 1, "partitions": [{"topic": "t",
 * "partition": 0, "replicas": [4, 2]}, ...]}, read with jansson.  An
 * --execute applies the whole plan in one transaction (--dry-run rolls it
 * back), so that a plan is started entirely or not at all.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "mqctl.h"
#include "output.h"

const char	reassign_help[] =
"Usage: mqctl reassign --generate --topics=T[,T...] --brokers=ID[,ID...]\n"
"       mqctl reassign --execute --file=PLAN [--throttle=BYTES] [--dry-run]\n"
"       mqctl reassign --verify --file=PLAN [--wait [--timeout-ms=MS]]\n"
"\n"
"Move the replicas of a replicated topic's partitions between brokers.\n"
"--generate prints the current placement of the topics and a proposed one on\n"
"the given brokers (replication factor kept), as two plans; nothing changes.\n"
"--execute starts the moves of a plan (all or none): new replicas copy the\n"
"partition as followers; with --throttle, what each broker sends to the new\n"
"replicas it leads and what it receives for its own stay under BYTES per\n"
"second, summed over its copies.  Once the whole target is in sync,\n"
"leadership moves to the first target replica if the leader leaves, and the\n"
"old replicas are dropped.  --verify shows each partition's progress and\n"
"exits 0 only when every move is complete (1 while any is still moving);\n"
"--wait waits for that, printing progress as it changes.  Connect to the\n"
"coordinator database (-d).\n"
"\n"
"A plan: {\"version\": 1, \"partitions\": [{\"topic\": \"t\", \"partition\": 0,\n"
"\"replicas\": [4, 2]}]}; the first replica is the preferred leader.\n"
"\n"
"Options:\n"
"      --generate         propose a placement (with --topics and --brokers)\n"
"      --execute          start the moves of --file\n"
"      --verify           show the progress of --file\n"
"      --topics=LIST      topics to place (comma-separated)\n"
"      --brokers=LIST     broker ids to place them on (comma-separated)\n"
"      --file=PLAN        the plan (JSON file; - for standard input)\n"
"      --throttle=BYTES   at most BYTES per second out of each leader and into\n"
"                         each broker, shared by the copies (Kafka's rule)\n"
"      --dry-run          check the plan and show the moves, change nothing\n"
"      --wait             with --verify: until complete\n"
"      --interval-ms=MS   with --wait: how often to look (default 500)\n"
"      --timeout-ms=MS    with --wait: give up after MS (exit 1; default: never)\n";

const char	broker_remove_help[] =
"Usage: mqctl broker remove ID\n"
"\n"
"Remove a broker from the cluster's coordinator.  Refused while it holds any\n"
"replica (reassign them first) or while its mq-broker runs.\n";

const char	broker_set_rack_help[] =
"Usage: mqctl broker set-rack ID RACK\n"
"\n"
"Record the rack of a registered broker (\"\" for none).  Topics created and\n"
"partitions added afterwards spread each partition's replicas over racks.  A\n"
"broker with rack set in its configuration registers that one instead each time\n"
"it connects.\n";

enum
{
	OPT_GENERATE = CLI_OPT_LONG_BASE,
	OPT_EXECUTE,
	OPT_VERIFY,
	OPT_TOPICS,
	OPT_BROKERS,
	OPT_FILE,
	OPT_THROTTLE,
	OPT_DRY_RUN,
	OPT_WAIT,
	OPT_INTERVAL,
	OPT_TIMEOUT
};

typedef struct ReassignOptions
{
	int			mode;			/* OPT_GENERATE, OPT_EXECUTE or OPT_VERIFY */
	const char *topics;
	const char *brokers;
	const char *file;
	int64_t		throttle;		/* 0: none */
	bool		dry_run;
	bool		wait;
	int			interval_ms;
	int64_t		timeout_ms;		/* 0: wait for ever */
} ReassignOptions;

static void
parse_reassign(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, ReassignOptions *o)
{
	static const struct option longopts[] = {
		{"generate", no_argument, NULL, OPT_GENERATE},
		{"execute", no_argument, NULL, OPT_EXECUTE},
		{"verify", no_argument, NULL, OPT_VERIFY},
		{"topics", required_argument, NULL, OPT_TOPICS},
		{"brokers", required_argument, NULL, OPT_BROKERS},
		{"file", required_argument, NULL, OPT_FILE},
		{"throttle", required_argument, NULL, OPT_THROTTLE},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"wait", no_argument, NULL, OPT_WAIT},
		{"interval-ms", required_argument, NULL, OPT_INTERVAL},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	o->interval_ms = 500;
	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == OPT_GENERATE || c == OPT_EXECUTE || c == OPT_VERIFY)
		{
			if (o->mode && o->mode != c)
				cli_usage_error(p, "give one of --generate, --execute and --verify");
			o->mode = c;
		}
		else if (c == OPT_TOPICS)
			o->topics = optarg;
		else if (c == OPT_BROKERS)
			o->brokers = optarg;
		else if (c == OPT_FILE)
			o->file = optarg;
		else if (c == OPT_THROTTLE)
			o->throttle = cli_int(p, "--throttle", optarg, 1, INT64_MAX);
		else if (c == OPT_DRY_RUN)
			o->dry_run = true;
		else if (c == OPT_WAIT)
			o->wait = true;
		else if (c == OPT_INTERVAL)
			o->interval_ms = (int) cli_int(p, "--interval-ms", optarg, 10, 60000);
		else if (c == OPT_TIMEOUT)
			o->timeout_ms = cli_int(p, "--timeout-ms", optarg, 1, INT32_MAX);
	}
	(void) cli_positionals(p, 0, 0, "", NULL);
	if (o->mode == 0)
		cli_usage_error(p, "give one of --generate, --execute and --verify");
	if (o->mode == OPT_GENERATE && (o->topics == NULL || o->brokers == NULL))
		cli_usage_error(p, "--generate needs --topics and --brokers");
	if (o->mode != OPT_GENERATE && o->file == NULL)
		cli_usage_error(p, "--%s needs --file", o->mode == OPT_EXECUTE ? "execute" : "verify");
	if ((o->throttle || o->dry_run) && o->mode != OPT_EXECUTE)
		cli_usage_error(p, "--throttle and --dry-run go with --execute");
	if (o->wait && o->mode != OPT_VERIFY)
		cli_usage_error(p, "--wait goes with --verify");
	if (o->timeout_ms && !o->wait)
		cli_usage_error(p, "--timeout-ms goes with --wait");
}

/* A plan from rows (topic, partition, replicas as JSON), on one line. */
static void
print_plan(const char *title, const PGresult *res, int replicas_col)
{
	json_t	   *plan = json_object();
	json_t	   *parts = json_array();

	for (int i = 0; i < PQntuples(res); i++)
	{
		json_t	   *e = json_object();

		json_object_set_new(e, "topic", json_string(PQgetvalue(res, i, 0)));
		json_object_set_new(e, "partition", json_integer(atoi(PQgetvalue(res, i, 1))));
		json_object_set_new(e, "replicas", json_loads(PQgetvalue(res, i, replicas_col), 0, NULL));
		json_array_append_new(parts, e);
	}
	json_object_set_new(plan, "version", json_integer(1));
	json_object_set_new(plan, "partitions", parts);
	printf("%s\n", title);
	output_json(plan, JSON_COMPACT);
}

static int
reassign_generate(PGconn *conn, const ReassignOptions *o)
{
	MqParams	params;
	PGresult   *res;
	char	   *topics = cli_array_literal(o->topics);
	char	   *brokers = cli_array_literal(o->brokers);

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTARRAYOID, topics);
	mq_param_text(&params, MQ_INT4ARRAYOID, brokers);
	res = mqctl_exec(conn, "SELECT topic, partition, pg_catalog.to_json(replicas), "
					 "pg_catalog.to_json(proposed) "
					 "FROM mq_coord.propose_reassignment($1, $2)", &params, 0);
	if (PQntuples(res) == 0)
	{
		mq_fatal(MQ_EXIT_SERVER, "no partitions of replicated topics %s" MQCTL_SQLSTATE(MQ_SQLSTATE_UNKNOWN_TOPIC),
				 o->topics);
	}
	print_plan("Current partition replica assignment", res, 2);
	print_plan("Proposed partition reassignment configuration", res, 3);
	output_flush();
	PQclear(res);
	free(topics);
	free(brokers);
	return MQ_EXIT_OK;
}

/* The plan's partitions array, or exit with a message. */
static json_t *
load_plan(const char *file)
{
	json_error_t jerr;
	json_t	   *root = strcmp(file, "-") == 0 ? json_loadf(stdin, 0, &jerr)
		: json_load_file(file, 0, &jerr);
	json_t	   *parts = root ? json_object_get(root, "partitions") : NULL;

	if (root == NULL)
	{
		/* jansson's line is -1 when the file could not be read at all */
		if (jerr.line > 0)
			mq_fatal(MQ_EXIT_USAGE, "cannot read the plan %s: %s (line %d)",
					 file, jerr.text, jerr.line);
		mq_fatal(MQ_EXIT_USAGE, "cannot read the plan %s: %s", file, jerr.text);
	}
	if (!json_is_array(parts) || json_array_size(parts) == 0)
	{
		mq_fatal(MQ_EXIT_USAGE, "the plan %s has no \"partitions\" array", file);
	}
	json_incref(parts);
	json_decref(root);
	return parts;
}

/* One entry's topic, partition and replicas ("{4,2}"), or exit. */
static void
plan_entry(const char *file, json_t *e, const char **topic, int *partition, char *replicas,
		   size_t size)
{
	json_t	   *t = json_object_get(e, "topic");
	json_t	   *p = json_object_get(e, "partition");
	json_t	   *r = json_object_get(e, "replicas");
	size_t		i,
				len = 0;
	json_t	   *v;

	if (!json_is_string(t) || !json_is_integer(p) || !json_is_array(r))
	{
		mq_fatal(MQ_EXIT_USAGE, "every entry of %s needs \"topic\", \"partition\" and \"replicas\"",
				 file);
	}
	*topic = json_string_value(t);
	*partition = (int) json_integer_value(p);
	len += snprintf(replicas + len, size - len, "{");
	json_array_foreach(r, i, v)
	{
		if (!json_is_integer(v) || len + 24 > size)
		{
			mq_fatal(MQ_EXIT_USAGE, "replicas of %s[%d] must be broker ids", *topic, *partition);
		}
		len += snprintf(replicas + len, size - len, "%s%lld", i ? "," : "", (long long) json_integer_value(v));
	}
	snprintf(replicas + len, size - len, "}");
}

static int
reassign_execute(PGconn *conn, const ReassignOptions *o)
{
	json_t	   *parts = load_plan(o->file);
	char		throttle[32];
	size_t		i;
	json_t	   *e;

	snprintf(throttle, sizeof(throttle), "%lld", (long long) o->throttle);
	mqctl_command(conn, "BEGIN");
	json_array_foreach(parts, i, e)
	{
		const char *topic;
		int			partition;
		char		replicas[512];
		MqParams	params;
		PGresult   *res;

		plan_entry(o->file, e, &topic, &partition, replicas, sizeof(replicas));
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, topic);
		mq_param_int(&params, MQ_INT4OID, partition);
		mq_param_text(&params, MQ_INT4ARRAYOID, replicas);
		mq_param_text(&params, MQ_INT8OID, o->throttle ? throttle : NULL);
		res = mqctl_exec(conn, "SELECT pg_catalog.array_to_string(p.replicas, ','), "
						 "pg_catalog.array_to_string(mq_coord.reassign($1, $2, $3, $4), ','), "
						 "pg_catalog.array_to_string($3::int4[], ',') "
						 "FROM mq_coord.partition p WHERE p.topic = $1 AND p.partition = $2",
						 &params, 0);
		if (PQntuples(res) == 1)
			printf("%s[%d]: replicas %s -> %s (while moving: %s)\n", topic, partition,
				   PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 1));
		PQclear(res);
	}
	mqctl_command(conn, o->dry_run ? "ROLLBACK" : "COMMIT");
	if (o->dry_run)
		printf("Dry run: %zu partition(s) checked, nothing changed.\n", json_array_size(parts));
	else if (o->throttle)
		printf("Started the reassignment of %zu partition(s), throttled to %lld bytes/s per broker.\n",
			   json_array_size(parts), (long long) o->throttle);
	else
		printf("Started the reassignment of %zu partition(s).\n", json_array_size(parts));
	json_decref(parts);
	return MQ_EXIT_OK;
}

#define VERIFY_SQL \
"SELECT p.target_replicas IS NULL AND p.replicas = $3::int4[], p.target_replicas = $3::int4[],\n" \
"       pg_catalog.array_to_string(p.replicas, ','), pg_catalog.array_to_string(p.isr, ','),\n" \
"       pg_catalog.array_to_string(ARRAY(SELECT r FROM pg_catalog.unnest(p.target_replicas) AS r\n" \
"                                         WHERE NOT r = ANY (p.isr)), ','),\n" \
"       coalesce(p.leader::text, '-')\n" \
"  FROM mq_coord.partition p WHERE p.topic = $1 AND p.partition = $2"

/* One partition's line; true when its move is complete. */
static bool
verify_one(PGconn *conn, const char *topic, int partition, const char *replicas, char *line,
		   size_t size)
{
	MqParams	params;
	PGresult   *res;
	bool		done = false;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_int(&params, MQ_INT4OID, partition);
	mq_param_text(&params, MQ_INT4ARRAYOID, replicas);
	res = mqctl_exec(conn, VERIFY_SQL, &params, 0);
	if (PQntuples(res) == 0)
		snprintf(line, size, "%s[%d]: not a replicated partition", topic, partition);
	else if ((done = PQgetvalue(res, 0, 0)[0] == 't'))
		snprintf(line, size, "%s[%d]: complete: replicas %s, ISR %s, leader %s", topic, partition,
				 PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3), PQgetvalue(res, 0, 5));
	else if (PQgetvalue(res, 0, 1)[0] == 't')
		snprintf(line, size, "%s[%d]: in progress: replicas %s, ISR %s, leader %s, catching up %s",
				 topic, partition, PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3),
				 PQgetvalue(res, 0, 5), *PQgetvalue(res, 0, 4) ? PQgetvalue(res, 0, 4) : "-");
	else
		snprintf(line, size, "%s[%d]: not moving to %s: replicas %s", topic, partition,
				 replicas, PQgetvalue(res, 0, 2));
	PQclear(res);
	return done;
}

/* One pass over the plan; lines that changed since the last are printed. */
static int
verify_pass(PGconn *conn, const ReassignOptions *o, json_t *parts, char **last)
{
	int			pending = 0;
	size_t		i;
	json_t	   *e;

	json_array_foreach(parts, i, e)
	{
		const char *topic;
		int			partition;
		char		replicas[512];
		char		line[2048];

		plan_entry(o->file, e, &topic, &partition, replicas, sizeof(replicas));
		pending += !verify_one(conn, topic, partition, replicas, line, sizeof(line));
		if (last[i] == NULL || strcmp(last[i], line) != 0)
		{
			printf("%s\n", line);
			free(last[i]);
			last[i] = strdup(line);
		}
	}
	fflush(stdout);
	return pending;
}

static int
reassign_verify(PGconn *conn, const ReassignOptions *o)
{
	json_t	   *parts = load_plan(o->file);
	char	  **last = calloc(json_array_size(parts), sizeof(char *));
	int			pending;
	int64_t		deadline = mq_now_us() + o->timeout_ms * 1000;

	while ((pending = verify_pass(conn, o, parts, last)) > 0 && o->wait &&
		   (o->timeout_ms == 0 || mq_now_us() < deadline))
		usleep((useconds_t) o->interval_ms * 1000);
	printf(pending ? "%d of %zu partition(s) still moving.\n"
		   : "Reassignment complete (%d of %zu partition(s) moving).\n",
		   pending, json_array_size(parts));
	for (size_t i = 0; i < json_array_size(parts); i++)
		free(last[i]);
	free(last);
	json_decref(parts);
	return pending ? MQ_EXIT_SERVER : MQ_EXIT_OK;
}

int
cmd_reassign(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ReassignOptions o;
	PGconn	   *conn;
	int			rc;

	parse_reassign(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	if (o.mode == OPT_GENERATE)
		rc = reassign_generate(conn, &o);
	else if (o.mode == OPT_EXECUTE)
		rc = reassign_execute(conn, &o);
	else
		rc = reassign_verify(conn, &o);
	PQfinish(conn);
	cli_free(&p);
	return rc;
}

/* Broker id from the first positional, or a usage error. */
static int
broker_argument(CliParser *p, int nargs, char ***args)
{
	*args = cli_positionals(p, nargs, nargs, nargs == 1 ? "broker id" : "broker id and rack", NULL);
	return (int) cli_int(p, "broker id", (*args)[0], 0, INT32_MAX);
}

int
cmd_broker_remove(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	char	  **args;
	int			id;
	MqParams	params;
	PGconn	   *conn;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, NULL);
	while (cli_next(&p) != -1)
		;
	id = broker_argument(&p, 1, &args);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_int(&params, MQ_INT4OID, id);
	PQclear(mqctl_exec(conn, "SELECT mq_coord.remove_broker($1)", &params, 0));
	printf("Removed broker %d.\n", id);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

int
cmd_broker_set_rack(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	char	  **args;
	int			id;
	MqParams	params;
	PGconn	   *conn;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, NULL);
	while (cli_next(&p) != -1)
		;
	id = broker_argument(&p, 2, &args);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_int(&params, MQ_INT4OID, id);
	mq_param_text(&params, MQ_TEXTOID, args[1]);
	PQclear(mqctl_exec(conn, "SELECT mq_coord.set_broker_rack($1, $2)", &params, 0));
	printf(*args[1] ? "Broker %d is in rack %s.\n" : "Broker %d has no rack%s.\n", id, args[1]);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

/* The first column of the first row of sql's answer, a boolean. */
static bool
query_true(PGconn *conn, const char *sql, const MqParams *params)
{
	PGresult   *res = mqctl_exec(conn, sql, params, 0);
	bool		yes = PQgetvalue(res, 0, 0)[0] == 't';

	PQclear(res);
	return yes;
}

/*
 * A test of rights on mq_coord's objects, false without USAGE on the
 * schema (naming an object of a schema one may not use is itself 42501,
 * and AND does not promise to test the schema first)
 */
#define MQ_COORD_MAY(cond) \
	"SELECT CASE WHEN pg_catalog.has_schema_privilege('mq_coord', 'USAGE') THEN " cond " ELSE false END"

/* Is the connected database a cluster's coordinator where we may create topics? */
bool
cluster_coordinator(PGconn *conn)
{
	return query_true(conn, MQ_COORD_MAY("pg_catalog.has_table_privilege('mq_coord.broker', 'SELECT') "
										 "AND pg_catalog.has_function_privilege('mq_coord.create_topic(text, integer, jsonb)', 'EXECUTE')"),
					  NULL) &&
		query_true(conn, "SELECT EXISTS (SELECT 1 FROM mq_coord.broker)", NULL);
}

/*
 * Is the connected database the coordinator of a replicated topic of this
 * name (and may we ask it)?
 */
bool
cluster_topic(PGconn *conn, const char *topic)
{
	MqParams	params;

	if (!query_true(conn, MQ_COORD_MAY("pg_catalog.has_table_privilege('mq_coord.topic', 'SELECT') "
									   "AND pg_catalog.has_function_privilege('mq_coord.add_partitions(text, integer)', 'EXECUTE')"),
					NULL))
		return false;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	return query_true(conn, "SELECT EXISTS (SELECT 1 FROM mq_coord.topic WHERE topic = $1)", &params);
}

/*
 * topic add-partitions on a cluster: when the connected database is the
 * coordinator of a replicated topic of that name, add the partitions
 * there (the brokers add them on their nodes).  Returns false when it is
 * not, for the command to add them locally; *total is the new count.
 */
bool
cluster_add_partitions(PGconn *conn, const char *topic, int count, int *total)
{
	MqParams	params;
	PGresult   *res;

	if (!cluster_topic(conn, topic))
		return false;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_int(&params, MQ_INT4OID, count);
	res = mqctl_exec(conn, "SELECT mq_coord.add_partitions($1, $2)", &params, 0);
	*total = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/*
 * topic alter --partitions N (Kafka's kafka-topics --alter --partitions):
 * grow the topic to N partitions, on the coordinator for a replicated
 * topic, else here, in the caller's transaction.  Partitions are never
 * removed.  Returns what to print once committed (malloc'd); exits on an
 * error, which rolls the transaction back.
 */
char *
alter_partition_count(PGconn *conn, const char *topic, int wanted)
{
	bool		cluster = cluster_topic(conn, topic);
	MqParams	params;
	PGresult   *res;
	int			have;
	char		line[1024];

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	res = mqctl_exec(conn, cluster ? "SELECT partitions FROM mq_coord.topic WHERE topic = $1"
					 : "SELECT partitions FROM mq.topics WHERE topic = $1", &params, 0);
	if (PQntuples(res) == 0)
		mq_fatal(MQ_EXIT_SERVER, MQCTL_NO_TOPIC, topic);
	have = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (wanted < have)
		mq_fatal(MQ_EXIT_SERVER, "topic \"%s\" has %d partitions: partitions can be added, never removed"
				 MQCTL_SQLSTATE(MQ_SQLSTATE_INVALID_PARTITIONS), topic, have);
	if (wanted == have)
	{
		snprintf(line, sizeof(line), "Topic %s already has %d partitions.", topic, have);
		return mq_strdup(line);
	}
	mq_param_int(&params, MQ_INT4OID, wanted - have);
	res = mqctl_exec(conn, cluster ? "SELECT mq_coord.add_partitions($1, $2)"
					 : "SELECT mq.add_partitions($1, $2)", &params, 0);
	snprintf(line, sizeof(line), "%s %s now has %s partitions.", cluster ? "Replicated topic" : "Topic",
			 topic, PQgetvalue(res, 0, 0));
	PQclear(res);
	return mq_strdup(line);
}
