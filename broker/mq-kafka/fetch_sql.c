/*-------------------------------------------------------------------------
 *
 * fetch_sql.c
 *	  The statement of a Fetch attempt (h_fetch.c, and the read-ahead of
 *	  fetch_ahead.c, which runs it through the handler's FetchOps) and the
 *	  order of its result's rows.  Loop thread only.
 *
 * One statement reads every partition of the request: a bounds row per
 * partition (log start, high watermark, leader epochs, and for Fetch
 * v12+ where the fetcher's last fetched epoch ends: fetch_epochs.c), then
 * the records, as rows (FETCH_SQL, encoded by fetch_records.c) or, for
 * v4+ when the database encodes, as record batches (FETCH_BATCH_SQL,
 * mq.kafka_fetch).  Only records below the high watermark are read.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>

#include "epoch_end.h"
#include "fetch.h"
#include "pgbinary.h"
#include "util.h"

/* FETCH_EPOCHS + 1 (fetch_epochs.c) */
#define FETCH_EPOCHS_SQL "9"

/*
 * a bounds row's log end offset and the end of its last fetched epoch
 * r0.lf (epoch_end.h: looked up only for Fetch v12+ with one), and the
 * same columns null in the other rows, for both statements
 */
#define FETCH_BOUNDS_DIVERGE " r0.leo," EPOCH_END_COLS("r0.t", "r0.p", "r0.lf")
#define FETCH_ROWS_DIVERGE " NULL::int8, NULL::int4, NULL::int4, NULL::int8"

/*
 * Each partition asked for, looked up alone, for both statements: a
 * plain join of the security-barrier view mq.partitions cannot take the
 * join's quals into the view, so it read the log end of every partition
 * of every topic (a one-partition Fetch of a database with 3,576
 * partitions took 63 ms; design.md, "Views joined by their keys").
 * OFFSET 0 keeps the subquery from being pulled up: its quals then reach
 * the view as parameters, and the view reads one partition by its keys.
 */
#define FETCH_PARTITION_JOIN \
	" LEFT JOIN LATERAL (SELECT s.log_start_offset, s.high_watermark, s.log_end_offset, s.leader_epoch" \
	"   FROM mq.partitions s WHERE s.topic = u.t AND s.partition = u.p OFFSET 0) s ON true"

/* the epochs of a partition's records from r0.o on, for both statements */
#define FETCH_EPOCHS_JOIN \
	" LEFT JOIN LATERAL (SELECT array_agg(q.leader_epoch ORDER BY q.leader_epoch) AS eps," \
	"        array_agg(q.start_offset ORDER BY q.leader_epoch) AS starts FROM (" \
	"     SELECT w.leader_epoch, w.start_offset FROM (" \
	"       SELECT h.leader_epoch, h.start_offset," \
	"              lead(h.start_offset) OVER (ORDER BY h.leader_epoch) AS next_start" \
	"         FROM mq.leader_epochs h WHERE r0.ep > 0 AND h.topic = r0.t AND h.partition = r0.p) w" \
	"      WHERE w.next_start IS NULL OR w.next_start > r0.o" \
	"      ORDER BY w.leader_epoch LIMIT " FETCH_EPOCHS_SQL ") q) e ON r0.lso IS NOT NULL"

/*
 * One row per partition with its bounds (record columns null), then the
 * records, with no ORDER BY: rows are put in order by the daemon
 * (fetch_order), which costs less than a sort in the backend.  Each
 * partition's records stop before the one that would pass the partition's
 * byte limit ($5), which mq.fetch's max_bytes counts as it reads (key and
 * value sizes plus 24 bytes a record; the first record always passes), so
 * records that cannot be sent are neither read nor transferred; the
 * daemon checks the limits again, so the cut is only an economy.
 */
