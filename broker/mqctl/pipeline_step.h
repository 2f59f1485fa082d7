/*-------------------------------------------------------------------------
 *
 * pipeline_step.h
 *	  What pipeline.c (a step up to its commit decision),
 *	  pipeline_decide.c (the decision) and pipeline_commit.c (the step
 *	  after it) share: the step's records and parts, and running a
 *	  statement in a part (pipeline_part.c, below all three).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PIPELINE_STEP_H
#define MQCTL_PIPELINE_STEP_H

#include <jansson.h>

#include "pipeline.h"

typedef struct Rec
{
	char	   *key;			/* bytea text (\x...), NULL: null */
	char	   *value;
	int			out;			/* output partition */
} Rec;

typedef struct Participant
{
	int			broker;
	PGconn	   *conn;
	char		gid[160];
	bool		prepared;
	json_t	   *notes;
} Participant;

typedef struct Step
{
	Pipeline   *pl;
	int			partition;
	char		txn[96];
	Rec		   *recs;
	int			n;
	int64_t		next_offset;
	Participant in;
	Participant outs[PIPELINE_MAX_BROKERS];
	int			n_outs;
	int		   *sent_via;		/* per output partition: its part in outs, -1: none */
} Step;

/* pipeline_part.c */
extern PGresult *step_run(Step *s, Participant *p, const char *sql, const MqParams *prm, MqError *err);
extern bool step_run_ok(Step *s, Participant *p, const char *sql, const MqParams *prm, MqError *err);
extern char *bytea_array(const Step *s, int q, bool keys);
extern int	count_for(const Step *s, int q);

/* pipeline_decide.c */
extern bool pipeline_decide(Step *s);

/* pipeline_commit.c */
extern void pipeline_complete(Step *s);

#endif							/* MQCTL_PIPELINE_STEP_H */
