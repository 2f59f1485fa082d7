/*-------------------------------------------------------------------------
 *
 * h_group.c
 *	  The group APIs' wire formats: FindCoordinator (v0-v2), JoinGroup
 *	  (v0-v5), SyncGroup (v0-v3), Heartbeat (v0-v3), LeaveGroup (v0-v3),
 *	  ListGroups (v0-v2) and DescribeGroups (v0-v4).  Decoding and encoding
 *	  only; the state machine is group.c.  Loop thread only; the database
 *	  is asked only whether a new group has SQL members (below).
 *
 * A single daemon coordinates every group it is asked about.  In a
 * replicated cluster (--coordinator) FindCoordinator names the live
 * daemon that cluster.c chooses for the group, the same from every
 * daemon, and the other group APIs answer NOT_COORDINATOR on any other
 * daemon, so that clients look again (ListGroups lists the groups this
 * daemon coordinates, as a Kafka broker's does).  A group that has live
 * members through SQL (mq.join_group) is refused to Kafka clients with
 * INCONSISTENT_GROUP_PROTOCOL: the two memberships would not know each
 * other.  That is checked with one statement when a JoinGroup arrives for
 * a group without Kafka members.
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

void
h_find_coordinator(KRequest *req)
{
	KWriter    *w = &req->resp;
	char	   *key = kslice_dup(kr_str(&req->body));
	int			id = cluster_group_coordinator(key ? key : "");
	const KBroker *b = cluster_enabled() ? cluster_broker(id) : NULL;

	free(key);
	if (req->api_version >= 1)
		(void) kr_i8(&req->body);	/* key type: groups and transactions alike */
	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i16(w, id < 0 || (cluster_enabled() && b == NULL) ? KERR_COORDINATOR_NOT_AVAILABLE : KERR_NONE);
	if (req->api_version >= 1)
		kw_str(w, NULL);
	kw_i32(w, id < 0 ? -1 : id);
	kw_str(w, b ? b->host : id < 0 ? "" : kconfig.advertised_host);
	kw_i32(w, b ? b->port : id < 0 ? -1 : kconfig.advertised_port);
	req_finish(req);
}

void
join_respond(KRequest *req, KGroup *g, KMember *m, int16_t error)
{
	KWriter    *w = &req->resp;
	bool		leader = error == KERR_NONE && m && g->leader && strcmp(g->leader, m->id) == 0;

	if (req->api_version >= 2)
		kw_i32(w, 0);
	kw_i16(w, error);
	kw_i32(w, error == KERR_NONE ? g->generation : -1);
	kw_str(w, error == KERR_NONE ? g->protocol : "");
	kw_str(w, error == KERR_NONE ? g->leader : "");
	kw_str(w, m ? m->id : "");
	kw_i32(w, leader ? g->nmembers : 0);
	for (KMember *x = leader ? g->members : NULL; x; x = x->next)
	{
		const KProto *p = member_proto(x, g->protocol);

		kw_str(w, x->id);
		if (req->api_version >= 5)
			kw_str(w, x->instance_id);
		kw_bytes(w, p ? p->meta : NULL, p ? p->len : 0);
	}
	req_finish(req);
}

void
sync_respond(KRequest *req, const uint8_t *assign, int32_t len, int16_t error)
{
	KWriter    *w = &req->resp;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i16(w, error);
	kw_bytes(w, assign, error == KERR_NONE ? len : 0);
	req_finish(req);
}

static void
join_free(KJoin *j)
{
	for (int i = 0; i < j->nprotos; i++)
	{
		free(j->protos[i].name);
		free(j->protos[i].meta);
	}
	free(j->protos);
	free(j->group_id);
	free(j->member_id);
	free(j->instance_id);
	free(j->protocol_type);
}

#define SQL_MEMBERS_SQL \
	"SELECT EXISTS (SELECT 1 FROM mq.group_members m WHERE m.group_id = $1" \
	"                  AND m.last_heartbeat > now() - m.session_timeout_ms * interval '1 ms')"

/* a SASL client's role may join only groups it may read, as in Kafka */
static const char sql_group_read[] = "SELECT mq.has_group_privilege($1, 'read')";

typedef struct JoinState
{
	KJob		job;
	KJoin		join;
} JoinState;

static void
join_state_free(void *p)
{
	JoinState  *s = p;

	kjob_free(&s->job);
	join_free(&s->join);
	free(s);
}

