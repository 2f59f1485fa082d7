/*-------------------------------------------------------------------------
 *
 * h_producers.c
 *	  DescribeProducers (v0, flexible): the producers each partition
 *	  remembers, read from the view mq.producers (src/sql/80_views.sql) as
 *	  the client's role.  Loop thread; one statement per topic.
 *
 * A partition's producers are those whose state it keeps for
 * idempotence (mq.producer_state: the epoch and the last batches): id,
 * epoch, the last sequence it took and when (the server's time of that
 * batch, where Kafka gives the batch's largest record timestamp).  The
 * coordinator epoch and the current transaction's first offset are -1:
 * mq has no transaction markers, and a Kafka transaction's batches get
 * their offsets when it commits, so no open transaction has one.  As in
 * Kafka it takes READ on the topic (TOPIC_AUTHORIZATION_FAILED for each
 * partition asked otherwise); a topic or partition that does not exist is
 * UNKNOWN_TOPIC_OR_PARTITION, a partition this node follows
 * NOT_LEADER_OR_FOLLOWER.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

/* $1 topic, $2 partitions: a row per partition asked and producer */
#define PRODUCERS_SQL \
	"SELECT mq.has_topic_privilege($1, 'read'), t.partitions, p.partition, p.role," \
	"       s.producer_id, s.producer_epoch, s.last_sequence," \
	"       (extract(epoch FROM s.last_batch_at) * 1000)::int8" \
	"  FROM (SELECT) x" \
	"  LEFT JOIN mq.topics t ON t.topic = $1" \
	"  LEFT JOIN mq.partitions p ON p.topic = $1 AND p.partition = ANY ($2)" \
	"  LEFT JOIN mq.producers s ON s.topic = p.topic AND s.partition = p.partition" \
	" ORDER BY p.partition, s.producer_id"

typedef struct AskedTopic
{
	KSlice		name;
	int32_t		nparts;
	int32_t    *parts;
} AskedTopic;

typedef struct ProducersState
{
	KJob		job;
	int32_t		ntopics;
	AskedTopic *topics;
} ProducersState;

static void
producers_state_free(void *p)
{
	ProducersState *s = p;

	kjob_free(&s->job);
	for (int32_t i = 0; i < s->ntopics; i++)
		free(s->topics[i].parts);
	free(s->topics);
	free(s);
}

/* the error of partition `part` of a topic whose statement returned res */
static int16_t
partition_error(const KStmt *st, int32_t part, int *first)
{
	PGresult   *res = st->res;
	int			n;
	int16_t		code;

	*first = -1;
	if (kstmt_failed(st, &code))
		return code;
	n = PQntuples(res);
	if (n == 0 || strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (PQgetisnull(res, 0, 1) || part < 0 || part >= atoi(PQgetvalue(res, 0, 1)))
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	for (int i = 0; i < n; i++)
		if (!PQgetisnull(res, i, 2) && atoi(PQgetvalue(res, i, 2)) == part)
		{
			*first = i;
			return strcmp(PQgetvalue(res, i, 3), "follower") == 0 ? KERR_NOT_LEADER_OR_FOLLOWER
				: KERR_NONE;
		}
	return KERR_UNKNOWN_TOPIC_OR_PARTITION;
}

/* the producers of a partition: its rows from `first` on */
static void
write_producers(KWriter *w, PGresult *res, int first, int32_t part)
{
	size_t		at = kw_later(w);
	int32_t		n = 0;

	for (int i = first; i >= 0 && i < PQntuples(res) && atoi(PQgetvalue(res, i, 2)) == part; i++)
	{
		if (PQgetisnull(res, i, 4))
			continue;
		kw_i64(w, strtoll(PQgetvalue(res, i, 4), NULL, 10));
		kw_i32(w, atoi(PQgetvalue(res, i, 5)));
		kw_i32(w, PQgetisnull(res, i, 6) ? -1 : atoi(PQgetvalue(res, i, 6)));
		kw_i64(w, strtoll(PQgetvalue(res, i, 7), NULL, 10));
		kw_i32(w, -1);			/* coordinator_epoch */
		kw_i64(w, -1);			/* current_txn_start_offset */
		kw_tags(w);
		n++;
	}
	kw_fill_count(w, at, n);
}

static void
producers_done(KRequest *req)
{
	ProducersState *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->ntopics);
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		const AskedTopic *a = &s->topics[t];
		const KStmt *st = &s->job.stmts[t];

		kw_strn(w, a->name.p, a->name.len);
		kw_array(w, a->nparts);
		for (int32_t k = 0; k < a->nparts; k++)
		{
			int			first;
			int16_t		code = partition_error(st, a->parts[k], &first);

			kw_i32(w, a->parts[k]);
			kw_i16(w, code);
			kw_strn(w, NULL, -1);	/* error_message */
			write_producers(w, st->res, code == KERR_NONE ? first : -1, a->parts[k]);
			kw_tags(w);
		}
		kw_tags(w);
	}
	req_finish(req);
}

/* one topic of the request: its name and partition indexes */
static void
read_topic(KReader *r, AskedTopic *a)
{
	a->name = kr_str(r);
	a->nparts = kr_array(r, 4);
	a->parts = mq_malloc0(sizeof(int32_t) * (a->nparts > 0 ? a->nparts : 1));
	for (int32_t k = 0; k < a->nparts && !r->err; k++)
		a->parts[k] = kr_i32(r);
	if (a->nparts < 0)
		a->nparts = 0;
	kr_tags(r);
}

void
h_describe_producers(KRequest *req)
{
	KReader    *r = &req->body;
	ProducersState *s = mq_malloc0(sizeof(ProducersState));
	int32_t		n;

	req->state = s;
	req->free_state = producers_state_free;
	n = kr_array(r, 2);
	s->topics = mq_malloc0(sizeof(AskedTopic) * (n > 0 ? n : 1));
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		AskedTopic *a = &s->topics[s->ntopics++];
		KStmt	   *st;
		char	   *name;

		read_topic(r, a);
		name = kslice_dup(a->name);
		st = kjob_add(&s->job, PRODUCERS_SQL, 0);
		kstmt_text(st, MQ_TEXTOID, name ? name : "");
		kstmt_int_array(st, a->parts, a->nparts);
		free(name);
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	pool_run(req, &s->job, producers_done);
}
