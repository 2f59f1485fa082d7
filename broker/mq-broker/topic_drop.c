/*-------------------------------------------------------------------------
 *
 * topic_drop.c
 *	  Dropping the node's copies of deleted replicated topics
 *	  (docs/replication.md, "Deleting a topic"; src/sql/66_topic_delete.sql).
 *
 * mq_coord.delete_topic removes a topic from the coordinator in one
 * transaction and keeps a tombstone of its incarnation.  At its next tick
 * this broker stops leading and following the topic's partitions, as for
 * any partition no longer assigned (assign.c forgets them, the node marks
 * them not hosted), and then drops the node's copy when a tombstone names
 * the incarnation the node holds.  It looks at the first tick of each
 * liveness (so a broker that was down during the deletion, or whose node
 * was, drops it once back) and at a tick that forgot partitions (a
 * deleted topic, or one created again: another incarnation): the node's
 * replicated topics and their incarnations (mq.replica_topics), which of
 * them the coordinator deleted (mq_coord.deleted_topics), and each of
 * those dropped (mq.replica_drop_topic, which leaves a copy of any other
 * incarnation alone), within half node.timeout.ms as placing is.  The
 * reads come before the tick's heartbeat and the drops after it, as for
 * everything a tick acts on (assign.c).  What fails is looked at again
 * the next tick.  A node holding only replicas
 * that moved away (no partition of the topic assigned here) drops its
 * copy at its broker's next liveness.  A copy of an older incarnation
 * of a topic created again is also dropped by placing the new one
 * (placement.c), whichever comes first.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "placement.h"
#include "util.h"

static const char *
value_or_null(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* Drop each copy listed in gone (topic, incarnation); false if any failed. */
static bool
drop_copies(Broker *b, const PGresult *gone)
{
	bool		ok = true;

	for (int i = 0; i < PQntuples(gone) && b->node != NULL; i++)
	{
		const char *topic = PQgetvalue(gone, i, 0);
		MqError		err = MQ_ERROR_INIT;
		bool		dropped = false;

		if (!node_drop_topic(b, topic, value_or_null(gone, i, 1), &dropped, &err))
		{
			log_mq_error("cannot drop a deleted topic from the node; retrying", &err);
			ok = false;
		}
		else if (dropped)
			mq_log_info("topic \"%s\" (incarnation %s) was deleted: dropped from the node", topic,
						PQgetisnull(gone, i, 1) ? "not recorded" : PQgetvalue(gone, i, 1));
		if (dropped)
			placement_unplace(b, topic);
		mq_error_free(&err);
	}
	return ok && b->node != NULL;
}

/*
 * Each tick, with the assignments, before the heartbeat: when due, which
 * of the node's copies were deleted.  Read before the heartbeat as the
 * assignments are, and dropped only after it (topic_drop_apply), so a
 * deletion read from a coordinator that a failover then undoes (a zombie
 * primary, replication.md) is never acted on: its heartbeat fails.
 */
void
topic_drop_read(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	PGresult   *have;

	PQclear(b->drops_gone);
	b->drops_gone = NULL;
	b->drops_read = false;
	if (!b->drops_due && b->drops_live_since_us == b->live_since_us)
		return;
	have = node_replica_topics(b, &err);
	if (have && PQgetisnull(have, 0, 0))
		b->drops_read = true;	/* no replicated topic here */
	else if (have)
	{
		b->drops_gone = coord_deleted_topics(b, PQgetvalue(have, 0, 0), value_or_null(have, 0, 1), &err);
		b->drops_read = b->drops_gone != NULL;
	}
	if (!b->drops_read)
		log_mq_error("cannot look for deleted topics on the node; retrying", &err);
	mq_error_free(&err);
	PQclear(have);
}

/* After the heartbeat: the copies topic_drop_read found deleted, dropped. */
void
topic_drop_apply(Broker *b)
{
	bool		ok = b->drops_read;

	if (b->drops_gone)
		ok = drop_copies(b, b->drops_gone);
	PQclear(b->drops_gone);
	b->drops_gone = NULL;
	b->drops_read = false;
	if (ok)
	{
		b->drops_due = false;
		b->drops_live_since_us = b->live_since_us;
	}
}
