/*-------------------------------------------------------------------------
 *
 * cmd_consume.c
 *	  The command "mqctl consume TOPIC": its options, the printing of
 *	  records to standard output, one per line, and the loop that reads
 *	  them through the consuming engine (consumer.c) as a consumer group
 *	  member (--group) or by offset without a group.
 *
 * Values are bytea.  A key or value that is text (valid UTF-8 without NUL,
 * what convert_from(x, 'UTF8') accepts) is printed as it is; any other is
 * printed in PostgreSQL's bytea hex form, \x followed by hex digits, or in
 * JSON as "key_hex"/"value_hex" instead of "key"/"value".  A null key or
 * value prints as null, as in Kafka's console consumer.
 *
 * Output of a group batch is flushed before its offsets are committed:
 * if writing fails, nothing is committed and the batch comes again.
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"
#include "output.h"
#include "pgbinary.h"

const char	consume_help[] =
"Usage: mqctl consume TOPIC [OPTIONS]\n"
"\n"
"Print records of TOPIC on standard output, one per line, and keep waiting for\n"
"new ones (stop with Ctrl-C, --max-messages, --timeout-ms or --no-follow).\n"
"Keys and values that are UTF-8 text print as they are, others as \\x and hex.\n"
"\n"
"What to read:\n"
"  -g, --group=GROUP      read as a member of consumer group GROUP: from its\n"
"                         committed offsets, committing after each batch\n"
"  -p, --partition=N      read partition N only (no group; default: all)\n"
"  -o, --offset=OFFSET    with --partition: start at OFFSET, or at earliest\n"
"                         or latest\n"
"      --from-beginning   start at the log start where there is no committed\n"
"                         offset (default: only new records, as Kafka)\n"
"\n"
"When to stop:\n"
"  -n, --max-messages=N   stop after N records\n"
"      --timeout-ms=MS    stop when no record came for MS milliseconds\n"
"      --no-follow        stop at the end of the log instead of waiting\n"
"\n"
"Output:\n"
"      --format=FORMAT    value (default): the value, one per line;\n"
"                         kv: partition=P offset=O timestamp=T headers=H\n"
"                             key=K value=V (headers only when present);\n"
"                         json: one JSON object per line\n"
"      --print-key        value format: print the key and a separator first\n"
"      --key-separator=SEP\n"
"                         separator for --print-key (default \\t)\n"
"  -b, --batch-size=N     records per poll, 1 to 100000 (default 500)\n";

enum
{
	OPT_FROM_BEGINNING = CLI_OPT_LONG_BASE,
	OPT_TIMEOUT_MS,
	OPT_NO_FOLLOW,
	OPT_FOLLOW,
	OPT_FORMAT,
	OPT_PRINT_KEY,
	OPT_KEY_SEPARATOR
};

typedef enum RecordFormat
{
	FORMAT_VALUE,
	FORMAT_KV,
	FORMAT_JSON
} RecordFormat;

static volatile sig_atomic_t stop_requested = 0;

static void
handle_stop(int sig)
{
	stop_requested = 1;
	consumer_interrupt();
}

typedef struct PrintOptions
{
	RecordFormat format;
	bool		print_key;
	const char *key_separator;
	const char *topic;
} PrintOptions;

/* What the command line says. */
typedef struct ConsumeOptions
{
	PrintOptions print;			/* print.topic is the topic */
	char	   *key_separator;	/* --key-separator, to free */
	const char *group;
	int32_t		partition;		/* -1: all */
	ConsumerStart start;
	int64_t		offset;			/* START_OFFSET's */
	int64_t		max_messages;	/* 0: no limit */
	int64_t		timeout_ms;		/* -1: none */
	bool		follow;
	int			batch_size;
} ConsumeOptions;

static void
print_bytes(const PGresult *res, int row, int col)
{
	const char *data = PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);

	if (PQgetisnull(res, row, col))
		fputs("null", stdout);
	else if (output_is_text(data, len))
		fwrite(data, 1, len, stdout);
	else
	{
		char	   *hex = output_hex(data, len);

		printf("\\x%s", hex);
		free(hex);
	}
}