/* after the checks of the role's right (SASL) and for SQL members */
static void
join_checked(KRequest *req)
{
	JoinState  *s = req->state;
	KStmt	   *st = s->job.n ? &s->job.stmts[0] : NULL;
	int16_t		code;

	if (st && st->sql == sql_group_read)
	{
		if (kstmt_failed(st, &code) || strcmp(PQgetvalue(st->res, 0, 0), "t") != 0)
		{
			join_respond(req, NULL, NULL, st->res ? KERR_GROUP_AUTHORIZATION_FAILED : code);
			return;
		}
		st = s->job.n > 1 ? &s->job.stmts[1] : NULL;
	}
	if (st && st->res && strcmp(PQgetvalue(st->res, 0, 0), "t") == 0)
	{
		mq_log_warning("group %s has SQL members (mq.join_group): refusing Kafka member",
					   s->join.group_id);
		join_respond(req, NULL, NULL, KERR_INCONSISTENT_GROUP_PROTOCOL);
		return;
	}
	group_join(req, &s->join);
}

static bool
join_decode(KRequest *req, KJoin *j)
{
	KReader    *r = &req->body;
	int32_t		n;

	j->group_id = kslice_dup(kr_str(r));
	j->session_ms = kr_i32(r);
	j->rebalance_ms = req->api_version >= 1 ? kr_i32(r) : j->session_ms;
	j->member_id = kslice_dup(kr_str(r));
	if (req->api_version >= 5)
		j->instance_id = kslice_dup(kr_str(r));
	j->protocol_type = kslice_dup(kr_str(r));
	n = kr_array(r, 6);
	j->protos = mq_malloc0(sizeof(KProto) * (n > 0 ? n : 1));
	for (int32_t i = 0; i < n && !r->err; i++, j->nprotos++)
	{
		KSlice		meta;

		j->protos[i].name = kslice_dup(kr_str(r));
		meta = kr_bytes(r);
		j->protos[i].len = meta.len < 0 ? 0 : meta.len;
		j->protos[i].meta = mq_malloc(j->protos[i].len + 1);
		if (meta.len > 0)
			memcpy(j->protos[i].meta, meta.p, meta.len);
		if (j->protos[i].name == NULL)
			r->err = true;
	}
	return !r->err && j->group_id && j->member_id;
}

void
h_join_group(KRequest *req)
{
	JoinState  *s = mq_malloc0(sizeof(JoinState));
	KGroup	   *g;

	req->state = s;
	req->free_state = join_state_free;
	if (!join_decode(req, &s->join))
	{
		req_abort(req);
		return;
	}
	if (s->join.group_id[0] == '\0')
	{
		join_respond(req, NULL, NULL, KERR_INVALID_GROUP_ID);
		return;
	}
	if (!cluster_coordinates(s->join.group_id))
	{
		join_respond(req, NULL, NULL, KERR_NOT_COORDINATOR);
		return;
	}
	g = group_find(s->join.group_id);
	if (g && g->nmembers > 0 && req->role == NULL)
	{
		group_join(req, &s->join);
		return;
	}
	if (req->role)
		kstmt_text(kjob_add(&s->job, sql_group_read, 0), MQ_TEXTOID, s->join.group_id);
	if (g == NULL || g->nmembers == 0)
		kstmt_text(kjob_add(&s->job, SQL_MEMBERS_SQL, 0), MQ_TEXTOID, s->join.group_id);
	pool_run(req, &s->job, join_checked);
}

void
h_sync_group(KRequest *req)
{
	KReader    *r = &req->body;
	char	   *group = kslice_dup(kr_str(r));
	int32_t		generation = kr_i32(r);
	char	   *member = kslice_dup(kr_str(r));
	char	   *instance = req->api_version >= 3 ? kslice_dup(kr_str(r)) : NULL;
	int32_t		n = kr_array(r, 6);
	KAssign    *a = mq_malloc0(sizeof(KAssign) * (n > 0 ? n : 1));
	int32_t		na = 0;

	for (; na < n && !r->err; na++)
	{
		a[na].member_id = kslice_dup(kr_str(r));
		a[na].bytes = kr_bytes(r);
		if (a[na].member_id == NULL)
			r->err = true;
	}
	if (r->err || group == NULL || member == NULL)
		req_abort(req);
	else if (!cluster_coordinates(group))
		sync_respond(req, NULL, 0, KERR_NOT_COORDINATOR);
	else
		group_sync(req, group, generation, member, instance, na, a);
	for (int32_t i = 0; i < na; i++)
		free(a[i].member_id);
	free(a);
	free(group);
	free(member);
	free(instance);
}

