/*-------------------------------------------------------------------------
 *
 * cmd_elect.c
 *	  The command "mqctl leader-election": preferred leader elections on
 *	  request, as Kafka's kafka-leader-election.sh --election-type
 *	  preferred, through mq_coord.elect_preferred on the coordinator (the
 *	  one owner of the rule, which mq-kafka's ElectLeaders calls too;
 *	  docs/replication.md, "Preferred leaders").
 *
 * Each partition's leader hands over to its preferred replica (its
 * first) at its next tick; the command then waits, polling the
 * coordinator every 100 ms up to --timeout-ms, until each is led by it.
 * Connect mqctl to the coordinator (-d).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqctl.h"
#include "output.h"
#include "pgbinary.h"
#include "util.h"

const char	leader_election_help[] =
"Usage: mqctl leader-election [OPTIONS] TOPIC:PARTITION...\n"
"       mqctl leader-election [OPTIONS] --all-topic-partitions\n"
"\n"
"Give each partition to its preferred replica, the first of its replicas,\n"
"as Kafka's kafka-leader-election.sh --election-type preferred: its leader\n"
"hands over at its next tick, without auto.leader.rebalance.delay.ms and\n"
"even with auto.leader.rebalance.enable off.  Waits until each is led by\n"
"its preferred replica, then shows each partition's result: elected, not\n"
"needed (it leads already), not available (out of the ISR or down),\n"
"timed out, or unknown.  Connect to the coordinator database (-d).\n"
"\n"
"Options:\n"
"      --all-topic-partitions  every partition the coordinator knows\n"
"      --timeout-ms=MS    how long to wait for the new leaders (default 30000)\n"
"      --format=FORMAT    table (default) or json\n";

enum
{
	OPT_FORMAT = CLI_OPT_LONG_BASE,
	OPT_TIMEOUT,
	OPT_ALL
};

/* $1 timeout, $2 topics and $3 partitions side by side (null: all) */
#define ELECT_SQL \
"SELECT a.t, a.p, CASE WHEN x.topic IS NULL THEN 'unknown'\n" \
"                      ELSE mq_coord.elect_preferred(a.t, a.p, $1) END\n" \
"  FROM (SELECT * FROM unnest($2::text[], $3::int4[])\n" \
"        UNION ALL SELECT topic, partition FROM mq_coord.partition WHERE $2::text[] IS NULL) a(t, p)\n" \
"  LEFT JOIN mq_coord.partition x ON x.topic = a.t AND x.partition = a.p\n" \
" ORDER BY 1, 2"

/* of those asked for ($1, $2), how many are not led by their preferred replica */
#define PENDING_SQL \
"SELECT count(*) FROM mq_coord.partition x\n" \
" WHERE (x.topic, x.partition) IN (SELECT * FROM unnest($1::text[], $2::int4[]))\n" \
"   AND x.leader IS DISTINCT FROM x.replicas[1]"

/* each partition ($1, $2) with its outcome $3 and, if asked for, its result now */
#define RESULT_SQL \
"SELECT a.t AS topic, a.p AS partition,\n" \
"       CASE a.o WHEN 'requested' THEN CASE WHEN x.leader = x.replicas[1] THEN 'elected'\n" \
"                                           ELSE 'timed out' END\n" \
"                WHEN 'not_needed' THEN 'not needed'\n" \
"                WHEN 'not_available' THEN 'not available' ELSE a.o END AS result\n" \
"  FROM unnest($1::text[], $2::int4[], $3::text[]) a(t, p, o)\n" \
"  LEFT JOIN mq_coord.partition x ON x.topic = a.t AND x.partition = a.p\n" \
" ORDER BY 1, 2"

typedef struct ElectOptions
{
	OutputFormat format;
	int			timeout_ms;
	bool		all;
	char	  **parts;			/* TOPIC:PARTITION arguments */
	int			nparts;
} ElectOptions;

static void
parse_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, ElectOptions *o)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
		{"all-topic-partitions", no_argument, NULL, OPT_ALL},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = 30000;
	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == OPT_FORMAT)
			o->format = output_parse_format(p, optarg);
		else if (c == OPT_TIMEOUT)
			o->timeout_ms = (int) cli_int(p, "--timeout-ms", optarg, 0, 3600000);
		else if (c == OPT_ALL)
			o->all = true;
	}
	o->parts = cli_positionals(p, o->all ? 0 : 1, o->all ? 0 : INT32_MAX, "TOPIC:PARTITION", &o->nparts);
}

