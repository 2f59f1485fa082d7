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
	uint8_t    *ids;			/* v13+: ntopics topic ids of 16 bytes */
	char	   *names;			/* v13+: the names resolved, topics point here */
	void		(*resolved) (struct FetchState *s);	/* then (fetch_ids.c) */
	int32_t		nparts;
	FPart	   *parts;
	int8_t		magic;			/* record format of the response: 2 (v4+), 1, 0 */
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

/* the columns of a Fetch statement's result (h_fetch.c) */
enum
{
	COL_I,						/* the partition's index in the request, from 1 */
	COL_LSO,					/* bounds row: log start offset, high watermark */
	COL_HW,
	COL_OFFSET,					/* record row: offset (null on a bounds row) */
	COL_TS,
	COL_KEY,
	COL_VALUE,
	COL_LOG_APPEND,
	COL_HKEYS,
	COL_HVALS
};

/*
 * The Fetch statement of v4+ when the database encodes (h_fetch.c): after
 * the same bounds rows, one row per partition with its records as record
 * batches (mq.kafka_fetch), COL_OFFSET holding the next offset.
 */
enum
{
	COL_B_RECORDS = COL_OFFSET + 1,	/* records in the batches */
	COL_B_BYTES,				/* their size as the byte limits count it */
	COL_B_BATCHES
};

/* a record row of the result, for putting rows in order */
typedef struct FRow
{
	int32_t		part;			/* COL_I */
	int			row;
	int64_t		offset;
} FRow;

/*
 * fetch_records.c: the records of one partition (rows[0..n), in offset
 * order) as batches (magic 2) or messages (magic 0, 1) in recs;
 * fp->next_offset becomes the offset after the last one written
 */
extern void encode_partition(PGresult *res, const FRow *rows, int n, FPart *fp, size_t *total,
							 int32_t max_total, KWriter *recs, int magic);

/*
 * fetch_records.c: the batches the database encoded for one partition
 * (its row of the statement, or -1: none) into recs, as encode_partition
 */
extern void copy_partition(PGresult *res, int row, FPart *fp, size_t *total, KWriter *recs);

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

/* fetch_ids.c: resolve s's topic ids (v13+), then call then(s) */
extern void fetch_resolve(FetchState *s, void (*then) (FetchState *s));

/*
 * fetch_ahead.c: true if a read-ahead of exactly s's request exists; it
 * then completes s (at once, or when its statement is done)
 */
extern bool ahead_take(FetchState *s, const FetchOps *ops);
/* fetch_ahead.c: s's response is about to be sent: maybe read ahead */
extern void ahead_after(const FetchState *s, const FetchOps *ops);

#endif							/* MQK_FETCH_H */
