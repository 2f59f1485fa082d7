/*-------------------------------------------------------------------------
 *
 * perf_stats.c
 *	  Counting a "mqctl perf" run and printing Kafka's progress and summary
 *	  lines (see perf_stats.h), so that habits and parsers of Kafka's
 *	  producer-perf-test and consumer-perf-test carry over.
 *
 * Percentiles are by nearest rank over every batch's latency, kept for
 * the whole run (8 bytes a batch).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_stats.h"
#include "util.h"

#define MB (1024.0 * 1024.0)

void
stats_init(PerfStats *s, const char *verb)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->verb = verb;
	s->start_us = s->window_start_us = mq_now_us();
}

void
stats_start(PerfStats *s)
{
	pthread_mutex_lock(&s->lock);
	s->start_us = s->window_start_us = mq_now_us();
	pthread_mutex_unlock(&s->lock);
}

int64_t
stats_records(PerfStats *s)
{
	int64_t		n;

	pthread_mutex_lock(&s->lock);
	n = s->records;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void
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

void
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

void
stats_summary(PerfStats *s, const char *what)
{
	double		secs = (mq_now_us() - s->start_us) / 1e6;
	int64_t		sum = 0;
	int64_t		n = s->nlatencies;

	if (n > 0)
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

void
stats_free(PerfStats *s)
{
	free(s->latencies);
	pthread_mutex_destroy(&s->lock);
}
