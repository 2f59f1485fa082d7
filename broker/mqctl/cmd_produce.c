/*-------------------------------------------------------------------------
 *
 * produce.c
 *	  "mqctl produce TOPIC": every line of standard input becomes a record
 *	  (the line without its newline is the value; with --key-separator the
 *	  part before the first separator is the key), sent in batches.
 *
 * A batch is sent when it is full, at the end of input, and when input
 * has paused for --linger-ms with records waiting, so that someone typing
 * lines, or a slow pipe, sees each record sent promptly while a fast pipe
 * still gets full batches.  That needs to know whether more input is
 * ready, which stdio cannot tell, hence the small reader on read(2) and
 * poll(2) below.
 *
 * Lines are bytes: no encoding is assumed or checked, and a value holds
 * exactly the bytes of its line.  How a batch is delivered (partitions,
 * idempotence, acks, retries) is producer.c's business.
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

const char	produce_help[] =
"Usage: mqctl produce TOPIC [OPTIONS]\n"
"\n"
"Send each line of standard input to TOPIC as a record: the line without its\n"
"newline is the value (bytes as they are, no encoding assumed).  Records are\n"
"sent in batches, each batch one transaction.\n"
"\n"
"Options:\n"
"      --key-separator=SEP\n"
"                         each line is KEY SEP VALUE (split at the first SEP;\n"
"                         \\t, \\n and \\\\ are understood); a line without SEP is\n"
"                         an error.  Without it records have no key.\n"
"  -p, --partition=N      send every record to partition N (default: by key,\n"
"                         Kafka's partitioner; records without key spread)\n"
"  -b, --batch-size=N     records per batch (default 500)\n"
"      --linger-ms=MS     send a partial batch once input has paused for MS\n"
"                         milliseconds (default 100)\n"
PRODUCER_DELIVERY_HELP
"      --request-timeout-ms=MS\n"
"                         with --acks all: how long to wait for the in-sync\n"
"                         replicas (default 30000)\n"
"  -v, --verbose          print \"partition=P offset=O\" for every record sent\n";

/* acks=all: written on the leader, not confirmed by the replicas (docs/errors.md) */
#define SQLSTATE_ISR_SHRANK		MQ_SQLSTATE_NOT_ENOUGH_REPLICAS_AFTER_APPEND
#define SQLSTATE_REPLICA_TIMEOUT MQ_SQLSTATE_REQUEST_TIMED_OUT

enum
{
	OPT_KEY_SEPARATOR = CLI_OPT_LONG_BASE,
	OPT_LINGER_MS,
	OPT_ACKS,
	OPT_NO_IDEMPOTENCE,
	OPT_REQUEST_TIMEOUT_MS,
	OPT_RETRY_LAST_BATCH
};

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
 * The next line (without '\n') into *line and *len, valid until the next
 * call.  With timeout_ms >= 0, returns READ_IDLE when no complete line
 * is buffered and no input arrives for that long.
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
			*len = nl - *line;
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
			*len = r->end - r->start;
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

int
cmd_produce(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"key-separator", required_argument, NULL, OPT_KEY_SEPARATOR},
		{"partition", required_argument, NULL, 'p'},
		{"batch-size", required_argument, NULL, 'b'},
		{"linger-ms", required_argument, NULL, OPT_LINGER_MS},
		{"acks", required_argument, NULL, OPT_ACKS},
		{"no-idempotence", no_argument, NULL, OPT_NO_IDEMPOTENCE},
		{"request-timeout-ms", required_argument, NULL, OPT_REQUEST_TIMEOUT_MS},
		{"retry-last-batch", no_argument, NULL, OPT_RETRY_LAST_BATCH},
		{"verbose", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	char	   *separator = NULL;
	size_t		seplen = 0;
	int64_t		partition = -1;
	int64_t		batch_size = 500;
	int64_t		linger_ms = 100;
	MqAcks		acks = MQ_ACKS_1;
	bool		idempotent = true;
	int64_t		request_timeout_ms = 0;
	bool		retry_last = false;
	bool		verbose = false;
	bool		flushed = false;
	const char *topic;
	MqProducer	pr;
	LineReader	reader = {STDIN_FILENO};
	int64_t		lineno = 0;
	int64_t		sent = 0;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, "p:b:v", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		switch (c)
		{
			case OPT_KEY_SEPARATOR:
				separator = cli_unescape(&p, "--key-separator", optarg);
				seplen = strlen(separator);
				break;
			case 'p':
				partition = cli_int(&p, "--partition", optarg, 0, INT32_MAX);
				break;
			case 'b':
				batch_size = cli_int(&p, "--batch-size", optarg, 1, 1000000);
				break;
			case OPT_LINGER_MS:
				linger_ms = cli_int(&p, "--linger-ms", optarg, 0, 3600000);
				break;
			case OPT_ACKS:
				acks = producer_parse_acks(&p, optarg);
				break;
			case OPT_NO_IDEMPOTENCE:
				idempotent = false;
				break;
			case OPT_REQUEST_TIMEOUT_MS:
				request_timeout_ms = cli_int(&p, "--request-timeout-ms", optarg, 1, INT32_MAX);
				break;
			case OPT_RETRY_LAST_BATCH:
				retry_last = true;
				break;
			case 'v':
				verbose = true;
				break;
		}
	}
	topic = cli_positionals(&p, 1, 1, "topic name", NULL)[0];
	if (request_timeout_ms > 0 && acks != MQ_ACKS_ALL)
		cli_usage_error(&p, "--request-timeout-ms is the wait of --acks all");

	producer_init(&pr, mqctl_connect(), topic, (int32_t) partition, separator != NULL,
				  verbose, acks, idempotent, (int) request_timeout_ms);

	/*
	 * A batch sent stays in pr (flushed) until the next line comes, so
	 * that --retry-last-batch has it whichever way the input ended.
	 */
	for (;;)
	{
		char	   *line;
		size_t		len;
		ReadResult	rr;

		/* wait without limit while nothing is pending; linger otherwise */
		rr = read_line(&reader, !flushed && producer_pending(&pr) ? (int) linger_ms : -1,
					   &line, &len);
		if (rr == READ_EOF)
			break;
		if (rr == READ_IDLE)
		{
			flush_batch(&pr, verbose, &sent);
			flushed = true;
			continue;
		}
		lineno++;
		if (flushed)
		{
			producer_clear(&pr);
			flushed = false;
		}
		if (separator != NULL)
		{
			char	   *sep = memmem(line, len, separator, seplen);

			if (sep == NULL)
			{
				/* what came before is fine: send it, then stop here */
				flush_batch(&pr, verbose, &sent);
				mq_log_error("line %lld has no key separator; the %lld lines before it were sent",
							 (long long) lineno, (long long) sent);
				producer_free(&pr);
				return MQ_EXIT_LOCAL;
			}
			producer_add(&pr, line, sep - line, sep + seplen, len - (sep - line) - seplen);
		}
		else
			producer_add(&pr, NULL, 0, line, len);
		if (producer_pending(&pr) >= batch_size)
		{
			flush_batch(&pr, verbose, &sent);
			flushed = true;
		}
	}
	if (!flushed)
		flush_batch(&pr, verbose, &sent);
	if (retry_last)
		retry_last_batch(&pr, verbose);

	producer_free(&pr);
	free(reader.buf);
	free(separator);
	cli_free(&p);
	return MQ_EXIT_OK;
}
