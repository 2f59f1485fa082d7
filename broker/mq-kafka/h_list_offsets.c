/*-------------------------------------------------------------------------
 *
 * h_list_offsets.c
 *	  ListOffsets (v0-v9).  Loop thread; a request is one job: one
 *	  statement for every partition asked for a named position (the log
 *	  start, the high watermark: what consumers starting and lag monitors
 *	  ask, for many partitions at once), and one per partition asked by
 *	  time.
 *
 * By timestamp is mq.offsets_for_times (Kafka's semantics: the first
 * offset whose record timestamp is at or after the time).  The named
 * positions: -2 the log start, -1 the high watermark (mq has no open
 * transactions, so the last stable offset is the same), -3 (v7+) the first
 * record with the largest timestamp, -4 (v8+) the local log start, which
 * is the log start (mq has no tiered storage), -5 (v9+) the last tiered
 * offset, -1 with leader epoch -1 as from a Kafka without tiered storage.
 * v4+ answers a leader epoch: for the latest offset the partition's
 * current one, for the log start and a record found by time the epoch
 * under which that record was written (mq.leader_epochs), as Kafka
 * answers from its epoch cache.  The request's current leader epoch
 * (v4+) is checked as Fetch checks it (kerr_leader_epoch), and a node
 * that follows the partition answers NOT_LEADER_OR_FOLLOWER, as a Kafka
 * follower does, so a client with stale metadata asks again instead of
 * taking a follower's high watermark.  v6+ is flexible.
 *
 * As in Kafka 3.9, after the topic's authorization and before anything
 * else: from v1, every entry of a partition asked more than once is
 * INVALID_REQUEST; a named position newer than the request's version
 * (-3 before v7, -4 before v8, -5 before v9) is UNSUPPORTED_VERSION.
 *
 * v0, which old clients and monitors (Burrow, sarama's defaults) still
 * send, asks for up to max_num_offsets offsets and gets an array;
 * Kafka's were segment base offsets, mq's is the one offset v1 answers
 * (the log start for -2, the high watermark for -1, the offset by time),
 * or none for max_num_offsets 0.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "offsets.h"
#include "util.h"

/*
 * one row whatever the topic: the statement's columns (NULL where the
 * partition is unknown or hidden), then whether the client may describe
 * the topic (column 7): Kafka answers TOPIC_AUTHORIZATION_FAILED for a
 * topic the client may not describe, whether it exists or not
 */
#define DESCRIBABLE(sql) \
	"SELECT x.*, a.ok FROM (SELECT mq._describable('topic', $1) AS ok) a LEFT JOIN LATERAL (" sql ") x ON true"
#define COL_DESCRIBABLE 7

/* whether this node follows partition (t, p) (7th column of each statement) */
#define FOLLOWS_SQL(t, p) \
	"EXISTS (SELECT 1 FROM mq.replica_status r WHERE r.topic = " t " AND r.partition = " p \
	"          AND r.role = 'follower')"

/* the leader epoch under which the record at offset o of (t, p) was written */
#define EPOCH_AT_SQL(t, p, o) \
	"(SELECT max(e.leader_epoch) FROM mq.leader_epochs e" \
	"  WHERE e.topic = " t " AND e.partition = " p " AND e.start_offset <= " o ")"

/*
 * The log start and high watermark of every partition asked for a named
 * position ($1 topics, $2 partitions), a row each in their order, with
 * the columns of DESCRIBABLE: each partition looked up alone (a LATERAL
 * subquery that OFFSET 0 keeps apart, so that its quals reach the
 * security-barrier view; design.md, "Views joined by their keys").  A
 * statement per partition cost about 1 ms each, mostly planning: 500 ms
 * for a 500-partition topic, which a lag monitor asks every few seconds.
 */
#define BOUNDS_SQL \
	"SELECT x.*, a.ok FROM unnest($1::text[], $2::int4[]) WITH ORDINALITY u(t, p, i)" \
	" CROSS JOIN LATERAL (SELECT mq._describable('topic', u.t) AS ok) a" \
	" LEFT JOIN LATERAL (" \
	"  SELECT s.log_start_offset, s.high_watermark, NULL, NULL, s.leader_epoch," \
	"         " EPOCH_AT_SQL("u.t", "u.p", "s.log_start_offset") ", " FOLLOWS_SQL("u.t", "u.p") \
	"    FROM mq.partitions s WHERE s.topic = u.t AND s.partition = u.p OFFSET 0) x ON true" \
	" ORDER BY u.i"

