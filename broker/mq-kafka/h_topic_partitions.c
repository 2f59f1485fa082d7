/*-------------------------------------------------------------------------
 *
 * h_topic_partitions.c
 *	  DescribeTopicPartitions (v0, flexible; KIP-966): Metadata's topics
 *	  and partitions a page at a time.  Loop thread; one statement, as the
 *	  client's role.
 *
 * The partitions are METADATA_SQL's (meta_part.h), written as Metadata
 * writes them (meta_part.c), with each topic's authorized operations
 * (mq.has_topic_privilege), which this API always answers.  As in Kafka's
 * broker: topics in name order (byte order, as Java compares the names),
 * from the cursor's topic on and, in it, from the cursor's partition; at
 * most max(min(response_partition_limit, 2000), 1) partitions (a limit
 * of 0 or less is 1, as in Kafka), and a next cursor
 * where the limit cut the answer: the next partition of a topic, or the
 * next topic's partition 0 (even if that topic is unknown).  No topics
 * asked is every topic the role may describe; a topic asked that it may
 * not is TOPIC_AUTHORIZATION_FAILED (after the others, no id, whether
 * it exists or not), one that does not exist UNKNOWN_TOPIC_OR_PARTITION,
 * a name outside Kafka's rule INVALID_TOPIC_EXCEPTION.  A cursor naming a
 * topic not asked for, or a negative partition, is INVALID_REQUEST for
 * every topic asked.  Nothing is created.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "coffsets.h"
#include "kerr.h"
#include "meta_part.h"
#include "util.h"

#define MAX_PARTITIONS 2000		/* Kafka's max.request.partition.size.limit */

/*
 * METADATA_SQL's rows in byte order, with the topic's authorized
 * operations, asked once per topic that has partitions: mq's alter is
 * Kafka's ALTER and ALTER_CONFIGS, and so DESCRIBE_CONFIGS, which
 * DescribeConfigs needs (h_configs.c); describe is DESCRIBE alone
 */
#define OPS(op, bit) "CASE WHEN mq.has_topic_privilege(t.topic, '" op "') THEN " bit " ELSE 0 END"
#define TOPIC_PARTITIONS_SQL(metadata) \
	"WITH q AS (" metadata ")," \
	" o AS (SELECT t.topic, " \
	OPS("read", "8") " + " OPS("write", "16") " + " OPS("create", "32") " + " \
	OPS("delete", "64") " + " OPS("alter", "3200") " + " OPS("describe", "256") " AS ops" \
	"        FROM (SELECT DISTINCT topic FROM q WHERE partition >= 0) t)" \
	" SELECT q.*, o.ops FROM q LEFT JOIN o ON o.topic = q.topic AND q.partition >= 0" \
	" ORDER BY q.topic COLLATE \"C\", q.partition"
#define COL_OPS 8

typedef struct TopicPartsState
{
	KJob		job;
	int32_t		n;				/* topics asked, sorted; 0: all */
	KSlice	   *names;
	KSlice		cursor;			/* len -1: none */
	int32_t		cursor_part;
	int32_t		limit;
} TopicPartsState;

static void
topic_parts_state_free(void *p)
{
	TopicPartsState *s = p;

	kjob_free(&s->job);
	free(s->names);
	free(s);
}

static int
slice_cmp(KSlice a, KSlice b)
{
	int			c = memcmp(a.p, b.p, (size_t) (a.len < b.len ? a.len : b.len));

	return c != 0 ? c : (a.len > b.len) - (a.len < b.len);
}

static int
slice_qsort_cmp(const void *a, const void *b)
{
	return slice_cmp(*(const KSlice *) a, *(const KSlice *) b);
}

static KSlice
row_name(PGresult *res, int row)
{
	KSlice		s = {(const uint8_t *) PQgetvalue(res, row, 0), PQgetlength(res, row, 0)};

	return s;
}

/* the first row of res from row on whose topic is not before name */
static int
find_row(PGresult *res, int row, KSlice name)
{
	while (row < PQntuples(res) && slice_cmp(row_name(res, row), name) < 0)
		row++;
	return row;
}

static bool
row_is(PGresult *res, int row, KSlice name)
{
	return row < PQntuples(res) && kslice_same(row_name(res, row), name);
}