/* "name": text, or "name_hex": hex digits, or "name": null */
static void
json_set_bytes(json_t *obj, const char *name, const PGresult *res, int row, int col)
{
	const char *data = PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);

	if (PQgetisnull(res, row, col))
		json_object_set_new(obj, name, json_null());
	else if (output_is_text(data, len))
		json_object_set_new(obj, name, json_stringn(data, len));
	else
	{
		char		hexname[32];
		char	   *hex = output_hex(data, len);

		snprintf(hexname, sizeof(hexname), "%s_hex", name);
		json_object_set_new(obj, hexname, json_string(hex));
		free(hex);
	}
}

static void
print_record(const PrintOptions *o, const PGresult *res, int row)
{
	switch (o->format)
	{
		case FORMAT_VALUE:
			if (o->print_key)
			{
				print_bytes(res, row, REC_KEY);
				fputs(o->key_separator, stdout);
			}
			print_bytes(res, row, REC_VALUE);
			break;
		case FORMAT_KV:
			printf("partition=%d offset=%lld timestamp=%lld ",
				   mq_get_int32(res, row, REC_PARTITION),
				   (long long) mq_get_int64(res, row, REC_OFFSET),
				   (long long) mq_get_int64(res, row, REC_TIMESTAMP));
			if (!PQgetisnull(res, row, REC_HEADERS))
				printf("headers=%.*s ", PQgetlength(res, row, REC_HEADERS),
					   PQgetvalue(res, row, REC_HEADERS));
			fputs("key=", stdout);
			print_bytes(res, row, REC_KEY);
			fputs(" value=", stdout);
			print_bytes(res, row, REC_VALUE);
			break;
		case FORMAT_JSON:
			{
				json_t	   *obj = json_object();
				json_t	   *headers = NULL;

				json_object_set_new(obj, "topic", json_string(o->topic));
				json_object_set_new(obj, "partition",
									json_integer(mq_get_int32(res, row, REC_PARTITION)));
				json_object_set_new(obj, "offset",
									json_integer(mq_get_int64(res, row, REC_OFFSET)));
				json_object_set_new(obj, "timestamp",
									json_integer(mq_get_int64(res, row, REC_TIMESTAMP)));
				json_set_bytes(obj, "key", res, row, REC_KEY);
				json_set_bytes(obj, "value", res, row, REC_VALUE);
				if (!PQgetisnull(res, row, REC_HEADERS))
					headers = json_loadb(PQgetvalue(res, row, REC_HEADERS),
										 PQgetlength(res, row, REC_HEADERS), 0, NULL);
				json_object_set_new(obj, "headers", headers ? headers : json_null());
				if (json_dumpf(obj, stdout, JSON_COMPACT) != 0)
					mq_fatal(MQ_EXIT_LOCAL, "could not write JSON output");
				json_decref(obj);
			}
			break;
	}
	putchar('\n');
}

/* --offset: a number, earliest or latest */
static ConsumerStart
parse_offset(CliParser *p, const char *arg, int64_t *offset)
{
	if (strcmp(arg, "earliest") == 0)
		return START_EARLIEST;
	if (strcmp(arg, "latest") == 0)
		return START_LATEST;
	*offset = cli_int(p, "--offset", arg, 0, INT64_MAX);
	return START_OFFSET;
}

/* Where to start, from --group, --partition, --offset and --from-beginning. */
static void
check_start(CliParser *p, ConsumeOptions *o, const char *offset_arg, bool from_beginning)
{
	if (o->group != NULL && (o->partition >= 0 || offset_arg != NULL))
		cli_usage_error(p, "--group reads the partitions the group is given; "
						"--partition and --offset are for reading without a group");
	if (offset_arg != NULL && o->partition < 0)
		cli_usage_error(p, "--offset needs --partition");
	if (offset_arg != NULL && from_beginning)
		cli_usage_error(p, "--offset and --from-beginning exclude each other");
	if (offset_arg != NULL)
		o->start = parse_offset(p, offset_arg, &o->offset);
	else if (from_beginning)
		o->start = START_EARLIEST;
}

