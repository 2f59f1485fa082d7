/*-------------------------------------------------------------------------
 *
 * calls_placement.c
 *	  Typed calls of the placement functions (src/sql/66_placement.sql):
 *	  on the broker's own node, placing a topic, marking a replica not
 *	  hosted, the leader's replica set, and listing and dropping copies of
 *	  replicated topics (src/sql/66_topic_delete.sql); on the coordinator,
 *	  the partitions that are moving, completing a move, and which topics
 *	  were deleted.  As calls_node.c
 *	  and calls_coord.c, each builds its parameters and reads its result
 *	  here only; src/sql/62_broker_role.sql grants them to the broker's role.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "placement.h"
#include "util.h"

/* A plain statement on the node (a setting): false when it failed. */
static bool
node_set(Broker *b, const char *sql, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	res = node_exec(b, sql, &prm, 0, err);
	PQclear(res);
	return res != NULL;
}

/*
 * A statement the server cancels at half node.timeout.ms (statement_timeout,
 * reset after): a slow placement or drop fails as a statement, its
 * connection kept, before our own deadline would count the node as lost
 * (placement.c).
 */
static PGresult *
node_exec_bounded(Broker *b, const char *sql, const MqParams *prm, MqError *err)
{
	PGresult   *res;
	char		set[64];
	MqError		reset_err = MQ_ERROR_INIT;

	snprintf(set, sizeof(set), "SET statement_timeout = %d", b->cfg->node_timeout_ms / 2);
	if (!node_set(b, set, err))
		return NULL;
	res = node_exec(b, sql, prm, 0, err);
	if (b->node != NULL && !node_set(b, "RESET statement_timeout", &reset_err))
		log_mq_error("cannot reset statement_timeout", &reset_err);
	mq_error_free(&reset_err);
	return res;
}

/*
 * The topic on the node with (at least) partitions partitions, in p's
 * incarnation: hosted, the partitions we replicate, int4[] text;
 * *absent: newly marked not hosted.
 */
bool
node_place_topic(Broker *b, const Part *p, int partitions, const char *hosted, int *absent,
				 MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, partitions);
	mq_param_text(&prm, MQ_JSONBOID, p->config);
	mq_param_text(&prm, MQ_INT4ARRAYOID, hosted);
	mq_param_text(&prm, MQ_TEXTOID, p->incarnation);
	res = node_exec_bounded(b, "SELECT mq.replica_place_topic($1, $2, $3, $4, $5::uuid)", &prm, err);
	if (res == NULL)
		return false;
	*absent = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/*
 * The node's replicated topics and their incarnations: one row of two
 * arrays (text[] and uuid[] text, NULL when there are none), as
 * coord_deleted_topics takes them.
 */
PGresult *
node_replica_topics(Broker *b, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	return node_exec(b, "SELECT array_agg(topic ORDER BY topic), array_agg(incarnation ORDER BY topic) "
					 "FROM mq.replica_topics()", &prm, 0, err);
}

/* Of those, the deleted ones: rows of topic and incarnation (NULL: none recorded). */
PGresult *
coord_deleted_topics(Broker *b, const char *topics, const char *incarnations, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTARRAYOID, topics);
	mq_param_text(&prm, MQ_TEXTOID, incarnations);
	return coord_exec(b, "SELECT topic, incarnation FROM mq_coord.deleted_topics($1, $2::uuid[])",
					  &prm, err);
}

/* Drop the node's copy of topic in incarnation (NULL: none recorded). */
bool
node_drop_topic(Broker *b, const char *topic, const char *incarnation, bool *dropped, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, topic);
	mq_param_text(&prm, MQ_TEXTOID, incarnation);
	res = node_exec_bounded(b, "SELECT mq.replica_drop_topic($1, $2::uuid)", &prm, err);
	if (res == NULL)
		return false;
	*dropped = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return true;
}

bool
node_unhost(Broker *b, const char *topic, int partition, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, topic);
	mq_param_int(&prm, MQ_INT4OID, partition);
	res = node_exec(b, "SELECT mq.replica_unhost($1, $2)", &prm, 0, err);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* The leader's node: replicas as p has them; isr too when nisr > 0. */
bool
node_set_replicas(Broker *b, const Part *p, const int *isr, int nisr, MqError *err)
{
	MqParams	prm;
	PGresult   *res;
	char		rbuf[128],
				ibuf[128];

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(p->replicas, p->nreplicas, rbuf, sizeof(rbuf)));
	mq_param_text(&prm, MQ_INT4ARRAYOID, nisr > 0 ? int_array_text(isr, nisr, ibuf, sizeof(ibuf)) : NULL);
	res = node_exec(b, "SELECT mq.replica_set_replicas($1, $2, $3, $4, $5)", &prm, 0, err);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/*
 * Our moves, and the throttled moves led by a leader of one of our
 * throttled copies (its budget is shared with them): *rows malloc'd, to
 * free with moving_free.
 */
bool
coord_moving(Broker *b, Moving **rows, int *nrows, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT topic, partition, target_replicas, coalesce(throttle_bytes, 0), "
					 "coalesce(leader, -1), replicas, isr FROM mq_coord.moving($1)", &prm, err);
	if (res == NULL)
		return false;
	*nrows = PQntuples(res);
	*rows = mq_malloc0(sizeof(Moving) * (*nrows > 0 ? *nrows : 1));
	for (int i = 0; i < *nrows; i++)
	{
		Moving	   *m = &(*rows)[i];

		m->topic = mq_strdup(PQgetvalue(res, i, 0));
		m->partition = atoi(PQgetvalue(res, i, 1));
		m->ntarget = parse_int_array(PQgetvalue(res, i, 2), m->target, MAX_REPLICAS);
		m->throttle_bytes = atoll(PQgetvalue(res, i, 3));
		m->leader = atoi(PQgetvalue(res, i, 4));
		m->nreplicas = parse_int_array(PQgetvalue(res, i, 5), m->replicas, MAX_REPLICAS);
		m->nisr = parse_int_array(PQgetvalue(res, i, 6), m->isr, MAX_REPLICAS);
	}
	PQclear(res);
	return true;
}

void
moving_free(Moving *rows, int nrows)
{
	for (int i = 0; i < nrows; i++)
		free(rows[i].topic);
	free(rows);
}

bool
coord_register_rack(Broker *b, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->rack);
	res = coord_exec(b, "SELECT mq_coord.register_rack($1, $2)", &prm, err);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* *done: the coordinator ended the move; *isr is then the new ISR. */
bool
coord_complete_reassignment(Broker *b, const Part *p, int *isr, int *nisr, bool *done,
							MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	res = coord_exec(b, "SELECT mq_coord.complete_reassignment($1, $2, $3, $4)", &prm, err);
	if (res == NULL)
		return false;
	*done = !PQgetisnull(res, 0, 0);
	*nisr = *done ? parse_int_array(PQgetvalue(res, 0, 0), isr, MAX_REPLICAS) : 0;
	PQclear(res);
	return true;
}
