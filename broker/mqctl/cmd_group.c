/*-------------------------------------------------------------------------
 *
 * cmd_group.c
 *	  The consumer group commands of mqctl, "group list" and "group
 *	  describe": their options and their queries, on
 *	  mq.committed_offsets() and the views mq.groups, mq.group_members,
 *	  mq.group_assignments, mq.consumer_lag and mq.partitions, all of
 *	  which any role reads for what it may describe ("group
 *	  reset-offsets" is cmd_group_reset.c's, the deleting commands are
 *	  cmd_group_delete.c's).
 *
 * A group exists for these commands when it has committed offsets or has
 * been joined (mq.join_group) at some time: Kafka's groups are the same
 * (a group of consumers that only commit, like "mqctl consume --group",
 * has offsets and no members).  A member is active while its session has
 * not timed out, whether or not maintenance has removed it yet; Kafka's
 * members are those mq-kafka saved on this node.  Both
 * rules are mq.groups' (src/sql/56_group_views.sql), which mq-kafka's
 * ListGroups reads too.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "output.h"
#include "pgbinary.h"
#include "util.h"

const char	group_list_help[] =
"Usage: mqctl group list [OPTIONS]\n"
"\n"
"List the consumer groups (those with committed offsets or members) with their\n"
"state, active members, generation, assignor, topics and total lag.\n"
"\n"
"Options:\n"
"      --format=FORMAT    table (default) or json\n";

const char	group_describe_help[] =
"Usage: mqctl group describe GROUP [OPTIONS]\n"
"\n"
"Show a consumer group and, per topic and partition, its committed offset, the\n"
"log end offset (high watermark), the lag, the member that owns the partition,\n"
"the time left before retention deletes the next record to read, and the\n"
"records retention deleted before the group read them.\n"
"\n"
"Options:\n"
"      --format=FORMAT    table (default) or json\n";

enum
{
	OPT_FORMAT = CLI_OPT_LONG_BASE
};

/*
 * One row per group, all groups for $1 NULL.  %s: the topics column, a
 * comma-separated list for tables or a JSON array.
 */
#define GROUPS_SQL \
	"WITH lag AS (SELECT group_id, sum(lag)::bigint AS lag FROM mq.consumer_lag GROUP BY group_id)" \
	" SELECT g.group_id AS \"group\", g.state, g.members, g.generation, g.assignor," \
	"        %s AS topics, coalesce(l.lag, 0) AS lag" \
	"   FROM mq.groups g" \
	"   LEFT JOIN lag l USING (group_id)" \
	"  CROSS JOIN LATERAL (SELECT ARRAY(" \
	"        SELECT c.topic FROM mq.committed_offsets(g.group_id) c" \
	"        UNION SELECT unnest(gm.topics) FROM mq.group_members gm WHERE gm.group_id = g.group_id" \
	"         ORDER BY 1) AS names) tp" \
	"  WHERE $1::text IS NULL OR g.group_id = $1" \
	"  ORDER BY 1"

/* The groups query for a format; topics as text for tables, JSON for programs. */
static void
groups_sql(char *sql, size_t size, OutputFormat format)
{
	snprintf(sql, size, GROUPS_SQL,
			 format == OUTPUT_TABLE ? "pg_catalog.array_to_string(tp.names, ',')"
			 : "pg_catalog.to_json(tp.names)");
}

/* --format as the only option, and the positional arguments. */
static OutputFormat
parse_listing(CliParser *p, const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{NULL, 0, NULL, 0}
	};
	OutputFormat format = OUTPUT_TABLE;
	int			c;

	mqctl_parser_init(p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(p)) != -1)
		if (c == OPT_FORMAT)
			format = output_parse_format(p, optarg);
	return format;
}

int
cmd_group_list(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	OutputFormat format = parse_listing(&p, cmd, argc, argv);
	char		sql[4096];
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;

	(void) cli_positionals(&p, 0, 0, "", NULL);
	groups_sql(sql, sizeof(sql), format);
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, NULL);

	conn = mqctl_connect();
	res = mqctl_exec(conn, sql, &params, 0);
	output_rows(res, format);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

