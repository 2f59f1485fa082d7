/*-------------------------------------------------------------------------
 *
 * h_topic_delete.c
 *	  DeleteTopics (v0-v6) on mq.drop_topic, and in a replicated cluster on
 *	  mq_coord.delete_topic.  Loop thread; one job with a statement per
 *	  topic, each dropped in its own transaction (in a cluster, a second
 *	  job on the coordinator).
 *
 * v6+ takes topics by name or by id (a null name) and answers both; an id
 * no topic has is UNKNOWN_TOPIC_ID, an entry with neither or both is
 * INVALID_REQUEST, as Kafka answers them.  A name (or id) given twice is
 * INVALID_REQUEST, answered once, and nothing of it dropped (Kafka's
 * "Duplicate topic name.").  No version has validate_only.  v5+ answers
 * an error message; flexible from v4.
 *
 * In a replicated cluster (--coordinator) a topic this node holds
 * unreplicated is dropped here as on one node; any other is the
 * cluster's: the client's right to delete it is checked as the client on
 * this node (mq.has_topic_privilege; ACLs are mirrored to every node),
 * TOPIC_AUTHORIZATION_FAILED without it, and the topic is deleted on the
 * coordinator as the daemon's role (mq_coord.delete_topic), a topic the
 * coordinator does not know being UNKNOWN_TOPIC_OR_PARTITION.  The
 * brokers drop their nodes' copies at their next tick (replication.md,
 * "Deleting a topic").  As a Kafka controller answers once the topic left
 * its metadata, the answer waits (up to the request's timeout_ms; none
 * with 0) until this daemon's view no longer has the topic, checked every
 * 100 ms; REQUEST_TIMED_OUT for one still there at the deadline (it was
 * deleted).  An id is looked up among the view's topics, then this node's.
 * Without --coordinator a replicated topic is refused with
 * TOPIC_DELETION_DISABLED and nothing dropped: dropping one node's replica
 * would break its partitions, and only the coordinator deletes them all.
 * Once a topic is deleted, the Empty groups held here of which the
 * database keeps nothing are dropped (group_cleanup.c), as Kafka's group
 * coordinator drops Empty groups left without offsets.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "kerr.h"
#include "topic_id.h"
#include "util.h"

#define KERR_TOPIC_DELETION_DISABLED 73

/*
 * by name, or (DeleteTopics v6+, name null) by id; a replicated topic is
 * left alone (false): dropping this node's replica would break it
 */
#define DROP_SQL \
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM mq.replica_status r WHERE r.topic = t" \
	"                            AND r.role IS DISTINCT FROM 'standalone') THEN false" \
	"            ELSE mq.drop_topic(t)::text = '' END, t, " TOPIC_ID_SQL("t") \
	"  FROM (SELECT coalesce($1, (SELECT topic FROM mq.topics" \
	"                              WHERE " TOPIC_ID_SQL("topic") " = $2)) t) x WHERE t IS NOT NULL"

/*
 * In a cluster: a topic held here unreplicated is dropped (true); for any
 * other, NULL when the client may delete it (the coordinator's, then),
 * false when not
 */
#define CLUSTER_SQL \
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM mq.topics WHERE topic = t)" \
	"             AND NOT EXISTS (SELECT 1 FROM mq.replica_status r WHERE r.topic = t" \
	"                                AND r.role IS DISTINCT FROM 'standalone')" \
	"            THEN mq.drop_topic(t)::text = ''" \
	"            WHEN mq.has_topic_privilege(t, 'delete') THEN NULL ELSE false END, t, " \
	TOPIC_ID_SQL("t") \
	"  FROM (SELECT coalesce($1, (SELECT topic FROM mq.topics" \
	"                              WHERE " TOPIC_ID_SQL("topic") " = $2)) t) x WHERE t IS NOT NULL"

#define COORD_DELETE_SQL "SELECT mq_coord.delete_topic($1)"

typedef struct DeleteSpec
{
	KSlice		name;			/* null (v6+): by id */
	KSlice		id;				/* v6+: 16 bytes, or null when all zero */
	char		id_hex[33];
	uint8_t		repeat;			/* KREPEAT_*: of its name or id */
	const char *refusal;		/* INVALID_REQUEST's message, or NULL */
	int			stmt;			/* its drop statement, or -1 */
	int			coord_stmt;		/* in a cluster: its deletion, or -1 */
	bool		timed_out;		/* still in the view at the deadline */
} DeleteSpec;

typedef struct DeleteState
{
	KJob		job;
	int32_t		n;
	DeleteSpec *specs;
	KJob		coord;			/* in a cluster: on the coordinator */
	KRequest	coord_req;		/* what the coordinator's pool runs */
	int32_t		timeout_ms;		/* the request's */
	int64_t		deadline_us;	/* waiting for the view to lose them until then */
	struct event *timer;
} DeleteState;