/* the first offset whose timestamp is at or after $3 (ms), hw if none */
#define BY_TIME_SQL DESCRIBABLE( \
	"SELECT s.log_start_offset, s.high_watermark, o.o," \
	"       (SELECT (extract(epoch FROM f.timestamp) * 1000)::int8" \
	"          FROM mq.fetch($1, $2, o.o, 1) f WHERE o.o < s.high_watermark)," \
	"       s.leader_epoch, " EPOCH_AT_SQL("$1", "$2", "o.o") ", " FOLLOWS_SQL("$1", "$2") \
	"  FROM mq.partitions s, mq.offsets_for_times($1, $2, to_timestamp($3 / 1000.0)) o(o)" \
	" WHERE s.topic = $1 AND s.partition = $2")

/*
 * v7+ -3: the first record with the largest timestamp (its offset and
 * time); mq keeps no largest timestamp per partition, so this reads the
 * partition's timestamps (ListOffsets by max timestamp is an admin call)
 */
#define MAX_TIME_SQL DESCRIBABLE( \
	"SELECT s.log_start_offset, s.high_watermark, m.o, m.ts, s.leader_epoch," \
	"       " EPOCH_AT_SQL("$1", "$2", "m.o") ", " FOLLOWS_SQL("$1", "$2") \
	"  FROM mq.partitions s LEFT JOIN LATERAL (" \
	"    SELECT f.msg_offset AS o, (extract(epoch FROM f.timestamp) * 1000)::int8 AS ts" \
	"      FROM mq.fetch($1, $2, s.log_start_offset," \
	"                    greatest(s.high_watermark - s.log_start_offset, 1)::int4) f" \
	"     WHERE f.msg_offset < s.high_watermark" \
	"     ORDER BY f.timestamp DESC, f.msg_offset LIMIT 1) m ON true" \
	" WHERE s.topic = $1 AND s.partition = $2")

/* the timestamps that name a position rather than a time */
#define TS_LATEST (-1)
#define TS_EARLIEST (-2)
#define TS_MAX (-3)				/* v7+ */
#define TS_EARLIEST_LOCAL (-4)	/* v8+: no tiered storage: the log start */
#define TS_LATEST_TIERED (-5)	/* v9+: nothing tiered: offset -1 */

/* a named position the request's version does not know (Kafka 3.9's check) */
static bool
position_unsupported(int64_t ts, int16_t v)
{
	return (ts == TS_MAX && v < 7) || (ts == TS_EARLIEST_LOCAL && v < 8) ||
		(ts == TS_LATEST_TIERED && v < 9);
}

static void
read_list_part(KRequest *req, OffState *s, OPart *op, const char *topic)
{
	KStmt	   *st;

	op->partition = kr_i32(&req->body);
	op->current_epoch = -1;
	if (req->api_version >= 4)
		op->current_epoch = kr_i32(&req->body);
	op->timestamp = kr_i64(&req->body);
	if (req->api_version == 0)
		op->max_offsets = kr_i32(&req->body);
	if (position_unsupported(op->timestamp, req->api_version))
		op->code = KERR_UNSUPPORTED_VERSION;
	op->job = &s->job;
	op->stmt = -1;				/* BOUNDS_SQL's, added when all are read */
	if (op->timestamp < 0 && (op->timestamp != TS_MAX || op->code != KERR_NONE))
		return;					/* TS_MAX is read from the records */
	st = kjob_add(&s->job, op->timestamp < 0 ? MAX_TIME_SQL : BY_TIME_SQL, 0);
	op->stmt = s->job.n - 1;
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, op->partition);
	if (op->timestamp >= 0)
		kstmt_int(st, MQ_INT8OID, op->timestamp);
}

/* the epoch of the record answered (row of res), if the history has it */
static int32_t
epoch_at(PGresult *res, int row, int32_t current)
{
	return PQgetisnull(res, row, 5) ? current : atoi(PQgetvalue(res, row, 5));
}

