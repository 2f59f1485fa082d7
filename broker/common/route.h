/*-------------------------------------------------------------------------
 *
 * route.h
 *	  Clients of a replicated cluster given the coordinator's address alone
 *	  (Kafka's bootstrap.servers): which node leads each partition of a
 *	  topic, a connection to each leader's node, and following leader
 *	  changes.
 *
 * A router reads mq_coord.route(topic) on the coordinator: per partition
 * the leader's broker id, epoch and node address.  From a node address it
 * keeps host, hostaddr, port and dbname; everything else (user, sslmode,
 * application_name, ...) is the client's own connection string, so the
 * client connects to every node as itself.  Connections are made under a
 * connection policy (connpolicy.h: connect timeout, keepalives) and kept
 * per broker; a setup callback runs on each new one (prepared statements).
 *
 * When a leader's call fails with MQ020 (not the leader), MQ006 (the node
 * lacks the partition yet) or a lost connection, the caller reports it
 * with mq_router_failed() and waits mq_router_backoff(): exponential
 * back-off with decorrelated jitter, then the routes are read again (the
 * coordinator connection is made again too when it was lost).
 *
 * Not thread-safe: one router per thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ROUTE_H
#define MQ_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "connpolicy.h"
#include "mqconn.h"

/* Run on every new node connection; false (with err) drops it. */
typedef bool (*MqRouteSetup) (PGconn *conn, void *arg, MqError *err);

typedef struct MqRouteNode
{
	int32_t		broker_id;
	char	   *conninfo;		/* as the coordinator has it */
	PGconn	   *conn;			/* NULL until needed, or after a failure */
} MqRouteNode;

typedef struct MqRouter
{
	const char *bootstrap;		/* the coordinator's connection string (NULL: libpq's environment) */
	const char *appname;
	char	   *topic;
	PGconn	   *coord;			/* NULL after a loss, until the next refresh */
	int32_t		npartitions;
	int32_t    *leader;			/* broker id per partition, -1: none */
	int32_t    *epoch;
	MqRouteNode *nodes;
	int			nnodes;
	MqConnPolicy policy;
	MqRetry		retry;
	MqRouteSetup setup;
	void	   *setup_arg;
	struct MqRouter *coord_of;	/* non-NULL: uses that router's coordinator */
} MqRouter;

/*
 * Does the database of conn route topic: is it a coordinator (the client
 * may call mq_coord.route) that knows topic as a replicated topic?
 * 1 yes, 0 no, -1 on error (err filled).
 */
extern int	mq_router_detect(PGconn *conn, const char *topic, MqError *err);

/*
 * Start routing topic through the coordinator connection coord (the router
 * owns it from now on; bootstrap is how to connect again).  Reads the
 * routes once.  setup may be NULL.
 */
extern bool mq_router_open(MqRouter *r, PGconn *coord, const char *bootstrap,
						   const char *appname, const char *topic,
						   MqRouteSetup setup, void *setup_arg, MqError *err);

/*
 * Start routing topic beside owner: through owner's coordinator connection
 * (one session for both), as owner's client and policy.  Its node
 * connections are its own, so a client that needs two sessions per node
 * (mqctl pipeline: the input's transaction and the output's) opens one
 * router per topic.  Close it before owner.
 */
extern bool mq_router_open_beside(MqRouter *r, MqRouter *owner, const char *topic,
								  MqRouteSetup setup, void *setup_arg, MqError *err);

/* Read the routes again (reconnecting to the coordinator if needed). */
extern bool mq_router_refresh(MqRouter *r, MqError *err);

/*
 * The coordinator connection, made again if it was lost (NULL with err
 * when it cannot be).
 */
extern PGconn *mq_router_coord(MqRouter *r, MqError *err);

/*
 * The connection to partition's leader, made now if needed; NULL with err
 * when the partition has no leader or its node cannot be reached (err's
 * connection_lost is then set, so that callers treat both alike).
 */
extern PGconn *mq_router_conn(MqRouter *r, int32_t partition, MqError *err);

/*
 * Drop the coordinator connection (the next mq_router_coord makes a new
 * one), e.g. after a call whose answer was lost.
 */
extern void mq_router_reset_coord(MqRouter *r);

/*
 * conn, one of r's node connections, failed: close it (the next
 * mq_router_conn connects again).  False when conn is not r's.
 */
extern bool mq_router_conn_lost(MqRouter *r, PGconn *conn);

/* The leader's broker id of a partition (-1: none known). */
extern int32_t mq_router_leader(const MqRouter *r, int32_t partition);

/*
 * Whether err, from a call on a leader, means the route changed or the
 * leader went away: lost connection, MQ020 not leader, MQ006 unknown
 * partition on that node.
 */
extern bool mq_router_retriable(const MqError *err);

/* A call for partition failed with err: forget a connection that is lost. */
extern void mq_router_failed(MqRouter *r, int32_t partition, const MqError *err);

/*
 * Wait the next back-off pause (jittered, growing), then read the routes
 * again.  Returns false (err filled) when the coordinator could not be
 * read; the caller may try again later.
 */
extern bool mq_router_backoff(MqRouter *r, MqError *err);

/* The last call succeeded: the next failure backs off from the start again. */
extern void mq_router_succeeded(MqRouter *r);

/* Close every connection, the coordinator's too. */
extern void mq_router_close(MqRouter *r);

#endif							/* MQ_ROUTE_H */