static void
delete_state_free(void *p)
{
	DeleteState *s = p;

	kjob_free(&s->job);
	kjob_free(&s->coord);
	if (s->timer)
		event_free(s->timer);
	free(s->specs);
	free(s);
}

/* names and ids given twice, and entries naming neither or both */
static void
mark_refusals(DeleteState *s)
{
	KSlice	   *keys = mq_malloc(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	uint8_t    *by_name = mq_malloc(s->n > 0 ? s->n : 1);
	uint8_t    *by_id = mq_malloc(s->n > 0 ? s->n : 1);

	for (int32_t i = 0; i < s->n; i++)
		keys[i] = s->specs[i].name;
	kslice_repeats(keys, s->n, by_name);
	for (int32_t i = 0; i < s->n; i++)
		keys[i] = s->specs[i].id;
	kslice_repeats(keys, s->n, by_id);
	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];

		t->repeat = by_name[i] != KREPEAT_NONE ? by_name[i] : by_id[i];
		if (by_name[i] != KREPEAT_NONE)
			t->refusal = "duplicate topic name";
		else if (by_id[i] != KREPEAT_NONE)
			t->refusal = "duplicate topic id";
		else if (t->name.len < 0 && t->id.len < 0)
			t->refusal = "neither topic name nor id was given";
		else if (t->name.len >= 0 && t->id.len >= 0)
			t->refusal = "a topic name and a topic id were both given";
	}
	free(keys);
	free(by_name);
	free(by_id);
}

/* the outcome of a topic the coordinator was asked to delete */
static int16_t
coord_result(const DeleteState *s, const DeleteSpec *t, const char **message)
{
	const KStmt *cst = &s->coord.stmts[t->coord_stmt];
	int16_t		code = KERR_NONE;

	if (kstmt_failed(cst, &code))
		*message = cst->err.message;
	else if (t->timed_out)
	{
		code = KERR_REQUEST_TIMED_OUT;
		*message = "deleted, but still in this broker's view of the cluster at the timeout";
	}
	return code;
}

/* the outcome of a topic's statement on this node (and the coordinator) */
static int16_t
stmt_result(const DeleteState *s, const DeleteSpec *t, const KStmt *st, const char **message)
{
	PGresult   *res = st->res;
	bool		found = res && PQntuples(res) > 0;
	const char *v = found && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : NULL;
	int16_t		code;

	(void) kstmt_failed(st, &code);
	*message = st->err.message;
	if (code == KERR_NONE && !found)
		code = KERR_UNKNOWN_TOPIC_ID;	/* by id, and no topic has it */
	else if (v && strcmp(v, "f") == 0 && cluster_enabled())
	{
		code = KERR_TOPIC_AUTHORIZATION_FAILED;
		*message = "not authorized to delete the topic";
	}
	else if (v && strcmp(v, "f") == 0)
	{
		code = KERR_TOPIC_DELETION_DISABLED;
		*message = "a replicated topic is deleted on the coordinator (mq-kafka --coordinator, or mq_coord.delete_topic)";
	}
	else if (code == KERR_NONE && t->coord_stmt >= 0)
		code = coord_result(s, t, message);
	return code;
}

/* a topic's answer; returns its code */
static int16_t
write_result(KRequest *req, const DeleteSpec *t)
{
	KWriter    *w = &req->resp;
	const DeleteState *s = req->state;
	const KStmt *st = t->stmt >= 0 ? &s->job.stmts[t->stmt] : NULL;
	PGresult   *res = st ? st->res : NULL;
	bool		found = res && PQntuples(res) > 0;
	int16_t		code = KERR_INVALID_REQUEST;
	const char *message = t->refusal;
	uint8_t		id[16];

	if (st)
		code = stmt_result(s, t, st, &message);
	if (found && t->name.len < 0)
		kw_str(w, PQgetvalue(res, 0, 1));
	else
		kw_strn(w, t->name.p, t->name.len);
	if (req->api_version >= 6)
	{
		(void) topic_id_from_hex(found ? PQgetvalue(res, 0, 2) : t->id_hex, id);
		kw_uuid(w, id);
	}
	kw_i16(w, code);
	if (req->api_version >= 5)
		kw_str(w, message);
	kw_tags(w);
	return code;
}

static void
delete_topics_done(KRequest *req)
{
	DeleteState *s = req->state;
	KWriter    *w = &req->resp;
	size_t		count_at;
	int32_t		n = 0;
	bool		deleted = false;

	if (req->api_version >= 1)
		kw_i32(w, 0);			/* throttle */
	count_at = kw_later(w);
	for (int32_t i = 0; i < s->n; i++)
		if (s->specs[i].repeat != KREPEAT_LATER)
		{
			deleted |= write_result(req, &s->specs[i]) == KERR_NONE;
			n++;
		}
	kw_fill_count(w, count_at, n);
	req_finish(req);
	if (deleted)
		group_cleanup();		/* Kafka drops Empty groups left without offsets */
}

