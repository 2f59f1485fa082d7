/*-------------------------------------------------------------------------
 *
 * perf.c
 *	  "mqctl perf produce" and "mqctl perf consume": throughput and latency
 *	  measurements in the manner of Kafka's producer-perf-test and
 *	  consumer-perf-test, with the same progress and summary lines so that
 *	  existing habits (and parsers) carry over.
 *
 * The unit of latency is the batch: for produce, one mq.send_batch() call
 * with its commit (the moment the batch is acknowledged); for consume,
 * one poll.  Kafka reports per-record latency, which includes time in the
 * client's buffer; a batch here is sent the moment it is full, so batch
 * latency is what a record waits once its batch is complete.
 *
 * perf produce runs one thread per --clients, each with its own
 * connection; the main thread only prints progress.  The batch is built
 * once per thread and sent again and again, so the client spends its time
 * waiting for the server, which is what is being measured.
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
#include "producer.h"

const char	perf_produce_help[] =
"Usage: mqctl perf produce TOPIC --records=N [OPTIONS]\n"
"\n"
"Send N records of random letters to TOPIC as fast as possible (or at\n"
"--throughput), printing progress every few seconds and a summary: records/s,\n"
"MB/s and the latency of a batch (one mq.send_batch call and its commit):\n"
"average, 50th, 95th, 99th and 99.9th percentiles and maximum.\n"
"\n"
"Options:\n"
"  -n, --records=N        records to send (required)\n"
"  -s, --record-size=B    bytes per record value (default 100)\n"
"  -b, --batch=N          records per batch (default 500)\n"
"  -c, --clients=C        connections sending in parallel (default 1)\n"
"      --throughput=R     at most R records/s in all (default -1: no limit)\n"
PRODUCER_DELIVERY_HELP
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
"  -b, --batch-size=N     records per poll (default 1000)\n"
"      --timeout-ms=MS    give up when no record came for MS milliseconds\n"
"                         (default 10000)\n"
"      --reporting-interval-ms=MS\n"
"                         progress line interval (default 5000)\n";

enum
{
	OPT_THROUGHPUT = CLI_OPT_LONG_BASE,
	OPT_ACKS,
	OPT_NO_IDEMPOTENCE,
	OPT_REPORTING_INTERVAL,
	OPT_TIMEOUT_MS
};

#define MB (1024.0 * 1024.0)

/* Counts of one run, shared by the threads that feed them. */
typedef struct PerfStats
{
	pthread_mutex_t lock;
	const char *verb;			/* "sent" or "received" */
	int64_t		start_us;
	/* since the last progress line */
	int64_t		window_start_us;
	int64_t		window_records;
	int64_t		window_bytes;
	int64_t		window_batches;
	int64_t		window_latency_us;
	int64_t		window_max_us;
	/* the whole run */
	int64_t		records;
	int64_t		bytes;
	int64_t    *latencies;		/* one per batch, microseconds */
	int64_t		nlatencies;
	int64_t		cap;
} PerfStats;

static void
stats_init(PerfStats *s, const char *verb)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->verb = verb;
	s->start_us = s->window_start_us = mq_now_us();
}

static void
stats_add(PerfStats *s, int64_t records, int64_t bytes, int64_t latency_us)
{
	pthread_mutex_lock(&s->lock);
	s->window_records += records;
	s->window_bytes += bytes;
	s->window_batches++;
	s->window_latency_us += latency_us;
	if (latency_us > s->window_max_us)
		s->window_max_us = latency_us;
	s->records += records;
	s->bytes += bytes;
	if (s->nlatencies == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->latencies = mq_realloc(s->latencies, sizeof(int64_t) * s->cap);
	}
	s->latencies[s->nlatencies++] = latency_us;
	pthread_mutex_unlock(&s->lock);
}

