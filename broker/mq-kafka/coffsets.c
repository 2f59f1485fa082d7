/*-------------------------------------------------------------------------
 *
 * coffsets.c
 *	  __consumer_offsets in a replicated cluster (--coordinator): the
 *	  partitions Metadata gives it and their leaders, from the cluster's
 *	  view alone so that every daemon describes it alike, and keeping this
 *	  node's copy of the topic big enough for them.
 *
 * The topic is not replicated: each node appends the commits it takes as
 * leader to ten partitions of its own, broker id * 10 to broker id * 10 +
 * 9 (src/consumer_offsets.c), and its daemon serves them as their only
 * replica.  The topic has (highest listener id + 1) * 10 partitions; the
 * ten of a listener that is not live are LEADER_NOT_AVAILABLE, and the
 * ten of an id no listener has (no node appends there, every node's are
 * empty) are led by the live listener of the lowest id.  After each view
 * that changes the count, this node's topic is made to have them
 * (mq.ensure_consumer_offsets), so that a Fetch or ListOffsets of any
 * partition Metadata names this daemon for finds it
 * (docs/design.md, "__consumer_offsets in a cluster").
 *
 * Loop thread only: no locking.  Below h_metadata.c and main.c (which
 * calls coffsets_view_changed after each view); calls cluster.c only.
 *
 *-------------------------------------------------------------------------
 */
#include "coffsets.h"

#include <string.h>

#include "cluster.h"
#include "kjob.h"
#include "util.h"

#define ENSURE_SQL "SELECT mq.ensure_consumer_offsets($1)"

static KRequest ensure_req;
static KJob ensure_job;
static bool ensuring;
static int	ensured;			/* the count this node's topic was given */

int
coffsets_partitions(void)
{
	int			max_id = -1;

	for (int i = 0; i < cluster_nbrokers(); i++)
		if (cluster_broker_at(i)->id > max_id)
			max_id = cluster_broker_at(i)->id;
	return max_id < 0 ? 0 : (max_id + 1) * KCO_NODE_PARTITIONS;
}

/* the live listener of the lowest id, or -1 */
static int
lowest_live(void)
{
	int			best = -1;

	for (int i = 0; i < cluster_nbrokers(); i++)
	{
		const KBroker *b = cluster_broker_at(i);

		if (b->live && (best < 0 || b->id < best))
			best = b->id;
	}
	return best;
}

int
coffsets_leader(int partition, int *replica)
{
	const KBroker *b = cluster_broker(partition / KCO_NODE_PARTITIONS);

	if (b != NULL)
	{
		*replica = b->id;
		return b->live ? b->id : -1;
	}
	*replica = lowest_live();
	return *replica;
}

static void
ensure_done(KRequest *req)
{
	KStmt	   *st = &ensure_job.stmts[0];
	int16_t		code;

	if (kstmt_failed(st, &code))
	{
		mq_log_warning("cannot make __consumer_offsets here: %s", st->err.message);
		ensured = 0;			/* again after the next view */
	}
	kjob_free(&ensure_job);
	ensuring = false;
}

void
coffsets_view_changed(void)
{
	int			n = coffsets_partitions();
	KStmt	   *st;

	if (!cluster_enabled() || n == 0 || n == ensured || ensuring)
		return;
	ensuring = true;
	ensured = n;
	memset(&ensure_req, 0, sizeof(ensure_req));
	st = kjob_add(&ensure_job, ENSURE_SQL, 0);
	kstmt_int(st, MQ_INT4OID, n);
	pool_run_on(pool_local(), &ensure_req, &ensure_job, ensure_done);
}
