/*-------------------------------------------------------------------------
 *
 * perf_stats.h
 *	  The counts of a "mqctl perf" run and their output: records, bytes and
 *	  the latency of every batch, Kafka's progress line every interval and
 *	  its summary line with percentiles at the end.
 *
 * The producing threads of "perf produce" feed one PerfStats at the same
 * time: every function takes its lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PERF_STATS_H
#define MQCTL_PERF_STATS_H

#include <pthread.h>
#include <stdint.h>

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

/* verb: "sent" or "received", for the lines */
extern void stats_init(PerfStats *s, const char *verb);
/* (Re)start the clock: the run begins now. */
extern void stats_start(PerfStats *s);
/* One batch of records and bytes, which took latency_us. */
extern void stats_add(PerfStats *s, int64_t records, int64_t bytes, int64_t latency_us);
/* The records counted so far. */
extern int64_t stats_records(PerfStats *s);
/* Kafka's progress line, once interval_ms has passed since the last one. */
extern void stats_progress(PerfStats *s, int64_t interval_ms);
/* Kafka's summary line; what qualifies the latency ("" or "poll "). */
extern void stats_summary(PerfStats *s, const char *what);
extern void stats_free(PerfStats *s);

#endif							/* MQCTL_PERF_STATS_H */
