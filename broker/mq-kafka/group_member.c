/*-------------------------------------------------------------------------
 *
 * group_member.c
 *	  A group's members as a list: finding a member by id or by static
 *	  instance id (and whether a request's member is fenced), comparing
 *	  the protocols a member rejoins with, new member ids and the pending
 *	  ones (KIP-394), and freeing members and groups.
 *	  It stands below the state machine (group.c) and calls nothing above
 *	  it.  Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "kerr.h"
#include "util.h"

static uint64_t member_counter;

void
free_protos(int n, KProto *p)
{
	for (int i = 0; i < n; i++)
	{
		free(p[i].name);
		free(p[i].meta);
	}
	free(p);
}

KMember *
member_find(KGroup *g, const char *member_id)
{
	for (KMember *m = g ? g->members : NULL; m; m = m->next)
		if (member_id && strcmp(m->id, member_id) == 0)
			return m;
	return NULL;
}

/*
 * Link m in after the group's last member: the list is in the order the
 * members joined, so that a new group's leader is its first member, as
 * Kafka's is (GroupMetadata.add), and a restart keeps the order.
 */
void
member_link(KGroup *g, KMember *m)
{
	KMember   **pp = &g->members;

	while (*pp)
		pp = &(*pp)->next;
	m->next = NULL;
	*pp = m;
	g->nmembers++;
}

KMember *
member_by_instance(KGroup *g, const char *instance_id)
{
	for (KMember *m = g ? g->members : NULL; m; m = m->next)
		if (instance_id && m->instance_id && strcmp(m->instance_id, instance_id) == 0)
			return m;
	return NULL;
}

/*
 * The member a request speaks for: *code is UNKNOWN_MEMBER_ID, or
 * FENCED_INSTANCE_ID when the instance id now belongs to another member id.
 */
KMember *
member_lookup(KGroup *g, const char *member_id, const char *instance_id, int16_t *code)
{
	KMember    *m = member_find(g, member_id);
	KMember    *byinst = member_by_instance(g, instance_id);

	*code = KERR_NONE;
	if (byinst && byinst != m)
	{
		*code = KERR_FENCED_INSTANCE_ID;
		return NULL;
	}
	if (m == NULL)
		*code = KERR_UNKNOWN_MEMBER_ID;
	return m;
}

void
member_free(KMember *m)
{
	if (m->expire)
		event_free(m->expire);
	free(m->id);
	free(m->instance_id);
	free(m->client_id);
	free(m->client_host);
	free(m->assignment);
	free_protos(m->nprotos, m->protos);
	free(m);
}

/* does a join ask for exactly the protocols (names and metadata) m has? */
bool
member_same_protos(const KMember *m, const KJoin *j)
{
	if (m->nprotos != j->nprotos)
		return false;
	for (int i = 0; i < m->nprotos; i++)
		if (strcmp(m->protos[i].name, j->protos[i].name) != 0 ||
			m->protos[i].len != j->protos[i].len ||
			(m->protos[i].len > 0 && memcmp(m->protos[i].meta, j->protos[i].meta, m->protos[i].len) != 0))
			return false;
	return true;
}

char *
member_new_id(const KRequest *req)
{
	char		id[300];

	snprintf(id, sizeof(id), "%.200s-%llu-%08x", req->client_id ? req->client_id : "member",
			 (unsigned long long) ++member_counter, (unsigned) (mq_now_us() & 0xffffffff));
	return mq_strdup(id);
}

/* unlink and free the pending id *pp */
static void
pending_drop(KPending **pp)
{
	KPending   *p = *pp;

	*pp = p->next;
	free(p->id);
	free(p);
}

/* forget the pending ids whose session timeout passed */
static void
pending_prune(KGroup *g)
{
	int64_t		now = mq_now_us();

	for (KPending **pp = &g->pending; *pp;)
	{
		if ((*pp)->until_us > now)
			pp = &(*pp)->next;
		else
			pending_drop(pp);
	}
}

void
member_pending_add(KGroup *g, char *id, int32_t session_ms)
{
	KPending   *p = mq_malloc0(sizeof(KPending));

	pending_prune(g);
	p->id = id;
	p->until_us = mq_now_us() + (int64_t) session_ms * 1000;
	p->next = g->pending;
	g->pending = p;
}

bool
member_pending_take(KGroup *g, const char *id)
{
	pending_prune(g);
	for (KPending **pp = &g->pending; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->id, id) == 0)
		{
			pending_drop(pp);
			return true;
		}
	return false;
}

/* does a pending id wait within its session timeout (the others forgotten)? */
bool
member_pending_any(KGroup *g)
{
	pending_prune(g);
	return g->pending != NULL;
}

/* a group that is no longer anyone's, with its members */
void
group_free(KGroup *g)
{
	while (g->members)
	{
		KMember    *m = g->members;

		g->members = m->next;
		member_free(m);
	}
	while (g->pending)
		pending_drop(&g->pending);
	if (g->join_timer)
		event_free(g->join_timer);
	free(g->id);
	free(g->protocol_type);
	free(g->protocol);
	free(g->leader);
	free(g);
}
