/*-------------------------------------------------------------------------
 *
 * h_txn_add.c
 *	  AddPartitionsToTxn (v0-v5, KIP-98).  Loop thread: each transaction's
 *	  partitions are one statement (src/sql/67_kafka_txn.sql), run on the
 *	  transactional id's node (h_txn_init.c), one transaction after another.
 *
 * A transaction's partitions are added all or none, as Kafka does:
 * mq.kafka_txn_add_partitions' rows say which partition was refused
 * (an unknown topic or partition, no right to write it); when one is, the
 * others are OPERATION_NOT_ATTEMPTED.  In a cluster each partition is
 * checked against the cluster's first (cluster_partition; one unknown
 * there is refused before the statement, which then does not run): the
 * transaction's node need not hold a replica of it, and takes it as it is
 * (67_kafka_txn.sql).
 *
 * v4+ is the brokers' batched form (a list of transactions, verify_only, a
 * top-level error); it is served, each transaction's partitions added as
 * v3's are (verify_only adds too), on its own id's node: one job per
 * transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

/* ---------------------------------------------------------------- */
/* AddPartitionsToTxn                                               */
/* ---------------------------------------------------------------- */

#define ADD_PARTITIONS_SQL \
	"SELECT added, sqlstate, resource FROM mq.kafka_txn_add_partitions($1, $2, $3, $4, $5)"

/* one transaction's topics and partitions, after its ids */
static void
read_add_topics(KRequest *req, TxnState *s, int32_t txn)
{
	KReader    *r = &req->body;
	int32_t		nt = kr_array(r, 6);
	int32_t		row = 0;

	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		int32_t		ti = s->ntopics++;
		char	   *topic;
		int32_t		np;

		s->topics[ti] = kr_str(r);
		s->topic_txn[ti] = txn;
		topic = kslice_dup(s->topics[ti]);
		np = kr_array(r, 4);
		for (int32_t i = 0; i < np && !r->err; i++)
		{
			TPart	   *pp = &s->parts[s->nparts++];

			pp->txn = txn;
			pp->topic = ti;
			pp->partition = kr_i32(r);
			pp->stmt = row++;
			if (!r->err && cluster_enabled() && cluster_partition(topic ? topic : "", pp->partition) == NULL)
				pp->code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		kr_tags(r);
		free(topic);
	}
}

/*
 * The statement adding transaction txn's partitions, unless one was
 * refused before the database
 */
static void
add_statement(TxnState *s, int32_t txn)
{
	MqArray		topics;
	MqArray		parts;
	KStmt	   *st;

	for (int32_t i = 0; i < s->nparts; i++)
		if (s->parts[i].txn == txn && s->parts[i].code != KERR_NONE)
			return;
	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int32_t i = 0; i < s->nparts; i++)
		if (s->parts[i].txn == txn)
		{
			const KSlice *name = &s->topics[s->parts[i].topic];

			mq_array_add(&topics, name->p ? (const void *) name->p : "", name->p ? name->len : 0);
			mq_array_add_int32(&parts, s->parts[i].partition);
		}
	st = job_stmt(&s->txn_jobs[txn], ADD_PARTITIONS_SQL, &s->txns[txn]);
	kstmt_array(st, MQ_TEXTARRAYOID, &topics);
	kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	mq_array_free(&topics);
	mq_array_free(&parts);
}

/*
 * An AddPartitionsToTxn partition's error: refused before the database,
 * or its transaction's statement's error, or its row's refusal; not added
 * without one: OPERATION_NOT_ATTEMPTED
 */
static int16_t
add_part_code(const TWrite *o, const TPart *pp)
{
	const KJob *job = &o->s->txn_jobs[pp->txn];
	const PGresult *res = job->n > 0 ? job->stmts[0].res : NULL;
	MqError		err = MQ_ERROR_INIT;

	if (job->n == 0)
		return pp->code != KERR_NONE ? pp->code : KERR_OPERATION_NOT_ATTEMPTED;
	if (res == NULL || pp->stmt >= PQntuples(res))
		return txn_code(&job->stmts[0], o->req->api_version, true);
	if (strcmp(PQgetvalue(res, pp->stmt, 0), "t") == 0)
		return KERR_NONE;
	if (PQgetisnull(res, pp->stmt, 1))
		return KERR_OPERATION_NOT_ATTEMPTED;
	snprintf(err.sqlstate, sizeof(err.sqlstate), "%s", PQgetvalue(res, pp->stmt, 1));
	err.table_name = PQgetisnull(res, pp->stmt, 2) ? NULL : PQgetvalue(res, pp->stmt, 2);
	return kerr_from_mq(&err);
}

/* an AddPartitionsToTxn partition: its index and error */
static void
write_add_part(KWriter *w, void *arg, int32_t i)
{
	TWrite	   *o = arg;
	TPart	   *pp = &o->s->parts[i];

	kw_i32(w, pp->partition);
	kw_i16(w, add_part_code(o, pp));
}

/* topic results of one transaction (its topics are consecutive): name, [partition, error] */
static void
write_add_topics(KRequest *req, TxnState *s, int32_t txn)
{
	TWrite		o = {req, s};
	int32_t		t0 = 0;
	int32_t		t1;

	while (t0 < s->ntopics && s->topic_txn[t0] != txn)
		t0++;
	for (t1 = t0; t1 < s->ntopics && s->topic_txn[t1] == txn; t1++)
		;
	kw_topic_parts(&req->resp, s->topics, t0, t1, s->nparts, tpart_topic, write_add_part, &o);
}

static void
add_partitions_done(KRequest *req)
{
	TxnState   *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	if (req->api_version < 4)
	{
		write_add_topics(req, s, 0);
		req_finish(req);
		return;
	}
	kw_i16(w, KERR_NONE);
	kw_array(w, s->ntxns);
	for (int32_t i = 0; i < s->ntxns; i++)
	{
		kw_strn(w, s->txns[i].id.p, s->txns[i].id.len);
		write_add_topics(req, s, i);
		kw_tags(w);
	}
	req_finish(req);
}

/* each transaction's partitions on its own id's node, one after another */
static void
add_next(KRequest *req)
{
	TxnState   *s = req->state;
	int32_t		i = s->running++;
	char	   *id;

	if (i >= s->ntxns)
	{
		add_partitions_done(req);
		return;
	}
	add_statement(s, i);
	if (s->txn_jobs[i].n == 0)
	{
		add_next(req);			/* refused before the database */
		return;
	}
	id = kslice_dup(s->txns[i].id);
	txn_cluster_stage(req, &s->txn_remotes[i], &s->txn_jobs[i], id ? id : "", add_next);
	free(id);
}

void
h_add_partitions_to_txn(KRequest *req)
{
	KReader    *r = &req->body;
	TxnState   *s = txn_state_new(req, kr_left(r));

	if (req->api_version < 4)
	{
		read_ids(r, &s->txns[s->ntxns++]);
		read_add_topics(req, s, 0);
	}
	else
	{
		int32_t		n = kr_array(r, 20);

		for (int32_t i = 0; i < n && !r->err; i++)
		{
			read_ids(r, &s->txns[s->ntxns++]);
			(void) kr_i8(r);	/* verify_only: added as well */
			read_add_topics(req, s, i);
			kr_tags(r);
		}
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	add_next(req);
}
