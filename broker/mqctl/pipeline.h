/*-------------------------------------------------------------------------
 *
 * pipeline.h
 *	  The exactly-once pipeline engine of "mqctl pipeline": routing and
 *	  node connections (pipeline_route.c) and one step, a two-phase commit
 *	  across the nodes it touches (pipeline.c).  docs/delivery.md,
 *	  "Exactly-once in a cluster", describes the protocol.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PIPELINE_H
#define MQCTL_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "mqconn.h"

#define PIPELINE_MAX_BROKERS 64

typedef struct PipelineOptions
{
	const char *id;				/* transactional id */
	const char *input;
	const char *output;
	const char *group;
	const char *apply;			/* SQL run per record on the input's leader */
	int			batch;			/* records per step */
	int			timeout_ms;		/* acks=all waits */
} PipelineOptions;

/* A partition's leader as the coordinator names it. */
typedef struct Route
{
	int			leader;			/* -1: none */
	int			epoch;
	char	   *conninfo;
} Route;

/* One session per broker and role (input side, output side). */
typedef struct NodeConns
{
	int			broker;
	PGconn	   *in;
	PGconn	   *out;
} NodeConns;

typedef struct Pipeline
{
	PipelineOptions opt;
	PGconn	   *coord;
	int64_t		producer_id;
	int			producer_epoch;
	long		steps;			/* names the steps of this epoch */
	int			n_in;
	int			n_out;
	Route	   *in;
	Route	   *out;
	int32_t    *seq;			/* next sequence per output partition */
	NodeConns	conns[PIPELINE_MAX_BROKERS];
	int			n_conns;
	int			registered[PIPELINE_MAX_BROKERS];	/* brokers whose node has our epoch */
	int			n_registered;
	long		redone;			/* outputs sent again after a lost commit */
	long		done_steps;		/* steps that committed records */
	bool		fenced;			/* a newer run of the same id took over */
	/* test hook: SIGSTOP itself at this point of this step (see pipeline.c) */
	char		test_stop_at[32];
	long		test_stop_step;
} Pipeline;

/* pipeline_route.c */
extern bool pipeline_refresh_routes(Pipeline *pl, MqError *err);
extern PGconn *pipeline_conn(Pipeline *pl, int broker, const char *conninfo, bool out,
							 MqError *err);
extern void pipeline_conn_failed(Pipeline *pl, PGconn *conn);
extern void pipeline_close(Pipeline *pl);
extern bool pipeline_coord_ok(Pipeline *pl, MqError *err);

/* pipeline.c */
extern bool pipeline_init(Pipeline *pl, PGconn *coord, const PipelineOptions *opt,
						  MqError *err);
/* records processed (0: none waiting), or -1 after a failure to retry */
extern int	pipeline_step(Pipeline *pl, int partition, MqError *err);

#endif							/* MQCTL_PIPELINE_H */
