/*-------------------------------------------------------------------------
 *
 * cmd_group.c
 *	  The consumer group commands of mqctl, "group list", "group describe"
 *	  and "group reset-offsets": their options and their queries, on the
 *	  group tables mq.consumer_offset and mq.consumer_group, the views
 *	  mq.groups, mq.group_members, mq.group_assignments, mq.consumer_lag
 *	  and mq.partitions, and mq.commit_offset() (the deleting commands are
 *	  cmd_group_delete.c's).
 *
 * A group exists for these commands when it has committed offsets or has
 * been joined (mq.join_group) at some time: Kafka's groups are the same
 * (a group of consumers that only commit, like "mqctl consume --group",
 * has offsets and no members).  A member is active while its session has
 * not timed out, whether or not maintenance has removed it yet.  Both
 * rules are mq.groups' (src/sql/56_group_views.sql), which mq-kafka's
 * ListGroups reads too.
 *
 * reset-offsets is kafka-consumer-groups' --reset-offsets: a dry run by
 * default, printing the plan; --execute commits it in one transaction, and
 * is refused while the group has active members, which would go on
 * committing their own positions (Kafka refuses for non-empty groups).
 * --to-datetime asks mq.offsets_for_times for each partition's first
 * record whose timestamp (Kafka's CreateTime or LogAppendTime) is at or
 * after the time.
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

const char	group_reset_offsets_help[] =
"Usage: mqctl group reset-offsets GROUP --topic=TOPIC TARGET [OPTIONS]\n"
"\n"
"Move the committed offsets of GROUP on every partition of TOPIC.  Without\n"
"--execute it only prints the plan: per partition, the current and the new\n"
"offset.  A group with active members is refused, as they would go on\n"
"committing their own positions: stop them first.\n"
"\n"
"Target (one of):\n"
"      --to-earliest      the log start offset\n"
"      --to-latest        the log end offset (high watermark)\n"
"      --to-offset=N      offset N, moved into [log start, log end]\n"
"      --to-datetime=TS   the first record timestamped at or after TS, ISO 8601\n"
"                         time such as 2026-11-29T10:00:00Z (without a zone:\n"
"                         the session's TimeZone); the log end if none is\n"
"\n"
"Options:\n"
"  -t, --topic=TOPIC      the topic (required)\n"
"      --execute          commit the new offsets (in one transaction)\n"
"      --force            with --execute: even while members are active\n"
"      --format=FORMAT    table (default) or json\n";

enum
{
	OPT_FORMAT = CLI_OPT_LONG_BASE,
	/* the targets, in reset_targets order */
	OPT_TO_EARLIEST,
	OPT_TO_LATEST,
	OPT_TO_OFFSET,
	OPT_TO_DATETIME,
	OPT_EXECUTE,
	OPT_FORCE
};

