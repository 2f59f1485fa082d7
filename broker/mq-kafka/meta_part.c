/*-------------------------------------------------------------------------
 *
 * meta_part.c
 *	  A partition's entry in a Metadata (v0-v12) or DescribeTopicPartitions
 *	  (v0) answer: its leader, epoch and replicas from the row of
 *	  METADATA_SQL (meta_part.h) or the cluster's view.  Loop thread; no
 *	  locks.
 *
 * A partition the cluster's view knows is written from the view (a leader
 * whose listener is not live is LEADER_NOT_AVAILABLE, so clients wait for
 * the election); otherwise from this node's mq.replica_status, and an
 * unreplicated partition is led by this daemon alone.  In a cluster,
 * __consumer_offsets' partitions come from the view (coffsets.c), each
 * with its one replica and no leader epoch (-1), as a partition's leader
 * may change without one.  DescribeTopicPartitions (elr) adds KIP-966's
 * eligible and last known eligible leader replicas, which mq has none of
 * (empty, as Kafka answers with ELR disabled).
 *
 *-------------------------------------------------------------------------
 */
#include "meta_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "coffsets.h"
#include "kerr.h"
#include "mqkafka.h"

/* what follows the ISR: ELR (DescribeTopicPartitions), offline replicas */
static void
write_tail(KWriter *w, int16_t v, bool elr)
{
	if (elr)
	{
		kw_array(w, 0);			/* eligible leader replicas */
		kw_array(w, 0);			/* last known ELR */
	}
	if (v >= 5)
		kw_array(w, 0);			/* offline replicas */
	kw_tags(w);
}

/* broker ids, an int[] in text form ("{1,2,3}"); NULL: just me */
static void
write_ids(KWriter *w, const char *text)
{
	if (text == NULL)
	{
		kw_array(w, 1);
		kw_i32(w, kconfig.node_id);
	}
	else
		kw_int32s_text(w, text);
}

/* a partition the cluster's view knows */
static void
write_viewed_partition(KWriter *w, int16_t v, bool elr, const KPartView *p, int32_t epoch)
{
	const KBroker *b = p->leader >= 0 ? cluster_broker(p->leader) : NULL;
	bool		up = b && b->live;

	kw_i16(w, up ? KERR_NONE : KERR_LEADER_NOT_AVAILABLE);
	kw_i32(w, p->partition);
	kw_i32(w, up ? p->leader : -1);
	if (v >= 7)
		kw_i32(w, epoch);		/* leader epoch */
	write_ids(w, p->replicas);
	write_ids(w, p->isr);
	write_tail(w, v, elr);
}

void
meta_write_partition(KWriter *w, int16_t v, bool elr, PGresult *res, int row)
{
	bool		standalone = strcmp(PQgetvalue(res, row, 2), "t") == 0;
	bool		known = !PQgetisnull(res, row, 3);
	const KPartView *p = cluster_enabled() && !standalone
		? cluster_partition(PQgetvalue(res, row, 0), atoi(PQgetvalue(res, row, 1))) : NULL;

	if (p)
	{
		write_viewed_partition(w, v, elr, p, atoi(PQgetvalue(res, row, 7)));
		return;
	}

	kw_i16(w, standalone || known ? KERR_NONE : KERR_LEADER_NOT_AVAILABLE);
	kw_i32(w, atoi(PQgetvalue(res, row, 1)));
	kw_i32(w, standalone ? kconfig.node_id : known ? atoi(PQgetvalue(res, row, 3)) : -1);
	if (v >= 7)
		kw_i32(w, atoi(PQgetvalue(res, row, 7)));	/* leader epoch */
	write_ids(w, standalone ? NULL : PQgetvalue(res, row, 4));	/* replicas */
	write_ids(w, standalone ? NULL : PQgetvalue(res, row, 5));	/* isr */
	write_tail(w, v, elr);
}

/*
 * __consumer_offsets in a cluster: its partitions and leaders from the
 * view (coffsets.c), the same from every daemon, each partition with its
 * one replica; no leader epoch (-1), as a partition's leader may change
 * without one.
 */
int32_t
meta_write_offsets_partitions(KWriter *w, int16_t v, bool elr, int32_t first, int32_t max)
{
	int32_t		n = 0;

	for (int32_t p = first < 0 ? 0 : first; p < coffsets_partitions() && n < max; p++, n++)
	{
		int			replica;
		int			leader = coffsets_leader(p, &replica);
		char		ids[16];

		snprintf(ids, sizeof(ids), "{%d}", replica);
		kw_i16(w, leader >= 0 ? KERR_NONE : KERR_LEADER_NOT_AVAILABLE);
		kw_i32(w, p);
		kw_i32(w, leader);
		if (v >= 7)
			kw_i32(w, -1);		/* leader epoch */
		write_ids(w, replica >= 0 ? ids : "{}");	/* replicas */
		write_ids(w, leader >= 0 ? ids : "{}");	/* isr */
		write_tail(w, v, elr);
	}
	return n;
}

/* the cluster view's partitions as METADATA_SQL's $3 and $4 (none: empty) */
void
meta_add_view_partitions(KStmt *st)
{
	MqArray		topics,
				parts;

	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int i = 0; i < cluster_npartitions(); i++)
	{
		const KPartView *p = cluster_partition_at(i);

		mq_array_add(&topics, p->topic, strlen(p->topic));
		mq_array_add_int32(&parts, p->partition);
	}
	kstmt_array(st, MQ_TEXTARRAYOID, &topics);
	kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	mq_array_free(&topics);
	mq_array_free(&parts);
}
