/*
 * driver.c
 *	  The peers benchmark's driver: one workload against one system through
 *	  that system's client (peers.h), timed with CLOCK_MONOTONIC.
 *
 * Usage: peers-CLIENT MODE SYSTEM TARGET NAME [-c CLIENTS] [-s SECONDS]
 *                     [-b BATCH] [-n COUNT] [-r RATE]
 *   setup     create the topic/queue/stream and the consumer group
 *   produce   CLIENTS threads, each sending units of BATCH records of 100 B
 *             for SECONDS after a quarter of that as warm-up (longer if
 *             no unit completed by then: until one does); prints
 *             records/s
 *   fill      one thread sends COUNT records in units of BATCH (a backlog)
 *   consume   one thread consumes COUNT records BATCH at a time, each batch
 *             acknowledged; prints records/s
 *   latency   one thread sends single records at RATE per second, each
 *             carrying its send time; another consumes them as they come;
 *             after COUNT records prints p50 and p99 in ms (the first 5 %
 *             are a warm-up and not counted)
 * Threads share nothing but an atomic counter and the stop flag; each has
 * its own connection.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peers.h"

#define VALUE_LEN 100
#define MAX_BATCH 10000

typedef struct Run
{
	PeerArgs a;
	char		mode[16];
	int			clients;
	double		seconds;
	int			batch;
	long		count;
	double		rate;
	atomic_long produced;
	atomic_int	stop;
	int64_t    *lat;			/* latency mode: one slot per record */
	long		nlat;
}			Run;

