/*-------------------------------------------------------------------------
 *
 * h_offset_fetch.c
 *	  OffsetFetch (v0-v9): each group's committed offsets, each from the
 *	  node that leads its partition (h_offsets.c's jobs), or of every live
 *	  node for all of a group's offsets (topics null), each partition's
 *	  taken from its leader's.  Loop thread.
 *
 * OffsetFetch v0 is v1 on the wire (Kafka read ZooKeeper's offsets for
 * it); v6+ is flexible; v7's require_stable answers
 * UNSTABLE_OFFSET_COMMIT for an offset a transaction is still committing
 * (offsets_stable.c); v8+ asks for a list of groups (KIP-709), answered
 * as Kafka 3.9 answers them: every one, in the request's order, each as
 * if asked alone (its own offsets and error code).  The request is read
 * through first (require_stable follows the list), each group's entry
 * kept as a slice; then one group after another is read again into a
 * fresh state, its jobs run and its answer written.  An empty list of
 * groups gets an empty list of answers; v9's member id and epoch belong
 * to KIP-848 groups and are ignored.  Group "" answers no offsets, as
 * Kafka does for a group that never committed.  A group the client may
 * not describe is GROUP_AUTHORIZATION_FAILED: from v2 on at the group's
 * level with no partitions, as Kafka answers it, before that in each
 * partition.  In a cluster, a partition whose offset cannot be read now
 * (its leader unknown or unreachable) makes v2+ answer its group
 * COORDINATOR_LOAD_IN_PROGRESS (part_unavailable).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kerr.h"
#include "kfan.h"
#include "mq_sqlstates.h"
#include "offsets.h"
#include "util.h"

/*
 * The committed leader epoch (v5+): the epoch under which the record
 * before the committed offset was written (mq.leader_epochs), with which a
 * consumer validates the offset after a leader change (KIP-320); -1 when
 * unknown.  mq does not store the epoch a client commits with: the log's
 * own history is what the client's check needs.
 */
#define EPOCH_BEFORE_SQL(t, p, o) \
	"(SELECT max(e.leader_epoch) FROM mq.leader_epochs e WHERE e.topic = " t \
	"    AND e.partition = " p " AND e.start_offset < " o ")"

/*
 * A partition's committed offset and metadata, read together by
 * mq._committed_position, which checks the rights as mq.committed_offset
 * does (a client's role may not read the table).  The metadata came from
 * mq.committed_offsets($1), all of the group's offsets, for each
 * partition: 1.1 ms a partition at 500, quadratic in the group's size.
 */
#define COMMITTED_SQL \
	"SELECT c.next_offset, c.metadata, " EPOCH_BEFORE_SQL("$2", "$3", "c.next_offset") \
	"  FROM mq._committed_position($1, $2, $3) c"

/* one array, so that a job's statement is known by its address (collect_all) */
static const char all_committed_sql[] =
"SELECT c.topic, c.partition, c.next_offset, c.metadata,"
"       " EPOCH_BEFORE_SQL("c.topic", "c.partition", "c.next_offset")
"  FROM mq.committed_offsets($1) c";

static void
write_committed(KRequest *req, int32_t partition, int64_t off, int32_t epoch, const char *meta,
				int16_t code)
{
	KWriter    *w = &req->resp;

	kw_i32(w, partition);
	kw_i64(w, off);
	if (req->api_version >= 5)
		kw_i32(w, off >= 0 ? epoch : -1);	/* committed leader epoch */
	kw_str(w, meta ? meta : "");
	kw_i16(w, code);
}

/*
 * A group's entry in the request, read through to be checked and left
 * to be read again when the group's turn comes (fetch_group): v8+ one of
 * the list (its tags included), before that the request's one group
 */
static KSlice
skip_group(KReader *r, int16_t v)
{
	size_t		from = r->pos;
	int32_t		nt;

	if (kr_str(r).len < 0 && !r->err)
		r->err = true;			/* a group id is never null */
	if (v >= 9)
	{
		(void) kr_str(r);		/* member id */
		(void) kr_i32(r);		/* member epoch */
	}
	nt = kr_array(r, 3);
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		int32_t		np;

		(void) kr_str(r);
		np = kr_array(r, 4);
		for (int32_t i = 0; i < np && !r->err; i++)
			(void) kr_i32(r);
		kr_tags(r);
	}
	if (v >= 8)
		kr_tags(r);
	return (KSlice){r->p + from, (int32_t) (r->pos - from)};
}