static void
write_error_topic(KWriter *w, KSlice name, int16_t error)
{
	static const uint8_t zero[16];

	kw_i16(w, error);
	kw_strn(w, name.p, name.len);
	kw_uuid(w, zero);
	kw_i8(w, 0);				/* is_internal */
	kw_array(w, 0);
	kw_i32(w, INT32_MIN_OPS);
	kw_tags(w);
}

/*
 * A topic's partitions from start on, at most *left of them, from its
 * rows at row: the next partition not written, or -1 if none is left.
 */
static int32_t
write_topic(KWriter *w, PGresult *res, int row, int32_t start, int32_t *left)
{
	KSlice		name = row_name(res, row);
	bool		offsets = cluster_enabled() && kslice_eq(name, CONSUMER_OFFSETS_TOPIC);
	uint8_t		uuid[16];
	size_t		count_at;
	int32_t		n = 0,
				next = -1;

	kw_i16(w, KERR_NONE);
	kw_strn(w, name.p, name.len);
	(void) topic_id_from_hex(PQgetvalue(res, row, 6), uuid);
	kw_uuid(w, uuid);
	kw_i8(w, kslice_eq(name, CONSUMER_OFFSETS_TOPIC) ? 1 : 0);
	count_at = kw_later(w);
	if (offsets)
	{
		n = meta_write_offsets_partitions(w, 12, true, start, *left);
		if (start + n < coffsets_partitions())
			next = start + n;
	}
	else
		for (int i = row; row_is(res, i, name); i++)
		{
			int32_t		p = atoi(PQgetvalue(res, i, 1));

			if (p < start)
				continue;
			if (n == *left)
			{
				next = p;
				break;
			}
			meta_write_partition(w, 12, true, res, i);
			n++;
		}
	kw_fill_count(w, count_at, n);
	kw_i32(w, atoi(PQgetvalue(res, row, COL_OPS)));
	kw_tags(w);
	*left -= n;
	return next;
}

/* where the next page begins: part -1 is none */
typedef struct PageCursor
{
	KSlice		name;
	int32_t		part;
} PageCursor;

/* topic i (or, with none asked, name) is asked again, or before the cursor */
static bool
skipped(const TopicPartsState *s, int32_t i, KSlice name)
{
	return (s->n > 0 && i > 0 && kslice_same(name, s->names[i - 1])) ||
		(s->cursor.len >= 0 && slice_cmp(name, s->cursor) < 0);
}

/* the role may not describe name (its row at row says so) */
static bool
forbidden(PGresult *res, int row, KSlice name)
{
	return row_is(res, row, name) && strcmp(PQgetvalue(res, row, 1), "-2") == 0;
}

/* the row after the rows of the topic at row */
static int
skip_topic(PGresult *res, int row)
{
	KSlice		name = row_name(res, row);

	while (row_is(res, row, name))
		row++;
	return row;
}

/*
 * the partitions a page holds at most: the client's limit, at most
 * MAX_PARTITIONS and at least 1, as Kafka clamps it (a limit of 0 would
 * answer only a cursor where the page began, and a paging client would
 * ask again forever)
 */
static int32_t
page_limit(int32_t asked)
{
	return asked < 1 ? 1 : asked < MAX_PARTITIONS ? asked : MAX_PARTITIONS;
}

/*
 * The topics asked (sorted), or with none asked every topic of res, from
 * the cursor on, but those the role may not describe: how many.
 */
static int32_t
write_page(KWriter *w, const TopicPartsState *s, PGresult *res, PageCursor *next)
{
	int32_t		left = page_limit(s->limit);
	int32_t		n = 0;
	int			row = 0;

	next->part = -1;
	for (int32_t i = 0; s->n > 0 ? i < s->n : row < PQntuples(res); i++)
	{
		KSlice		name = s->n > 0 ? s->names[i] : row_name(res, row);
		int32_t		start = s->cursor.len >= 0 && kslice_same(name, s->cursor) ? s->cursor_part : 0;

		row = find_row(res, row, name);
		if (!skipped(s, i, name) && !forbidden(res, row, name))
		{
			if (left == 0)
			{
				next->name = name;
				next->part = 0;
				break;
			}
			n++;
			if (!row_is(res, row, name))
				write_error_topic(w, name, KERR_UNKNOWN_TOPIC_OR_PARTITION);
			else if (strcmp(PQgetvalue(res, row, 1), "-1") == 0)
				write_error_topic(w, name, KERR_INVALID_TOPIC_EXCEPTION);
			else if ((next->part = write_topic(w, res, row, start, &left)) >= 0)
			{
				next->name = name;
				break;
			}
		}
		if (s->n == 0)
			row = skip_topic(res, row);
	}
	return n;
}

