/*-------------------------------------------------------------------------
 *
 * fetch.h
 *	  The state of one Fetch request, shared by its handler (h_fetch.c)
 *	  and the read-ahead (fetch_ahead.c), which runs a consumer's next
 *	  Fetch before it arrives.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_FETCH_H
#define MQK_FETCH_H

#include "kjob.h"
#include "mqkafka.h"

typedef struct FPart
{
	int32_t		topic;			/* index into topics */
	int32_t		partition;
	int64_t		offset;
	int32_t		max_bytes;
	int32_t		max_records;	/* records to read at most; 0: from max_bytes */
	/* set by encoding a response */
	int64_t		next_offset;	/* the offset after the records returned */
	int64_t		high_watermark; /* -1: unknown partition */
	int32_t		returned;		/* records returned */
	size_t		returned_bytes; /* their size as the byte limits count it */
} FPart;

typedef struct FetchState
{
	KJob		job;
	int32_t		ntopics;
	KSlice	   *topics;
	int32_t		nparts;
	FPart	   *parts;
	int32_t		min_bytes;
	int32_t		max_bytes;
	int64_t		deadline_us;
	size_t		bytes;			/* record bytes of the last attempt */
	bool		failed;			/* the last attempt got a database error */
	bool		final;
	struct event *timer;
	KRequest   *req;
	struct FetchState *prev,
			   *next; /* parked list */
} FetchState;

/*
 * What the read-ahead (below the handler) runs of the handler's, handed
 * down with each call: the statement that reads a FetchState's
 * partitions (as its job), and the pool's done callback of an attempt.
 */
typedef struct FetchOps
{
	void		(*job) (FetchState *s);
	KDoneFn		done;
} FetchOps;

/*
 * fetch_ahead.c: true if a read-ahead of exactly s's request exists; it
 * then completes s (at once, or when its statement is done)
 */
extern bool ahead_take(FetchState *s, const FetchOps *ops);
/* fetch_ahead.c: s's response is about to be sent: maybe read ahead */
extern void ahead_after(const FetchState *s, const FetchOps *ops);

#endif							/* MQK_FETCH_H */