static void
read_fetch_part(KRequest *req, OffState *s, OPart *op, const char *topic)
{
	KStmt	   *st;

	op->partition = kr_i32(&req->body);
	if (s->group[0] == '\0')
		return;					/* group "" has no offsets (above) */
	op->job = offsets_leader_job(s, topic, op->partition, &op->code);
	if (op->job == NULL)
		return;
	st = kjob_add(op->job, COMMITTED_SQL, 0);
	op->stmt = op->job->n - 1;
	kstmt_text(st, MQ_TEXTOID, s->group);
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, op->partition);
}

/* a requested partition's error; an unknown topic has none (offset -1) */
static int16_t
fetch_part_code(const OPart *op)
{
	const KStmt *st = op->job ? &op->job->stmts[op->stmt] : NULL;

	if (st && st->res == NULL && !mq_error_is(&st->err, MQ_SQLSTATE_UNKNOWN_TOPIC) &&
		!mq_error_is(&st->err, MQ_SQLSTATE_UNKNOWN_PARTITION))
		return offsets_error(st);
	return op->code;
}

/*
 * A partition whose committed offset cannot be read now: its leader is
 * unknown or unreachable, or has just moved.  Kafka's offsets do not
 * depend on partition leaders, and clients fail on a partition's error
 * they do not expect (Java's consumer on any but UNKNOWN_TOPIC_OR_PARTITION,
 * TOPIC_AUTHORIZATION_FAILED and UNSTABLE_OFFSET_COMMIT; librdkafka hands
 * it to the application), so from v2 on the group's answer is
 * COORDINATOR_LOAD_IN_PROGRESS, which every client asks again on, as
 * Kafka answers while its coordinator loads the group's offsets.
 */
static bool
part_unavailable(const OPart *op)
{
	int16_t		code = fetch_part_code(op);

	return code == KERR_NOT_COORDINATOR || code == KERR_COORDINATOR_NOT_AVAILABLE;
}

static bool
some_part_unavailable(const OffState *s)
{
	for (int32_t i = 0; i < s->nparts; i++)
		if (part_unavailable(&s->parts[i]))
			return true;
	return false;
}

/*
 * v2+ answers a group the client may not describe with a top-level
 * GROUP_AUTHORIZATION_FAILED and no partitions, as Kafka does (v0-v1 in
 * each partition): every partition asked was refused for the group
 */
static bool
group_refused(KRequest *req, const OffState *s)
{
	if (req->api_version < 2 || s->ntopics < 0 || s->nparts == 0)
		return false;
	for (int32_t i = 0; i < s->nparts; i++)
		if (fetch_part_code(&s->parts[i]) != KERR_GROUP_AUTHORIZATION_FAILED)
			return false;
	return true;
}

/* one requested partition; an unknown topic has no committed offset (-1) */
static void
write_fetch_part(KRequest *req, OffState *s, OPart *op)
{
	KStmt	   *st = op->job ? &op->job->stmts[op->stmt] : NULL;
	PGresult   *res = st ? st->res : NULL;
	int16_t		code = fetch_part_code(op);

	if (code == KERR_NONE && stable_pending(s, (const char *) s->topics[op->topic].p, s->topics[op->topic].len,
											op->partition))
	{
		write_committed(req, op->partition, -1, -1, "", KERR_UNSTABLE_OFFSET_COMMIT);
		return;
	}
	write_committed(req, op->partition,
					res && !PQgetisnull(res, 0, 0) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1,
					res && !PQgetisnull(res, 0, 2) ? atoi(PQgetvalue(res, 0, 2)) : -1,
					res && !PQgetisnull(res, 0, 1) ? PQgetvalue(res, 0, 1) : "", code);
}

/* a committed offset of the group, as one node has it */
typedef struct ORow
{
	const char *topic;
	int32_t		partition;
	const char *offset;
	const char *meta;
	int32_t		epoch;
} ORow;

