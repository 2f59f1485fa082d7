/*-------------------------------------------------------------------------
 *
 * cmd_cluster.c
 *	  The command "mqctl cluster status": the brokers and the partitions as the
 *	  coordinator database sees them (schema mq_coord, see
 *	  docs/replication.md): which brokers are alive, who leads each
 *	  partition in which epoch, the in-sync replicas, and the partitions
 *	  that are under-replicated (ISR smaller than the replica set) or
 *	  offline (no live leader).
 *
 * A broker is alive when some session holds its liveness lock and it
 * heartbeated within --timeout-ms (mq_coord.broker_alive), the same test
 * the brokers apply to each other.  Connect mqctl to the coordinator (-d).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>

#include "mqctl.h"
#include "output.h"

const char	cluster_status_help[] =
"Usage: mqctl cluster status [OPTIONS]\n"
"\n"
"Show the replicated cluster as its coordinator sees it: each broker (alive or\n"
"not), and each partition's leader, leader epoch, in-sync replicas and\n"
"replicas, flagging under-replicated and offline partitions.  Connect to the\n"
"coordinator database (-d).\n"
"\n"
"Options:\n"
"      --timeout-ms=MS    a broker whose last heartbeat is older is not alive\n"
"                         (default 10000)\n"
"      --format=FORMAT    table (default) or json\n";

enum
{
	OPT_FORMAT = CLI_OPT_LONG_BASE,
	OPT_TIMEOUT
};

#define BROKERS_SQL \
"SELECT b.broker_id, b.node_name, mq_coord.broker_alive(b.broker_id, $1) AS alive,\n" \
"       b.heartbeat_at,\n" \
"       (SELECT count(*) FROM mq_coord.partition p WHERE p.leader = b.broker_id) AS leaders\n" \
"  FROM mq_coord.broker b ORDER BY b.broker_id"

#define PARTITIONS_SQL \
"SELECT m.topic, m.partition, m.leader, m.leader_node, m.leader_epoch,\n" \
"       %s AS isr, %s AS replicas,\n" \
"       cardinality(m.isr) < cardinality(m.replicas) AS under_replicated,\n" \
"       m.leader IS NULL OR NOT mq_coord.broker_alive(m.leader, $1) AS offline\n" \
"  FROM mq_coord.metadata m ORDER BY m.topic, m.partition"

/* What the command line says. */
typedef struct StatusOptions
{
	OutputFormat format;
	int			timeout_ms;		/* a broker silent for longer is not alive */
} StatusOptions;

static void
parse_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, StatusOptions *o)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
		{NULL, 0, NULL, 0}
	};
	int			c;

	o->format = OUTPUT_TABLE;
	o->timeout_ms = 10000;
	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == OPT_FORMAT)
			o->format = output_parse_format(p, optarg);
		else if (c == OPT_TIMEOUT)
			o->timeout_ms = (int) cli_int(p, "--timeout-ms", optarg, 1, 3600000);
	}
	(void) cli_positionals(p, 0, 0, "", NULL);
}

/* The counts of the first line, then the brokers and the partitions. */
static void
print_status(const PGresult *brokers, const PGresult *parts, OutputFormat format)
{
	int			alive = 0;
	int			under = 0;
	int			offline = 0;

	for (int i = 0; i < PQntuples(brokers); i++)
		alive += PQgetvalue(brokers, i, 2)[0] == 't';
	for (int i = 0; i < PQntuples(parts); i++)
	{
		under += PQgetvalue(parts, i, 7)[0] == 't';
		offline += PQgetvalue(parts, i, 8)[0] == 't';
	}

	if (format == OUTPUT_JSON)
	{
		json_t	   *o = json_object();

		json_object_set_new(o, "brokers", output_rows_json(brokers));
		json_object_set_new(o, "partitions", output_rows_json(parts));
		json_object_set_new(o, "under_replicated", json_integer(under));
		json_object_set_new(o, "offline", json_integer(offline));
		output_json(o, JSON_INDENT(2));
	}
	else
	{
		printf("Brokers: %d (%d alive)\tPartitions: %d\tUnder-replicated: %d\tOffline: %d\n\n",
			   PQntuples(brokers), alive, PQntuples(parts), under, offline);
		output_table(brokers);
		printf("\n");
		output_table(parts);
	}
	output_flush();
}

int
cmd_cluster_status(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	StatusOptions o;
	char		sql[1024];
	MqParams	params;
	PGconn	   *conn;
	PGresult   *brokers;
	PGresult   *parts;

	parse_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_int(&params, MQ_INT4OID, o.timeout_ms);
	brokers = mqctl_exec(conn, BROKERS_SQL, &params, 0);
	snprintf(sql, sizeof(sql), PARTITIONS_SQL,
			 o.format == OUTPUT_TABLE ? "array_to_string(m.isr, ',')" : "to_json(m.isr)",
			 o.format == OUTPUT_TABLE ? "array_to_string(m.replicas, ',')" : "to_json(m.replicas)");
	parts = mqctl_exec(conn, sql, &params, 0);
	print_status(brokers, parts, o.format);
	PQclear(brokers);
	PQclear(parts);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
