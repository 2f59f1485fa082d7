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

/* the leader epochs a response's batches can carry, per partition */
#define FETCH_EPOCHS 8

typedef struct FPart
{
	int32_t		topic;			/* index into topics */
	int32_t		partition;
	int64_t		offset;
	int32_t		max_bytes;
	int32_t		max_records;	/* records to read at most; 0: from max_bytes */
	int32_t		current_epoch;	/* the client's leader epoch (v9+; -1: none) */
	int32_t		last_fetched_epoch;	/* v12+; -1: none */
	/* set by encoding a response */
	int64_t		next_offset;	/* the offset after the records returned */
	int64_t		high_watermark; /* -1: unknown partition */
	int32_t		returned;		/* records returned */
	size_t		returned_bytes; /* their size as the byte limits count it */
	/* the leader epochs from offset on (fetch_epochs.c) */
	int32_t		nepochs;
	int32_t		epoch[FETCH_EPOCHS];
	int64_t		epoch_start[FETCH_EPOCHS];
	int64_t		epochs_end;		/* records from here on wait for the next Fetch */
	/* the fetcher's log diverged: where (fetch_epochs.c); -1: it did not */
	int32_t		diverging_epoch;
	int64_t		diverging_end;
} FPart;

/* a partition a Fetch's forgotten_topics_data takes out of its session */
typedef struct FForgotten
{
	KSlice		key;			/* topic name, or id (v13+) */
	int32_t		partition;
} FForgotten;

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
	bool		rows_only;		/* v4+ read as rows (the daemon encodes) */
	bool		reread;			/* the batches read need splitting: read rows */
	int32_t		min_bytes;
	int32_t		max_bytes;
	int64_t		deadline_us;
	size_t		bytes;			/* record bytes of the last attempt */
	bool		failed;			/* the last attempt got a database error */
	bool		diverged;		/* it answers a diverging epoch: at once */
	bool		final;
	uint64_t	watch_gen;		/* fwatch_gen() when the attempt started */
	struct event *timer;
	KRequest   *req;
	struct FetchState *prev,
			   *next; /* parked list */
	/* fetch sessions (fetch_session.c) */
	int32_t		session_id;		/* as the request says */
	int32_t		session_epoch;
	int32_t		nforgotten;
	FForgotten *forgotten;
	int32_t		sess_id;		/* the session answered (0: none) */
	bool		sess_incremental;
	uint32_t	sess_gen;
	char	   *sess_keys;		/* topics point here after an incremental fetch */
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
	COL_HVALS,
	COL_EPOCH,					/* bounds row: the partition's leader epoch */
	COL_EPOCHS,					/* and its epochs from the fetch offset on */
	COL_EPOCH_STARTS,
	COL_LEO,					/* its log end offset */
	COL_END_LATEST,				/* the end of its last fetched epoch (epoch_end.h) */
	COL_END_FLOOR,
	COL_END_HIGHER
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

/*
 * bounds[k] of a partition the role may not see nor read: Kafka's
 * TOPIC_AUTHORIZATION_FAILED, as SQL's 42501 (whether the topic exists or
 * not); one it may read but that is not there: UNKNOWN_TOPIC_OR_PARTITION
 */
#define BOUNDS_UNAUTHORIZED (-2)

/* a record row of the result, for putting rows in order */
typedef struct FRow
{
	int32_t		part;			/* COL_I */
	int			row;
	int64_t		offset;
} FRow;

/*
 * fetch_sql.c: whether s is answered from the database's record batches
 * (v4+, not --fetch-encoder=daemon); the statement of an attempt, as
 * s->job; the result's rows in order: bounds[k] the bounds row of
 * partition k (-1: unknown; BOUNDS_UNAUTHORIZED), the record rows sorted
 * by partition and offset in *rows (*nrows; the caller frees)
 */
extern bool fetch_batched(const FetchState *s);
extern void fetch_job(FetchState *s);
extern void fetch_order(PGresult *res, int32_t nparts, int *bounds, FRow **rows, int *nrows);

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
 * would, with fp's leader epoch; false (nothing copied) if they hold
 * records of more than one leader epoch, or past fp->epochs_end
 */
extern bool copy_partition(PGresult *res, int row, FPart *fp, size_t *total, KWriter *recs);

/*
 * fetch_epochs.c: the leader epochs of a partition's bounds row into fp;
 * the error of a client's current leader epoch that is not the
 * partition's (KERR_NONE if it is, or none was given); the epoch under
 * which the record at offset was written
 */
extern void fetch_epochs_read(PGresult *res, int row, FPart *fp);
extern int16_t fetch_epoch_check(PGresult *res, int row, const FPart *fp);
extern int32_t fetch_epoch_at(const FPart *fp, int64_t offset);

/*
 * fetch_epochs.c (Fetch v12+): check fp's last fetched epoch against the
 * partition's epochs (its bounds row, and its log start offset): the
 * error (OFFSET_OUT_OF_RANGE when the epoch's end is undefined or the
 * offset is before the log start), or KERR_NONE with fp's diverging
 * epoch and end set when the fetcher's log diverged from this one
 */
extern int16_t fetch_diverging(PGresult *res, int row, FPart *fp, int64_t log_start);

/*
 * fetch_session.c (KIP-227): apply s's session id and epoch (Fetch v7+);
 * an incremental fetch's partitions become all of its session's.  False
 * if the request is answered with a session error (written in s's
 * response).  fsess_keep: whether partition k goes in the response (in
 * an incremental one, only what changed); fsess_sent: the response is
 * sent, its high watermarks are what the session's client knows.
 */
extern bool fsess_begin(FetchState *s);
extern bool fsess_keep(FetchState *s, int32_t k, int16_t code, int64_t hw, int64_t log_start,
					   size_t bytes);
extern void fsess_sent(const FetchState *s);
extern int	fsess_count(void);

/*
 * fetch_watch.c: the database wakes parked fetches.  fwatch_init: the
 * handler's wake-up of a partition's parked fetches; fwatch_gen: the
 * generation to note when an attempt starts; fwatch_missed: whether the
 * high watermark of a partition of s moved since that generation (read
 * again instead of parking); fwatch_park: s parks, watch its partitions; fwatch_recheck_ms:
 * how often parked fetches re-read without a wake-up.
 */
extern void fwatch_init(void (*wake) (const char *topic, int32_t partition));
extern uint64_t fwatch_gen(void);
extern bool fwatch_missed(const FetchState *s, uint64_t since);
extern void fwatch_park(const FetchState *s);
extern int	fwatch_recheck_ms(void);

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