#define FETCH_SQL \
	"WITH r0 AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, u.n, u.mb, u.lf, s.log_start_offset AS lso," \
	"                  s.high_watermark AS hw, s.log_end_offset AS leo, s.leader_epoch AS ep" \
	"             FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::int4[], $6::int4[])" \
	"                  WITH ORDINALITY AS u(t, p, o, n, mb, lf, i)" \
	FETCH_PARTITION_JOIN ")," \
	" r AS (SELECT * FROM r0 WHERE r0.lso IS NOT NULL)" \
	" SELECT r0.i, CASE WHEN r0.lso IS NULL AND NOT mq.has_topic_privilege(r0.t, 'read') THEN -1" \
	"        ELSE r0.lso END, r0.hw, NULL::int8, NULL::timestamptz, NULL::bytea, NULL::bytea," \
	"        NULL::bool, NULL::text[], NULL::bytea[], r0.ep, e.eps, e.starts," \
	FETCH_BOUNDS_DIVERGE " FROM r0" \
	FETCH_EPOCHS_JOIN \
	" UNION ALL" \
	" SELECT r.i, NULL, NULL, f.msg_offset, coalesce(f.timestamp, f.created_at), f.key, f.value," \
	"        f.timestamp_type = 'LogAppendTime'," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.key" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.value" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END," \
	"        NULL::int4, NULL::int4[], NULL::int8[]," FETCH_ROWS_DIVERGE \
	"   FROM r CROSS JOIN LATERAL mq.fetch(r.t, r.p, CASE WHEN r.o >= r.lso AND r.o < r.hw" \
	"                                      THEN r.o ELSE r.leo END, r.n, max_bytes => r.mb) f"


/*
 * v4+: the same bounds rows, then a row per partition with its records as
 * record batches (mq.kafka_fetch, in a select list: its rows stream).
 */
#define FETCH_BATCH_SQL \
	"WITH r0 AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, u.lf, s.log_start_offset AS lso," \
	"                  s.high_watermark AS hw, s.log_end_offset AS leo, s.leader_epoch AS ep" \
	"             FROM unnest($1::text[], $2::int4[], $3::int8[], $7::int4[])" \
	"                  WITH ORDINALITY AS u(t, p, o, lf, i)" \
	FETCH_PARTITION_JOIN ")" \
	" SELECT r0.i, CASE WHEN r0.lso IS NULL AND NOT mq.has_topic_privilege(r0.t, 'read') THEN -1" \
	"        ELSE r0.lso END, r0.hw, NULL::int8, NULL::int4, NULL::int8, NULL::bytea," \
	"        NULL::bool, NULL::text[], NULL::bytea[], r0.ep, e.eps, e.starts," \
	FETCH_BOUNDS_DIVERGE " FROM r0" \
	FETCH_EPOCHS_JOIN \
	" UNION ALL" \
	" SELECT (b.f).item, NULL, NULL, (b.f).next_offset, (b.f).records, (b.f).bytes, (b.f).batches," \
	"        NULL::bool, NULL::text[], NULL::bytea[], NULL::int4, NULL::int4[], NULL::int8[]," \
	FETCH_ROWS_DIVERGE \
	"   FROM (SELECT mq.kafka_fetch(" \
	"           ARRAY(SELECT CASE WHEN r0.lso IS NOT NULL THEN r0.t END FROM r0 ORDER BY r0.i), $2," \
	"           ARRAY(SELECT CASE WHEN r0.o >= r0.lso AND r0.o < r0.hw THEN r0.o ELSE r0.leo END" \
	"                   FROM r0 ORDER BY r0.i), $4, $5, $6) AS f OFFSET 0) b"

/* Fetch v4+ answered from the database's batches (not --fetch-encoder=daemon) */
bool
fetch_batched(const FetchState *s)
{
	return s->magic == 2 && !kconfig.fetch_in_daemon && !s->rows_only;
}

