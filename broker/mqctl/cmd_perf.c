/*-------------------------------------------------------------------------
 *
 * cmd_perf.c
 *	  The commands "mqctl perf produce" and "mqctl perf consume": their
 *	  options and their runs, throughput and latency measurements in the
 *	  manner of Kafka's producer-perf-test and consumer-perf-test (the
 *	  counting and the progress and summary lines are perf_stats.c's).
 *
 * The unit of latency is the batch: for produce, one mq.produce_records() call
 * with its commit (the moment the batch is acknowledged); for consume,
 * one poll.  Kafka reports per-record latency, which includes time in the
 * client's buffer; a batch here is sent the moment it is full, so batch
 * latency is what a record waits once its batch is complete.
 *
 * perf produce runs one thread per --clients, each with its own
 * connection and producer (producer.c); the main thread only prints
 * progress.  The batch is built once per thread and sent again and again,
 * so the client spends its time waiting for the server, which is what is
 * being measured.  The threads share only the PerfStats, under its lock,
 * and the stop flag.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"
#include "perf_stats.h"
#include "producer.h"
#include "producer_options.h"

const char	perf_produce_help[] =
"Usage: mqctl perf produce TOPIC --records=N [OPTIONS]\n"
"\n"
"Send N records of random letters to TOPIC as fast as possible (or at\n"
"--throughput), printing progress every few seconds and a summary: records/s,\n"
"MB/s and the latency of a batch (one mq.produce_records call and its commit):\n"
"average, 50th, 95th, 99th and 99.9th percentiles and maximum.\n"
"\n"
"Options:\n"
"  -n, --records=N        records to send (required)\n"
"  -s, --record-size=B    bytes per record value, 0 to 104857600 (default 100)\n"
"  -c, --clients=C        connections sending in parallel, 1 to 256 (default 1)\n"
"      --throughput=R     at most R records/s in all (default -1: no limit)\n"
PRODUCER_OPTIONS_HELP
"      --batch=N          the same as --batch-size\n"
"      --reporting-interval-ms=MS\n"
"                         progress line interval (default 5000)\n";

const char	perf_consume_help[] =
"Usage: mqctl perf consume TOPIC --records=N [OPTIONS]\n"
"\n"
"Read N records of TOPIC as fast as possible, printing progress every few\n"
"seconds and a summary: records/s, MB/s (keys and values) and the latency\n"
"of a poll: average, 50th, 95th, 99th and 99.9th percentiles and maximum.\n"
"Without a group, reads all partitions from their log start.\n"
"\n"
"Options:\n"
"  -n, --records=N        records to read (required)\n"
"  -g, --group=GROUP      read as consumer group GROUP, committing each batch\n"
"                         (from the log start where it has no offset yet)\n"
"  -b, --batch-size=N     records per poll, 1 to 100000 (default 1000)\n"
"      --timeout-ms=MS    give up when no record came for MS milliseconds\n"
"                         (default 10000)\n"
"      --reporting-interval-ms=MS\n"
"                         progress line interval (default 5000)\n";

enum
{
	OPT_THROUGHPUT = CLI_OPT_LONG_BASE,
	OPT_REPORTING_INTERVAL,
	OPT_TIMEOUT_MS
};

/* the largest record value and batch perf produce builds */
#define MAX_RECORD_SIZE		(100 * 1024 * 1024)
#define MAX_BATCH_BYTES		(512 * 1024 * 1024)

/* What the command line of perf produce says. */
typedef struct PerfProduceOptions
{
	const char *topic;
	ProducerConfig producer;	/* partition, batch size, acks, ... */
	int64_t		records;
	int64_t		record_size;
	int			clients;
	int64_t		throughput;		/* records/s in all, -1: no limit */
	int64_t		interval_ms;
} PerfProduceOptions;

/* What the command line of perf consume says. */
typedef struct PerfConsumeOptions
{
	const char *topic;
	const char *group;
	int64_t		records;
	int			batch_size;
	int64_t		timeout_ms;
	int64_t		interval_ms;
} PerfConsumeOptions;

