/*-------------------------------------------------------------------------
 *
 * h_group_list.c
 *	  ListGroups (v0-v5) and DescribeGroups (v0-v5): what this daemon
 *	  knows of the groups it coordinates, shown to a SASL client only for
 *	  the groups its role may DESCRIBE, as Kafka's authorizer filters them
 *	  (group_authz.c asks; one statement per group).  A group the role may
 *	  not describe is left out of ListGroups and answered
 *	  GROUP_AUTHORIZATION_FAILED, with nothing else, by DescribeGroups.
 *	  Loop thread only.
 *
 * ListGroups v4+ filters by state (case-insensitive, as Kafka) and
 * answers each group's; v5+ filters by type and answers it: every group
 * served here is "classic" (KIP-848's "consumer" groups are not served).
 * DescribeGroups answers as Kafka's coordinator summarizes a group: the
 * protocol and each member's metadata and assignment only while the group
 * is Stable; in a rebalance the protocol is "" and both are empty, and an
 * empty group has no protocol (group.c clears it).
 * Flexible versions: ListGroups v3+, DescribeGroups v5+.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "group.h"
#include "group_authz.h"
#include "kerr.h"
#include "util.h"

/* the names asked about, and the answers */
typedef struct ListState
{
	KGroupAuthz authz;
	int			n;
	char	  **names;
} ListState;

static void
list_state_free(void *p)
{
	ListState  *s = p;

	group_authz_free(&s->authz);
	for (int i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s);
}

static ListState *
list_state_new(KRequest *req, int n)
{
	ListState  *s = mq_malloc0(sizeof(ListState));

	s->names = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
	req->state = s;
	req->free_state = list_state_free;
	return s;
}

/* does a ListGroups filter (v4+ states, v5+ types) let this value pass? */
static bool
filter_passes(KReader *r, const char *value)
{
	int32_t		n = kr_array(r, 1);
	bool		pass = n <= 0;

	for (int32_t i = 0; i < n && !r->err; i++)
	{
		KSlice		f = kr_str(r);

		pass |= f.len >= 0 && (size_t) f.len == strlen(value) &&
			strncasecmp((const char *) f.p, value, f.len) == 0;
	}
	return pass;
}

static void
list_authorized(KRequest *req)
{
	ListState  *s = req->state;
	KWriter    *w = &req->resp;
	size_t		count_at;
	int32_t		n = 0;
	KReader		states = req->body;
	bool		classic = true;

	if (req->api_version >= 5)
	{
		KReader		types = req->body;

		(void) filter_passes(&types, "");	/* past the states */
		classic = filter_passes(&types, "classic");
	}
	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i16(w, KERR_NONE);
	count_at = kw_later(w);
	for (int i = 0; i < s->n && classic; i++)
	{
		KGroup	   *g = group_find(s->names[i]);
		KReader		f = states;

		if (g == NULL || group_authz_error(&s->authz, i) != KERR_NONE ||
			(req->api_version >= 4 && !filter_passes(&f, group_state_name(g->state))))
			continue;
		n++;
		kw_str(w, g->id);
		kw_str(w, g->protocol_type ? g->protocol_type : "");
		if (req->api_version >= 4)
			kw_str(w, group_state_name(g->state));
		if (req->api_version >= 5)
			kw_str(w, "classic");
		kw_tags(w);
	}
	kw_fill_count(w, count_at, n);
	req_finish(req);
}

void
h_list_groups(KRequest *req)
{
	int			n = 0;
	ListState  *s;

	for (KGroup *g = group_list(); g; g = g->next)
		n++;
	s = list_state_new(req, n);
	for (KGroup *g = group_list(); g; g = g->next)
		if (cluster_coordinates(g->id))	/* else it moved to another daemon */
			s->names[s->n++] = mq_strdup(g->id);
	group_authz_run(req, &s->authz, "describe", s->names, s->n, list_authorized);
}

static void
describe_one(KRequest *req, const char *name, int16_t error)
{
	KWriter    *w = &req->resp;
	bool		mine = error == KERR_NONE && cluster_coordinates(name);
	KGroup	   *g = mine ? group_find(name) : NULL;
	bool		stable = g && g->state == KG_STABLE;

	kw_i16(w, error != KERR_NONE ? error : mine ? KERR_NONE : KERR_NOT_COORDINATOR);
	kw_str(w, name);
	kw_str(w, g ? group_state_name(g->state) : error != KERR_NONE ? "" : "Dead");
	kw_str(w, g && g->protocol_type ? g->protocol_type : "");
	kw_str(w, stable && g->protocol ? g->protocol : "");
	kw_array(w, g ? g->nmembers : 0);
	for (KMember *m = g ? g->members : NULL; m; m = m->next)
	{
		const KProto *p = stable ? member_proto(m, g->protocol) : NULL;

		kw_str(w, m->id);
		if (req->api_version >= 4)
			kw_str(w, m->instance_id);
		kw_str(w, m->client_id);
		kw_str(w, m->client_host);
		kw_bytes(w, p ? p->meta : NULL, p ? p->len : 0);
		kw_bytes(w, stable ? m->assignment : NULL, stable ? m->assign_len : 0);
		kw_tags(w);
	}
	if (req->api_version >= 3)
		kw_i32(w, INT32_MIN);	/* authorized operations: not computed */
	kw_tags(w);
}

static void
describe_authorized(KRequest *req)
{
	ListState  *s = req->state;
	KWriter    *w = &req->resp;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_array(w, s->n);
	for (int i = 0; i < s->n; i++)
		describe_one(req, s->names[i], group_authz_error(&s->authz, i));
	req_finish(req);
}

void
h_describe_groups(KRequest *req)
{
	KReader    *r = &req->body;
	int32_t		n = kr_array(r, 2);
	ListState  *s = list_state_new(req, n);

	for (int32_t i = 0; i < n && !r->err; i++)
	{
		s->names[s->n++] = kslice_dup(kr_str(r));
		if (s->names[i] == NULL)
			r->err = true;
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	group_authz_run(req, &s->authz, "describe", s->names, s->n, describe_authorized);
}
