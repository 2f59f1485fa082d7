/*-------------------------------------------------------------------------
 *
 * cmd_group_reset.c
 *	  The command "mqctl group reset-offsets", kafka-consumer-groups'
 *	  --reset-offsets: its options, the plan query (plan_sql) on
 *	  mq.partitions, mq.committed_offsets(), mq.committed_offset() and
 *	  mq.offsets_for_times(), and the commit of the plan with
 *	  mq.commit_offset().
 *
 * A dry run by default (--dry-run says so explicitly, as Kafka's scripts
 * do), printing the plan; --execute commits it in one transaction, and is
 * refused while the group has active members, which would go on
 * committing their own positions (Kafka refuses for non-empty groups).
 * The partitions are those of --topic (repeatable; TOPIC:0,2 names some
 * of them, as Kafka's) or, with --all-topics, every partition the group
 * has a committed offset on (Kafka's getCommittedOffsets).  Every new
 * offset is moved into [log start, log end]; where an offset asked for
 * (--to-offset, --shift-by) lay outside, a warning says so, as Kafka's
 * tool warns.  --to-datetime and --by-duration ask mq.offsets_for_times
 * for each partition's first record whose timestamp (Kafka's CreateTime
 * or LogAppendTime) is at or after the time; the server reads the time
 * and the ISO 8601 duration (PostgreSQL's timestamptz and interval).
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

const char	group_reset_offsets_help[] =
"Usage: mqctl group reset-offsets GROUP {--topic=TOPIC... | --all-topics} TARGET\n"
"                                 [OPTIONS]\n"
"\n"
"Move the committed offsets of GROUP on the partitions chosen.  Without\n"
"--execute it only prints the plan (a dry run): per partition, the current and\n"
"the new offset, moved into [log start, log end] (with a warning where the\n"
"offset asked for lay outside).  A group with active members is refused, as\n"
"they would go on committing their own positions: stop them first.\n"
"\n"
"Target (one of):\n"
"      --to-earliest      the log start offset\n"
"      --to-latest        the log end offset (high watermark)\n"
"      --to-current       the committed offset (the log end where there is none)\n"
"      --to-offset=N      offset N\n"
"      --shift-by=N       the committed offset plus N (N may be negative); a\n"
"                         partition without a committed offset is an error\n"
"      --to-datetime=TS   the first record timestamped at or after TS, ISO 8601\n"
"                         time such as 2026-11-29T10:00:00Z (without a zone:\n"
"                         the session's TimeZone); the log end if none is\n"
"      --by-duration=D    the first record timestamped at or after now minus D,\n"
"                         an ISO 8601 duration such as PT1H or P1DT2H; the log\n"
"                         end if none is\n"
"\n"
"Options:\n"
"  -t, --topic=TOPIC[:P,...]\n"
"                         a topic, or only the partitions listed (orders:0,2);\n"
"                         repeatable\n"
"      --all-topics       every partition the group has a committed offset on\n"
"      --dry-run          only print the plan (the default)\n"
"      --execute          commit the new offsets (in one transaction)\n"
"      --force            with --execute: even while members are active\n"
"      --format=FORMAT    table (default) or json\n";

enum
{
	OPT_FORMAT = CLI_OPT_LONG_BASE,
	/* the targets, in reset_targets order */
	OPT_TO_EARLIEST,
	OPT_TO_LATEST,
	OPT_TO_CURRENT,
	OPT_TO_OFFSET,
	OPT_SHIFT_BY,
	OPT_TO_DATETIME,
	OPT_BY_DURATION,
	OPT_ALL_TOPICS,
	OPT_DRY_RUN,
	OPT_EXECUTE,
	OPT_FORCE
};

/* The words of the reset targets, as the plan query ($3) knows them. */
static const char *const reset_targets[] = {
	"earliest", "latest", "current", "offset", "shift", "datetime", "duration"
};

#define TARGET_SHIFT 4
#define TARGET_DURATION 6

#define TARGETS_SAY "--to-earliest, --to-latest, --to-current, --to-offset, --shift-by, " \
	"--to-datetime or --by-duration"

/*
 * The plan: per partition chosen ($2 topics and $4 partitions, -1 for all
 * of a topic; $2 NULL for the partitions group $1 has an offset on), the
 * committed offset and the new one for target $3 ($5 the offset or shift,
 * $6 the time or duration), moved into [log start, log end].  For a time,
 * the first offset whose record timestamp is at least the time, or the
 * log end: mq.offsets_for_times, Kafka's ListOffsets by timestamp.  The
 * last three columns, not shown, are for the warnings: the offset asked
 * for, the log start and end.
 */