/* Kafka's progress line, once interval_ms has passed since the last one. */
static void
stats_progress(PerfStats *s, int64_t interval_ms)
{
	int64_t		now = mq_now_us();
	double		secs;

	pthread_mutex_lock(&s->lock);
	if (now - s->window_start_us >= interval_ms * 1000)
	{
		secs = (now - s->window_start_us) / 1e6;
		printf("%lld records %s, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
			   (long long) s->window_records, s->verb, s->window_records / secs,
			   s->window_bytes / MB / secs,
			   s->window_batches ? s->window_latency_us / 1000.0 / s->window_batches : 0.0,
			   s->window_max_us / 1000.0);
		fflush(stdout);
		s->window_start_us = now;
		s->window_records = s->window_bytes = s->window_batches = 0;
		s->window_latency_us = s->window_max_us = 0;
	}
	pthread_mutex_unlock(&s->lock);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* the q-quantile of sorted values (nearest rank), in milliseconds */
static double
quantile_ms(const int64_t *sorted, int64_t n, double q)
{
	int64_t		rank = (int64_t) (q * n + 0.999999);

	if (n == 0)
		return 0;
	if (rank < 1)
		rank = 1;
	return sorted[rank - 1] / 1000.0;
}

/* Kafka's summary line, over the whole run. */
static void
stats_summary(PerfStats *s, const char *what)
{
	double		secs = (mq_now_us() - s->start_us) / 1e6;
	int64_t		sum = 0;
	int64_t		n = s->nlatencies;

	qsort(s->latencies, n, sizeof(int64_t), cmp_int64);
	for (int64_t i = 0; i < n; i++)
		sum += s->latencies[i];
	printf("%lld records %s, %.1f records/sec (%.2f MB/sec), %.2f ms avg %slatency, %.2f ms max %slatency, "
		   "%.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
		   (long long) s->records, s->verb, secs > 0 ? s->records / secs : 0.0,
		   secs > 0 ? s->bytes / MB / secs : 0.0,
		   n ? sum / 1000.0 / n : 0.0, what, n ? s->latencies[n - 1] / 1000.0 : 0.0, what,
		   quantile_ms(s->latencies, n, 0.50), quantile_ms(s->latencies, n, 0.95),
		   quantile_ms(s->latencies, n, 0.99), quantile_ms(s->latencies, n, 0.999));
	fflush(stdout);
}

static void
stats_free(PerfStats *s)
{
	free(s->latencies);
	pthread_mutex_destroy(&s->lock);
}

/* ---------------------------------------------------------------------- */

/* One producing thread. */
typedef struct ProduceClient
{
	pthread_t	thread;
	MqProducer	producer;
	int64_t		records;		/* this client's share */
	int64_t		batch;
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
		if (pc->rate > 0)
		{
			int64_t		due = start + (int64_t) (done / pc->rate * 1e6);

			if (due > mq_now_us())
				mq_sleep_ms((due - mq_now_us()) / 1000);
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

int
cmd_perf_produce(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"records", required_argument, NULL, 'n'},
		{"record-size", required_argument, NULL, 's'},
		{"batch", required_argument, NULL, 'b'},
		{"clients", required_argument, NULL, 'c'},
		{"throughput", required_argument, NULL, OPT_THROUGHPUT},
		{"acks", required_argument, NULL, OPT_ACKS},
		{"no-idempotence", no_argument, NULL, OPT_NO_IDEMPOTENCE},
		{"reporting-interval-ms", required_argument, NULL, OPT_REPORTING_INTERVAL},
		{NULL, 0, NULL, 0}
	};
	static const char *const acks_names[] = {"0", "1", "all"};
	CliParser	p;
	int64_t		records = -1;
	int64_t		record_size = 100;
	int64_t		batch = 500;
	int64_t		clients = 1;
	int64_t		throughput = -1;
	int64_t		interval_ms = 5000;
	MqAcks		acks = MQ_ACKS_1;
	bool		idempotent = true;
	const char *topic;
	char	   *payload;
	ProduceClient *pcs;
	PerfStats	stats;
	int			exitcode = MQ_EXIT_OK;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, "n:s:b:c:", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		switch (c)
		{
			case 'n':
				records = cli_int(&p, "--records", optarg, 1, INT64_MAX);
				break;
			case 's':
				record_size = cli_int(&p, "--record-size", optarg, 0, 100 * 1024 * 1024);
				break;
			case 'b':
				batch = cli_int(&p, "--batch", optarg, 1, 1000000);
				break;
			case 'c':
				clients = cli_int(&p, "--clients", optarg, 1, 256);
				break;
			case OPT_THROUGHPUT:
				throughput = cli_int(&p, "--throughput", optarg, -1, INT64_MAX);
				if (throughput == 0)
					cli_usage_error(&p, "--throughput must be positive, or -1 for no limit");
				break;
			case OPT_ACKS:
				acks = producer_parse_acks(&p, optarg);
				break;
			case OPT_NO_IDEMPOTENCE:
				idempotent = false;
				break;
			case OPT_REPORTING_INTERVAL:
				interval_ms = cli_int(&p, "--reporting-interval-ms", optarg, 1, INT32_MAX);
				break;
		}
	}
	topic = cli_positionals(&p, 1, 1, "topic name", NULL)[0];
	if (records < 0)
		cli_usage_error(&p, "--records is required");
	if (batch * record_size > 512 * 1024 * 1024)
		cli_usage_error(&p, "a batch of %lld records of %lld bytes is over 512 MB: use a smaller --batch",
						(long long) batch, (long long) record_size);

	/* random capital letters, as Kafka's tool: text, and not too compressible */
	payload = mq_malloc(record_size + 1);
	srand(42);
	for (int64_t i = 0; i < record_size; i++)
		payload[i] = 'A' + rand() % 26;

	/* connect everyone first, so that a bad connection fails before timing */
	pcs = mq_malloc0(sizeof(ProduceClient) * clients);
	stats_init(&stats, "sent");
	for (int64_t i = 0; i < clients; i++)
	{
		ProduceClient *pc = &pcs[i];

		producer_init(&pc->producer, mqctl_connect(), topic, -1, false, false, acks,
					  idempotent, 0);
		pc->records = records / clients + (i < records % clients);
		pc->batch = batch;
		pc->rate = throughput > 0 ? (double) throughput / clients : 0;
		pc->payload = payload;
		pc->record_size = record_size;
		pc->stats = &stats;
	}
	printf("Sending %lld records of %lld bytes to %s: batches of %lld, %lld client%s, acks=%s%s.\n",
		   (long long) records, (long long) record_size, topic, (long long) batch,
		   (long long) clients, clients > 1 ? "s" : "", acks_names[acks],
		   idempotent ? ", idempotent" : "");
	fflush(stdout);

	catch_interrupt();
	stats.start_us = stats.window_start_us = mq_now_us();
	for (int64_t i = 0; i < clients; i++)
		if (pthread_create(&pcs[i].thread, NULL, produce_client, &pcs[i]) != 0)
			mq_fatal(MQ_EXIT_LOCAL, "could not start a thread");

	/* progress until every client is done */
	for (;;)
	{
		int64_t		total;

		mq_sleep_ms(50);
		stats_progress(&stats, interval_ms);
		pthread_mutex_lock(&stats.lock);
		total = stats.records;
		pthread_mutex_unlock(&stats.lock);
		if (total >= records || perf_stop)
			break;
	}
	for (int64_t i = 0; i < clients; i++)
		pthread_join(pcs[i].thread, NULL);
	stats_summary(&stats, "");

	for (int64_t i = 0; i < clients; i++)
	{
		if (pcs[i].failed && exitcode == MQ_EXIT_OK)
		{
			mq_error_report(&pcs[i].error);
			exitcode = mq_error_exit_code(&pcs[i].error);
		}
		mq_error_free(&pcs[i].error);
		producer_free(&pcs[i].producer);
	}
	if (exitcode == MQ_EXIT_OK && stats.records < records)
		mq_log_warning("interrupted after %lld of %lld records", (long long) stats.records,
					   (long long) records);
	stats_free(&stats);
	free(pcs);
	free(payload);
	cli_free(&p);
	return exitcode;
}

