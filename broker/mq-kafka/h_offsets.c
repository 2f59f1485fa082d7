/*-------------------------------------------------------------------------
 *
 * h_offsets.c
 *	  OffsetCommit (v0-v9) and OffsetFetch (v0-v9).
 *	  Loop thread; a request is one job with a statement per partition (two
 *	  for a commit: the commit, then mq.await_commit), or one such job per
 *	  node that leads its partitions.  OffsetCommit first asks the group
 *	  coordinator whether the member and generation may commit.
 *
 * Committed offsets are mq's own (mq.commit_offset, mq.committed_offset,
 * with the metadata from mq.committed_offsets), so SQL consumers,
 * mqctl and Kafka clients share them.
 *
 * The old versions old clients and monitors (Burrow, sarama's defaults)
 * still send: OffsetCommit v0 has
 * no generation or member (a commit outside any generation, allowed while
 * the group has no members, as -1 and "" are from v1 on), v1 a commit
 * timestamp per partition, which is ignored as Kafka's retention time
 * (v2-v4) is: mq keeps committed offsets until the group is deleted.
 * OffsetFetch v0 is v1 on the wire (Kafka read ZooKeeper's offsets for it).
 * OffsetCommit v8+ and OffsetFetch v6+ are flexible; OffsetCommit v9
 * only adds error codes of the new group protocol (KIP-848), OffsetFetch
 * v7's require_stable answers UNSTABLE_OFFSET_COMMIT for an offset a
 * transaction is still committing (offsets_stable.c), and OffsetFetch
 * v8+ asks for a list of groups: the first is answered, any other gets
 * COORDINATOR_LOAD_IN_PROGRESS, on which clients ask again for it (Java's
 * admin client, the only one that batches, then sends one group less);
 * v9's member id and epoch belong to KIP-848 groups and are ignored.
 * Kafka takes group "" in both for old clients' sake; mq refuses it in
 * SQL (MQ010), so OffsetCommit of "" is INVALID_REQUEST and OffsetFetch
 * of "" answers no offsets, as Kafka does for a group that never
 * committed.
 *
 * In a replicated cluster a partition's committed offsets live with the
 * partition, and only its leader takes commits: OffsetCommit and
 * OffsetFetch go to the node that leads each partition in the cluster's
 * view (cluster.c), this node's or another's, on that node's pool and
 * without waiting in the loop (kfan.h).  A commit is followed by
 * mq.await_commit, so that it is acknowledged only once the partition's
 * in-sync replicas have it and survives a failover.  Failures map as a
 * Kafka coordinator maps its offsets log's: a node that no longer leads
 * (MQ020) or cannot be reached is NOT_COORDINATOR, missing replicas or a
 * timeout COORDINATOR_NOT_AVAILABLE; clients find the coordinator again
 * and retry.  OffsetFetch of all of a group's offsets (topics null) asks
 * every live node and takes each partition's offset from its leader's.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "kerr.h"
#include "kfan.h"
#include "mq_sqlstates.h"
#include "offsets.h"
#include "util.h"

/*
 * Kafka's coordinator stores whatever offset a client commits, and
 * kafkajs's admin resetOffsets and setOffsets commit the logical offsets
 * -2 (earliest) and -1 (latest) through a consumer's seek.  mq keeps only
 * positions in the log, so such a commit stores the position it names,
 * as ListOffsets answers it: the log start, or the high watermark.  An
 * unknown topic or partition keeps its own error (the offset stays
 * negative for mq.commit_offset to refuse after its checks).
 */
#define OFFSET_LATEST (-1)
#define OFFSET_EARLIEST (-2)
#define COMMIT_SQL "SELECT mq.commit_offset($1, $2, $3, $4, $5)"
#define COMMIT_LOGICAL_SQL \
	"SELECT mq.commit_offset($1, $2, $3, coalesce((" \
	"    SELECT CASE WHEN $4 = -2 THEN s.log_start_offset ELSE s.high_watermark END" \
	"      FROM mq.partitions s WHERE s.topic = $2 AND s.partition = $3), $4), $5)"