/* The words of the reset targets, as the plan query ($3) knows them. */
static const char *const reset_targets[] = {"earliest", "latest", "offset", "datetime"};

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
	"        SELECT t.topic_name FROM mq.topic t" \
	"         WHERE t.topic_id IN (SELECT o.topic_id FROM mq.consumer_offset o WHERE o.group_id = g.group_id" \
	"                              UNION SELECT unnest(gm.topics) FROM mq.group_member gm" \
	"                                     WHERE gm.group_id = g.group_id)" \
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
		mq_log_error("consumer group \"%s\" does not exist (it has no committed offsets and no members)",
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
	 */
	snprintf(sql, sizeof(sql),
			 "WITH parts AS (SELECT t.topic_name AS topic, o.partition"
			 "                 FROM mq.consumer_offset o JOIN mq.topic t USING (topic_id)"
			 "                WHERE o.group_id = $1"
			 "               UNION SELECT a.topic, a.partition FROM mq.group_assignments a"
			 "                WHERE a.group_id = $1)"
			 " SELECT p.topic, p.partition, l.committed_offset,"
			 "        pt.high_watermark AS log_end_offset, l.lag, a.owner, %s, l.records_lost"
			 "   FROM parts p"
			 "   JOIN mq.partitions pt ON pt.topic = p.topic AND pt.partition = p.partition"
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

/*
 * The plan: per partition of topic $2, group $1's committed offset and the
 * new one for target $3 ($4 the offset, $5 the time).  For a time, the
 * first offset whose record timestamp is at least $5, or the log end:
 * mq.offsets_for_times, Kafka's ListOffsets by timestamp.
 */
static const char plan_sql[] =
"WITH p AS (SELECT partition, log_start_offset, high_watermark"
"             FROM mq.partitions WHERE topic = $2)"
" SELECT $2 AS topic, p.partition, mq.committed_offset($1, $2, p.partition) AS current_offset,"
"        CASE $3 WHEN 'earliest' THEN p.log_start_offset"
"                WHEN 'latest' THEN p.high_watermark"
"                WHEN 'offset' THEN least(greatest($4, p.log_start_offset), p.high_watermark)"
"                ELSE least(mq.offsets_for_times($2, p.partition, $5::timestamptz),"
"                           p.high_watermark) END AS new_offset"
"   FROM p ORDER BY p.partition";

/* Active members of the group (sessions not timed out). */
static int64_t
active_members(PGconn *conn, const MqParams *group_param)
{
	PGresult   *res = mqctl_exec(conn,
								 "SELECT coalesce(sum(members), 0) FROM mq.groups WHERE group_id = $1",
								 group_param, 0);
	int64_t		n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);

	PQclear(res);
	return n;
}

/* Commit the plan's new offsets (in the caller's transaction). */
static void
commit_plan(PGconn *conn, const char *group, const char *topic, const PGresult *plan)
{
	MqArray		parts;
	MqArray		offsets;
	MqParams	params;
	const char *data;
	int			len;

	mq_array_init(&parts, MQ_INT4OID);
	mq_array_init(&offsets, MQ_INT8OID);
	for (int r = 0; r < PQntuples(plan); r++)
	{
		mq_array_add_int32(&parts, atoi(PQgetvalue(plan, r, 1)));
		mq_array_add_int64(&offsets, strtoll(PQgetvalue(plan, r, 3), NULL, 10));
	}
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	mq_param_text(&params, MQ_TEXTOID, topic);
	data = mq_array_bytes(&parts, &len);
	mq_param_binary(&params, MQ_INT4ARRAYOID, data, len);
	data = mq_array_bytes(&offsets, &len);
	mq_param_binary(&params, MQ_INT8ARRAYOID, data, len);
	PQclear(mqctl_exec(conn,
					   "SELECT mq.commit_offset($1, $2, u.p, u.o)"
					   "  FROM unnest($3::int4[], $4::int8[]) AS u(p, o)",
					   &params, 0));
	mq_array_free(&parts);
	mq_array_free(&offsets);
}

/* What the command line of reset-offsets says. */
typedef struct ResetOptions
{
	const char *group;
	const char *topic;
	int			target;			/* index into reset_targets */
	int64_t		to_offset;
	const char *to_datetime;
	bool		execute;
	bool		force;
	OutputFormat format;
} ResetOptions;

static void
parse_reset_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
					ResetOptions *o)
{
	static const struct option longopts[] = {
		{"topic", required_argument, NULL, 't'},
		{"to-earliest", no_argument, NULL, OPT_TO_EARLIEST},
		{"to-latest", no_argument, NULL, OPT_TO_LATEST},
		{"to-offset", required_argument, NULL, OPT_TO_OFFSET},
		{"to-datetime", required_argument, NULL, OPT_TO_DATETIME},
		{"execute", no_argument, NULL, OPT_EXECUTE},
		{"force", no_argument, NULL, OPT_FORCE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{NULL, 0, NULL, 0}
	};
	int			ntargets = 0;
	int			c;

	memset(o, 0, sizeof(*o));
	o->format = OUTPUT_TABLE;
	mqctl_parser_init(p, cmd, argc, argv, "t:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		switch (c)
		{
			case 't':
				if (optarg[0] == '\0')
					cli_usage_error(p, "--topic must not be empty");
				o->topic = optarg;
				break;
			case OPT_TO_EARLIEST:
			case OPT_TO_LATEST:
			case OPT_TO_OFFSET:
			case OPT_TO_DATETIME:
				o->target = c - OPT_TO_EARLIEST;
				ntargets++;
				if (c == OPT_TO_OFFSET)
					o->to_offset = cli_int(p, "--to-offset", optarg, 0, INT64_MAX);
				if (c == OPT_TO_DATETIME)
					o->to_datetime = optarg;
				break;
			case OPT_EXECUTE:
				o->execute = true;
				break;
			case OPT_FORCE:
				o->force = true;
				break;
			case OPT_FORMAT:
				o->format = output_parse_format(p, optarg);
				break;
		}
	}
	o->group = mqctl_group_argument(p);
	if (o->topic == NULL)
		cli_usage_error(p, "--topic is required");
	if (ntargets == 0)
		cli_usage_error(p, "say where to: --to-earliest, --to-latest, --to-offset or --to-datetime");
	if (ntargets > 1)
		cli_usage_error(p, "give one of --to-earliest, --to-latest, --to-offset and --to-datetime");
}

/* The server reads the time, so it is the server that can tell it is wrong. */
static void
check_datetime(CliParser *p, PGconn *conn, const char *to_datetime)
{
	MqParams	check;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&check);
	mq_param_text(&check, MQ_TEXTOID, to_datetime);
	res = mq_exec(conn, "SELECT $1::timestamptz", &check, 0, &err);
	if (res == NULL)
	{
		if (err.connection_lost || strncmp(err.sqlstate, "22", 2) != 0)
			mqctl_fail(conn, &err);
		PQfinish(conn);
		cli_usage_error(p, "--to-datetime: \"%s\" is not a date and time: %s "
						"(use ISO 8601, e.g. 2026-11-29T10:00:00Z)", to_datetime, err.message);
	}
	PQclear(res);
}