static void
write_list_part(KRequest *req, OffState *s, OPart *op)
{
	KWriter    *w = &req->resp;
	KStmt	   *st = &op->job->stmts[op->stmt];
	PGresult   *res = st->res;
	int			row = op->row;
	int16_t		code;
	int64_t		off = -1,
				ts = -1;
	int32_t		epoch = -1;

	if (!kstmt_failed(st, &code) && (PQntuples(res) <= row || PQgetisnull(res, row, 0)))
		code = PQntuples(res) > row && strcmp(PQgetvalue(res, row, COL_DESCRIBABLE), "f") == 0 ?
			KERR_TOPIC_AUTHORIZATION_FAILED : KERR_UNKNOWN_TOPIC_OR_PARTITION;
	else if (code == KERR_NONE && strcmp(PQgetvalue(res, row, 6), "t") == 0)
		code = KERR_NOT_LEADER_OR_FOLLOWER;
	else if (code == KERR_NONE)
		code = kerr_leader_epoch(op->current_epoch, atoi(PQgetvalue(res, row, 4)));
	if (op->code != KERR_NONE && code != KERR_TOPIC_AUTHORIZATION_FAILED)
		code = op->code;		/* refused before the partition is looked at */
	if (code == KERR_NONE)
	{
		int64_t		hw = strtoll(PQgetvalue(res, row, 1), NULL, 10);

		epoch = atoi(PQgetvalue(res, row, 4));
		if (op->timestamp == TS_EARLIEST || op->timestamp == TS_EARLIEST_LOCAL)
		{
			off = strtoll(PQgetvalue(res, row, 0), NULL, 10);
			epoch = epoch_at(res, row, epoch);
		}
		else if (op->timestamp == TS_LATEST)
			off = hw;
		else if (op->timestamp == TS_LATEST_TIERED || op->timestamp < TS_LATEST_TIERED)
			epoch = -1;			/* nothing tiered (or unknown): offset -1 */
		else if (!PQgetisnull(res, row, 2) && strtoll(PQgetvalue(res, row, 2), NULL, 10) < hw)
		{
			off = strtoll(PQgetvalue(res, row, 2), NULL, 10);
			ts = PQgetisnull(res, row, 3) ? -1 : strtoll(PQgetvalue(res, row, 3), NULL, 10);
			epoch = epoch_at(res, row, epoch);
		}
		else
			epoch = -1;			/* no record that late (-3: an empty log): offset -1 */
	}
	kw_i32(w, op->partition);
	kw_i16(w, code);
	if (req->api_version == 0)
	{
		/* old_style_offsets: at most one here */
		bool		one = code == KERR_NONE && off >= 0 && op->max_offsets > 0;

		kw_i32(w, one ? 1 : 0);
		if (one)
			kw_i64(w, off);
		return;
	}
	kw_i64(w, ts);
	kw_i64(w, off);
	if (req->api_version >= 4)
		kw_i32(w, epoch);		/* leader epoch */
}

/* a (topic, partition) asked, and where in the request */
typedef struct PartKey
{
	KSlice		topic;
	int32_t		partition;
	int32_t		i;
} PartKey;

static int
part_key_cmp(const void *a, const void *b)
{
	const PartKey *x = a,
			   *y = b;
	int			c = (x->topic.len > y->topic.len) - (x->topic.len < y->topic.len);

	if (c == 0 && x->topic.len > 0)
		c = memcmp(x->topic.p, y->topic.p, (size_t) x->topic.len);
	return c != 0 ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* v1+: every entry of a partition asked twice is INVALID_REQUEST, as in Kafka */
static void
refuse_duplicates(OffState *s)
{
	PartKey    *k = mq_malloc0(sizeof(PartKey) * (s->nparts > 0 ? s->nparts : 1));

	for (int32_t i = 0; i < s->nparts; i++)
	{
		k[i].topic = s->topics[s->parts[i].topic];
		k[i].partition = s->parts[i].partition;
		k[i].i = i;
	}
	qsort(k, s->nparts, sizeof(PartKey), part_key_cmp);
	for (int32_t i = 1; i < s->nparts; i++)
		if (part_key_cmp(&k[i - 1], &k[i]) == 0)
			s->parts[k[i - 1].i].code = s->parts[k[i].i].code = KERR_INVALID_REQUEST;
	free(k);
}

/* BOUNDS_SQL for the partitions that have no statement of their own */
static void
add_bounds(OffState *s)
{
	MqArray		topics,
				parts;
	KStmt	   *st;
	int			row = 0;

	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int32_t i = 0; i < s->nparts; i++)
	{
		OPart	   *op = &s->parts[i];

		if (op->stmt >= 0)
			continue;
		op->stmt = s->job.n;
		op->row = row++;
		mq_array_add(&topics, s->topics[op->topic].p, s->topics[op->topic].len);
		mq_array_add_int32(&parts, op->partition);
	}
	if (row > 0)
	{
		st = kjob_add(&s->job, BOUNDS_SQL, 0);
		kstmt_array(st, MQ_TEXTARRAYOID, &topics);
		kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	}
	mq_array_free(&topics);
	mq_array_free(&parts);
}

static void
list_offsets_done(KRequest *req)
{
	OffState   *s = req->state;

	if (req->api_version >= 2)
		kw_i32(&req->resp, 0);
	write_topics(req, s, write_list_part);
	req_finish(req);
}

void
h_list_offsets(KRequest *req)
{
	KReader    *r = &req->body;
	OffState   *s = off_state(req);

	(void) kr_i32(r);			/* replica id */
	if (req->api_version >= 2)
		(void) kr_i8(r);		/* isolation level */
	read_topics(req, s, req->api_version == 0 ? 16 : 12, read_list_part);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (req->api_version >= 1)
		refuse_duplicates(s);
	add_bounds(s);
	pool_run(req, &s->job, list_offsets_done);
}