/* One producing thread. */
typedef struct ProduceClient
{
	pthread_t	thread;
	MqProducer	producer;
	int64_t		records;		/* this client's share */
	int			batch;
	double		rate;			/* records/s for this client, <= 0: no limit */
	const char *payload;
	int64_t		record_size;
	PerfStats  *stats;
	MqError		error;			/* set when it failed */
	bool		failed;
} ProduceClient;

static volatile sig_atomic_t perf_stop = 0;

static void *
produce_client(void *arg)
{
	ProduceClient *pc = arg;
	int64_t		done = 0;
	int64_t		start = mq_now_us();

	while (done < pc->records && !perf_stop)
	{
		int64_t		n = pc->records - done < pc->batch ? pc->records - done : pc->batch;
		int64_t		t0;

		/* full batches are built once; only a short last one is rebuilt */
		if (producer_pending(&pc->producer) != n)
		{
			producer_clear(&pc->producer);
			for (int64_t i = 0; i < n; i++)
				producer_add(&pc->producer, NULL, 0, pc->payload, pc->record_size);
		}
		/* paced: wait for the time this batch is due, a second at most at a time */
		while (pc->rate > 0 && !perf_stop)
		{
			double		wait_us = start + done / pc->rate * 1e6 - mq_now_us();

			if (wait_us < 1000)
				break;
			mq_sleep_ms(wait_us > 1e6 ? 1000 : (int64_t) (wait_us / 1000));
		}
		t0 = mq_now_us();
		if (!producer_send(&pc->producer, &pc->error))
		{
			pc->failed = true;
			perf_stop = 1;
			break;
		}
		stats_add(pc->stats, n, n * pc->record_size, mq_now_us() - t0);
		done += n;
	}
	return NULL;
}

static void
handle_perf_stop(int sig)
{
	perf_stop = 1;
	consumer_interrupt();
}

