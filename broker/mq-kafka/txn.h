/*-------------------------------------------------------------------------
 *
 * txn.h
 *	  What the transaction APIs' handlers share (h_txn.c, h_txn_add.c): a
 *	  request's transactions, topics and partitions, decoded, and the
 *	  statements run for them.  Loop thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_TXN_H
#define MQK_TXN_H

#include "handlers.h"
#include "offsets.h"

/* one partition (AddPartitionsToTxn, TxnOffsetCommit) */
typedef struct TPart
{
	int32_t		txn;			/* index into txns */
	int32_t		topic;			/* index into topics */
	int32_t		partition;
	int16_t		code;			/* refused before the database */
	/* its statement, or -1 (AddPartitionsToTxn: its row in the statement) */
	int			stmt;
} TPart;

/* one transaction's ids */
typedef struct TId
{
	KSlice		id;
	int64_t		producer_id;
	int16_t		epoch;
} TId;

typedef struct TxnState
{
	KJob		job;
	int32_t		ntxns;
	TId		   *txns;
	int32_t		ntopics;
	KSlice	   *topics;
	int32_t    *topic_txn;		/* each topic's transaction */
	int32_t		nparts;
	TPart	   *parts;
	int16_t		code;			/* AddOffsetsToTxn, EndTxn; member check */
	TxnRemote	remote;			/* TxnOffsetCommit: on the transaction's node */
	char	   *group;			/* TxnOffsetCommit's */
	StableNote	note;			/* and in a cluster its note on the coordinator */
	KJob	   *txn_jobs;		/* AddPartitionsToTxn: each transaction's */
	TxnRemote  *txn_remotes;	/* and where it runs */
	int32_t		running;		/* the next transaction to run */
} TxnState;

/* kw_topic_parts' view of a request's partitions */
typedef struct TWrite
{
	KRequest   *req;
	TxnState   *s;
} TWrite;

extern TxnState *txn_state_new(KRequest *req, size_t left);
extern int16_t txn_code(const KStmt *st, int16_t v, bool fenced_code);
extern KStmt *job_stmt(KJob *job, const char *sql, const TId *t);
extern void read_ids(KReader *r, TId *t);
extern int32_t tpart_topic(const void *arg, int32_t i);

#endif							/* MQK_TXN_H */