/* the TOPIC:PARTITION arguments as two arrays, or a usage error */
static void
split_parts(CliParser *p, const ElectOptions *o, MqArray *topics, MqArray *parts)
{
	mq_array_init(topics, MQ_TEXTOID);
	mq_array_init(parts, MQ_INT4OID);
	for (int i = 0; i < o->nparts; i++)
	{
		const char *colon = strrchr(o->parts[i], ':');

		if (colon == NULL || colon == o->parts[i])
			cli_usage_error(p, "\"%s\" is not TOPIC:PARTITION", o->parts[i]);
		mq_array_add(topics, o->parts[i], (size_t) (colon - o->parts[i]));
		mq_array_add_int32(parts, (int32_t) cli_int(p, "partition", colon + 1, 0, INT32_MAX));
	}
}

/* arrays as binary parameters */
static void
param_array(MqParams *params, Oid type, MqArray *a)
{
	int			len;
	const char *b = mq_array_bytes(a, &len);

	mq_param_binary(params, type, b, len);
}

/* until every election asked for shows on the coordinator, or the deadline */
static void
wait_elected(PGconn *conn, MqArray *topics, MqArray *parts, int timeout_ms)
{
	int64_t		deadline = mq_now_us() + (int64_t) timeout_ms * 1000;

	for (;;)
	{
		MqParams	params;
		PGresult   *res;
		bool		done;

		mq_params_init(&params);
		param_array(&params, MQ_TEXTARRAYOID, topics);
		param_array(&params, MQ_INT4ARRAYOID, parts);
		res = mqctl_exec(conn, PENDING_SQL, &params, 0);
		done = strcmp(PQgetvalue(res, 0, 0), "0") == 0;
		PQclear(res);
		if (done || mq_now_us() >= deadline)
			return;
		usleep(100000);
	}
}

int
cmd_leader_election(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ElectOptions o;
	MqArray		topics,
				parts,
				all_t,
				all_p,
				outcomes,
				asked_t,
				asked_p;
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;
	int			failed = 0;

	parse_options(&p, cmd, argc, argv, &o);
	split_parts(&p, &o, &topics, &parts);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_int(&params, MQ_INT4OID, o.timeout_ms);
	if (o.all)
	{
		mq_param_text(&params, MQ_TEXTARRAYOID, NULL);
		mq_param_text(&params, MQ_INT4ARRAYOID, NULL);
	}
	else
	{
		param_array(&params, MQ_TEXTARRAYOID, &topics);
		param_array(&params, MQ_INT4ARRAYOID, &parts);
	}
	res = mqctl_exec(conn, ELECT_SQL, &params, 0);
	mq_array_init(&all_t, MQ_TEXTOID);
	mq_array_init(&all_p, MQ_INT4OID);
	mq_array_init(&outcomes, MQ_TEXTOID);
	mq_array_init(&asked_t, MQ_TEXTOID);
	mq_array_init(&asked_p, MQ_INT4OID);
	for (int i = 0; i < PQntuples(res); i++)
	{
		const char *t = PQgetvalue(res, i, 0);
		int32_t		n = atoi(PQgetvalue(res, i, 1));

		mq_array_add(&all_t, t, strlen(t));
		mq_array_add_int32(&all_p, n);
		mq_array_add(&outcomes, PQgetvalue(res, i, 2), strlen(PQgetvalue(res, i, 2)));
		if (strcmp(PQgetvalue(res, i, 2), "requested") == 0)
		{
			mq_array_add(&asked_t, t, strlen(t));
			mq_array_add_int32(&asked_p, n);
		}
	}
	PQclear(res);
	wait_elected(conn, &asked_t, &asked_p, o.timeout_ms);
	mq_params_init(&params);
	param_array(&params, MQ_TEXTARRAYOID, &all_t);
	param_array(&params, MQ_INT4ARRAYOID, &all_p);
	param_array(&params, MQ_TEXTARRAYOID, &outcomes);
	res = mqctl_exec(conn, RESULT_SQL, &params, 0);
	for (int i = 0; i < PQntuples(res); i++)
		failed += strcmp(PQgetvalue(res, i, 2), "elected") != 0 &&
			strcmp(PQgetvalue(res, i, 2), "not needed") != 0;
	output_rows(res, o.format);
	PQclear(res);
	mq_array_free(&topics);
	mq_array_free(&parts);
	mq_array_free(&all_t);
	mq_array_free(&all_p);
	mq_array_free(&outcomes);
	mq_array_free(&asked_t);
	mq_array_free(&asked_p);
	PQfinish(conn);
	cli_free(&p);
	return failed ? MQ_EXIT_SERVER : MQ_EXIT_OK;
}
