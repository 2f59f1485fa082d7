/*-------------------------------------------------------------------------
 *
 * epoch_end.h
 *	  Where a leader epoch ends in a partition's log, as Kafka's leader
 *	  epoch cache answers it (KIP-101): the one lookup behind
 *	  OffsetForLeaderEpoch (h_leader_epoch.c) and Fetch's diverging epoch
 *	  (fetch_epochs.c).  No state, no locking.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_EPOCH_END_H
#define MQK_EPOCH_END_H

#include <stdint.h>

/*
 * Three select-list columns from mq.leader_epochs for partition (T, P)
 * and the epoch E asked (SQL expressions): the partition's latest epoch
 * (int4), the largest epoch at or below E (int4), and the start of the
 * first epoch above E (int8).  Nothing is looked up when E is negative
 * (the columns are then null).
 */
#define EPOCH_END_COLS(T, P, E) \
	" (SELECT max(e.leader_epoch) FROM mq.leader_epochs e" \
	"   WHERE " E " >= 0 AND e.topic = " T " AND e.partition = " P ")," \
	" (SELECT max(e.leader_epoch) FROM mq.leader_epochs e" \
	"   WHERE " E " >= 0 AND e.topic = " T " AND e.partition = " P \
	"     AND e.leader_epoch <= " E ")," \
	" (SELECT e.start_offset FROM mq.leader_epochs e" \
	"   WHERE " E " >= 0 AND e.topic = " T " AND e.partition = " P \
	"     AND e.leader_epoch > " E " ORDER BY e.leader_epoch LIMIT 1)"

/*
 * The epoch and end offset of epoch asked from those columns (-1 for a
 * null one) and the partition's log end offset: (-1, -1) if undefined.
 */
extern void epoch_end_offset(int32_t asked, int64_t latest, int64_t floor, int64_t higher_start,
							 int64_t log_end, int32_t *epoch, int64_t *end);

#endif							/* MQK_EPOCH_END_H */