void
h_heartbeat(KRequest *req)
{
	KReader    *r = &req->body;
	char	   *group = kslice_dup(kr_str(r));
	int32_t		generation = kr_i32(r);
	char	   *member = kslice_dup(kr_str(r));
	char	   *instance = req->api_version >= 3 ? kslice_dup(kr_str(r)) : NULL;

	if (r->err || group == NULL || member == NULL)
		req_abort(req);
	else
	{
		if (req->api_version >= 1)
			kw_i32(&req->resp, 0);
		kw_i16(&req->resp, !cluster_coordinates(group) ? KERR_NOT_COORDINATOR :
			   group_heartbeat(group, generation, member, instance));
		req_finish(req);
	}
	free(group);
	free(member);
	free(instance);
}

void
h_leave_group(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	char	   *group = kslice_dup(kr_str(r));
	int32_t		n;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	if (req->api_version < 3)
	{
		char	   *member = kslice_dup(kr_str(r));

		if (!r->err && group && member)
			kw_i16(w, !cluster_coordinates(group) ? KERR_NOT_COORDINATOR :
				   group_leave(group, member, NULL));
		free(member);
	}
	else
	{
		bool		mine = group == NULL || cluster_coordinates(group);

		kw_i16(w, mine ? KERR_NONE : KERR_NOT_COORDINATOR);
		n = kr_array(r, 4);
		if (!mine)
			n = 0;
		kw_i32(w, n);
		for (int32_t i = 0; i < n && !r->err && group; i++)
		{
			KSlice		ms = kr_str(r);
			KSlice		is = kr_str(r);
			char	   *member = kslice_dup(ms);
			char	   *instance = kslice_dup(is);

			kw_strn(w, ms.p, ms.len);
			kw_strn(w, is.p, is.len);
			kw_i16(w, group_leave(group, member ? member : "", instance));
			free(member);
			free(instance);
		}
	}
	if (r->err || group == NULL)
		req_abort(req);
	else
		req_finish(req);
	free(group);
}

void
h_list_groups(KRequest *req)
{
	KWriter    *w = &req->resp;
	size_t		count_at;
	int32_t		n = 0;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i16(w, KERR_NONE);
	count_at = w->len;
	kw_i32(w, 0);
	for (KGroup *g = group_list(); g; g = g->next)
	{
		if (!cluster_coordinates(g->id))
			continue;			/* it moved to another daemon */
		n++;
		kw_str(w, g->id);
		kw_str(w, g->protocol_type ? g->protocol_type : "");
	}
	kw_put_i32_at(w, count_at, n);
	req_finish(req);
}

static void
describe_one(KRequest *req, KSlice id)
{
	KWriter    *w = &req->resp;
	char	   *name = kslice_dup(id);
	bool		mine = name == NULL || cluster_coordinates(name);
	KGroup	   *g = name && mine ? group_find(name) : NULL;
	bool		stable = g && g->state == KG_STABLE;

	kw_i16(w, mine ? KERR_NONE : KERR_NOT_COORDINATOR);
	kw_strn(w, id.p, id.len);
	kw_str(w, g ? group_state_name(g->state) : "Dead");
	kw_str(w, g && g->protocol_type ? g->protocol_type : "");
	kw_str(w, g && g->protocol ? g->protocol : "");
	kw_i32(w, g ? g->nmembers : 0);
	for (KMember *m = g ? g->members : NULL; m; m = m->next)
	{
		const KProto *p = member_proto(m, g->protocol);

		kw_str(w, m->id);
		if (req->api_version >= 4)
			kw_str(w, m->instance_id);
		kw_str(w, m->client_id);
		kw_str(w, m->client_host);
		kw_bytes(w, p ? p->meta : NULL, p ? p->len : 0);
		kw_bytes(w, stable ? m->assignment : NULL, stable ? m->assign_len : 0);
	}
	if (req->api_version >= 3)
		kw_i32(w, INT32_MIN);	/* authorized operations: not computed */
	free(name);
}

void
h_describe_groups(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		n = kr_array(r, 2);
	KSlice	   *ids = mq_malloc0(sizeof(KSlice) * (n > 0 ? n : 1));

	for (int32_t i = 0; i < n; i++)
		ids[i] = kr_str(r);
	if (r->err)
	{
		free(ids);
		req_abort(req);
		return;
	}
	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i32(w, n);
	for (int32_t i = 0; i < n; i++)
		describe_one(req, ids[i]);
	free(ids);
	req_finish(req);
}
