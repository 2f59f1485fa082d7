/*-------------------------------------------------------------------------
 *
 * h_group_delete.c
 *	  DeleteGroups (v0-v2) on mq.delete_group, and OffsetDelete (v0) on
 *	  mq.delete_offsets.  Loop thread; one job with a statement per group
 *	  that may be deleted, or per topic whose offsets may be.
 *
 * Kafka's rules: a group with members here (group.c) is NON_EMPTY_GROUP
 * without asking the database; mq.delete_group then refuses a group with
 * live SQL members (MQ036, NON_EMPTY_GROUP) and an unknown one (MQ035,
 * GROUP_ID_NOT_FOUND, unless this daemon holds the group, Empty: one
 * whose members left without committing, which Kafka deletes), and needs
 * DELETE on the group (42501, GROUP_AUTHORIZATION_FAILED).  It deletes
 * the committed offsets that OffsetCommit and mq.commit_offset share, and
 * the group's SQL state; a deleted group's empty state here is
 * forgotten, so ListGroups no longer shows it.  In a replicated cluster only the group's coordinator
 * answers (NOT_COORDINATOR elsewhere), and it deletes in its own
 * database: offsets on partitions its node does not lead are refused
 * there (MQ020, docs/kafka.md).
 *
 * OffsetDelete follows Kafka's coordinator: a group with members here
 * whose protocol type is not "consumer" is NON_EMPTY_GROUP; with consumer
 * members, a topic one of them subscribes to (the subscription in its
 * chosen protocol's metadata) is GROUP_SUBSCRIBED_TO_TOPIC, and the other
 * topics' offsets are deleted; mq.delete_offsets refuses live SQL members
 * subscribed to the topic the same way (MQ037), an unknown group with
 * GROUP_ID_NOT_FOUND for the whole request, and needs DELETE on the group
 * (else GROUP_AUTHORIZATION_FAILED for the whole request, as Kafka
 * answers it) and READ on the topic.  A topic's partitions share its
 * statement's answer.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "kerr.h"
#include "util.h"

typedef struct DelGroup
{
	KSlice		name;
	int16_t		code;			/* decided here, before the database */
	int			stmt;			/* its mq.delete_group, or -1 */
} DelGroup;

typedef struct DelState
{
	KJob		job;
	int32_t		n;
	DelGroup   *groups;
} DelState;

static void
del_state_free(void *p)
{
	DelState   *s = p;

	kjob_free(&s->job);
	free(s->groups);
	free(s);
}

/* the group's verdict, from its statement or what was decided here */
static int16_t
group_code(DelState *s, DelGroup *d)
{
	KStmt	   *st = d->stmt >= 0 ? &s->job.stmts[d->stmt] : NULL;
	int16_t		code = d->code;

	if (st && kstmt_failed(st, &code) && strcmp(st->err.sqlstate, "42501") == 0)
		code = KERR_GROUP_AUTHORIZATION_FAILED;
	return code;
}

static void
delete_groups_done(KRequest *req)
{
	DelState   *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->n);
	for (int32_t i = 0; i < s->n; i++)
	{
		DelGroup   *d = &s->groups[i];
		int16_t		code = group_code(s, d);
		char	   *name = kslice_dup(d->name);
		KGroup	   *g = name && d->stmt >= 0 ? group_find(name) : NULL;

		/* an Empty group known here only (no offsets): Kafka deletes it too */
		if (code == KERR_GROUP_ID_NOT_FOUND && g && g->nmembers == 0)
			code = KERR_NONE;
		if (code == KERR_NONE && d->stmt >= 0 && name)
			(void) group_forget(name);
		free(name);
		kw_strn(w, d->name.p, d->name.len);
		kw_i16(w, code);
		kw_tags(w);
	}
	req_finish(req);
}

/* what can be answered without the database, or the group's statement */
static void
plan_group(DelState *s, DelGroup *d)
{
	char	   *name = kslice_dup(d->name);
	KGroup	   *g = name ? group_find(name) : NULL;

	d->stmt = -1;
	if (name == NULL)
		d->code = KERR_INVALID_GROUP_ID;
	else if (name[0] == '\0')
		d->code = KERR_GROUP_ID_NOT_FOUND;	/* as Kafka: no group "" exists */
	else if (!cluster_coordinates(name))
		d->code = KERR_NOT_COORDINATOR;
	else if (g && g->nmembers > 0)
		d->code = KERR_NON_EMPTY_GROUP;
	else
	{
		kstmt_text(kjob_add(&s->job, "SELECT mq.delete_group($1)", 0), MQ_TEXTOID, name);
		d->stmt = s->job.n - 1;
	}
	free(name);
}

