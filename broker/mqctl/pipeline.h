/*-------------------------------------------------------------------------
 *
 * pipeline.h
 *	  The exactly-once pipeline engine of "mqctl pipeline": one step, a
 *	  two-phase commit across the nodes it touches (pipeline.c).  Leaders
 *	  and node sessions are the shared router's (broker/common/route.c):
 *	  one router per topic, the output's beside the input's, so that each
 *	  node has one session for the input side of a step and one for its
 *	  output side.  docs/delivery.md, "Exactly-once in a cluster",
 *	  describes the protocol.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PIPELINE_H
#define MQCTL_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "mqconn.h"
#include "route.h"

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

typedef struct Pipeline
{
	PipelineOptions opt;
	MqRouter	rin;			/* the input's leaders; owns the coordinator session */
	MqRouter	rout;			/* the output's, beside rin */
	int64_t		producer_id;
	int			producer_epoch;
	long		steps;			/* names the steps of this epoch */
	int			n_in;			/* partition counts when the run started */
	int			n_out;
	int32_t    *seq;			/* next sequence per output partition */
	int			registered[PIPELINE_MAX_BROKERS];	/* brokers whose node has our epoch */
	int			n_registered;
	long		redone;			/* outputs sent again after a lost commit */
	long		done_steps;		/* steps that committed records */
	bool		fenced;			/* a newer run of the same id took over */
	/* test hook: SIGSTOP itself at this point of this step (see pipeline.c) */
	char		test_stop_at[32];
	long		test_stop_step;
} Pipeline;

/*
 * pipeline.c: start a run on the coordinator connection coord (owned from
 * then on; bootstrap is how to connect to it again), step, and close
 * (every session, the coordinator's too).
 */
extern bool pipeline_init(Pipeline *pl, PGconn *coord, const char *bootstrap,
						  const PipelineOptions *opt, MqError *err);
extern void pipeline_close(Pipeline *pl);
/* records processed (0: none waiting), or -1 after a failure to retry */
extern int	pipeline_step(Pipeline *pl, int partition, MqError *err);

#endif							/* MQCTL_PIPELINE_H */