static void
off_state_free(void *p)
{
	OffState   *s = p;

	kjob_free(&s->job);
	kjob_free(&s->coord);
	kfan_free(&s->fan);
	free(s->topics);
	free(s->parts);
	free(s->group);
	free(s->others);
	free(s);
}

OffState *
off_state(KRequest *req)
{
	OffState   *s = mq_malloc0(sizeof(OffState));

	req->state = s;
	req->free_state = off_state_free;
	return s;
}

void
read_topics(KRequest *req, OffState *s, size_t part_size,
			void (*read_part) (KRequest *req, OffState *s, OPart *op, const char *topic))
{
	KReader    *r = &req->body;

	s->ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	s->parts = mq_malloc0(sizeof(OPart) * (kr_left(r) / part_size + 1));
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
	{
		int32_t		n;
		char	   *topic;

		s->topics[t] = kr_str(r);
		topic = kslice_dup(s->topics[t]);
		n = kr_array(r, part_size);
		for (int32_t i = 0; i < n && !r->err; i++)
		{
			OPart	   *op = &s->parts[s->nparts++];

			op->topic = t;
			op->stmt = -1;
			read_part(req, s, op, topic ? topic : "");
			if (!s->int_parts)
				kr_tags(r);
		}
		kr_tags(r);
		free(topic);
	}
}

/* kw_topic_parts' view of a request's parts */
typedef struct OWrite
{
	KRequest   *req;
	OffState   *s;
	void		(*write_part) (KRequest *req, OffState *s, OPart *op);
} OWrite;

static int32_t
opart_topic(const void *arg, int32_t i)
{
	return ((const OWrite *) arg)->s->parts[i].topic;
}

static void
opart_write(KWriter *w, void *arg, int32_t i)
{
	OWrite	   *o = arg;

	o->write_part(o->req, o->s, &o->s->parts[i]);
}

void
write_topics(KRequest *req, OffState *s,
			 void (*write_part) (KRequest *req, OffState *s, OPart *op))
{
	OWrite		o = {req, s, write_part};

	kw_topic_parts(&req->resp, s->topics, 0, s->ntopics, s->nparts, opart_topic, opart_write, &o);
}

#define COMMIT_WAIT_MS 10000

/* the job of the pool of the node leading (topic, partition); NULL: *code */
static KJob *
leader_job(OffState *s, const char *topic, int32_t partition, int16_t *code)
{
	KPool	   *pool = cluster_leader_pool(topic, partition, code);
	KJob	   *job = pool ? kfan_job(&s->fan, pool) : NULL;

	if (pool && job == NULL)
		*code = KERR_COORDINATOR_NOT_AVAILABLE;
	return job;
}

/* a statement's failure as a coordinator reports its offsets log's */
static int16_t
offsets_error(const KStmt *st)
{
	int16_t		code;

	if (!kstmt_failed(st, &code))
		return KERR_NONE;
	if (mq_error_is(&st->err, MQ_SQLSTATE_NOT_LEADER) || st->err.connection_lost)
		return KERR_NOT_COORDINATOR;
	/*
	 * retriable for every client: KAFKA_STORAGE_ERROR, which kerr.c gives
	 * transient refusals, is no OffsetCommit error, and the Java client
	 * fails a commit on it for good
	 */
	if (mq_error_is(&st->err, MQ_SQLSTATE_NOT_ENOUGH_REPLICAS) ||
		mq_error_is(&st->err, MQ_SQLSTATE_NOT_ENOUGH_REPLICAS_AFTER_APPEND) ||
		mq_error_is(&st->err, MQ_SQLSTATE_REQUEST_TIMED_OUT) ||
		mq_error_is_transient(&st->err))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	return code;
}