static int
frow_cmp(const void *a, const void *b)
{
	const FRow *x = a,
			   *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * The result's rows in order: bounds[k] is the bounds row of partition k
 * (-1: none, the partition is unknown; BOUNDS_UNAUTHORIZED), and the record rows sorted by
 * partition and offset, in *rows (*nrows of them; the caller frees).  The
 * backend sends them in that order already, so the sort is only a check.
 */
void
fetch_order(PGresult *res, int32_t nparts, int *bounds, FRow **rows, int *nrows)
{
	int			ntup = PQntuples(res);
	bool		sorted = true;

	*rows = mq_malloc0(sizeof(FRow) * (ntup > 0 ? ntup : 1));
	*nrows = 0;
	for (int32_t k = 0; k < nparts; k++)
		bounds[k] = -1;
	for (int row = 0; row < ntup; row++)
	{
		int32_t		i = mq_get_int32(res, row, COL_I);
		FRow	   *r;

		if (i < 1 || i > nparts)
			continue;
		if (PQgetisnull(res, row, COL_OFFSET))
		{
			if (!PQgetisnull(res, row, COL_LSO) && !PQgetisnull(res, row, COL_HW))
				bounds[i - 1] = row;
			else if (!PQgetisnull(res, row, COL_LSO))
				bounds[i - 1] = BOUNDS_UNAUTHORIZED;
			continue;
		}
		r = &(*rows)[(*nrows)++];
		r->part = i - 1;
		r->row = row;
		r->offset = mq_get_int64(res, row, COL_OFFSET);
		if (*nrows > 1 && frow_cmp(r - 1, r) > 0)
			sorted = false;
	}
	if (!sorted)
		qsort(*rows, *nrows, sizeof(FRow), frow_cmp);
}

/* array a as the statement's next parameter, of array type oid */
static void
add_array(KStmt *st, Oid oid, MqArray *a)
{
	kstmt_array(st, oid, a);
	mq_array_free(a);
}

/*
 * The statement that reads s's partitions, as s->job: arrays of topics,
 * partitions, offsets, record counts and byte limits ($1-$5), the
 * response's byte limit ($6, FETCH_BATCH_SQL only), and last fetched
 * epochs (the last parameter)
 */
void
fetch_job(FetchState *s)
{
	MqArray		a[6];
	static const Oid elem[6] = {MQ_TEXTOID, MQ_INT4OID, MQ_INT8OID, MQ_INT4OID, MQ_INT4OID,
								MQ_INT4OID};
	static const Oid arr[6] = {MQ_TEXTARRAYOID, MQ_INT4ARRAYOID, MQ_INT8ARRAYOID,
				MQ_INT4ARRAYOID, MQ_INT4ARRAYOID, MQ_INT4ARRAYOID};
	KStmt	   *st;

	kjob_free(&s->job);
	st = kjob_add(&s->job, fetch_batched(s) ? FETCH_BATCH_SQL : FETCH_SQL, 1);
	for (int i = 0; i < 6; i++)
		mq_array_init(&a[i], elem[i]);
	for (int32_t k = 0; k < s->nparts; k++)
	{
		const FPart *fp = &s->parts[k];
		int32_t		cnt = fp->max_records > 0 ? fp->max_records : fp->max_bytes / 32 + 1;

		mq_array_add(&a[0], s->topics[fp->topic].p, s->topics[fp->topic].len);
		mq_array_add_int32(&a[1], fp->partition);
		mq_array_add_int64(&a[2], fp->offset);
		mq_array_add_int32(&a[3], cnt < 1 ? 1 : cnt > 10000 ? 10000 : cnt);
		mq_array_add_int32(&a[4], fp->max_bytes > 0 ? fp->max_bytes : 1);
		mq_array_add_int32(&a[5], fp->last_fetched_epoch);
	}
	for (int i = 0; i < 5; i++)
		add_array(st, arr[i], &a[i]);
	if (fetch_batched(s))
		kstmt_int(st, MQ_INT4OID, s->max_bytes > 0 ? s->max_bytes : 1);
	add_array(st, arr[5], &a[5]);
}
