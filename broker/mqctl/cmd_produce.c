/*-------------------------------------------------------------------------
 *
 * cmd_produce.c
 *	  The command "mqctl produce TOPIC": its options, and the loop that
 *	  turns every line of standard input into a record (the line without
 *	  its newline, or without the \r\n of a CRLF line, is the value; with
 *	  --key-separator the part before the first separator is the key) and
 *	  hands batches to the producing engine (producer.c).
 *
 * A batch is sent when it is full, at the end of input, and when input
 * has paused for --linger-ms with records waiting, so that someone typing
 * lines, or a slow pipe, sees each record sent promptly while a fast pipe
 * still gets full batches.  That needs to know whether more input is
 * ready, which stdio cannot tell, hence the small reader on read(2) and
 * poll(2) below.
 *
 * Lines are bytes: no encoding is assumed or checked, and a value holds
 * exactly the bytes of its line (but the '\r' of a CRLF line end, which
 * Kafka's console producer drops too).  How a batch is delivered
 * (partitions, idempotence, acks, retries) is producer.c's business.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE				/* memmem */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqctl.h"
#include "output.h"
#include "producer.h"
#include "producer_options.h"

const char	produce_help[] =
"Usage: mqctl produce TOPIC [OPTIONS]\n"
"\n"
"Send each line of standard input to TOPIC as a record: the line without its\n"
"newline (\\n or \\r\\n, as Kafka's) is the value (bytes as they are, no encoding\n"
"assumed).  Records are sent in batches, each batch one transaction.\n"
"\n"
"Options:\n"
"      --key-separator=SEP\n"
"                         each line is KEY SEP VALUE (split at the first SEP;\n"
"                         \\t, \\n and \\\\ are understood); a line without SEP is\n"
"                         an error.  Without it records have no key.\n"
PRODUCER_OPTIONS_HELP
"      --linger-ms=MS     send a partial batch once input has paused for MS\n"
"                         milliseconds, up to 3600000 (default 100)\n"
"  -v, --verbose          print \"partition=P offset=O\" for every record sent\n";

/* acks=all: written on the leader, not confirmed by the replicas (docs/errors.md) */
#define SQLSTATE_ISR_SHRANK		MQ_SQLSTATE_NOT_ENOUGH_REPLICAS_AFTER_APPEND
#define SQLSTATE_REPLICA_TIMEOUT MQ_SQLSTATE_REQUEST_TIMED_OUT

enum
{
	OPT_KEY_SEPARATOR = CLI_OPT_LONG_BASE,
	OPT_LINGER_MS,
	OPT_RETRY_LAST_BATCH
};

/* What the command line says. */
typedef struct ProduceOptions
{
	const char *topic;
	ProducerConfig producer;	/* partition, batch size, acks, ... */
	char	   *separator;		/* --key-separator; NULL: no keys */
	size_t		seplen;
	int			linger_ms;
	bool		retry_last;		/* --retry-last-batch (for tests) */
	bool		verbose;
} ProduceOptions;

/* Lines from a file descriptor, with a timeout for "nothing ready". */
typedef struct LineReader
{
	int			fd;
	char	   *buf;
	size_t		start;			/* first byte not returned yet */
	size_t		scanned;		/* bytes from start known to hold no '\n' */
	size_t		end;
	size_t		cap;
	bool		eof;
} LineReader;

typedef enum ReadResult
{
	READ_LINE,
	READ_IDLE,					/* nothing arrived within the timeout */
	READ_EOF
} ReadResult;

/*
 * A line's length without the '\r' of a CRLF line end (Windows files,
 * network tools), which Kafka's console producer drops too (readLine).
 */
static size_t
line_length(const char *line, size_t len)
{
	return len > 0 && line[len - 1] == '\r' ? len - 1 : len;
}

/*
 * The next line (without '\n' or '\r\n') into *line and *len, valid until
 * the next call.  With timeout_ms >= 0, returns READ_IDLE when no complete
 * line is buffered and no input arrives for that long.
 */
