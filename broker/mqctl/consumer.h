/*-------------------------------------------------------------------------
 *
 * consumer.h
 *	  The consuming engine: reading a topic in batches for "mqctl consume"
 *	  and "mqctl perf consume", as a member of a consumer group (joined,
 *	  heartbeating, mq.poll, offsets committed with mq.commit_offset) or
 *	  by offset without a group (mq.fetch).  The commands' options and
 *	  output are cmd_consume.c's and cmd_perf.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_CONSUMER_H
#define MQCTL_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "pgbinary.h"
#include "route.h"
#include "util.h"

/* Where reading starts when there is no committed offset to go on. */
typedef enum ConsumerStart
{
	START_LATEST,				/* only records produced from now on */
	START_EARLIEST,				/* the log start */
	START_OFFSET				/* a given offset (one partition) */
} ConsumerStart;

/* Columns of a batch (binary format): int4, int8, int8, bytea, bytea, text */
enum
{
	REC_PARTITION,
	REC_OFFSET,
	REC_TIMESTAMP,				/* milliseconds since 1970, as Kafka's */
	REC_KEY,
	REC_VALUE,
	REC_HEADERS					/* jsonb as text */
};

/*
 * The record columns of a batch, in REC_* order; f is mq.fetch/mq.poll.
 * EXTRACT gives numeric, exact to the microsecond, where date_part's
 * float8 could round a millisecond the wrong way.
 */
#define CONSUMER_RECORD_COLUMNS \
	"f.partition, f.msg_offset," \
	" pg_catalog.floor(EXTRACT(epoch FROM f.\"timestamp\") * 1000)::int8," \
	" f.key, f.value, f.headers::text"

typedef struct MqConsumer
{
	PGconn	   *conn;
	PGcancel   *cancel;			/* to cut a wait short (consumer_interrupt) */
	const char *topic;
	const char *group;			/* NULL: read by offset, commit nothing */
	int			nparts;			/* without group: partitions read ... */
	int32_t    *partitions;
	int64_t    *next;			/* ... and the next offset of each */
	int			rotation;		/* which partition comes first next time */
	bool		in_txn;			/* a group batch holds its claims */
	bool		cannot_wait;	/* no rights for the several-partition wait */

	/* a group member: on one node (consumer_member.c) or a cluster's */
	char	   *member_id;
	int32_t		generation;
	int64_t		heartbeat_due_us;

	/* a cluster group through the coordinator (consumer_route.c) */
	MqRouter   *router;			/* non-NULL: conn is the coordinator's */
	ConsumerStart start;
	bool	   *assigned;		/* per partition of router */
	int32_t		nassigned;		/* entries of assigned */
	PGconn	   *txn_conn;		/* the leader whose transaction holds the batch */
	int			leader_rotation;
} MqConsumer;

/*
 * A group member's session: the group drops a member that has not
 * heartbeated for CONSUMER_SESSION_TIMEOUT_MS (mq.join_group's
 * session_timeout_ms; Kafka's session.timeout.ms is 45 s); it heartbeats
 * every CONSUMER_HEARTBEAT_MS from its poll loop.
 */
#define CONSUMER_SESSION_TIMEOUT_MS 10000
#define CONSUMER_HEARTBEAT_MS		1000

/* A heartbeat (or a join) went: the next is due an interval from now. */
static inline void
consumer_heartbeat_sent(MqConsumer *c)
{
	c->heartbeat_due_us = mq_now_us() + (int64_t) CONSUMER_HEARTBEAT_MS * 1000;
}

/* Is a heartbeat due?  If so, it counts as sent. */
static inline bool
consumer_heartbeat_due(MqConsumer *c)
{
	if (mq_now_us() < c->heartbeat_due_us)
		return false;
	consumer_heartbeat_sent(c);
	return true;
}

/*
 * Start reading topic.  With a group, it joins the group (leaving it in
 * consumer_close()), and start only applies to partitions the group has
 * no committed offset for (START_LATEST commits their end offsets first,
 * as Kafka's auto.offset.reset=latest).  Without a group,
 * partition -1 reads all partitions.  Exits through mqctl_fail() on errors.
 */
