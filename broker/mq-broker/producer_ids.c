/*-------------------------------------------------------------------------
 *
 * producer_ids.c
 *	  Keeping the node supplied with cluster-wide producer ids (Kafka's
 *	  KIP-730): once a broker has attached, its node issues producer ids
 *	  (mq.init_producer) only from blocks the coordinator handed out
 *	  (mq_coord.allocate_producer_ids), so that no two producers in the
 *	  cluster share an id, also across failovers.  Each tick, before any
 *	  partition is stepped (so at start before the node leads anything),
 *	  the broker asks the node how many ids it has left and, below half a
 *	  block, fetches a block and adds it (mq.replica_add_producer_ids).
 *
 * The coordinator commits a block durably before returning it; a block
 * whose addition to the node fails (say, the node went away) is simply not
 * used: ids are plentiful, and a block is never offered twice.  Without
 * ids the node refuses mq.init_producer with MQ027 (retriable) until the
 * next block arrives.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include "broker.h"
#include "calls.h"
#include "util.h"

/* ids per block, as Kafka's controller hands them out */
#define PRODUCER_ID_BLOCK 1000

void
supply_producer_ids(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	int64_t		left;
	int64_t		first;
	int64_t		last;

	if (b->node == NULL || b->coord == NULL || !b->live)
		return;
	if (!node_producer_ids_left(b, &left, &err))
	{
		log_mq_error("cannot read the node's producer ids left", &err);
		mq_error_free(&err);
		return;
	}
	if (left >= PRODUCER_ID_BLOCK / 2)
		return;
	if (!coord_allocate_producer_ids(b, PRODUCER_ID_BLOCK, &first, &last, &err))
	{
		log_mq_error("cannot get a block of producer ids from the coordinator", &err);
		mq_error_free(&err);
		return;
	}
	if (!node_add_producer_ids(b, first, last, &left, &err))
	{
		log_mq_error("cannot add a block of producer ids to the node (the block is dropped)", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("added producer ids %lld..%lld to the node; %lld left",
				(long long) first, (long long) last, (long long) left);
}