/* the view's topic whose id is id_hex, or NULL */
static const char *
view_topic_by_id(const char *id_hex)
{
	const char *last = NULL;
	uint8_t		want[16],
				id[16];

	if (!topic_id_from_hex(id_hex, want))
		return NULL;
	for (int i = 0; i < cluster_npartitions(); i++)
	{
		const char *topic = cluster_partition_at(i)->topic;

		if (last && strcmp(last, topic) == 0)
			continue;			/* sorted by topic: its partitions are together */
		last = topic;
		topic_id_of(topic, id);
		if (memcmp(id, want, 16) == 0)
			return topic;
	}
	return NULL;
}

/* Whether the view still has any topic the coordinator deleted; at the deadline, those time out. */
static bool
view_has_deleted(DeleteState *s, bool deadline)
{
	bool		any = false;
	int16_t		code;

	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];
		KStmt	   *cst = t->coord_stmt >= 0 ? &s->coord.stmts[t->coord_stmt] : NULL;

		if (cst == NULL || kstmt_failed(cst, &code) || cluster_partition(cst->values[0], 0) == NULL)
			continue;
		any = true;
		t->timed_out = deadline;
	}
	return any;
}

static void
on_view_wait(evutil_socket_t fd, short what, void *arg)
{
	KRequest   *req = arg;
	DeleteState *s = req->state;
	bool		deadline = mq_now_us() >= s->deadline_us;
	struct timeval tv = {0, 100000};

	if (!view_has_deleted(s, deadline) || deadline || conn_closed(req->conn))
		delete_topics_done(req);
	else
		evtimer_add(s->timer, &tv);
}

static void
coord_done(KRequest *sub)
{
	KRequest   *req = sub->state;
	DeleteState *s = req->state;

	if (s->timeout_ms <= 0)
	{
		delete_topics_done(req);
		return;
	}
	s->deadline_us = mq_now_us() + (int64_t) s->timeout_ms * 1000;
	s->timer = evtimer_new(kbase, on_view_wait, req);
	on_view_wait(-1, 0, req);
}

/*
 * In a cluster, after this node's statements: the topics the client may
 * delete that are not this node's alone, deleted on the coordinator.
 */
static void
delete_checked(KRequest *req)
{
	DeleteState *s = req->state;
	int16_t		code;

	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];
		KStmt	   *st = t->stmt >= 0 ? &s->job.stmts[t->stmt] : NULL;

		if (st == NULL || kstmt_failed(st, &code) || PQntuples(st->res) == 0 ||
			!PQgetisnull(st->res, 0, 0))
			continue;
		kstmt_text(kjob_add(&s->coord, COORD_DELETE_SQL, 0), MQ_TEXTOID, PQgetvalue(st->res, 0, 1));
		t->coord_stmt = s->coord.n - 1;
	}
	if (s->coord.n == 0)
	{
		delete_topics_done(req);
		return;
	}
	s->coord_req.state = req;	/* no role: the daemon's on the coordinator */
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

static void
read_spec(KRequest *req, DeleteSpec *t)
{
	KReader    *r = &req->body;
	static const uint8_t zero[16];

	t->name = kr_str(r);
	t->id.len = -1;
	if (req->api_version >= 6)
	{
		KSlice		id = kr_uuid(r);

		if (id.len == 16 && memcmp(id.p, zero, 16) != 0)
		{
			t->id = id;
			topic_id_to_hex(id.p, t->id_hex);
		}
		kr_tags(r);
	}
	else if (t->name.len < 0)
		r->err = true;
}

void
h_delete_topics(KRequest *req)
{
	KReader    *r = &req->body;
	DeleteState *s = mq_malloc0(sizeof(DeleteState));

	req->state = s;
	req->free_state = delete_state_free;
	s->n = kr_array(r, 2);
	s->specs = mq_malloc0(sizeof(DeleteSpec) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
		read_spec(req, &s->specs[i]);
	s->timeout_ms = kr_i32(r);	/* on one node each drop is one transaction */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	mark_refusals(s);
	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];
		char	   *name = kslice_dup(t->name);
		KStmt	   *st;

		t->stmt = t->coord_stmt = -1;
		if (t->refusal == NULL)
		{
			st = kjob_add(&s->job, cluster_enabled() ? CLUSTER_SQL : DROP_SQL, 0);
			t->stmt = s->job.n - 1;
			kstmt_text(st, MQ_TEXTOID,
					   name || !cluster_enabled() ? name : view_topic_by_id(t->id_hex));
			kstmt_text(st, MQ_TEXTOID, t->id_hex);
		}
		free(name);
	}
	pool_run(req, &s->job, cluster_enabled() ? delete_checked : delete_topics_done);
}
