/*-------------------------------------------------------------------------
 *
 * pipeline_part.c
 *	  What every phase of a pipeline step does with its parts (see
 *	  pipeline_step.h): running a statement in a part's session, forgetting
 *	  a session that was lost in every part that shares it, and the
 *	  step's keys and values per output partition as bytea[] literals.
 *
 * Layer: below pipeline.c (a step up to its decision), pipeline_decide.c
 * and pipeline_commit.c, which all call it; it calls only the router
 * (broker/common/route.c) and broker/common, never back up.
 *
 * Locking: none here; a part's session holds what its transaction locked
 * on its node.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "pipeline.h"
#include "pipeline_step.h"

PGresult *
step_run(Step *s, Participant *p, const char *sql, const MqParams *prm, MqError *err)
{
	PGresult   *res = mq_exec(p->conn, sql, prm, 0, err);
	PGconn	   *lost = p->conn;

	if (res == NULL && err->connection_lost)
	{
		/* the session is shared per node and side: no part may keep it */
		if (!mq_router_conn_lost(&s->pl->rin, lost))
			(void) mq_router_conn_lost(&s->pl->rout, lost);
		p->conn = NULL;
		if (s->in.conn == lost)
			s->in.conn = NULL;
		for (int i = 0; i < s->n_outs; i++)
			if (s->outs[i].conn == lost)
				s->outs[i].conn = NULL;
	}
	return res;
}

bool
step_run_ok(Step *s, Participant *p, const char *sql, const MqParams *prm, MqError *err)
{
	PGresult   *res = p->conn ? step_run(s, p, sql, prm, err) : NULL;

	if (res)
		PQclear(res);
	return res != NULL;
}

/*
 * "{\"\\x6b\",NULL}": a bytea[] literal of the keys or values going to
 * output partition q, or (q < 0) of every record by output partition.
 */
char *
bytea_array(const Step *s, int q, bool keys)
{
	size_t		len = 3;
	char	   *out;
	char	   *w;

	for (int i = 0; i < s->n; i++)
		if (q < 0 || s->recs[i].out == q)
			len += (keys ? (s->recs[i].key ? strlen(s->recs[i].key) : 4) : strlen(s->recs[i].value)) + 4;
	out = w = mq_malloc(len);
	*w++ = '{';
	for (int o = q < 0 ? 0 : q; o <= (q < 0 ? s->pl->n_out - 1 : q); o++)
		for (int i = 0; i < s->n; i++)
		{
			const char *v = keys ? s->recs[i].key : s->recs[i].value;

			if (s->recs[i].out != o)
				continue;
			if (w > out + 1)
				*w++ = ',';
			w += v ? sprintf(w, "\"\\%s\"", v) : sprintf(w, "NULL");
		}
	*w++ = '}';
	*w = '\0';
	return out;
}

int
count_for(const Step *s, int q)
{
	int			n = 0;

	for (int i = 0; i < s->n; i++)
		n += s->recs[i].out == q;
	return n;
}