static ReadResult
read_line(LineReader *r, int timeout_ms, char **line, size_t *len)
{
	for (;;)
	{
		size_t		unscanned = r->end - r->start - r->scanned;
		char	   *nl = unscanned ? memchr(r->buf + r->start + r->scanned, '\n', unscanned) : NULL;
		ssize_t		n;

		if (nl != NULL)
		{
			*line = r->buf + r->start;
			*len = line_length(*line, nl - *line);
			r->start = nl + 1 - r->buf;
			r->scanned = 0;
			return READ_LINE;
		}
		r->scanned = r->end - r->start;
		if (r->eof)
		{
			if (r->start == r->end)
				return READ_EOF;
			/* a last line without newline is a line all the same */
			*line = r->buf + r->start;
			*len = line_length(*line, r->end - r->start);
			r->start = r->end;
			r->scanned = 0;
			return READ_LINE;
		}

		/* make room: move the partial line to the front, grow if full */
		if (r->start > 0)
		{
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->end == r->cap)
		{
			r->cap = r->cap ? r->cap * 2 : 65536;
			r->buf = mq_realloc(r->buf, r->cap);
		}

		if (timeout_ms >= 0)
		{
			struct pollfd pfd = {r->fd, POLLIN, 0};
			int			ready = poll(&pfd, 1, timeout_ms);

			if (ready == 0)
				return READ_IDLE;
			if (ready < 0 && errno != EINTR)
				mq_fatal(MQ_EXIT_LOCAL, "could not wait for standard input: %s", strerror(errno));
			if (ready < 0)
				continue;
		}
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			mq_fatal(MQ_EXIT_LOCAL, "could not read standard input: %s", strerror(errno));
		if (n == 0)
			r->eof = true;
		r->end += n;
	}
}

/* "partition=P offset=O" for every record of the batch just sent */
static void
print_offsets(const MqProducer *pr)
{
	for (int i = 0; i < pr->nrecords; i++)
		printf("partition=%d offset=%lld\n", pr->records[i].partition,
			   (long long) pr->records[i].offset);
	output_flush();
}

/* Send the pending batch; on failure say how much got through, and exit. */
static void
flush_batch(MqProducer *pr, bool verbose, int64_t *sent)
{
	MqError		err = MQ_ERROR_INIT;
	int			n = producer_pending(pr);

	if (n == 0)
		return;
	if (!producer_send(pr, &err))
	{
		int			code = mq_error_exit_code(&err);

		mq_error_report(&err);
		if (mq_error_is(&err, SQLSTATE_ISR_SHRANK) || mq_error_is(&err, SQLSTATE_REPLICA_TIMEOUT))
			mq_log_info("%lld records were sent before this error; the %d of the last batch "
						"are on the leader but not acknowledged", (long long) *sent, n);
		else
			mq_log_info("%lld records were sent before this error; the %d of the failed batch were not",
						(long long) *sent, n);
		exit(code);
	}
	if (verbose)
		print_offsets(pr);
	*sent += n;
}

/*
 * --retry-last-batch (for tests, not in --help): send the last batch again
 * as a retry after a lost reply would, and say where its records are.  An
 * idempotent producer gets the original offsets and writes nothing.
 */
static void
retry_last_batch(MqProducer *pr, bool verbose)
{
	MqError		err = MQ_ERROR_INIT;

	if (producer_pending(pr) == 0)
		return;
	if (!producer_retry(pr, &err))
		mqctl_fail(pr->conn, &err);
	mq_log_info("sent the last batch of %d records again", producer_pending(pr));
	if (verbose)
		print_offsets(pr);
}

