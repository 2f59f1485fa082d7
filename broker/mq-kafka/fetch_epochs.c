/*-------------------------------------------------------------------------
 *
 * fetch_epochs.c
 *	  Leader epochs in Fetch (KIP-320): the check of a consumer's current
 *	  leader epoch, and the partition leader epoch each record batch
 *	  carries.  Loop thread only.
 *
 * The statement (h_fetch.c) gives each partition's bounds row the
 * partition's leader epoch and its epoch history (mq.leader_epochs) from
 * the epoch in force at the fetch offset on, at most FETCH_EPOCHS + 1 of
 * them; a partition still at epoch 0 (never elected: every record is of
 * epoch 0) skips the lookup.  A batch carries the epoch under which its
 * first record was written: the largest epoch starting at or before it;
 * fetch_records.c starts a new batch where an epoch starts.  When more than FETCH_EPOCHS
 * epochs follow the offset, the records from the start of the one not
 * kept on are left for the consumer's next Fetch (epochs_end).
 *
 * A current leader epoch (v9+; -1: none) older than the partition's is
 * FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, as Kafka
 * answers: the consumer refreshes its metadata, and after a leader change
 * validates its position with OffsetForLeaderEpoch (h_leader_epoch.c).
 *
 * Fetch v12+ carries the epoch of the last record the fetcher has
 * (last_fetched_epoch; -1: none), which Kafka's leader checks for any
 * fetcher (KIP-595's diverging epoch, with KIP-320's epoch ends): the
 * epoch's end here (epoch_end.c, as OffsetForLeaderEpoch answers it)
 * undefined, or a fetch offset before the log start, is
 * OFFSET_OUT_OF_RANGE; an end at an older epoch, or before the fetch
 * offset, means the fetcher's log diverged from this one after that
 * point: the partition is answered with no records, no error and the
 * diverging epoch (that epoch and its end), and the response goes at
 * once, as Kafka's does.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdint.h>

#include "epoch_end.h"
#include "fetch.h"
#include "kerr.h"
#include "kjson.h"
#include "pgbinary.h"

static int64_t
be_int(KSlice e)
{
	int64_t		v = 0;

	for (int i = 0; i < e.len; i++)
		v = (v << 8) | e.p[i];
	return e.len == 4 ? (int64_t) (int32_t) v : v;
}

void
fetch_epochs_read(PGresult *res, int row, FPart *fp)
{
	KSlice		ep[FETCH_EPOCHS + 1],
				st[FETCH_EPOCHS + 1];
	int			n = 0,
				m = 0;

	fp->nepochs = 0;
	fp->epochs_end = INT64_MAX;
	if (PQgetisnull(res, row, COL_EPOCHS) || PQgetisnull(res, row, COL_EPOCH_STARTS) ||
		!pg_array_elems(PQgetvalue(res, row, COL_EPOCHS), PQgetlength(res, row, COL_EPOCHS),
						ep, FETCH_EPOCHS + 1, &n) ||
		!pg_array_elems(PQgetvalue(res, row, COL_EPOCH_STARTS),
						PQgetlength(res, row, COL_EPOCH_STARTS), st, FETCH_EPOCHS + 1, &m) ||
		n != m)
		return;
	for (int i = 0; i < n; i++)
	{
		if (ep[i].len != 4 || st[i].len != 8)
			return;
		if (i == FETCH_EPOCHS)
		{
			fp->epochs_end = be_int(st[i]);
			break;
		}
		fp->epoch[i] = (int32_t) be_int(ep[i]);
		fp->epoch_start[i] = be_int(st[i]);
		fp->nepochs = i + 1;
	}
}

int16_t
fetch_epoch_check(PGresult *res, int row, const FPart *fp)
{
	if (PQgetisnull(res, row, COL_EPOCH))
		return KERR_NONE;
	return kerr_leader_epoch(fp->current_epoch, mq_get_int32(res, row, COL_EPOCH));
}

int32_t
fetch_epoch_at(const FPart *fp, int64_t offset)
{
	int32_t		epoch = fp->nepochs > 0 ? fp->epoch[0] : 0;

	for (int i = 1; i < fp->nepochs; i++)
		if (fp->epoch_start[i] <= offset)
			epoch = fp->epoch[i];
	return epoch;
}

/* an int4 (size 4) or int8 column of a bounds row, -1 when null */
static int64_t
int_or_none(PGresult *res, int row, int col, int size)
{
	if (PQgetisnull(res, row, col))
		return -1;
	return size == 4 ? mq_get_int32(res, row, col) : mq_get_int64(res, row, col);
}

int16_t
fetch_diverging(PGresult *res, int row, FPart *fp, int64_t log_start)
{
	int32_t		epoch;
	int64_t		end;

	fp->diverging_epoch = -1;
	fp->diverging_end = -1;
	if (fp->last_fetched_epoch < 0)
		return KERR_NONE;
	epoch_end_offset(fp->last_fetched_epoch, int_or_none(res, row, COL_END_LATEST, 4),
					 int_or_none(res, row, COL_END_FLOOR, 4),
					 int_or_none(res, row, COL_END_HIGHER, 8),
					 int_or_none(res, row, COL_LEO, 8), &epoch, &end);
	if (epoch < 0 || end < 0 || fp->offset < log_start)
		return KERR_OFFSET_OUT_OF_RANGE;
	if (epoch < fp->last_fetched_epoch || end < fp->offset)
	{
		fp->diverging_epoch = epoch;
		fp->diverging_end = end;
	}
	return KERR_NONE;
}