/* OffsetCommit: the coordinator's verdict is in s->parts[].code */
static void
read_commit_part(KRequest *req, OffState *s, OPart *op, const char *topic)
{
	KReader    *r = &req->body;
	int64_t		off;
	char	   *meta;
	KStmt	   *st;

	op->partition = kr_i32(r);
	off = kr_i64(r);
	if (req->api_version >= 6)
		(void) kr_i32(r);		/* leader epoch */
	if (req->api_version == 1)
		(void) kr_i64(r);		/* commit timestamp */
	meta = kslice_dup(kr_str(r));
	op->code = s->verdict;
	if (op->code == KERR_NONE && !r->err)
		op->job = leader_job(s, topic, op->partition, &op->code);
	if (op->job == NULL)
	{
		free(meta);
		return;
	}
	st = kjob_add(op->job, off == OFFSET_EARLIEST || off == OFFSET_LATEST ? COMMIT_LOGICAL_SQL : COMMIT_SQL, 0);
	op->stmt = op->job->n - 1;
	kstmt_text(st, MQ_TEXTOID, s->group);
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, op->partition);
	kstmt_int(st, MQ_INT8OID, off);
	kstmt_text(st, MQ_TEXTOID, meta);
	free(meta);
	/* acknowledged once the in-sync replicas have it (at once if unreplicated) */
	kstmt_int(kjob_add(op->job, "SELECT mq.await_commit($1)", 0), MQ_INT4OID, COMMIT_WAIT_MS);
}

static void
write_commit_part(KRequest *req, OffState *s, OPart *op)
{
	int16_t		code = op->code;

	if (op->job)
	{
		const KStmt *c = &op->job->stmts[op->stmt];
		const KStmt *w = &op->job->stmts[op->stmt + 1];

		code = offsets_error(c);
		if (code == KERR_NONE)
			code = offsets_error(w);
		if (code != KERR_NONE)
			mq_log_warning("offset commit of group %s, partition %d: %s", s->group,
						   op->partition, c->err.message ? c->err.message : w->err.message);
	}
	kw_i32(&req->resp, op->partition);
	kw_i16(&req->resp, code);
}

static void
offset_commit_done(KRequest *req)
{
	OffState   *s = req->state;

	if (req->api_version >= 3)
		kw_i32(&req->resp, 0);
	write_topics(req, s, write_commit_part);
	req_finish(req);
}

void
h_offset_commit(KRequest *req)
{
	KReader    *r = &req->body;
	OffState   *s = off_state(req);
	int32_t		generation = -1;	/* v0: outside any generation */
	char	   *member = NULL;
	char	   *instance = NULL;

	s->group = kslice_dup(kr_str(r));
	if (req->api_version >= 1)
	{
		generation = kr_i32(r);
		member = kslice_dup(kr_str(r));
	}
	if (req->api_version >= 7)
		instance = kslice_dup(kr_str(r));
	if (req->api_version >= 2 && req->api_version <= 4)
		(void) kr_i64(r);		/* retention time */
	if (!r->err && s->group)
		s->verdict = !cluster_coordinates(s->group) ? KERR_NOT_COORDINATOR :
			group_commit_check(s->group, member, instance, generation);
	free(member);
	free(instance);
	if (!r->err && s->group)
		read_topics(req, s, req->api_version == 1 ? 22 : 14, read_commit_part);
	if (r->err || s->group == NULL)
	{
		req_abort(req);
		return;
	}
	kfan_run(&s->fan, req, offset_commit_done);
}

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

/* mq.committed_offsets checks the rights: a client's role may not read the table */
#define COMMITTED_SQL \
	"SELECT o.o, (SELECT c.metadata FROM mq.committed_offsets($1) c" \
	"              WHERE c.topic = $2 AND c.partition = $3)," \
	"       " EPOCH_BEFORE_SQL("$2", "$3", "o.o") \
	"  FROM mq.committed_offset($1, $2, $3) o(o)"

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

/* OffsetFetch v8+: a group after the first, read to be answered retriable */
static void
skip_group(KReader *r, KSlice *id, int16_t v)
{
	int32_t		nt;

	*id = kr_str(r);
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
	kr_tags(r);
}

static void
read_fetch_part(KRequest *req, OffState *s, OPart *op, const char *topic)
{
	KStmt	   *st;

	op->partition = kr_i32(&req->body);
	if (s->group[0] == '\0')
		return;					/* group "" has no offsets (above) */
	op->job = leader_job(s, topic, op->partition, &op->code);
	if (op->job == NULL)
		return;
	st = kjob_add(op->job, COMMITTED_SQL, 0);
	op->stmt = op->job->n - 1;
	kstmt_text(st, MQ_TEXTOID, s->group);
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, op->partition);
}