static int
orow_cmp(const void *a, const void *b)
{
	const ORow *x = a,
			   *y = b;
	int			c = strcmp(x->topic, y->topic);

	return c != 0 ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* topics = null: every node's offsets, each partition's from its leader's node */
static void
add_all_jobs(OffState *s)
{
	KJob	   *job = kfan_job(&s->fan, pool_local());

	kstmt_text(kjob_add(job, all_committed_sql, 0), MQ_TEXTOID, s->group);
	for (int i = 0; cluster_enabled() && i < cluster_nbrokers(); i++)
	{
		const KBroker *b = cluster_broker_at(i);
		KPool	   *pool = b->live && b->id != kconfig.node_id ? cluster_node_pool(b) : NULL;

		if (pool)
			kstmt_text(kjob_add(kfan_job(&s->fan, pool), all_committed_sql, 0), MQ_TEXTOID, s->group);
	}
}

/* was pool asked for all of the group's offsets (add_all_jobs)? */
static bool
asked_all(OffState *s, KPool *pool)
{
	for (int i = 0; pool && i < s->fan.n; i++)
	{
		KRoute	   *r = s->fan.routes[i];

		if (r->pool == pool && r->job.n > 0 && r->job.stmts[0].sql == all_committed_sql)
			return true;
	}
	return false;
}

/*
 * The rows of every node that leads them, sorted; *code: the local node's
 * failure, or COORDINATOR_LOAD_IN_PROGRESS (above) when another node
 * did not answer or a partition with offsets has no leader now, or one
 * whose node was not asked (not live)
 */
static ORow *
collect_all(OffState *s, int *nrows, int16_t *code)
{
	ORow	   *rows = NULL;
	int			n = 0;

	*code = KERR_NONE;
	for (int i = 0; i < s->fan.n; i++)
	{
		KRoute	   *r = s->fan.routes[i];
		PGresult   *res;
		KPool	   *leader;
		int16_t		c;

		if (r->job.n == 0 || r->job.stmts[0].sql != all_committed_sql)
			continue;			/* a node asked only for require_stable */
		res = r->job.stmts[0].res;
		if (kstmt_failed(&r->job.stmts[0], &c))
			*code = r->pool == pool_local() ? c : KERR_COORDINATOR_LOAD_IN_PROGRESS;
		rows = mq_realloc(rows, sizeof(ORow) * (n + (res ? PQntuples(res) : 0) + 1));
		for (int row = 0; res && row < PQntuples(res); row++)
		{
			ORow	   *o = &rows[n];

			o->topic = PQgetvalue(res, row, 0);
			o->partition = atoi(PQgetvalue(res, row, 1));
			o->offset = PQgetvalue(res, row, 2);
			o->meta = PQgetvalue(res, row, 3);
			o->epoch = PQgetisnull(res, row, 4) ? -1 : atoi(PQgetvalue(res, row, 4));
			leader = cluster_leader_pool(o->topic, o->partition, &c);
			if (leader == r->pool)
				n++;
			else if ((c != KERR_NONE || !asked_all(s, leader)) && *code == KERR_NONE)
				*code = KERR_COORDINATOR_LOAD_IN_PROGRESS;
		}
	}
	if (n > 0)					/* rows is NULL when no node was asked */
		qsort(rows, n, sizeof(ORow), orow_cmp);
	*nrows = n;
	return rows;
}

/* every committed offset of the group (topics = null, v2+) */
static int16_t
write_all(KRequest *req, OffState *s)
{
	KWriter    *w = &req->resp;
	size_t		topics_at = kw_later(w);
	int32_t		ntopics = 0;
	int16_t		code;
	int			nrows;
	ORow	   *rows = collect_all(s, &nrows, &code);

	for (int row = 0; row < nrows; ntopics++)
	{
		const char *topic = rows[row].topic;
		size_t		parts_at;
		int32_t		n = 0;

		kw_str(w, topic);
		parts_at = kw_later(w);
		for (; row < nrows && strcmp(rows[row].topic, topic) == 0; row++, n++)
		{
			if (stable_pending(s, topic, strlen(topic), rows[row].partition))
				write_committed(req, rows[row].partition, -1, -1, "", KERR_UNSTABLE_OFFSET_COMMIT);
			else
				write_committed(req, rows[row].partition, strtoll(rows[row].offset, NULL, 10),
								rows[row].epoch, rows[row].meta, KERR_NONE);
			kw_tags(w);
		}
		kw_fill_count(w, parts_at, n);
		kw_tags(w);
	}
	kw_fill_count(w, topics_at, ntopics);
	free(rows);
	return code;
}

/* one group's answer: v8+ an entry of the list, before that the response */
static void
write_group(KRequest *req, OffState *s)
{
	KWriter    *w = &req->resp;
	int16_t		code = KERR_NONE;

	if (req->api_version >= 8)
		kw_str(w, s->group);
	if (group_refused(req, s))
	{
		kw_array(w, 0);
		code = KERR_GROUP_AUTHORIZATION_FAILED;
	}
	else if (s->ntopics < 0)
		code = write_all(req, s);
	else
	{
		write_topics(req, s, write_fetch_part);
		if (req->api_version >= 2 && some_part_unavailable(s))
			code = KERR_COORDINATOR_LOAD_IN_PROGRESS;
	}
	if (req->api_version >= 2)
		kw_i16(w, code);
	if (req->api_version >= 8)
		kw_tags(w);
}

/* after a group's answer: on to the next group (true), or the response sent */
static bool
next_group(KRequest *req)
{
	OffState   *s = req->state;

	if (s->group_at + 1 == s->ngroups)
	{
		req_finish(req);		/* with the response's tagged fields */
		return false;
	}
	off_state_next_group(s);
	return true;
}

static void fetch_groups(KRequest *req);

/*
 * A group answered: the next one, each as if asked alone, then the
 * response.  One answered while its jobs are being started (no statement
 * to run, or a pool that answers at once) is left to fetch_groups' loop,
 * so that many such groups do not grow the stack.
 */
static void
offset_fetch_done(KRequest *req)
{
	OffState   *s = req->state;

	write_group(req, s);
	if (s->starting)
		s->answered = true;
	else if (next_group(req))
		fetch_groups(req);
}

/* every leader answered: in a cluster, the coordinator's pending offsets too */
static void
offsets_fetched(KRequest *req)
{
	stable_ask_coordinator(req, req->state, offset_fetch_done);
}

/*
 * The group entry group_at: its id and topics read again (req->body is
 * now that entry; the request was read through before), its jobs run
 */
static void
fetch_group(KRequest *req)
{
	OffState   *s = req->state;
	KSlice		entry = s->groups[s->group_at];
	KReader    *r = &req->body;

	*r = (KReader){entry.p, (size_t) entry.len, 0, false, r->flex};
	s->group = kslice_dup(kr_str(r));
	if (req->api_version >= 9)
	{
		(void) kr_str(r);		/* member id */
		(void) kr_i32(r);		/* member epoch */
	}
	read_topics(req, s, 4, read_fetch_part);
	if (s->ntopics < 0 && s->group[0] != '\0')
		add_all_jobs(s);
	stable_add_checks(s);
	kfan_run(&s->fan, req, offsets_fetched);
}

/* the groups from group_at on, until one waits for its jobs or all are answered */
static void
fetch_groups(KRequest *req)
{
	OffState   *s = req->state;

	for (;;)
	{
		s->starting = true;
		s->answered = false;
		fetch_group(req);
		s->starting = false;
		if (!s->answered || !next_group(req))
			return;				/* offset_fetch_done goes on, or all are answered */
	}
}

/* the request's group entries (skip_group) and require_stable; false: malformed */
static bool
read_request(KRequest *req, OffState *s)
{
	KReader    *r = &req->body;

	s->ngroups = req->api_version >= 8 ? kr_array(r, 4) : 1;
	s->groups = mq_malloc0(sizeof(KSlice) * (s->ngroups > 0 ? s->ngroups : 1));
	for (int32_t g = 0; g < s->ngroups && !r->err; g++)
		s->groups[g] = skip_group(r, req->api_version);
	if (req->api_version >= 7)
		s->require_stable = kr_i8(r) != 0;
	return !r->err && s->ngroups >= 0;
}

void
h_offset_fetch(KRequest *req)
{
	OffState   *s = off_state(req);
	KWriter    *w = &req->resp;

	s->int_parts = true;
	if (!read_request(req, s))
	{
		req_abort(req);
		return;
	}
	if (req->api_version >= 3)
		kw_i32(w, 0);			/* throttle_time_ms */
	if (req->api_version >= 8)
		kw_array(w, s->ngroups);
	if (s->ngroups == 0)
		req_finish(req);		/* v8+ of no groups: none, as Kafka 3.9 answers */
	else
		fetch_groups(req);
}
