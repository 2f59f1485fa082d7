/*-------------------------------------------------------------------------
 *
 * epoch_end.c
 *	  Kafka's end offset of a leader epoch (its leader epoch cache's
 *	  endOffsetFor), from the columns EPOCH_END_COLS reads: the answer of
 *	  OffsetForLeaderEpoch (h_leader_epoch.c), and what Fetch v12+ checks
 *	  a fetcher's last fetched epoch against (fetch_epochs.c).  No state,
 *	  no locking.
 *
 * The undefined epoch (-1), or an epoch newer than the latest, is
 * undefined: (-1, -1).  The latest epoch ends at the log end.  An older
 * one ends where the first later epoch starts, and is answered as the
 * largest epoch at or below the one asked (the one asked itself when the
 * history starts after it).
 *
 *-------------------------------------------------------------------------
 */
#include "epoch_end.h"

void
epoch_end_offset(int32_t asked, int64_t latest, int64_t floor, int64_t higher_start,
				 int64_t log_end, int32_t *epoch, int64_t *end)
{
	*epoch = -1;
	*end = -1;
	if (asked < 0 || latest < 0)
		return;
	if (latest == asked)
	{
		*epoch = asked;
		*end = log_end;
	}
	else if (higher_start >= 0)
	{
		*epoch = floor >= 0 ? (int32_t) floor : asked;
		*end = higher_start;
	}
}
