/*-------------------------------------------------------------------------
 *
 * pipeline_route.c
 *	  Where "mqctl pipeline" sends each statement: the leaders of the
 *	  input and output partitions as the coordinator names them
 *	  (mq_coord.route), and one session per broker's node and side
 *	  (the input side holds the offsets and application rows of a step,
 *	  the output side its records), made on first use and dropped when it
 *	  fails.
 *
 * The nodes are reached at the address their broker registered, as the
 * user the pipeline connected to the coordinator with (its password, if
 * any, from ~/.pgpass: never on a command line).
 *
 * Locking: none; one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "pipeline.h"

static void
free_routes(Route *r, int n)
{
	for (int i = 0; r && i < n; i++)
		free(r[i].conninfo);
	free(r);
}

/* One topic's routes: an array of *n (NULL with err filled on failure). */
static Route *
read_routes(Pipeline *pl, const char *topic, int *n, MqError *err)
{
	MqParams	prm;
	PGresult   *res;
	Route	   *r;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, topic);
	res = mq_exec(pl->coord, "SELECT partition, coalesce(leader, -1), leader_epoch, leader_conninfo "
				  "FROM mq_coord.route($1)", &prm, 0, err);
	if (res == NULL)
		return NULL;
	*n = PQntuples(res);
	r = mq_malloc0((*n + 1) * sizeof(Route));
	for (int i = 0; i < *n; i++)
	{
		int			part = atoi(PQgetvalue(res, i, 0));

		if (part < 0 || part >= *n)
			continue;
		r[part].leader = atoi(PQgetvalue(res, i, 1));
		r[part].epoch = atoi(PQgetvalue(res, i, 2));
		r[part].conninfo = PQgetisnull(res, i, 3) ? NULL : mq_strdup(PQgetvalue(res, i, 3));
	}
	PQclear(res);
	return r;
}

/* Read the leaders of the input's and the output's partitions. */
bool
pipeline_refresh_routes(Pipeline *pl, MqError *err)
{
	int			n_in = 0;
	int			n_out = 0;
	Route	   *in = read_routes(pl, pl->opt.input, &n_in, err);
	Route	   *out = in ? read_routes(pl, pl->opt.output, &n_out, err) : NULL;

	if (out == NULL)
	{
		free_routes(in, n_in);
		return false;
	}
	free_routes(pl->in, pl->n_in);
	free_routes(pl->out, pl->n_out);
	pl->in = in;
	pl->out = out;
	pl->n_in = n_in;
	pl->n_out = n_out;
	return true;
}

static NodeConns *
conns_of(Pipeline *pl, int broker)
{
	for (int i = 0; i < pl->n_conns; i++)
		if (pl->conns[i].broker == broker)
			return &pl->conns[i];
	if (pl->n_conns == PIPELINE_MAX_BROKERS)
		return NULL;
	pl->conns[pl->n_conns].broker = broker;
	pl->conns[pl->n_conns].in = NULL;
	pl->conns[pl->n_conns].out = NULL;
	return &pl->conns[pl->n_conns++];
}

/* The session to broker's node for one side, connected on first use. */
PGconn *
pipeline_conn(Pipeline *pl, int broker, const char *conninfo, bool out, MqError *err)
{
	static const char *const keys[] = {"user", "connect_timeout", NULL};
	const char *vals[] = {PQuser(pl->coord), "5", NULL};
	NodeConns  *nc = broker >= 0 && conninfo ? conns_of(pl, broker) : NULL;
	PGconn	  **slot;

	if (nc == NULL)
	{
		err->message = mq_strdup(broker < 0 ? "the partition has no leader" : "too many brokers");
		err->connection_lost = true;
		return NULL;
	}
	slot = out ? &nc->out : &nc->in;
	if (*slot == NULL)
		*slot = mq_connect_with(conninfo, "mqctl-pipeline", keys, vals, err);
	return *slot;
}

/* Forget a session that failed (the next use connects again). */
void
pipeline_conn_failed(Pipeline *pl, PGconn *conn)
{
	for (int i = 0; conn && i < pl->n_conns; i++)
	{
		if (pl->conns[i].in == conn)
			pl->conns[i].in = NULL;
		else if (pl->conns[i].out == conn)
			pl->conns[i].out = NULL;
		else
			continue;
		PQfinish(conn);
		return;
	}
}

/* Reconnect to the coordinator when its session is gone. */
bool
pipeline_coord_ok(Pipeline *pl, MqError *err)
{
	if (pl->coord != NULL && PQstatus(pl->coord) == CONNECTION_OK)
		return true;
	if (pl->coord != NULL)
		PQfinish(pl->coord);
	pl->coord = mqctl_try_connect(err);
	return pl->coord != NULL;
}

void
pipeline_close(Pipeline *pl)
{
	for (int i = 0; i < pl->n_conns; i++)
	{
		if (pl->conns[i].in)
			PQfinish(pl->conns[i].in);
		if (pl->conns[i].out)
			PQfinish(pl->conns[i].out);
	}
	pl->n_conns = 0;
	free_routes(pl->in, pl->n_in);
	free_routes(pl->out, pl->n_out);
	pl->in = pl->out = NULL;
	free(pl->seq);
	pl->seq = NULL;
}
