/*-------------------------------------------------------------------------
 *
 * cmd_pipeline.c
 *	  The command "mqctl pipeline": an exactly-once consume-transform-
 *	  produce loop over a replicated cluster (docs/delivery.md,
 *	  "Exactly-once in a cluster").  It copies every record of the input
 *	  topic to the output topic (same key and value; the output partition
 *	  by key, as a producer would choose it, or the input's partition
 *	  number for a null key), runs the application's SQL for each record
 *	  on the input partition's leader, and commits the group's offsets,
 *	  all of a step or nothing, across the nodes involved (pipeline.c).
 *
 * Connect it to the coordinator (-d); it reaches the data nodes itself.
 * Ctrl-C or SIGTERM ends it after the step in hand.
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "pipeline.h"

const char	pipeline_help[] =
"Usage: mqctl pipeline --input=TOPIC --output=TOPIC --group=GROUP [OPTIONS]\n"
"\n"
"Copy every record of the input topic to the output topic exactly once, in\n"
"steps that each read a batch of one input partition, send it, run --apply for\n"
"each record and commit the group's offset, all or nothing across the nodes\n"
"(two-phase commit with the decision on the coordinator).  Connect to the\n"
"coordinator database (-d); the topics must be replicated topics.\n"
"\n"
"Options:\n"
"  -i, --input=TOPIC      the topic to read\n"
"  -o, --output=TOPIC     the topic to write\n"
"  -g, --group=GROUP      the consumer group whose offsets say what was done\n"
"      --id=ID            transactional id (default pipeline:GROUP): a new\n"
"                         run fences older runs of the same id\n"
"      --apply=SQL        a statement run for each record on the input\n"
"                         partition's leader, in the step's transaction, with\n"
"                         $1 key, $2 value (bytea), $3 partition, $4 offset\n"
"  -b, --batch-size=N     records per step, 1 to 100000 (default 100)\n"
"  -n, --max-messages=N   stop after about N records (whole steps)\n"
"      --no-follow        stop once every input partition is read to its end\n"
"      --timeout-ms=MS    wait this long for in-sync replicas (default 10000)\n";

enum
{
	OPT_ID = CLI_OPT_LONG_BASE,
	OPT_APPLY,
	OPT_NO_FOLLOW,
	OPT_TIMEOUT_MS
};

typedef struct RunOptions
{
	PipelineOptions pipe;
	char		id_buf[256];
	int64_t		max_messages;	/* 0: no limit */
	bool		follow;
} RunOptions;

static volatile sig_atomic_t stop_requested = 0;

static void
handle_stop(int sig)
{
	stop_requested = 1;
}

static void
parse_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv, RunOptions *o)
{
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"group", required_argument, NULL, 'g'},
		{"id", required_argument, NULL, OPT_ID},
		{"apply", required_argument, NULL, OPT_APPLY},
		{"batch-size", required_argument, NULL, 'b'},
		{"max-messages", required_argument, NULL, 'n'},
		{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	o->pipe.batch = 100;
	o->pipe.timeout_ms = 10000;
	o->follow = true;
	mqctl_parser_init(p, cmd, argc, argv, "i:o:g:b:n:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (c == 'i')
			o->pipe.input = optarg;
		else if (c == 'o')
			o->pipe.output = optarg;
		else if (c == 'g')
			o->pipe.group = optarg;
		else if (c == OPT_ID)
			o->pipe.id = optarg;
		else if (c == OPT_APPLY)
			o->pipe.apply = optarg;
		else if (c == 'b')
			o->pipe.batch = (int) cli_int(p, "--batch-size", optarg, 1, 100000);
		else if (c == 'n')
			o->max_messages = cli_int(p, "--max-messages", optarg, 1, INT64_MAX);
		else if (c == OPT_NO_FOLLOW)
			o->follow = false;
		else if (c == OPT_TIMEOUT_MS)
			o->pipe.timeout_ms = (int) cli_int(p, "--timeout-ms", optarg, 1, 3600000);
	}
	(void) cli_positionals(p, 0, 0, "", NULL);
	if (!o->pipe.input || !o->pipe.output || !o->pipe.group)
		cli_usage_error(p, "--input, --output and --group are required");
	if (!o->pipe.id)
	{
		snprintf(o->id_buf, sizeof(o->id_buf), "pipeline:%s", o->pipe.group);
		o->pipe.id = o->id_buf;
	}
}

/* Steps over every input partition in turn until told to stop. */
static int64_t
run_steps(Pipeline *pl, const RunOptions *o)
{
	int64_t		total = 0;

	while (!stop_requested && !pl->fenced)
	{
		bool		busy = false;

		for (int part = 0; part < pl->n_in && !stop_requested; part++)
		{
			MqError		err = MQ_ERROR_INIT;
			int			n = pipeline_step(pl, part, &err);

			if (n < 0)
			{
				mq_log_warning("partition %d: step not done, trying again: %s", part,
							   err.message ? err.message : "refused");
				busy = true;
				mq_error_free(&err);
				mq_sleep_ms(100);
				if (mq_router_refresh(&pl->rin, &err))
					(void) mq_router_refresh(&pl->rout, &err);
				mq_error_free(&err);
				continue;
			}
			total += n;
			busy |= n > 0;
		}
		if (o->max_messages > 0 && total >= o->max_messages)
			break;
		if (!busy && !o->follow)
			break;
		if (!busy)
			mq_sleep_ms(100);
	}
	return total;
}

int
cmd_pipeline(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	RunOptions	o;
	Pipeline	pl;
	MqError		err = MQ_ERROR_INIT;
	struct sigaction sa;
	int64_t		total;

	parse_options(&p, cmd, argc, argv, &o);
	if (!pipeline_init(&pl, mqctl_connect(), mqctl_conninfo(), &o.pipe, &err))
	{
		pipeline_close(&pl);
		mqctl_fail(NULL, &err);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop;
	sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	total = run_steps(&pl, &o);
	if (pl.fenced)
		mq_log_error("a newer run of transactional id \"%s\" took over; stopping", o.pipe.id);
	fprintf(stderr, "Processed a total of %lld messages (%ld outputs sent again)\n",
			(long long) total, pl.redone);
	pipeline_close(&pl);
	cli_free(&p);
	return pl.fenced ? MQ_EXIT_SERVER : MQ_EXIT_OK;
}