/* Whether the topic exists; says so when it does not. */
static bool
check_topic(PGconn *conn, const char *topic)
{
	MqParams	check;
	PGresult   *res;
	bool		found;

	mq_params_init(&check);
	mq_param_text(&check, MQ_TEXTOID, topic);
	res = mqctl_exec(conn, "SELECT 1 FROM mq.topics WHERE topic = $1", &check, 0);
	found = PQntuples(res) > 0;
	if (!found)
		mq_log_error("topic \"%s\" does not exist", topic);	/* the words of the server's MQ001 */
	PQclear(res);
	return found;
}

/*
 * The group's active members, counted (with --execute, in the transaction
 * begun here, the group's row locked against members joining).  Returns
 * -1 after saying why when --execute must be refused.
 */
static int64_t
lock_members(PGconn *conn, const ResetOptions *o)
{
	MqParams	check;
	int64_t		members;

	mq_params_init(&check);
	mq_param_text(&check, MQ_TEXTOID, o->group);
	if (o->execute)
	{
		mqctl_command(conn, "BEGIN");
		PQclear(mqctl_exec(conn, "SELECT 1 FROM mq.consumer_group WHERE group_id = $1 FOR UPDATE",
						   &check, 0));
	}
	members = active_members(conn, &check);
	if (members > 0 && o->execute && !o->force)
	{
		mq_log_error("consumer group \"%s\" has %lld active member%s: stop %s before resetting its offsets",
					 o->group, (long long) members, members > 1 ? "s" : "", members > 1 ? "them" : "it");
		fprintf(stderr, "%s: hint: Members commit their own positions and would overwrite the new offsets; "
				"--force resets all the same.\n", mq_progname);
		return -1;
	}
	return members;
}

/* What was done, or would be with --execute. */
static void
report_reset(const ResetOptions *o, int64_t members, int nparts)
{
	if (!o->execute)
	{
		if (members > 0)
			mq_log_warning("consumer group \"%s\" has %lld active member%s: --execute will be refused "
						   "without --force", o->group, (long long) members, members > 1 ? "s" : "");
		mq_log_info("dry run: no offset was changed; add --execute to commit the new offsets");
	}
	else
		mq_log_info("committed the new offsets of group \"%s\" on %d partition%s of topic \"%s\"",
					o->group, nparts, nparts == 1 ? "" : "s", o->topic);
}

int
cmd_group_reset_offsets(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ResetOptions o;
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;
	int64_t		members;

	parse_reset_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	if (o.to_datetime != NULL)
		check_datetime(&p, conn, o.to_datetime);
	if (!check_topic(conn, o.topic) || (members = lock_members(conn, &o)) < 0)
	{
		PQfinish(conn);
		cli_free(&p);
		return MQ_EXIT_SERVER;
	}

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, o.group);
	mq_param_text(&params, MQ_TEXTOID, o.topic);
	mq_param_text(&params, MQ_TEXTOID, reset_targets[o.target]);
	mq_param_int(&params, MQ_INT8OID, o.to_offset);
	mq_param_text(&params, MQ_TIMESTAMPTZOID, o.to_datetime);
	res = mqctl_exec(conn, plan_sql, &params, 0);
	if (o.execute)
	{
		commit_plan(conn, o.group, o.topic, res);
		mqctl_command(conn, "COMMIT");
	}

	output_rows(res, o.format);
	report_reset(&o, members, PQntuples(res));
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}
