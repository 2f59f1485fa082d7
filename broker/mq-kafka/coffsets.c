/*-------------------------------------------------------------------------
 *
 * coffsets.c
 *	  __consumer_offsets in a replicated cluster (--coordinator): the
 *	  partitions Metadata gives it and their leaders, from the cluster's
 *	  view alone so that every daemon describes it alike, and keeping this
 *	  node's copy of the topic big enough for them.
 *
 * The topic is not replicated: each node appends the commits it takes as
 * leader to two partitions of its own, broker id * 2 and broker id * 2 + 1
 * (src/consumer_offsets.c), and its daemon serves them as their only
 * replica.  The topic has (highest listener id + 1) * 2 partitions; the
 * two of a listener that is not live are LEADER_NOT_AVAILABLE, and the
 * two of an id no listener has (no node appends there, every node's are
 * empty) are led by the live listener of the lowest id.  A Metadata
 * request that names the topic first has every live listener's node make
 * its topic with those partitions (mq.ensure_consumer_offsets: created
 * as on one node when first needed, or grown when a listener of a
 * higher id came), so that a Fetch or ListOffsets of any partition
 * Metadata then names a daemon for finds it there
 * (docs/design.md, "__consumer_offsets in a cluster").
 *
 * Loop thread only: no locking.  Below h_metadata.c; calls cluster.c and
 * kfan.c.
 *
 *-------------------------------------------------------------------------
 */
#include "coffsets.h"

#include "cluster.h"
#include "kfan.h"
#include "kjob.h"
#include "util.h"

#define ENSURE_SQL "SELECT mq.ensure_consumer_offsets($1)"

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

void
coffsets_add_ensures(KFan *f, int partitions)
{
	for (int i = 0; i < cluster_nbrokers(); i++)
	{
		const KBroker *b = cluster_broker_at(i);
		KPool	   *pool = b->id == kconfig.node_id ? pool_local() : b->live ? cluster_node_pool(b) : NULL;
		KJob	   *job = pool ? kfan_job(f, pool) : NULL;

		if (job != NULL)
			kstmt_int(kjob_add(job, ENSURE_SQL, 0), MQ_INT4OID, partitions);
	}
}