/* the topics asked that the role may not describe, from the cursor on */
static int32_t
write_forbidden(KWriter *w, const TopicPartsState *s, PGresult *res)
{
	int32_t		n = 0;
	int			row = 0;

	for (int32_t i = 0; i < s->n; i++)
	{
		row = find_row(res, row, s->names[i]);
		if (skipped(s, i, s->names[i]) || !forbidden(res, row, s->names[i]))
			continue;
		write_error_topic(w, s->names[i], KERR_TOPIC_AUTHORIZATION_FAILED);
		n++;
	}
	return n;
}

/* INVALID_REQUEST (no statement), the statement's error, or the page */
static void
topic_parts_done(KRequest *req)
{
	TopicPartsState *s = req->state;
	KWriter    *w = &req->resp;
	KStmt	   *st = s->job.n > 0 ? &s->job.stmts[0] : NULL;
	PageCursor	next = {{NULL, -1}, -1};
	int16_t		code = KERR_INVALID_REQUEST;
	size_t		count_at;
	int32_t		n = 0;

	if (st && kstmt_failed(st, &code))
		mq_log_warning("describe topic partitions: %s", st->err.message);
	kw_i32(w, 0);				/* throttle_time_ms */
	count_at = kw_later(w);
	if (st && code == KERR_NONE)
		n = write_page(w, s, st->res, &next) + write_forbidden(w, s, st->res);
	else
		for (; n < s->n; n++)
			write_error_topic(w, s->names[n], code);
	kw_fill_count(w, count_at, n);
	if (next.part < 0)
		kw_i8(w, -1);			/* no next cursor */
	else
	{
		kw_i8(w, 1);
		kw_strn(w, next.name.p, next.name.len);
		kw_i32(w, next.part);
		kw_tags(w);
	}
	req_finish(req);
}

/* the cursor must name a topic asked for, and a partition from 0 */
static bool
cursor_valid(const TopicPartsState *s)
{
	if (s->cursor.len < 0)
		return true;
	if (s->cursor_part < 0)
		return false;
	for (int32_t i = 0; i < s->n; i++)
		if (kslice_same(s->names[i], s->cursor))
			return true;
	return s->n == 0;
}

void
h_describe_topic_partitions(KRequest *req)
{
	KReader    *r = &req->body;
	TopicPartsState *s = mq_malloc0(sizeof(TopicPartsState));
	MqArray		names,
				ids;
	KStmt	   *st;

	req->state = s;
	req->free_state = topic_parts_state_free;
	s->n = kr_array(r, 2);
	s->names = mq_malloc0(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n; i++)
	{
		s->names[i] = kr_str(r);
		kr_tags(r);
		r->err |= s->names[i].len < 0;
	}
	s->limit = kr_i32(r);
	s->cursor.len = -1;
	if (kr_i8(r) >= 0)
	{
		s->cursor = kr_str(r);
		s->cursor_part = kr_i32(r);
		kr_tags(r);
		r->err |= s->cursor.len < 0;
	}
	if (r->err || s->n < 0)
	{
		req_abort(req);
		return;
	}
	qsort(s->names, s->n, sizeof(KSlice), slice_qsort_cmp);
	if (!cursor_valid(s))
	{
		topic_parts_done(req);
		return;
	}
	mq_array_init(&names, MQ_TEXTOID);
	mq_array_init(&ids, MQ_TEXTOID);
	for (int32_t i = 0; i < s->n; i++)
		mq_array_add(&names, s->names[i].p, s->names[i].len);
	st = kjob_add(&s->job, s->n > 0 ? TOPIC_PARTITIONS_SQL(METADATA_SQL)
				  : TOPIC_PARTITIONS_SQL(METADATA_ALL_SQL), 0);
	if (s->n > 0)
		kstmt_array(st, MQ_TEXTARRAYOID, &names);
	else
		kstmt_text(st, MQ_TEXTARRAYOID, NULL);
	kstmt_array(st, MQ_TEXTARRAYOID, &ids);
	meta_add_view_partitions(st);
	kstmt_text(st, MQ_BOOLOID, "f");
	mq_array_free(&names);
	mq_array_free(&ids);
	pool_run(req, &s->job, topic_parts_done);
}