static void
parse_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
			  ConsumeOptions *o)
{
	static const struct option longopts[] = {
		{"group", required_argument, NULL, 'g'},
		{"partition", required_argument, NULL, 'p'},
		{"offset", required_argument, NULL, 'o'},
		{"from-beginning", no_argument, NULL, OPT_FROM_BEGINNING},
		{"max-messages", required_argument, NULL, 'n'},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
		{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
		{"follow", no_argument, NULL, OPT_FOLLOW},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"print-key", no_argument, NULL, OPT_PRINT_KEY},
		{"key-separator", required_argument, NULL, OPT_KEY_SEPARATOR},
		{"batch-size", required_argument, NULL, 'b'},
		{NULL, 0, NULL, 0}
	};
	static const char *const formats[] = {"value", "kv", "json", NULL};
	const char *offset_arg = NULL;
	bool		from_beginning = false;
	int			c;

	memset(o, 0, sizeof(*o));
	o->partition = -1;
	o->start = START_LATEST;
	o->timeout_ms = -1;
	o->follow = true;
	o->batch_size = 500;
	mqctl_parser_init(p, cmd, argc, argv, "g:p:o:n:b:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		switch (c)
		{
			case 'g':
				if (optarg[0] == '\0')
					cli_usage_error(p, "--group must not be empty");
				o->group = optarg;
				break;
			case 'p':
				o->partition = (int32_t) cli_int(p, "--partition", optarg, 0, INT32_MAX);
				break;
			case 'o':
				offset_arg = optarg;
				break;
			case OPT_FROM_BEGINNING:
				from_beginning = true;
				break;
			case 'n':
				o->max_messages = cli_int(p, "--max-messages", optarg, 1, INT64_MAX);
				break;
			case OPT_TIMEOUT_MS:
				o->timeout_ms = cli_int(p, "--timeout-ms", optarg, 0, INT32_MAX);
				break;
			case OPT_NO_FOLLOW:
			case OPT_FOLLOW:
				o->follow = c == OPT_FOLLOW;
				break;
			case OPT_FORMAT:
				o->print.format = (RecordFormat) cli_choice(p, "--format", optarg, formats);
				break;
			case OPT_PRINT_KEY:
				o->print.print_key = true;
				break;
			case OPT_KEY_SEPARATOR:
				free(o->key_separator);
				o->key_separator = cli_unescape(p, "--key-separator", optarg);
				break;
			case 'b':
				o->batch_size = (int) cli_int(p, "--batch-size", optarg, 1, 100000);
				break;
		}
	}
	o->print.topic = cli_positionals(p, 1, 1, "topic name", NULL)[0];
	o->print.key_separator = o->key_separator ? o->key_separator : "\t";
	check_start(p, o, offset_arg, from_beginning);
}

/* Ctrl-C finishes the batch in hand (printed and committed), then stops. */
static void
catch_stop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop;
	sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Read, print and commit batches until told to stop; the records printed. */
static int64_t
consume_records(const ConsumeOptions *o, MqConsumer *consumer)
{
	int64_t		total = 0;
	int64_t		last_record = mq_now_us();

	while (!stop_requested)
	{
		int			want = o->batch_size;
		int64_t		wait_ms = o->follow ? CONSUMER_LONG_POLL_MS : 0;
		PGresult   *batch;
		int			n;

		if (o->max_messages > 0 && o->max_messages - total < want)
			want = (int) (o->max_messages - total);
		if (o->follow && o->timeout_ms >= 0)
		{
			int64_t		left = o->timeout_ms - (mq_now_us() - last_record) / 1000;

			wait_ms = left < 0 ? 0 : left < wait_ms ? left : wait_ms;
		}
		batch = consumer_poll(consumer, want, (int) wait_ms);
		n = PQntuples(batch);
		if (n == 0)
		{
			int64_t		idle_ms = (mq_now_us() - last_record) / 1000;

			PQclear(batch);
			if (!o->follow || (o->timeout_ms >= 0 && idle_ms >= o->timeout_ms))
				break;
			continue;
		}

		for (int r = 0; r < n; r++)
			print_record(&o->print, batch, r);
		output_flush();
		consumer_commit(consumer, batch, n);
		PQclear(batch);
		total += n;
		last_record = mq_now_us();
		if (o->max_messages > 0 && total >= o->max_messages)
			break;
	}
	return total;
}

int
cmd_consume(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ConsumeOptions o;
	PGconn	   *conn;
	MqConsumer	consumer;
	int64_t		total;

	parse_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	consumer_open(&consumer, conn, o.print.topic, o.group, o.partition, o.start, o.offset);
	catch_stop();
	total = consume_records(&o, &consumer);

	consumer_close(&consumer);
	PQfinish(conn);
	/* on stderr, as Kafka's console consumer, so that stdout holds records only */
	fprintf(stderr, "Processed a total of %lld messages\n", (long long) total);
	free(o.key_separator);
	cli_free(&p);
	return MQ_EXIT_OK;
}