static const char plan_sql[] =
"WITH sel AS (SELECT s.topic, s.partition FROM unnest($2::text[], $4::int4[]) AS s(topic, partition)),"
" co AS (SELECT c.topic, c.partition FROM mq.committed_offsets($1) c),"
" p AS (SELECT pt.topic, pt.partition, pt.log_start_offset, pt.high_watermark,"
"              mq.committed_offset($1, pt.topic, pt.partition) AS current_offset"
"         FROM mq.partitions pt"
"        WHERE CASE WHEN $2::text[] IS NULL"
"              THEN EXISTS (SELECT 1 FROM co WHERE co.topic = pt.topic AND co.partition = pt.partition)"
"              ELSE EXISTS (SELECT 1 FROM sel WHERE sel.topic = pt.topic"
"                              AND (sel.partition = -1 OR sel.partition = pt.partition)) END),"
" q AS (SELECT p.*, CASE $3 WHEN 'earliest' THEN p.log_start_offset"
"                           WHEN 'latest' THEN p.high_watermark"
"                           WHEN 'current' THEN coalesce(p.current_offset, p.high_watermark)"
"                           WHEN 'offset' THEN $5"
"                           WHEN 'shift' THEN p.current_offset + $5"
"                           ELSE mq.offsets_for_times(p.topic, p.partition,"
"                                    CASE $3 WHEN 'duration' THEN pg_catalog.now() - $6::interval"
"                                            ELSE $6::timestamptz END) END AS wanted"
"          FROM p)"
" SELECT q.topic, q.partition, q.current_offset,"
"        least(greatest(q.wanted, q.log_start_offset), q.high_watermark) AS new_offset,"
"        CASE WHEN $3 IN ('offset', 'shift') THEN q.wanted END AS requested,"
"        q.log_start_offset, q.high_watermark"
"   FROM q ORDER BY q.topic, q.partition";

#define PLAN_SHOWN 4			/* the columns printed */

/* What the command line of reset-offsets says. */
typedef struct ResetOptions
{
	const char *group;
	MqArray		topics;			/* --topic's, as many as partitions */
	MqArray		partitions;		/* the partition of each, -1 for all */
	int			ntopic_options;
	bool		all_topics;
	int			target;			/* index into reset_targets */
	int64_t		offset;			/* --to-offset's, or --shift-by's */
	const char *time;			/* --to-datetime's, or --by-duration's */
	bool		execute;
	bool		dry_run;
	bool		force;
	OutputFormat format;
} ResetOptions;

/* --topic TOPIC or TOPIC:P,P,...: the pairs it adds to o->topics and o->partitions. */
static void
parse_topic(CliParser *p, ResetOptions *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	size_t		namelen = colon ? (size_t) (colon - arg) : strlen(arg);
	char	   *list;
	char	   *save = NULL;
	int			n = 0;

	if (namelen == 0)
		cli_usage_error(p, "--topic must not be empty");
	o->ntopic_options++;
	if (colon == NULL)
	{
		mq_array_add(&o->topics, arg, namelen);
		mq_array_add_int32(&o->partitions, -1);
		return;
	}
	list = mq_strdup(colon + 1);
	if (list[0] == ',' || (list[0] != '\0' && list[strlen(list) - 1] == ',') || strstr(list, ",,"))
		cli_usage_error(p, "--topic %s: give partition numbers separated by commas, e.g. %.*s:0,2",
						arg, (int) namelen, arg);
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++)
	{
		mq_array_add(&o->topics, arg, namelen);
		mq_array_add_int32(&o->partitions, (int32_t) cli_int(p, "--topic", tok, 0, INT32_MAX));
	}
	if (n == 0)
		cli_usage_error(p, "--topic %s: give partition numbers separated by commas, e.g. %.*s:0,2",
						arg, (int) namelen, arg);
	free(list);
}