void
h_delete_groups(KRequest *req)
{
	KReader    *r = &req->body;
	DelState   *s = mq_malloc0(sizeof(DelState));

	req->state = s;
	req->free_state = del_state_free;
	s->n = kr_array(r, 2);
	s->groups = mq_malloc0(sizeof(DelGroup) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
		s->groups[i].name = kr_str(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	for (int32_t i = 0; i < s->n; i++)
		plan_group(s, &s->groups[i]);
	pool_run(req, &s->job, delete_groups_done);
}

/* ---- OffsetDelete ---- */

typedef struct OffTopic
{
	KSlice		name;
	int32_t		nparts;
	int32_t    *parts;
	int16_t		code;			/* decided here, before the database */
	int			stmt;			/* its mq.delete_offsets, or -1 */
} OffTopic;

typedef struct OffDelState
{
	KJob		job;
	int16_t		code;			/* the request's */
	int32_t		n;
	OffTopic   *topics;
} OffDelState;

static void
off_del_state_free(void *p)
{
	OffDelState *s = p;

	for (int32_t i = 0; i < s->n; i++)
		free(s->topics[i].parts);
	free(s->topics);
	kjob_free(&s->job);
	free(s);
}

/* does a member of consumer group g subscribe to topic? */
static bool
subscribed(KGroup *g, KSlice topic)
{
	for (KMember *m = g->members; m; m = m->next)
	{
		const KProto *p = g->protocol ? member_proto(m, g->protocol) : NULL;
		KReader		r;
		int32_t		n;

		if (p == NULL)
			continue;
		kr_init(&r, p->meta, (size_t) p->len);
		(void) kr_i16(&r);		/* the subscription's version */
		n = kr_array(&r, 2);
		for (int32_t i = 0; i < n && !r.err; i++)
		{
			KSlice		t = kr_str(&r);

			if (!r.err && t.len > 0 && t.len == topic.len && memcmp(t.p, topic.p, (size_t) t.len) == 0)
				return true;
		}
	}
	return false;
}

/* the request's code, or each topic's statement */
static void
plan_offsets(OffDelState *s, const char *group)
{
	KGroup	   *g = group ? group_find(group) : NULL;
	bool		live = g && g->nmembers > 0;

	if (group == NULL || group[0] == '\0')
		s->code = KERR_INVALID_GROUP_ID;
	else if (!cluster_coordinates(group))
		s->code = KERR_NOT_COORDINATOR;
	else if (live && (g->protocol_type == NULL || strcmp(g->protocol_type, "consumer") != 0))
		s->code = KERR_NON_EMPTY_GROUP;
	for (int32_t i = 0; s->code == KERR_NONE && i < s->n; i++)
	{
		OffTopic   *t = &s->topics[i];
		char	   *name;
		KStmt	   *st;

		if (live && subscribed(g, t->name))
		{
			t->code = KERR_GROUP_SUBSCRIBED_TO_TOPIC;
			continue;
		}
		name = kslice_dup(t->name);
		st = kjob_add(&s->job, "SELECT mq.delete_offsets($1, $2, $3)", 0);
		t->stmt = s->job.n - 1;
		kstmt_text(st, MQ_TEXTOID, group);
		kstmt_text(st, MQ_TEXTOID, name ? name : "");
		kstmt_int_array(st, t->parts, t->nparts);
		free(name);
	}
}

static void
offset_delete_done(KRequest *req)
{
	OffDelState *s = req->state;
	KWriter    *w = &req->resp;

	/*
	 * an unknown group, or one the client may not delete offsets of, is
	 * the whole request's answer, as in Kafka
	 */
	for (int32_t i = 0; s->code == KERR_NONE && i < s->n; i++)
	{
		OffTopic   *t = &s->topics[i];

		if (t->stmt >= 0 && kstmt_failed(&s->job.stmts[t->stmt], &t->code) &&
			(t->code == KERR_GROUP_ID_NOT_FOUND || t->code == KERR_GROUP_AUTHORIZATION_FAILED))
			s->code = t->code;
	}
	kw_i16(w, s->code);
	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->code == KERR_NONE ? s->n : 0);
	for (int32_t i = 0; s->code == KERR_NONE && i < s->n; i++)
	{
		OffTopic   *t = &s->topics[i];

		kw_strn(w, t->name.p, t->name.len);
		kw_array(w, t->nparts);
		for (int32_t k = 0; k < t->nparts; k++)
		{
			kw_i32(w, t->parts[k]);
			kw_i16(w, t->code);
		}
	}
	req_finish(req);
}

void
h_offset_delete(KRequest *req)
{
	KReader    *r = &req->body;
	OffDelState *s = mq_malloc0(sizeof(OffDelState));
	char	   *group;

	req->state = s;
	req->free_state = off_del_state_free;
	group = kslice_dup(kr_str(r));
	s->n = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(OffTopic) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
	{
		OffTopic   *t = &s->topics[i];

		t->stmt = -1;
		t->name = kr_str(r);
		t->nparts = kr_array(r, 4);
		t->parts = mq_malloc0(sizeof(int32_t) * (t->nparts > 0 ? t->nparts : 1));
		for (int32_t k = 0; k < t->nparts && !r->err; k++)
			t->parts[k] = kr_i32(r);
	}
	if (r->err || s->n < 0)
	{
		free(group);
		req_abort(req);
		return;
	}
	plan_offsets(s, group);
	free(group);
	pool_run(req, &s->job, offset_delete_done);
}
