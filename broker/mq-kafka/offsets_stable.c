/*-------------------------------------------------------------------------
 *
 * offsets_stable.c
 *	  OffsetFetch's require_stable (v7+, KIP-447): the partitions whose
 *	  offset a transaction is still committing, which Kafka answers
 *	  UNSTABLE_OFFSET_COMMIT (offset -1) so that a read_committed consumer
 *	  asks again rather than start from the offset before.  Loop thread.
 *
 * Two places know of such offsets: each node's open Kafka transactions
 * (staged by TxnOffsetCommit, mq.kafka_offsets_unstable), asked on every
 * live node (a transaction is on its id's node, not the partition's
 * leader's); and in a cluster the coordinator's
 * decided transactions whose offsets no leader has committed yet
 * (mq_coord.txn_offsets_unstable), asked once the fan is done, as the
 * daemon's role.  Without require_stable (v0-v6 cannot ask) the committed
 * offset is answered, as Kafka does.
 *
 * The coordinator's list of open transactions' offsets is written here too
 * (stable_note): in a cluster TxnOffsetCommit (h_txn.c) notes there what
 * it staged on the transaction's node, so that it is seen while that node
 * is down; the note goes when the transaction is decided, aborted or
 * fenced, or is past its deadline (68_kafka_txn_cluster.sql).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "offsets.h"

/* one array, so that a job's statement is known by its address (below) */
static const char node_sql[] = "SELECT topic, partition FROM mq.kafka_offsets_unstable($1)";
#define COORD_SQL "SELECT topic, partition FROM mq_coord.txn_offsets_unstable($1)"

/*
 * In a cluster a transaction lives on the node its id maps to
 * (cluster_txn_pool: any registered broker's), whatever leads the
 * partitions whose offsets it stages: every live node is asked, not only
 * the leaders the fan reaches already.
 */
static void
add_every_node(OffState *s)
{
	for (int i = 0; cluster_enabled() && i < cluster_nbrokers(); i++)
	{
		const KBroker *b = cluster_broker_at(i);

		if (b->id == kconfig.node_id)
			(void) kfan_job(&s->fan, pool_local());
		else if (b->live && cluster_node_pool(b) != NULL)
			(void) kfan_job(&s->fan, cluster_node_pool(b));
	}
}

void
stable_add_checks(OffState *s)
{
	if (!s->require_stable)
		return;
	add_every_node(s);
	for (int i = 0; i < s->fan.n; i++)
		kstmt_text(kjob_add(&s->fan.routes[i]->job, node_sql, 0), MQ_TEXTOID, s->group);
}

static void
coord_answered(KRequest *sub)
{
	KRequest   *req = sub->state;
	OffState   *s = req->state;

	s->stable_done(req);
}

void
stable_ask_coordinator(KRequest *req, OffState *s, KDoneFn done)
{
	KPool	   *pool = s->require_stable ? cluster_coord_pool() : NULL;

	if (pool == NULL)
	{
		done(req);
		return;
	}
	s->stable_done = done;
	s->coord_req.state = req;
	kstmt_text(kjob_add(&s->coord, COORD_SQL, 0), MQ_TEXTOID, s->group);
	pool_run_on(pool, &s->coord_req, &s->coord, coord_answered);
}

/* is (topic, partition) in the answer of statement st? */
static bool
listed(const KStmt *st, const char *topic, size_t len, int32_t partition)
{
	for (int row = 0; st->res && row < PQntuples(st->res); row++)
		if (atoi(PQgetvalue(st->res, row, 1)) == partition &&
			(size_t) PQgetlength(st->res, row, 0) == len &&
			memcmp(PQgetvalue(st->res, row, 0), topic, len) == 0)
			return true;
	return false;
}

bool
stable_pending(const OffState *s, const char *topic, size_t len, int32_t partition)
{
	if (!s->require_stable)
		return false;
	for (int i = 0; i < s->fan.n; i++)
	{
		const KJob *job = &s->fan.routes[i]->job;

		for (int k = 0; k < job->n; k++)
			if (job->stmts[k].sql == node_sql && listed(&job->stmts[k], topic, len, partition))
				return true;
	}
	return s->coord.n > 0 && listed(&s->coord.stmts[0], topic, len, partition);
}

/* ---------------------------------------------------------------- */
/* The coordinator's note of an open transaction's staged offsets   */
/* ---------------------------------------------------------------- */

#define NOTE_SQL "SELECT mq_coord.kafka_txn_note_offsets($1, $2, $3, $4, $5)"

static void
noted(KRequest *sub)
{
	StableNote *n = sub->state;

	n->done(n->req);
}

void
stable_note(KRequest *req, StableNote *n, const char *id, const char *group,
			MqArray *topics, MqArray *parts, const char *deadline, KDoneFn done)
{
	KPool	   *pool = cluster_coord_pool();
	KStmt	   *st;

	n->req = req;
	n->done = done;
	if (pool == NULL)
	{
		done(req);				/* not noted: stable_noted is false */
		return;
	}
	st = kjob_add(&n->job, NOTE_SQL, 0);
	kstmt_text(st, MQ_TEXTOID, id);
	kstmt_text(st, MQ_TEXTOID, group);
	kstmt_array(st, MQ_TEXTARRAYOID, topics);
	kstmt_array(st, MQ_INT4ARRAYOID, parts);
	kstmt_text(st, MQ_TIMESTAMPTZOID, deadline);
	n->sub.state = n;
	pool_run_on(pool, &n->sub, &n->job, noted);
}

bool
stable_noted(const StableNote *n)
{
	int16_t		code;

	return n->job.n > 0 && !kstmt_failed(&n->job.stmts[0], &code);
}