/* The checks of the options together, once all are read. */
static void
check_reset_options(CliParser *p, ResetOptions *o, int ntargets)
{
	o->group = mqctl_group_argument(p);
	if (o->ntopic_options == 0 && !o->all_topics)
		cli_usage_error(p, "give --topic or --all-topics");
	if (o->ntopic_options > 0 && o->all_topics)
		cli_usage_error(p, "give --topic or --all-topics, not both");
	if (ntargets == 0)
		cli_usage_error(p, "say where to: " TARGETS_SAY);
	if (ntargets > 1)
		cli_usage_error(p, "give only one of " TARGETS_SAY);
	if (o->execute && o->dry_run)
		cli_usage_error(p, "give only one of --execute and --dry-run");
	if (o->target == TARGET_DURATION && o->time[0] != 'P' && o->time[0] != 'p')
		cli_usage_error(p, "--by-duration: \"%s\" is not an ISO 8601 duration (e.g. PT1H or P1DT2H)",
						o->time);
}

static void
parse_reset_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
					ResetOptions *o)
{
	static const struct option longopts[] = {
		{"topic", required_argument, NULL, 't'},
		{"all-topics", no_argument, NULL, OPT_ALL_TOPICS},
		{"to-earliest", no_argument, NULL, OPT_TO_EARLIEST},
		{"to-latest", no_argument, NULL, OPT_TO_LATEST},
		{"to-current", no_argument, NULL, OPT_TO_CURRENT},
		{"to-offset", required_argument, NULL, OPT_TO_OFFSET},
		{"shift-by", required_argument, NULL, OPT_SHIFT_BY},
		{"to-datetime", required_argument, NULL, OPT_TO_DATETIME},
		{"by-duration", required_argument, NULL, OPT_BY_DURATION},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"execute", no_argument, NULL, OPT_EXECUTE},
		{"force", no_argument, NULL, OPT_FORCE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{NULL, 0, NULL, 0}
	};
	int			ntargets = 0;
	int			c;

	memset(o, 0, sizeof(*o));
	o->format = OUTPUT_TABLE;
	mq_array_init(&o->topics, MQ_TEXTOID);
	mq_array_init(&o->partitions, MQ_INT4OID);
	mqctl_parser_init(p, cmd, argc, argv, "t:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c >= OPT_TO_EARLIEST && c <= OPT_BY_DURATION)
		{
			o->target = c - OPT_TO_EARLIEST;
			ntargets++;
		}
		if (c == 't')
			parse_topic(p, o, optarg);
		else if (c == OPT_ALL_TOPICS)
			o->all_topics = true;
		else if (c == OPT_TO_OFFSET)
			o->offset = cli_int(p, "--to-offset", optarg, 0, INT64_MAX);
		else if (c == OPT_SHIFT_BY)
			o->offset = cli_int(p, "--shift-by", optarg, INT64_MIN / 2, INT64_MAX / 2);
		else if (c == OPT_TO_DATETIME || c == OPT_BY_DURATION)
			o->time = optarg;
		else if (c == OPT_DRY_RUN)
			o->dry_run = true;
		else if (c == OPT_EXECUTE)
			o->execute = true;
		else if (c == OPT_FORCE)
			o->force = true;
		else if (c == OPT_FORMAT)
			o->format = output_parse_format(p, optarg);
	}
	check_reset_options(p, o, ntargets);
}

/*
 * --to-datetime's time or --by-duration's duration: the server reads it,
 * so it is the server that can tell it is wrong (a usage error).
 */
static void
check_time(CliParser *p, PGconn *conn, const ResetOptions *o)
{
	bool		duration = o->target == TARGET_DURATION;
	MqParams	check;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&check);
	mq_param_text(&check, MQ_TEXTOID, o->time);
	res = mq_exec(conn, duration ? "SELECT $1::interval" : "SELECT $1::timestamptz", &check, 0, &err);
	if (res == NULL)
	{
		if (err.connection_lost || strncmp(err.sqlstate, "22", 2) != 0)
			mqctl_fail(conn, &err);
		PQfinish(conn);
		if (duration)
			cli_usage_error(p, "--by-duration: \"%s\" is not an ISO 8601 duration: %s "
							"(e.g. PT1H or P1DT2H)", o->time, err.message);
		cli_usage_error(p, "--to-datetime: \"%s\" is not a date and time: %s "
						"(use ISO 8601, e.g. 2026-11-29T10:00:00Z)", o->time, err.message);
	}
	PQclear(res);
}

/*
 * Whether every topic and partition named exists; says which does not.
 * Each name is looked up alone (OFFSET 0 keeps the NOT EXISTS from
 * becoming an anti-join with the whole security-barrier view: design.md,
 * "Views joined by their keys").
 */