int
cmd_perf_consume(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"records", required_argument, NULL, 'n'},
		{"group", required_argument, NULL, 'g'},
		{"batch-size", required_argument, NULL, 'b'},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
		{"reporting-interval-ms", required_argument, NULL, OPT_REPORTING_INTERVAL},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	int64_t		records = -1;
	const char *group = NULL;
	int64_t		batch_size = 1000;
	int64_t		timeout_ms = 10000;
	int64_t		interval_ms = 5000;
	const char *topic;
	PGconn	   *conn;
	MqConsumer	consumer;
	PerfStats	stats;
	int64_t		last_record;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, "n:g:b:", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		switch (c)
		{
			case 'n':
				records = cli_int(&p, "--records", optarg, 1, INT64_MAX);
				break;
			case 'g':
				if (optarg[0] == '\0')
					cli_usage_error(&p, "--group must not be empty");
				group = optarg;
				break;
			case 'b':
				batch_size = cli_int(&p, "--batch-size", optarg, 1, 100000);
				break;
			case OPT_TIMEOUT_MS:
				timeout_ms = cli_int(&p, "--timeout-ms", optarg, 0, INT32_MAX);
				break;
			case OPT_REPORTING_INTERVAL:
				interval_ms = cli_int(&p, "--reporting-interval-ms", optarg, 1, INT32_MAX);
				break;
		}
	}
	topic = cli_positionals(&p, 1, 1, "topic name", NULL)[0];
	if (records < 0)
		cli_usage_error(&p, "--records is required");

	conn = mqctl_connect();
	consumer_open(&consumer, conn, topic, group, -1, START_EARLIEST, 0);
	printf("Reading %lld records of %s%s%s, %lld per poll.\n", (long long) records, topic,
		   group ? " as group " : "", group ? group : "", (long long) batch_size);
	fflush(stdout);

	catch_interrupt();
	stats_init(&stats, "received");
	last_record = mq_now_us();
	while (stats.records < records && !perf_stop)
	{
		int64_t		want = records - stats.records < batch_size ? records - stats.records : batch_size;
		int64_t		left = timeout_ms - (mq_now_us() - last_record) / 1000;
		int64_t		t0 = mq_now_us();
		PGresult   *batch = consumer_poll(&consumer, (int) want,
										  (int) (left < 0 ? 0 :
												 left < CONSUMER_LONG_POLL_MS ? left :
												 CONSUMER_LONG_POLL_MS));
		int64_t		n = PQntuples(batch);
		int64_t		bytes = 0;

		for (int64_t r = 0; r < n; r++)
			bytes += PQgetlength(batch, r, REC_KEY) + PQgetlength(batch, r, REC_VALUE);
		consumer_commit(&consumer, batch, n);
		PQclear(batch);
		if (n > 0)
		{
			stats_add(&stats, n, bytes, mq_now_us() - t0);
			last_record = mq_now_us();
		}
		else if ((mq_now_us() - last_record) / 1000 >= timeout_ms)
		{
			mq_log_warning("stopping after %lld of %lld records: none came for %lld ms",
						   (long long) stats.records, (long long) records, (long long) timeout_ms);
			break;
		}
		stats_progress(&stats, interval_ms);
	}
	stats_summary(&stats, "poll ");

	consumer_close(&consumer);
	PQfinish(conn);
	stats_free(&stats);
	cli_free(&p);
	return MQ_EXIT_OK;
}