static void
catch_interrupt(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_perf_stop;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void
parse_produce_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
					  PerfProduceOptions *o)
{
	static const struct option longopts[] = {
		{"records", required_argument, NULL, 'n'},
		{"record-size", required_argument, NULL, 's'},
		{"clients", required_argument, NULL, 'c'},
		{"throughput", required_argument, NULL, OPT_THROUGHPUT},
		PRODUCER_LONGOPTS,
		{"batch", required_argument, NULL, 'b'},
		{"reporting-interval-ms", required_argument, NULL, OPT_REPORTING_INTERVAL},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	producer_options_init(&o->producer);
	o->records = -1;
	o->record_size = 100;
	o->clients = 1;
	o->throughput = -1;
	o->interval_ms = 5000;
	mqctl_parser_init(p, cmd, argc, argv, PRODUCER_SHORTOPTS "n:s:c:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		if (producer_option(p, c, optarg, &o->producer))
			continue;
		switch (c)
		{
			case 'n':
				o->records = cli_int(p, "--records", optarg, 1, INT64_MAX);
				break;
			case 's':
				o->record_size = cli_int(p, "--record-size", optarg, 0, MAX_RECORD_SIZE);
				break;
			case 'c':
				o->clients = (int) cli_int(p, "--clients", optarg, 1, 256);
				break;
			case OPT_THROUGHPUT:
				o->throughput = cli_int(p, "--throughput", optarg, -1, INT64_MAX);
				if (o->throughput == 0)
					cli_usage_error(p, "--throughput must be positive, or -1 for no limit");
				break;
			case OPT_REPORTING_INTERVAL:
				o->interval_ms = cli_int(p, "--reporting-interval-ms", optarg, 1, INT32_MAX);
				break;
		}
	}
	o->topic = cli_positionals(p, 1, 1, "topic name", NULL)[0];
	if (o->records < 0)
		cli_usage_error(p, "--records is required");
	producer_options_check(p, &o->producer);
	if ((int64_t) o->producer.batch_size * o->record_size > MAX_BATCH_BYTES)
		cli_usage_error(p, "a batch of %d records of %lld bytes is over 512 MB: use a smaller --batch-size",
						o->producer.batch_size, (long long) o->record_size);
}

/* Connect every client first, so that a bad connection fails before timing. */
static ProduceClient *
start_clients(const PerfProduceOptions *o, const char *payload, PerfStats *stats)
{
	ProduceClient *pcs = mq_malloc0(sizeof(ProduceClient) * o->clients);

	for (int i = 0; i < o->clients; i++)
	{
		ProduceClient *pc = &pcs[i];

		producer_init(&pc->producer, mqctl_connect(), o->topic, &o->producer, false, false);
		pc->records = o->records / o->clients + (i < o->records % o->clients);
		pc->batch = o->producer.batch_size;
		pc->rate = o->throughput > 0 ? (double) o->throughput / o->clients : 0;
		pc->payload = payload;
		pc->record_size = o->record_size;
		pc->stats = stats;
	}
	return pcs;
}

/* Run the clients' threads, printing progress until they are done. */
static void
run_clients(const PerfProduceOptions *o, ProduceClient *pcs, PerfStats *stats)
{
	catch_interrupt();
	stats_start(stats);
	for (int i = 0; i < o->clients; i++)
		if (pthread_create(&pcs[i].thread, NULL, produce_client, &pcs[i]) != 0)
			mq_fatal(MQ_EXIT_LOCAL, "could not start a thread");
	while (stats_records(stats) < o->records && !perf_stop)
	{
		mq_sleep_ms(50);
		stats_progress(stats, o->interval_ms);
	}
	for (int i = 0; i < o->clients; i++)
		pthread_join(pcs[i].thread, NULL);
}

/* The first client's error, if any, as the exit code; frees the clients. */
static int
finish_clients(const PerfProduceOptions *o, ProduceClient *pcs)
{
	int			exitcode = MQ_EXIT_OK;

	for (int i = 0; i < o->clients; i++)
	{
		if (pcs[i].failed && exitcode == MQ_EXIT_OK)
		{
			mq_error_report(&pcs[i].error);
			exitcode = mq_error_exit_code(&pcs[i].error);
		}
		mq_error_free(&pcs[i].error);
		producer_free(&pcs[i].producer);
	}
	free(pcs);
	return exitcode;
}

int
cmd_perf_produce(const MqctlCommand *cmd, int argc, char **argv)
{
	static const char *const acks_names[] = {"0", "1", "all"};
	CliParser	p;
	PerfProduceOptions o;
	char	   *payload;
	ProduceClient *pcs;
	PerfStats	stats;
	int			exitcode;

	parse_produce_options(&p, cmd, argc, argv, &o);

	/* random capital letters, as Kafka's tool: text, and not too compressible */
	payload = mq_malloc(o.record_size + 1);
	srand(42);
	for (int64_t i = 0; i < o.record_size; i++)
		payload[i] = 'A' + rand() % 26;

	stats_init(&stats, "sent");
	pcs = start_clients(&o, payload, &stats);
	printf("Sending %lld records of %lld bytes to %s: batches of %d, %d client%s, acks=%s%s.\n",
		   (long long) o.records, (long long) o.record_size, o.topic, o.producer.batch_size,
		   o.clients, o.clients > 1 ? "s" : "", acks_names[o.producer.acks],
		   o.producer.idempotent ? ", idempotent" : "");
	fflush(stdout);

	run_clients(&o, pcs, &stats);
	stats_summary(&stats, "");
	exitcode = finish_clients(&o, pcs);
	if (exitcode == MQ_EXIT_OK && stats.records < o.records)
		mq_log_warning("interrupted after %lld of %lld records", (long long) stats.records,
					   (long long) o.records);
	stats_free(&stats);
	free(payload);
	cli_free(&p);
	return exitcode;
}

static void
parse_consume_options(CliParser *p, const MqctlCommand *cmd, int argc, char **argv,
					  PerfConsumeOptions *o)
{
	static const struct option longopts[] = {
		{"records", required_argument, NULL, 'n'},
		{"group", required_argument, NULL, 'g'},
		{"batch-size", required_argument, NULL, 'b'},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
		{"reporting-interval-ms", required_argument, NULL, OPT_REPORTING_INTERVAL},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(o, 0, sizeof(*o));
	o->records = -1;
	o->batch_size = 1000;
	o->timeout_ms = 10000;
	o->interval_ms = 5000;
	mqctl_parser_init(p, cmd, argc, argv, "n:g:b:", longopts);
	while ((c = cli_next(p)) != -1)
	{
		switch (c)
		{
			case 'n':
				o->records = cli_int(p, "--records", optarg, 1, INT64_MAX);
				break;
			case 'g':
				if (optarg[0] == '\0')
					cli_usage_error(p, "--group must not be empty");
				o->group = optarg;
				break;
			case 'b':
				o->batch_size = (int) cli_int(p, "--batch-size", optarg, 1, 100000);
				break;
			case OPT_TIMEOUT_MS:
				o->timeout_ms = cli_int(p, "--timeout-ms", optarg, 0, INT32_MAX);
				break;
			case OPT_REPORTING_INTERVAL:
				o->interval_ms = cli_int(p, "--reporting-interval-ms", optarg, 1, INT32_MAX);
				break;
		}
	}
	o->topic = cli_positionals(p, 1, 1, "topic name", NULL)[0];
	if (o->records < 0)
		cli_usage_error(p, "--records is required");
}

/* Poll until the records are read, none came for --timeout-ms, or Ctrl-C. */
static void
consume_records(const PerfConsumeOptions *o, MqConsumer *consumer, PerfStats *stats)
{
	int64_t		last_record = mq_now_us();

	while (stats->records < o->records && !perf_stop)
	{
		int64_t		want = o->records - stats->records < o->batch_size ?
			o->records - stats->records : o->batch_size;
		int64_t		left = o->timeout_ms - (mq_now_us() - last_record) / 1000;
		int64_t		t0 = mq_now_us();
		PGresult   *batch = consumer_poll(consumer, (int) want,
										  (int) (left < 0 ? 0 :
												 left < CONSUMER_LONG_POLL_MS ? left :
												 CONSUMER_LONG_POLL_MS));
		int64_t		n = PQntuples(batch);
		int64_t		bytes = 0;

		for (int64_t r = 0; r < n; r++)
			bytes += PQgetlength(batch, r, REC_KEY) + PQgetlength(batch, r, REC_VALUE);
		consumer_commit(consumer, batch, n);
		PQclear(batch);
		if (n > 0)
		{
			stats_add(stats, n, bytes, mq_now_us() - t0);
			last_record = mq_now_us();
		}
		else if ((mq_now_us() - last_record) / 1000 >= o->timeout_ms)
		{
			mq_log_warning("stopping after %lld of %lld records: none came for %lld ms",
						   (long long) stats->records, (long long) o->records,
						   (long long) o->timeout_ms);
			break;
		}
		stats_progress(stats, o->interval_ms);
	}
}

int
cmd_perf_consume(const MqctlCommand *cmd, int argc, char **argv)
{
	CliParser	p;
	PerfConsumeOptions o;
	PGconn	   *conn;
	MqConsumer	consumer;
	PerfStats	stats;

	parse_consume_options(&p, cmd, argc, argv, &o);
	conn = mqctl_connect();
	consumer_open(&consumer, conn, o.topic, o.group, -1, START_EARLIEST, 0);
	printf("Reading %lld records of %s%s%s, %d per poll.\n", (long long) o.records, o.topic,
		   o.group ? " as group " : "", o.group ? o.group : "", o.batch_size);
	fflush(stdout);

	catch_interrupt();
	stats_init(&stats, "received");
	consume_records(&o, &consumer, &stats);
	stats_summary(&stats, "poll ");

	consumer_close(&consumer);
	PQfinish(conn);
	stats_free(&stats);
	cli_free(&p);
	return MQ_EXIT_OK;
}