extern void consumer_open(MqConsumer *c, PGconn *conn, const char *topic,
						  const char *group, int32_t partition,
						  ConsumerStart start, int64_t offset);

/*
 * The longest wait of one poll for records to arrive (long polling: the
 * server wakes it when a producer commits).  Ctrl-C cuts a wait short
 * (consumer_interrupt), so this only bounds how long a statement runs.
 */
#define CONSUMER_LONG_POLL_MS 1000

/* a member heartbeats between polls: a poll must not wait longer */
_Static_assert(CONSUMER_LONG_POLL_MS <= CONSUMER_HEARTBEAT_MS,
			   "a long poll would delay a member's heartbeat");

/*
 * The next batch, up to max_records.  When there is nothing to read, wait
 * up to wait_ms for records to arrive (long polling: the server wakes the
 * wait when a producer commits to the topic; a group member waits at
 * most CONSUMER_HEARTBEAT_MS, and heartbeats first when due).  In a group,
 * a non-empty batch leaves a transaction open (holding the partitions'
 * claims) until consumer_commit().  Returns NULL, which is an empty batch
 * for PQntuples() and PQclear(), when consumer_interrupt() cut a wait
 * short.
 */
extern PGresult *consumer_poll(MqConsumer *c, int max_records, int wait_ms);

/*
 * Cut short the wait in progress, if any (the batch is then empty).  Safe
 * in a signal handler: Ctrl-C need not wait for a long poll to end.
 */
extern void consumer_interrupt(void);

/*
 * Done with the first nrows rows of batch: commit the group's offsets
 * past them (and end the transaction), or move the positions past them.
 */
extern void consumer_commit(MqConsumer *c, const PGresult *batch, int nrows);

/* End the batch in hand, if any, uncommitted, and leave the group. */
extern void consumer_close(MqConsumer *c);

/* consumer_wait.c: did consumer_interrupt() run? */
extern bool consumer_interrupted(void);

/*
 * consumer_wait.c: run a statement on c->conn that may wait on the server.
 * NULL when consumer_interrupt() cancelled it (or came first), and when it
 * failed with the SQLSTATE in may_fail (err filled); any other failure
 * ends mqctl.
 */
extern PGresult *consumer_exec_wait(MqConsumer *c, const char *sql, const MqParams *params,
									const char *may_fail, MqError *err);

/*
 * consumer_offsets.c: a group's offsets past the first nrows rows of
 * batch, as the parameters of CONSUMER_COMMIT_SQL; free parts and offsets
 * after it ran.
 */
#define CONSUMER_COMMIT_SQL \
	"SELECT mq.commit_offset($1, $2, u.p, u.o) FROM unnest($3::int4[], $4::int8[]) AS u(p, o)"
extern void consumer_commit_params(const MqConsumer *c, const PGresult *batch, int nrows,
								   MqArray *parts, MqArray *offsets, MqParams *params);

/*
 * consumer_member.c: a group member on one node.  consumer_member_join()
 * and the heartbeat (when due; outside a transaction) end mqctl on errors
 * other than a rebalance; consumer_member_expired() joins again after
 * MQ031 from a poll; consumer_member_commit() commits the batch's offsets
 * and the transaction (in_txn).
 */
extern void consumer_member_join(MqConsumer *c);
extern void consumer_member_heartbeat(MqConsumer *c);
extern void consumer_member_expired(MqConsumer *c);
extern void consumer_member_commit(MqConsumer *c, const PGresult *batch, int nrows);
extern void consumer_member_leave(MqConsumer *c);

/*
 * consumer_route.c: a cluster group given the coordinator's address.
 * consumer_route_open() is false when conn's database does not route the
 * topic (not a coordinator, or the topic is not replicated).
 */
extern bool consumer_route_open(MqConsumer *c, ConsumerStart start);
extern PGresult *consumer_route_poll(MqConsumer *c, int max_records, int wait_ms);
extern void consumer_route_commit(MqConsumer *c, const PGresult *batch, int nrows);
extern void consumer_route_close(MqConsumer *c);

#endif							/* MQCTL_CONSUMER_H */