static bool
check_topics(PGconn *conn, ResetOptions *o)
{
	MqParams	check;
	PGresult   *res;
	const char *data;
	int			len;
	bool		found;

	mq_params_init(&check);
	data = mq_array_bytes(&o->topics, &len);
	mq_param_binary(&check, MQ_TEXTARRAYOID, data, len);
	data = mq_array_bytes(&o->partitions, &len);
	mq_param_binary(&check, MQ_INT4ARRAYOID, data, len);
	res = mqctl_exec(conn,
					 "SELECT s.topic, s.partition,"
					 "       EXISTS (SELECT 1 FROM mq.topics t WHERE t.topic = s.topic)"
					 "  FROM unnest($1::text[], $2::int4[]) AS s(topic, partition)"
					 " WHERE NOT EXISTS (SELECT 1 FROM mq.partitions p WHERE p.topic = s.topic"
					 "                      AND (s.partition = -1 OR p.partition = s.partition) OFFSET 0)",
					 &check, 0);
	found = PQntuples(res) == 0;
	/* the words and codes of the server's MQ006 and MQ001 */
	for (int r = 0; r < PQntuples(res); r++)
		if (PQgetvalue(res, r, 2)[0] == 't')
			mq_log_error("partition %s of topic \"%s\" does not exist" MQCTL_SQLSTATE(MQ_SQLSTATE_UNKNOWN_PARTITION),
						 PQgetvalue(res, r, 1), PQgetvalue(res, r, 0));
		else
			mq_log_error(MQCTL_NO_TOPIC,
						 PQgetvalue(res, r, 0));
	PQclear(res);
	return found;
}

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

/* The plan for the options, in the caller's transaction. */
static PGresult *
make_plan(PGconn *conn, ResetOptions *o)
{
	MqParams	params;
	const char *data;
	int			len;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, o->group);
	data = mq_array_bytes(&o->topics, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, o->all_topics ? NULL : data, len);
	mq_param_text(&params, MQ_TEXTOID, reset_targets[o->target]);
	data = mq_array_bytes(&o->partitions, &len);
	mq_param_binary(&params, MQ_INT4ARRAYOID, data, len);
	mq_param_int(&params, MQ_INT8OID, o->offset);
	mq_param_text(&params, MQ_TEXTOID, o->time);
	return mqctl_exec(conn, plan_sql, &params, 0);
}

/*
 * --shift-by needs a committed offset to shift (Kafka: "Cannot shift
 * offset for partition ... since there is no current committed offset"):
 * false after naming every partition without one.
 */
static bool
check_shift(const ResetOptions *o, const PGresult *plan)
{
	bool		ok = true;

	if (o->target != TARGET_SHIFT)
		return true;
	for (int r = 0; r < PQntuples(plan); r++)
		if (PQgetisnull(plan, r, 2))
		{
			mq_log_error("cannot shift the offset of topic %s partition %s: group \"%s\" has no "
						 "committed offset there", PQgetvalue(plan, r, 0), PQgetvalue(plan, r, 1),
						 o->group);
			ok = false;
		}
	return ok;
}

/* A warning for each offset asked for that lay outside the log (Kafka's). */
static void
warn_moved(const ResetOptions *o, const PGresult *plan)
{
	for (int r = 0; r < PQntuples(plan); r++)
	{
		const char *requested = PQgetvalue(plan, r, 4);
		const char *new_offset = PQgetvalue(plan, r, 3);
		bool		high;

		if (PQgetisnull(plan, r, 4) || strcmp(requested, new_offset) == 0)
			continue;
		high = strtoll(requested, NULL, 10) > strtoll(new_offset, NULL, 10);
		mq_log_warning("new offset (%s) is %s than the log %s offset (%s) of topic %s partition %s: "
					   "it %s set to %s", requested, high ? "higher" : "lower", high ? "end" : "start",
					   PQgetvalue(plan, r, high ? 6 : 5), PQgetvalue(plan, r, 0), PQgetvalue(plan, r, 1),
					   o->execute ? "is" : "will be", new_offset);
	}
}