/* The group's argument: one non-empty name. */
const char *
mqctl_group_argument(CliParser *p)
{
	const char *group = cli_positionals(p, 1, 1, "group name", NULL)[0];

	if (group[0] == '\0')
		cli_usage_error(p, "the group name must not be empty");
	return group;
}

/* group describe's output: the group, then its partitions. */
static void
print_description(const PGresult *group_res, const PGresult *parts_res, OutputFormat format)
{
	if (format == OUTPUT_JSON)
	{
		json_t	   *obj = output_row_json(group_res, 0);

		json_object_set_new(obj, "partitions", output_rows_json(parts_res));
		output_json(obj, JSON_INDENT(2));
	}
	else
	{
		printf("Group: %s\tState: %s\tMembers: %s\tGeneration: %s\tAssignor: %s\tLag: %s\n\n",
			   PQgetvalue(group_res, 0, 0), PQgetvalue(group_res, 0, 1),
			   PQgetvalue(group_res, 0, 2),
			   PQgetisnull(group_res, 0, 3) ? "-" : PQgetvalue(group_res, 0, 3),
			   PQgetisnull(group_res, 0, 4) ? "-" : PQgetvalue(group_res, 0, 4),
			   PQgetvalue(group_res, 0, 6));
		output_table(parts_res);
	}
}

int
cmd_group_describe(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	OutputFormat format = parse_listing(&p, cmd, argc, argv);
	const char *group = mqctl_group_argument(&p);
	char		sql[4096];
	MqParams	params;
	PGconn	   *conn;
	PGresult   *group_res;
	PGresult   *parts_res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	conn = mqctl_connect();
	/* the coordinator's address: a group that spans the cluster */
	if (group_describe_cluster(conn, group, format))
	{
		PQfinish(conn);
		cli_free(&p);
		return MQ_EXIT_OK;
	}

	groups_sql(sql, sizeof(sql), format);
	group_res = mqctl_exec(conn, sql, &params, 0);
	if (PQntuples(group_res) == 0)
	{
		mq_log_error("consumer group \"%s\" does not exist (it has no committed offsets and no members)"
					 MQCTL_SQLSTATE(MQ_SQLSTATE_GROUP_NOT_FOUND),
					 group);
		PQclear(group_res);
		PQfinish(conn);
		cli_free(&p);
		return MQ_EXIT_SERVER;
	}

	/*
	 * The partitions the group has an offset for or is assigned.  Lag,
	 * headroom and losses come from mq.consumer_lag, which has a row where
	 * there is an offset; where there is none they are unknown ("-").
	 * mq.partitions is read a partition at a time (OFFSET 0 keeps the
	 * subquery apart, so that its quals reach the security-barrier view;
	 * design.md, "Views joined by their keys").
	 */
	snprintf(sql, sizeof(sql),
			 "WITH parts AS (SELECT c.topic, c.partition FROM mq.committed_offsets($1) c"
			 "               UNION SELECT a.topic, a.partition FROM mq.group_assignments a"
			 "                WHERE a.group_id = $1)"
			 " SELECT p.topic, p.partition, l.committed_offset,"
			 "        pt.high_watermark AS log_end_offset, l.lag, a.owner, %s, l.records_lost"
			 "   FROM parts p"
			 "   CROSS JOIN LATERAL (SELECT pt.high_watermark FROM mq.partitions pt"
			 "     WHERE pt.topic = p.topic AND pt.partition = p.partition OFFSET 0) pt"
			 "   LEFT JOIN mq.consumer_lag l"
			 "     ON l.group_id = $1 AND l.topic = p.topic AND l.partition = p.partition"
			 "   LEFT JOIN mq.group_assignments a"
			 "     ON a.group_id = $1 AND a.topic = p.topic AND a.partition = p.partition"
			 "  ORDER BY p.topic, p.partition",
			 format == OUTPUT_TABLE ?
			 "pg_catalog.date_trunc('second', l.retention_headroom) AS retention_headroom" :
			 "(EXTRACT(epoch FROM l.retention_headroom) * 1000)::bigint AS retention_headroom_ms");
	parts_res = mqctl_exec(conn, sql, &params, 0);

	print_description(group_res, parts_res, format);
	output_flush();
	PQclear(group_res);
	PQclear(parts_res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
