/*-------------------------------------------------------------------------
 *
 * offsets.h
 *	  The state of a ListOffsets, OffsetCommit or OffsetFetch request and
 *	  the readers and writers of their topic and partition arrays
 *	  (h_offsets.c), shared with ListOffsets (h_list_offsets.c).  Loop
 *	  thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_OFFSETS_H
#define MQK_OFFSETS_H

#include "kfan.h"
#include "kjob.h"
#include "mqkafka.h"
#include "pgbinary.h"

typedef struct OPart
{
	int32_t		topic;
	int32_t		partition;
	int64_t		timestamp;		/* ListOffsets */
	int32_t		max_offsets;	/* ListOffsets v0 */
	int32_t		leader_epoch;	/* OffsetForLeaderEpoch: the epoch asked */
	int32_t		current_epoch;	/* and the client's current one (-1: none) */
	int16_t		code;			/* OffsetCommit: the coordinator's verdict */
	KJob	   *job;			/* whose statements stmt indexes */
	int			stmt;
	int			row;			/* ListOffsets: stmt's result row (or 0) */
} OPart;

typedef struct OffState
{
	KJob		job;
	int32_t		ntopics;		/* -1: OffsetFetch of all the group's offsets */
	KSlice	   *topics;
	int32_t		nparts;
	OPart	   *parts;
	char	   *group;
	int16_t		verdict;		/* OffsetCommit: the coordinator's */
	bool		int_parts;		/* partitions are bare int32s (OffsetFetch) */
	int32_t		ngroups;		/* OffsetFetch: the request's group entries */
	KSlice	   *groups;			/* (v8+ a list, before that one), each read */
	int32_t		group_at;		/* in turn: the one answered now */
	bool		starting;		/* its jobs being started (fetch_groups) */
	bool		answered;		/* and answered meanwhile */
	KFan		fan;			/* OffsetCommit, OffsetFetch: a job per leader */
	bool		require_stable; /* OffsetFetch v7+: pending offsets are unstable */
	KJob		coord;			/* and in a cluster the coordinator's (as the daemon) */
	KRequest	coord_req;
	KDoneFn		stable_done;
} OffState;

/* a new state, owned by req */
extern OffState *off_state(KRequest *req);
/*
 * OffsetFetch: the state emptied for the request's next group entry,
 * keeping what the request says for all of them (its entries,
 * int_parts, require_stable)
 */
extern void off_state_next_group(OffState *s);

/*
 * The topics and partitions of a request (arrays of topic name, then
 * partitions of at least part_size bytes each); read_part reads one
 * partition's fields and adds its statement.
 */
extern void read_topics(KRequest *req, OffState *s, size_t part_size,
						void (*read_part) (KRequest *req, OffState *s, OPart *op,
										   const char *topic));
/* write each topic with its partitions, write_part writing one */
extern void write_topics(KRequest *req, OffState *s,
						 void (*write_part) (KRequest *req, OffState *s, OPart *op));
/* the job of the pool of the node leading (topic, partition); NULL: *code */
extern KJob *offsets_leader_job(OffState *s, const char *topic, int32_t partition, int16_t *code);
/* a statement's failure as a coordinator reports its offsets log's */
extern int16_t offsets_error(const KStmt *st);

/*
 * offsets_stable.c, OffsetFetch's require_stable: a check on each node of
 * the fan (after its jobs are made), the coordinator's once the fan is
 * done (then done(req)), and whether a partition's offset is pending.
 */
extern void stable_add_checks(OffState *s);
extern void stable_ask_coordinator(KRequest *req, OffState *s, KDoneFn done);
extern bool stable_pending(const OffState *s, const char *topic, size_t len, int32_t partition);

/*
 * TxnOffsetCommit in a cluster (h_txn.c): note on the coordinator the
 * partitions of group whose offsets transaction id staged on its node, to
 * count until deadline (the transaction's), then done(req);
 * stable_noted says whether the note was written.
 */
typedef struct StableNote
{
	KJob		job;
	KRequest	sub;			/* no role: the daemon's on the coordinator */
	KRequest   *req;
	KDoneFn		done;
} StableNote;

extern void stable_note(KRequest *req, StableNote *n, const char *id, const char *group,
						MqArray *topics, MqArray *parts, const char *deadline, KDoneFn done);
extern bool stable_noted(const StableNote *n);

#endif							/* MQK_OFFSETS_H */
