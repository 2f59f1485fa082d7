/*-------------------------------------------------------------------------
 *
 * recover.c
 *	  Recovery of the node's in-doubt mq: prepared transactions (the parts
 *	  of exactly-once pipeline steps across nodes; docs/delivery.md,
 *	  "Exactly-once in a cluster"), and durability reports for decided
 *	  outputs whose client went away.
 *
 * Each tick, before any partition is stepped, and on connecting to the
 * node before it resigns old leaderships (a prepared output holds its
 * partition's produce lock, which a role change waits for), the broker
 * lists the node's mq: prepared transactions (mq.txn_in_doubt) and asks
 * the coordinator what to do with each (mq_coord.txn_resolve, which holds
 * the rules and records an abort for one prepared longer than
 * txn.timeout.ms without a decision); it then commits or rolls back with
 * mq.txn_finish.  So a prepared transaction is in doubt at most
 * txn.timeout.ms while its node, its broker and the coordinator are up.
 *
 * A decided output that this node committed and still leads in the epoch
 * it was written in is reported durable (mq_coord.txn_output_durable)
 * once the node's high watermark passes it, which lets the step's offsets
 * participant commit even when the client died after the decision.
 *
 * Locking: none; the broker's one thread.  The client may finish the same
 * gid at the same moment: one of the two finishes fails or finds it gone,
 * and the next tick looks again.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "util.h"

#define MAX_IN_DOUBT 256

typedef struct InDoubt
{
	int			n;
	char	   *gid[MAX_IN_DOUBT];
	long long	age_ms[MAX_IN_DOUBT];
} InDoubt;

static void
in_doubt_free(InDoubt *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->gid[i]);
	d->n = 0;
}

static bool
in_doubt_has(const InDoubt *d, const char *gid)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->gid[i], gid) == 0)
			return true;
	return false;
}

/* The node's mq: prepared transactions; false when the node failed. */
static bool
list_in_doubt(Broker *b, InDoubt *d)
{
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = node_exec(b, "SELECT gid, age_ms FROM mq.txn_in_doubt()", NULL, 0, &err);

	d->n = 0;
	if (res == NULL)
	{
		log_mq_error("recovery: cannot list the node's prepared transactions", &err);
		mq_error_free(&err);
		return false;
	}
	for (int i = 0; i < PQntuples(res) && d->n < MAX_IN_DOUBT; i++)
	{
		d->gid[d->n] = mq_strdup(PQgetvalue(res, i, 0));
		d->age_ms[d->n] = atoll(PQgetvalue(res, i, 1));
		d->n++;
	}
	PQclear(res);
	return true;
}

/* Ask the coordinator about one gid and act on the answer. */
static void
resolve_one(Broker *b, const char *gid, long long age_ms)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *res;
	char		action[16];
	bool		commit;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT8OID, age_ms);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->txn_timeout_ms);
	res = coord_exec(b, "SELECT mq_coord.txn_resolve($1, $2, $3, $4)", &prm, &err);
	if (res == NULL)
	{
		log_mq_error("recovery: cannot ask the coordinator about a prepared transaction", &err);
		mq_error_free(&err);
		return;
	}
	snprintf(action, sizeof(action), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	if (strcmp(action, "wait") == 0)
		return;
	commit = strcmp(action, "commit") == 0;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_text(&prm, MQ_BOOLOID, commit ? "true" : "false");
	res = node_exec(b, "SELECT mq.txn_finish($1, $2)", &prm, 0, &err);
	if (res == NULL)
	{
		log_mq_error("recovery: cannot finish a prepared transaction", &err);
		mq_error_free(&err);
		return;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
		mq_log_info("recovery: %s prepared transaction %s (prepared %lld ms ago)",
					commit ? "committed" : "rolled back", gid, age_ms);
	PQclear(res);
}

/* Is one partition of a decided output replicated on this leader? */
static bool
output_replicated(Broker *b, PGresult *rows, int i, bool *ok)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, PQgetvalue(rows, i, 2));
	mq_param_text(&prm, MQ_INT4OID, PQgetvalue(rows, i, 3));
	mq_param_text(&prm, MQ_INT4OID, PQgetvalue(rows, i, 4));
	mq_param_text(&prm, MQ_INT8OID, PQgetvalue(rows, i, 5));
	res = node_exec(b, "SELECT mq.txn_output_replicated($1, $2, $3, $4)", &prm, 0, &err);
	if (res == NULL)
	{
		log_mq_error("recovery: cannot read an output's high watermark", &err);
		mq_error_free(&err);
		return false;
	}
	*ok = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return true;
}

static void
report_durable(Broker *b, const char *txn_id, const char *gid)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, txn_id);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT mq_coord.txn_output_durable($1, $2, $3)", &prm, &err);
	if (res == NULL)
	{
		log_mq_error("recovery: cannot report a durable output", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("recovery: output %s is on its in-sync replicas; step %s is %s",
				gid, txn_id, PQgetvalue(res, 0, 0));
	PQclear(res);
}

/*
 * Decided outputs of this broker not known durable: report those its node
 * committed (no longer prepared) and whose every partition's high
 * watermark passed them in the epoch they were written in.
 */
static void
report_outputs(Broker *b, const InDoubt *d)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *rows;
	int			n;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	rows = coord_exec(b, "SELECT txn_id, gid, topic, partition, epoch, records_end "
					  "FROM mq_coord.txn_outputs_pending($1)", &prm, &err);
	if (rows == NULL)
	{
		log_mq_error("recovery: cannot list decided outputs", &err);
		mq_error_free(&err);
		return;
	}
	n = PQntuples(rows);
	for (int i = 0; i < n;)
	{
		const char *gid = PQgetvalue(rows, i, 1);
		int			end = i;
		bool		all = !in_doubt_has(d, gid);

		while (end < n && strcmp(PQgetvalue(rows, end, 1), gid) == 0)
			end++;
		for (int j = i; all && j < end; j++)
			if (!output_replicated(b, rows, j, &all) || b->node == NULL)
				all = false;
		if (all)
			report_durable(b, PQgetvalue(rows, i, 0), gid);
		i = end;
		if (b->node == NULL || b->coord == NULL)
			break;
	}
	PQclear(rows);
}

void
recover_prepared(Broker *b)
{
	InDoubt		d;

	if (b->node == NULL || b->coord == NULL)
		return;
	if (!list_in_doubt(b, &d))
		return;
	for (int i = 0; i < d.n && b->node != NULL && b->coord != NULL; i++)
		resolve_one(b, d.gid[i], d.age_ms[i]);
	if (b->node != NULL && b->coord != NULL)
		report_outputs(b, &d);
	in_doubt_free(&d);
}
