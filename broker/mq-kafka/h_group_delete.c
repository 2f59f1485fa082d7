/*-------------------------------------------------------------------------
 *
 * h_group_delete.c
 *	  DeleteGroups (v0-v1) on mq.delete_group.  Loop thread; one job with
 *	  a statement per group that may be deleted.
 *
 * Kafka's rules: a group with members here (group.c) is NON_EMPTY_GROUP
 * without asking the database; mq.delete_group then refuses a group with
 * live SQL members (MQ036, NON_EMPTY_GROUP) and an unknown one (MQ035,
 * GROUP_ID_NOT_FOUND), and needs DELETE on the group (42501,
 * GROUP_AUTHORIZATION_FAILED).  It deletes the committed offsets that
 * OffsetCommit and mq.commit_offset share, and the group's SQL state; a
 * deleted group's empty state here is forgotten, so ListGroups no longer
 * shows it.  In a replicated cluster only the group's coordinator
 * answers (NOT_COORDINATOR elsewhere), and it deletes in its own
 * database: offsets on partitions its node does not lead are refused
 * there (MQ020, docs/kafka.md).
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
	if (name == NULL || name[0] == '\0')
		d->code = KERR_INVALID_GROUP_ID;
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