/* The plan's first PLAN_SHOWN columns, to print. */
static PGresult *
shown_columns(const PGresult *plan)
{
	PGresult   *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	PGresAttDesc attrs[PLAN_SHOWN];

	for (int c = 0; c < PLAN_SHOWN; c++)
	{
		attrs[c].name = PQfname(plan, c);
		attrs[c].tableid = PQftable(plan, c);
		attrs[c].columnid = PQftablecol(plan, c);
		attrs[c].format = PQfformat(plan, c);
		attrs[c].typid = PQftype(plan, c);
		attrs[c].typlen = PQfsize(plan, c);
		attrs[c].atttypmod = PQfmod(plan, c);
	}
	if (res == NULL || !PQsetResultAttrs(res, PLAN_SHOWN, attrs))
		mq_fatal(MQ_EXIT_LOCAL, "out of memory");
	for (int r = 0; r < PQntuples(plan); r++)
		for (int c = 0; c < PLAN_SHOWN; c++)
			if (!PQsetvalue(res, r, c, PQgetvalue(plan, r, c),
							PQgetisnull(plan, r, c) ? -1 : PQgetlength(plan, r, c)))
				mq_fatal(MQ_EXIT_LOCAL, "out of memory");
	return res;
}

/* Commit the plan's new offsets (in the caller's transaction). */
static void
commit_plan(PGconn *conn, const char *group, const PGresult *plan)
{
	MqArray		topics;
	MqArray		parts;
	MqArray		offsets;
	MqParams	params;
	const char *data;
	int			len;

	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	mq_array_init(&offsets, MQ_INT8OID);
	for (int r = 0; r < PQntuples(plan); r++)
	{
		mq_array_add(&topics, PQgetvalue(plan, r, 0), PQgetlength(plan, r, 0));
		mq_array_add_int32(&parts, atoi(PQgetvalue(plan, r, 1)));
		mq_array_add_int64(&offsets, strtoll(PQgetvalue(plan, r, 3), NULL, 10));
	}
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	data = mq_array_bytes(&topics, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, data, len);
	data = mq_array_bytes(&parts, &len);
	mq_param_binary(&params, MQ_INT4ARRAYOID, data, len);
	data = mq_array_bytes(&offsets, &len);
	mq_param_binary(&params, MQ_INT8ARRAYOID, data, len);
	PQclear(mqctl_exec(conn,
					   "SELECT mq.commit_offset($1, u.t, u.p, u.o)"
					   "  FROM unnest($2::text[], $3::int4[], $4::int8[]) AS u(t, p, o)",
					   &params, 0));
	mq_array_free(&topics);
	mq_array_free(&parts);
	mq_array_free(&offsets);
}

/* What was done, or would be with --execute. */
static void
report_reset(const ResetOptions *o, int64_t members, const PGresult *plan)
{
	int			nparts = PQntuples(plan);
	int			ntopics = 0;

	for (int r = 0; r < nparts; r++)
		ntopics += r == 0 || strcmp(PQgetvalue(plan, r, 0), PQgetvalue(plan, r - 1, 0)) != 0;
	if (nparts == 0)
		mq_log_info("group \"%s\" has no committed offset: no partition to reset", o->group);
	else if (!o->execute)
	{
		if (members > 0)
			mq_log_warning("consumer group \"%s\" has %lld active member%s: --execute will be refused "
						   "without --force", o->group, (long long) members, members > 1 ? "s" : "");
		mq_log_info("dry run: no offset was changed; add --execute to commit the new offsets");
	}
	else if (ntopics == 1)
		mq_log_info("committed the new offsets of group \"%s\" on %d partition%s of topic \"%s\"",
					o->group, nparts, nparts == 1 ? "" : "s", PQgetvalue(plan, 0, 0));
	else
		mq_log_info("committed the new offsets of group \"%s\" on %d partitions of %d topics",
					o->group, nparts, ntopics);
}

int
cmd_group_reset_offsets(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ResetOptions o;
	PGconn	   *conn;
	PGresult   *plan = NULL;
	PGresult   *shown;
	int64_t		members;
	int			rc = MQ_EXIT_SERVER;

	parse_reset_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	if (o.time != NULL)
		check_time(&p, conn, &o);
	/* a refusal commits nothing: closing the connection ends the transaction */
	if ((o.all_topics || check_topics(conn, &o)) && (members = lock_members(conn, &o)) >= 0 &&
		check_shift(&o, plan = make_plan(conn, &o)))
	{
		if (o.execute)
		{
			commit_plan(conn, o.group, plan);
			mqctl_command(conn, "COMMIT");
		}
		warn_moved(&o, plan);
		shown = shown_columns(plan);
		output_rows(shown, o.format);
		report_reset(&o, members, plan);
		PQclear(shown);
		rc = MQ_EXIT_OK;
	}
	PQclear(plan);
	PQfinish(conn);
	mq_array_free(&o.topics);
	mq_array_free(&o.partitions);
	cli_free(&p);
	return rc;
}