void
peer_die(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

int64_t
peer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* BATCH values of 100 printable bytes (no backslash, quote or newline) */
static const char *const *
make_values(int n)
{
	const char **v = malloc(sizeof(char *) * n);

	for (int i = 0; i < n; i++)
	{
		char	   *s = malloc(VALUE_LEN + 1);

		for (int j = 0; j < VALUE_LEN; j++)
			s[j] = 'a' + (i * 7 + j) % 26;
		s[VALUE_LEN] = '\0';
		v[i] = s;
	}
	return v;
}

static void *
produce_thread(void *arg)
{
	Run *r = arg;
	void	   *c = peer_ops.open(&r->a, 0);
	const char *const *values = make_values(r->batch);

	while (!atomic_load(&r->stop))
	{
		peer_ops.produce(c, values, VALUE_LEN, r->batch);
		atomic_fetch_add(&r->produced, r->batch);
	}
	peer_ops.close(c);
	return NULL;
}

static void
run_produce(Run *r)
{
	pthread_t  *t = malloc(sizeof(pthread_t) * r->clients);
	int64_t		t0,
				t1;

	for (int i = 0; i < r->clients; i++)
		pthread_create(&t[i], NULL, produce_thread, r);
	usleep((useconds_t) (r->seconds * 0.25e6));	/* warm-up */
	atomic_store(&r->produced, 0);
	t0 = peer_now_ns();
	usleep((useconds_t) (r->seconds * 1e6));
	/* a unit slower than the run (a loaded machine, a short run): its end */
	while (atomic_load(&r->produced) == 0)
		usleep(1000);
	t1 = peer_now_ns();
	long		n = atomic_load(&r->produced);

	atomic_store(&r->stop, 1);
	for (int i = 0; i < r->clients; i++)
		pthread_join(t[i], NULL);
	printf("%.0f\n", n / ((t1 - t0) / 1e9));
}

static void
run_fill(Run *r)
{
	void	   *c = peer_ops.open(&r->a, 0);
	const char *const *values = make_values(r->batch);

	for (long done = 0; done < r->count;)
	{
		int			n = r->count - done < r->batch ? (int) (r->count - done) : r->batch;

		peer_ops.produce(c, values, VALUE_LEN, n);
		done += n;
	}
	peer_ops.close(c);
}

static void
count_record(const char *value, int len, void *arg)
{
	(void) value;
	(void) len;
	(*(long *) arg)++;
}

static void
run_consume(Run *r)
{
	void	   *c = peer_ops.open(&r->a, 0);
	long		got = 0;
	int64_t		t0 = peer_now_ns(),
				idle_since = t0;

	while (got < r->count)
	{
		if (peer_ops.consume(c, r->batch, 100, count_record, &got) > 0)
			idle_since = peer_now_ns();
		else if (peer_now_ns() - idle_since > 30 * (int64_t) 1000000000)
			peer_die("consume: nothing for 30 s after %ld of %ld records", got, r->count);
	}
	printf("%.0f\n", got / ((peer_now_ns() - t0) / 1e9));
	peer_ops.close(c);
}

static void
latency_record(const char *value, int len, void *arg)
{
	Run *r = arg;
	char		buf[32];
	int64_t		now = peer_now_ns();

	if (len < 20 || r->nlat >= r->count)
		return;
	memcpy(buf, value, 20);
	buf[20] = '\0';
	r->lat[r->nlat++] = now - strtoll(buf, NULL, 10);
}

static void *
latency_consumer(void *arg)
{
	Run *r = arg;
	void	   *c = peer_ops.open(&r->a, 1);
	int64_t		idle_since = peer_now_ns();

	while (r->nlat < r->count)
	{
		if (peer_ops.consume(c, 100, 200, latency_record, r) > 0)
			idle_since = peer_now_ns();
		else if (peer_now_ns() - idle_since > 30 * (int64_t) 1000000000)
			peer_die("latency: nothing for 30 s after %ld of %ld records", r->nlat, r->count);
	}
	peer_ops.close(c);
	return NULL;
}

static int
cmp_i64(const void *x, const void *y)
{
	int64_t		a = *(const int64_t *) x,
				b = *(const int64_t *) y;

	return (a > b) - (a < b);
}

static void
run_latency(Run *r)
{
	pthread_t	t;
	void	   *c = peer_ops.open(&r->a, 1);
	char		value[VALUE_LEN + 1];
	const char *values[1] = {value};
	int64_t		period = (int64_t) (1e9 / r->rate),
				next = peer_now_ns();

	r->lat = malloc(sizeof(int64_t) * r->count);
	pthread_create(&t, NULL, latency_consumer, r);
	usleep(300000);				/* the consumer is waiting */
	memset(value, 'x', VALUE_LEN);
	value[VALUE_LEN] = '\0';
	for (long i = 0; i < r->count; i++)
	{
		next += period;
		while (peer_now_ns() < next)
			usleep(100);
		snprintf(value, sizeof(value), "%020lld", (long long) peer_now_ns());
		value[20] = 'x';
		peer_ops.produce(c, values, VALUE_LEN, 1);
	}
	pthread_join(t, NULL);
	peer_ops.close(c);

	long		skip = r->count / 20,
				n = r->count - skip;

	qsort(r->lat + skip, n, sizeof(int64_t), cmp_i64);
	printf("%.3f %.3f\n", r->lat[skip + n / 2] / 1e6, r->lat[skip + (n * 99) / 100] / 1e6);
}

static void
parse(Run *r, int argc, char **argv)
{
	int			o;

	if (argc < 5)
		peer_die("usage: %s setup|produce|fill|consume|latency SYSTEM TARGET NAME [-c N] [-s S] [-b N] [-n N] [-r R]", argv[0]);
	snprintf(r->mode, sizeof(r->mode), "%s", argv[1]);
	r->a.system = argv[2];
	r->a.target = argv[3];
	r->a.name = argv[4];
	r->clients = 1;
	r->seconds = 5;
	r->batch = 1;
	r->count = 1000;
	r->rate = 500;
	optind = 5;
	while ((o = getopt(argc, argv, "c:s:b:n:r:")) != -1)
	{
		switch (o)
		{
			case 'c':
				r->clients = atoi(optarg);
				break;
			case 's':
				r->seconds = atof(optarg);
				break;
			case 'b':
				r->batch = atoi(optarg);
				break;
			case 'n':
				r->count = atol(optarg);
				break;
			case 'r':
				r->rate = atof(optarg);
				break;
			default: peer_die("unknown option");
		}
	}
	if (r->clients < 1 || r->batch < 1 || r->batch > MAX_BATCH || r->count < 20 || r->rate <= 0)
		peer_die("bad option value");
}

int
main(int argc, char **argv)
{
	static Run r;

	parse(&r, argc, argv);
	if (strcmp(r.mode, "setup") == 0)
		peer_ops.setup(&r.a);
	else if (strcmp(r.mode, "produce") == 0)
		run_produce(&r);
	else if (strcmp(r.mode, "fill") == 0)
		run_fill(&r);
	else if (strcmp(r.mode, "consume") == 0)
		run_consume(&r);
	else if (strcmp(r.mode, "latency") == 0)
		run_latency(&r);
	else
		peer_die("unknown mode %s", r.mode);
	return 0;
}
