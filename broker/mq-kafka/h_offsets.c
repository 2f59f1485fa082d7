/*-------------------------------------------------------------------------
 *
 * h_offsets.c
 *	  OffsetCommit (v0-v9), and what OffsetFetch (h_offset_fetch.c) shares
 *	  with it: the request's topics and partitions, and the job of the
 *	  node that leads each.  Loop thread; a request is one job with a
 *	  statement per partition (two for a commit: the commit, then
 *	  mq.await_commit), or one such job per node that leads its
 *	  partitions.  OffsetCommit first asks the group coordinator whether
 *	  the member and generation may commit.
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
 * OffsetCommit v8+ is flexible; v9 only adds error codes of the new group
 * protocol (KIP-848).  Kafka takes group "" for old clients' sake; mq
 * refuses it in SQL (MQ010), so OffsetCommit of "" is INVALID_REQUEST.
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
 * and retry.
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
/*
 * In a cluster a commit is replicated with its partition and acknowledged
 * once the ISR holds it (mq.await_commit below), which an ISR short of
 * min.insync.replicas refuses: the produce contract's check first
 * (mq.produce_check, run before the commit as the FROM item), so that a
 * refused commit is not left committed on the leader, where OffsetFetch
 * would show it (Kafka discards an offset whose append failed).
 */
#define CHECKED(sql) sql " FROM mq.produce_check($2, $3)"

/* what one group's answer holds */
static void
off_state_clear(OffState *s)
{
	kjob_free(&s->job);
	kjob_free(&s->coord);
	kfan_free(&s->fan);
	free(s->topics);
	free(s->parts);
	free(s->group);
}

static void
off_state_free(void *p)
{
	OffState   *s = p;

	off_state_clear(s);
	free(s->groups);
	free(s);
}

void
off_state_next_group(OffState *s)
{
	OffState	keep = *s;

	off_state_clear(s);
	memset(s, 0, sizeof(OffState));
	s->int_parts = keep.int_parts;
	s->require_stable = keep.require_stable;
	s->ngroups = keep.ngroups;
	s->groups = keep.groups;
	s->group_at = keep.group_at + 1;
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
KJob *
offsets_leader_job(OffState *s, const char *topic, int32_t partition, int16_t *code)
{
	KPool	   *pool = cluster_leader_pool(topic, partition, code);
	KJob	   *job = pool ? kfan_job(&s->fan, pool) : NULL;

	if (pool && job == NULL)
		*code = KERR_COORDINATOR_NOT_AVAILABLE;
	return job;
}

/* a statement's failure as a coordinator reports its offsets log's */
int16_t
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
		op->job = offsets_leader_job(s, topic, op->partition, &op->code);
	if (op->job == NULL)
	{
		free(meta);
		return;
	}
	if (off == OFFSET_EARLIEST || off == OFFSET_LATEST)
		st = kjob_add(op->job, cluster_enabled() ? CHECKED(COMMIT_LOGICAL_SQL) : COMMIT_LOGICAL_SQL, 0);
	else
		st = kjob_add(op->job, cluster_enabled() ? CHECKED(COMMIT_SQL) : COMMIT_SQL, 0);
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
