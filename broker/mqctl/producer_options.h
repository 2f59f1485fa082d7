/*-------------------------------------------------------------------------
 *
 * producer_options.h
 *	  The command-line options of producing, shared by "mqctl produce" and
 *	  "mqctl perf produce": --partition, --batch-size, --acks,
 *	  --no-idempotence and --request-timeout-ms, parsed and checked into a
 *	  ProducerConfig (producer.h), with their part of --help.
 *
 * A command puts PRODUCER_SHORTOPTS and PRODUCER_LONGOPTS into its own
 * option tables and hands each option it does not know itself to
 * producer_option(); the option codes lie above any command's own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PRODUCER_OPTIONS_H
#define MQCTL_PRODUCER_OPTIONS_H

#include <stdbool.h>

#include "cli.h"
#include "producer.h"

enum
{
	PRODUCER_OPT_ACKS = CLI_OPT_LONG_BASE + 0x80,
	PRODUCER_OPT_NO_IDEMPOTENCE,
	PRODUCER_OPT_REQUEST_TIMEOUT_MS
};

/* the bounds of the numeric options */
#define PRODUCER_MAX_BATCH_SIZE 1000000
#define PRODUCER_MAX_REQUEST_TIMEOUT_MS 3600000

#define PRODUCER_SHORTOPTS "p:b:"

#define PRODUCER_LONGOPTS \
	{"partition", required_argument, NULL, 'p'}, \
	{"batch-size", required_argument, NULL, 'b'}, \
	{"acks", required_argument, NULL, PRODUCER_OPT_ACKS}, \
	{"no-idempotence", no_argument, NULL, PRODUCER_OPT_NO_IDEMPOTENCE}, \
	{"request-timeout-ms", required_argument, NULL, PRODUCER_OPT_REQUEST_TIMEOUT_MS}

/* Their part of --help */
#define PRODUCER_OPTIONS_HELP \
"  -p, --partition=N      send every record to partition N (default: by key,\n" \
"                         Kafka's partitioner; records without key spread)\n" \
"  -b, --batch-size=N     records per batch, 1 to 1000000 (default 500)\n" \
"      --acks=ACKS        1 (default): each batch is committed durably on the\n" \
"                         leader (synchronous_commit at least local);\n" \
"                         0: asynchronous commit (fast, a crash may lose\n" \
"                         the last batches); all: also wait until every\n" \
"                         in-sync replica has it (mq.produce; the same as 1\n" \
"                         on a partition that is not replicated)\n" \
"      --no-idempotence   no producer id: a batch is not retried after a lost\n" \
"                         connection (by default it is, and the server drops\n" \
"                         the duplicate)\n" \
"      --request-timeout-ms=MS\n" \
"                         with --acks all: how long to wait for the in-sync\n" \
"                         replicas, up to 3600000 (default 30000)\n"

/* The defaults: by key, 500 records, acks=1, idempotent, default wait. */
extern void producer_options_init(ProducerConfig *cfg);

/*
 * Take option c (argument arg) if it is one of the producer options;
 * returns false for any other.  A bad value is a usage error.
 */
extern bool producer_option(const CliParser *p, int c, const char *arg,
							ProducerConfig *cfg);

/* Once all options are read: the checks between them. */
extern void producer_options_check(const CliParser *p, const ProducerConfig *cfg);

#endif							/* MQCTL_PRODUCER_OPTIONS_H */