/* one requested partition; an unknown topic has no committed offset (-1) */
static void
write_fetch_part(KRequest *req, OffState *s, OPart *op)
{
	KStmt	   *st = op->job ? &op->job->stmts[op->stmt] : NULL;
	PGresult   *res = st ? st->res : NULL;
	int16_t		code = op->code;

	if (st && res == NULL && !mq_error_is(&st->err, MQ_SQLSTATE_UNKNOWN_TOPIC) &&
		!mq_error_is(&st->err, MQ_SQLSTATE_UNKNOWN_PARTITION))
		code = offsets_error(st);
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

/* the rows of every node that leads them, sorted; *code: the local node's failure */
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
		int16_t		c;

		if (r->job.n == 0 || r->job.stmts[0].sql != all_committed_sql)
			continue;			/* a node asked only for require_stable */
		res = r->job.stmts[0].res;
		if (kstmt_failed(&r->job.stmts[0], &c) && r->pool == pool_local())
			*code = c;
		rows = mq_realloc(rows, sizeof(ORow) * (n + (res ? PQntuples(res) : 0) + 1));
		for (int row = 0; res && row < PQntuples(res); row++)
		{
			ORow	   *o = &rows[n];

			o->topic = PQgetvalue(res, row, 0);
			o->partition = atoi(PQgetvalue(res, row, 1));
			o->offset = PQgetvalue(res, row, 2);
			o->meta = PQgetvalue(res, row, 3);
			o->epoch = PQgetisnull(res, row, 4) ? -1 : atoi(PQgetvalue(res, row, 4));
			if (cluster_leader_pool(o->topic, o->partition, &c) == r->pool)
				n++;
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

static void
offset_fetch_done(KRequest *req)
{
	OffState   *s = req->state;
	int16_t		code = KERR_NONE;

	KWriter    *w = &req->resp;

	if (req->api_version >= 3)
		kw_i32(w, 0);
	if (req->api_version >= 8)
	{
		kw_array(w, 1 + s->nother);
		kw_str(w, s->group);
	}
	if (s->ntopics < 0)
		code = write_all(req, s);
	else
		write_topics(req, s, write_fetch_part);
	if (req->api_version >= 2)
		kw_i16(w, code);
	for (int32_t g = 0; g < s->nother; g++)
	{
		kw_tags(w);				/* the group before */
		kw_strn(w, s->others[g].p, s->others[g].len);
		kw_array(w, 0);
		kw_i16(w, KERR_COORDINATOR_LOAD_IN_PROGRESS);
	}
	if (req->api_version >= 8)
		kw_tags(w);
	req_finish(req);
}

/* every leader answered: in a cluster, the coordinator's pending offsets too */
static void
offsets_fetched(KRequest *req)
{
	stable_ask_coordinator(req, req->state, offset_fetch_done);
}

void
h_offset_fetch(KRequest *req)
{
	KReader    *r = &req->body;
	OffState   *s = off_state(req);
	int32_t		ngroups = 1;

	s->int_parts = true;
	if (req->api_version >= 8)
		ngroups = kr_array(r, 4);
	s->group = ngroups > 0 ? kslice_dup(kr_str(r)) : NULL;
	if (req->api_version >= 9)
	{
		(void) kr_str(r);		/* member id */
		(void) kr_i32(r);		/* member epoch */
	}
	if (s->group)
		read_topics(req, s, 4, read_fetch_part);
	if (req->api_version >= 8 && s->group)
	{
		kr_tags(r);
		s->nother = ngroups - 1;
		s->others = mq_malloc0(sizeof(KSlice) * ngroups);
		for (int32_t g = 0; g < s->nother && !r->err; g++)
			skip_group(r, &s->others[g], req->api_version);
	}
	if (req->api_version >= 7 && s->group)
		s->require_stable = kr_i8(r) != 0;
	if (r->err || s->group == NULL)
	{
		req_abort(req);
		return;
	}
	if (s->ntopics < 0 && s->group[0] != '\0')
		add_all_jobs(s);
	stable_add_checks(s);
	kfan_run(&s->fan, req, offsets_fetched);
}