static void
parse_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
			  ProduceOptions *o)
{
	static const struct option longopts[] = {
		{"key-separator", required_argument, NULL, OPT_KEY_SEPARATOR},
		PRODUCER_LONGOPTS,
		{"linger-ms", required_argument, NULL, OPT_LINGER_MS},
		{"retry-last-batch", no_argument, NULL, OPT_RETRY_LAST_BATCH},
		{"verbose", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	producer_options_init(&o->producer);
	o->linger_ms = 100;
	mqctl_parser_init(p, cmd, argc, argv, PRODUCER_SHORTOPTS "v", longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (producer_option(p, c, optarg, &o->producer))
			continue;
		switch (c)
		{
			case OPT_KEY_SEPARATOR:
				free(o->separator);
				o->separator = cli_unescape(p, "--key-separator", optarg);
				o->seplen = strlen(o->separator);
				break;
			case OPT_LINGER_MS:
				o->linger_ms = (int) cli_int(p, "--linger-ms", optarg, 0, 3600000);
				break;
			case OPT_RETRY_LAST_BATCH:
				o->retry_last = true;
				break;
			case 'v':
				o->verbose = true;
				break;
		}
	}
	o->topic = cli_positionals(p, 1, 1, "topic name", NULL)[0];
	producer_options_check(p, &o->producer);
}

/*
 * Add a line to the batch.  Returns false for a line without the key
 * separator, after sending what came before it.
 */
static bool
add_line(MqProducer *pr, const ProduceOptions *o, char *line, size_t len,
		 int64_t lineno, int64_t *sent)
{
	char	   *sep;

	if (o->separator == NULL)
	{
		producer_add(pr, NULL, 0, line, len);
		return true;
	}
	sep = memmem(line, len, o->separator, o->seplen);
	if (sep == NULL)
	{
		/* what came before is fine: send it, then stop here */
		flush_batch(pr, o->verbose, sent);
		if (*sent == 1)
			mq_log_error("line %lld has no key separator; the line before it was sent",
						 (long long) lineno);
		else
			mq_log_error("line %lld has no key separator; the %lld lines before it were sent",
						 (long long) lineno, (long long) *sent);
		return false;
	}
	producer_add(pr, line, sep - line, sep + o->seplen, len - (sep - line) - o->seplen);
	return true;
}

/*
 * The lines of standard input, in batches.  A batch sent stays in pr
 * (flushed) until the next line comes, so that --retry-last-batch has it
 * whichever way the input ended.
 */
static int
produce_lines(MqProducer *pr, const ProduceOptions *o)
{
	LineReader	reader = {STDIN_FILENO};
	bool		flushed = false;
	int64_t		lineno = 0;
	int64_t		sent = 0;
	int			rc = MQ_EXIT_OK;

	for (;;)
	{
		char	   *line;
		size_t		len;
		ReadResult	rr;

		/* wait without limit while nothing is pending; linger otherwise */
		rr = read_line(&reader, !flushed && producer_pending(pr) ? o->linger_ms : -1,
					   &line, &len);
		if (rr == READ_EOF)
			break;
		if (rr == READ_LINE)
		{
			lineno++;
			if (flushed)
				producer_clear(pr);
			flushed = false;
			if (!add_line(pr, o, line, len, lineno, &sent))
			{
				rc = MQ_EXIT_LOCAL;
				break;
			}
		}
		if (rr == READ_IDLE || producer_pending(pr) >= o->producer.batch_size)
		{
			flush_batch(pr, o->verbose, &sent);
			flushed = true;
		}
	}
	if (rc == MQ_EXIT_OK && !flushed)
		flush_batch(pr, o->verbose, &sent);
	if (rc == MQ_EXIT_OK && o->retry_last)
		retry_last_batch(pr, o->verbose);
	free(reader.buf);
	return rc;
}

int
cmd_produce(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	ProduceOptions o;
	MqProducer	pr;
	int			rc;

	parse_options(&p, cmd, argc, argv, &o);
	producer_init(&pr, mqctl_connect(), o.topic, &o.producer, o.separator != NULL, o.verbose);
	rc = produce_lines(&pr, &o);
	producer_free(&pr);
	free(o.separator);
	cli_free(&p);
	return rc;
}
