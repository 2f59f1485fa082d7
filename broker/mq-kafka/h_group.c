/*-------------------------------------------------------------------------
 *
 * h_group.c
 *	  The group APIs' wire formats: FindCoordinator (v0-v6), JoinGroup
 *	  (v0-v9), SyncGroup (v0-v5), Heartbeat (v0-v4) and LeaveGroup (v0-v5);
 *	  ListGroups and DescribeGroups are h_group_list.c.  Decoding and
 *	  encoding only; the state machine is group.c.  Loop thread only; the
 *	  database is asked whether a SASL client's role may READ the group
 *	  (group_authz.c, before JoinGroup, SyncGroup, Heartbeat and
 *	  LeaveGroup are served) and whether a new group has SQL members.
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
 * Newer versions: FindCoordinator v4+ asks for a list of keys and gets a
 * coordinator each.  Key types as Kafka 3.9's: 0 a group, 1 a transaction;
 * 2, a share group's (v6), INVALID_REQUEST below v6 and
 * COORDINATOR_NOT_AVAILABLE from v6 (3.9 has no share coordinator); any
 * other type fails the whole request with INVALID_REQUEST, every key's
 * coordinator -1;
 * JoinGroup v7+ answers the protocol type (null, as the protocol name, on
 * an error), v8+ sends a reason (logged nowhere, as most of Kafka's), v9+
 * answers skip_assignment false (the leader always assigns); SyncGroup v5
 * sends the protocol type and name (not checked again: the JoinGroup
 * before was) and gets the group's (group_reply.c);
 * LeaveGroup v5 a reason per member.  The flexible versions (FindCoordinator
 * v3+, JoinGroup v6+, SyncGroup, Heartbeat and LeaveGroup v4+) add
 * tagged fields only.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "group_authz.h"
#include "kerr.h"
#include "util.h"

/* a request naming one group: its READ is asked before the rest is read */
typedef struct GroupReq
{
	KGroupAuthz authz;
	char	   *group;
} GroupReq;

#define KEY_TYPE_SHARE 2

/* a key type's error before any lookup (Kafka 3.9's getCoordinator) */
static int16_t
key_type_error(KRequest *req, int8_t type)
{
	if (type == 0 || type == 1)
		return KERR_NONE;
	if (type == KEY_TYPE_SHARE)
		return req->api_version < 6 ? KERR_INVALID_REQUEST : KERR_COORDINATOR_NOT_AVAILABLE;
	return KERR_INVALID_REQUEST;
}

/*
 * one key's coordinator: error, [message,] node, host, port (v0-v3
 * order); an error given (the key type's) answers node -1, host "", port -1
 */
static void
write_coordinator(KRequest *req, KSlice keys, int16_t type_error)
{
	KWriter    *w = &req->resp;
	char	   *key = kslice_dup(keys);
	int			id = type_error != KERR_NONE ? -1 : cluster_group_coordinator(key ? key : "");
	const KBroker *b = cluster_enabled() && id >= 0 && id != kconfig.node_id ? cluster_broker(id) : NULL;
	int16_t		error = id < 0 || (cluster_enabled() && b == NULL && id != kconfig.node_id) ?
		KERR_COORDINATOR_NOT_AVAILABLE : KERR_NONE;
	const char *host;			/* this node: the listener the client came in on */
	int			port;

	if (type_error != KERR_NONE)
		error = type_error;
	free(key);
	conn_advertised(req->conn, &host, &port);
	if (req->api_version >= 4)
		kw_strn(w, keys.p, keys.len);
	else
	{
		kw_i16(w, error);
		if (req->api_version >= 1)
			kw_str(w, NULL);
	}
	kw_i32(w, id < 0 ? -1 : id);
	kw_str(w, b ? b->host : id < 0 ? "" : host);
	kw_i32(w, b ? b->port : id < 0 ? -1 : port);
	if (req->api_version >= 4)
	{
		kw_i16(w, error);
		kw_str(w, NULL);
		kw_tags(w);
	}
}

void
h_find_coordinator(KRequest *req)
{
	KWriter    *w = &req->resp;
	KReader    *r = &req->body;
	KSlice		key = {NULL, -1};
	int32_t		n = 1;
	int8_t		type = 0;		/* v0: a group */

	if (req->api_version <= 3)
		key = kr_str(r);
	if (req->api_version >= 1)
		type = kr_i8(r);
	if (req->api_version >= 4)
		n = kr_array(r, 1);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (req->api_version >= 1)
		kw_i32(w, 0);
	if (req->api_version >= 4)
		kw_array(w, n);
	for (int32_t i = 0; i < n && !r->err; i++)
		write_coordinator(req, req->api_version >= 4 ? kr_str(r) : key, key_type_error(req, type));
	if (r->err)
		req_abort(req);
	else
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
	free(j->replaced_id);
}

#define SQL_MEMBERS_SQL \
	"SELECT EXISTS (SELECT 1 FROM mq.group_members m WHERE m.group_id = $1 AND NOT m.kafka AND m.active)"

typedef struct JoinState
{
	KGroupAuthz authz;
	KJob		job;
	KJoin		join;
} JoinState;

static void
join_state_free(void *p)
{
	JoinState  *s = p;

	group_authz_free(&s->authz);
	kjob_free(&s->job);
	join_free(&s->join);
	free(s);
}

/* after the check for SQL members of a group without Kafka members */
static void
join_checked(KRequest *req)
{
	JoinState  *s = req->state;
	KStmt	   *st = &s->job.stmts[0];

	if (st->res && strcmp(PQgetvalue(st->res, 0, 0), "t") == 0)
	{
		mq_log_warning("group %s has SQL members (mq.join_group): refusing Kafka member",
					   s->join.group_id);
		join_respond(req, NULL, NULL, KERR_INCONSISTENT_GROUP_PROTOCOL);
		return;
	}
	group_join(req, &s->join);
}

/* after the role's right to read the group (SASL) */
static void
join_authorized(KRequest *req)
{
	JoinState  *s = req->state;
	KGroup	   *g = group_find(s->join.group_id);
	int16_t		error = group_authz_error(&s->authz, 0);

	if (error != KERR_NONE)
		join_respond(req, NULL, NULL, error);
	else if (g && g->nmembers > 0)
		group_join(req, &s->join);
	else
	{
		kstmt_text(kjob_add(&s->job, SQL_MEMBERS_SQL, 0), MQ_TEXTOID, s->join.group_id);
		pool_run(req, &s->job, join_checked);
	}
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
		kr_tags(r);
		j->protos[i].len = meta.len < 0 ? 0 : meta.len;
		j->protos[i].meta = mq_malloc(j->protos[i].len + 1);
		if (meta.len > 0)
			memcpy(j->protos[i].meta, meta.p, meta.len);
		if (j->protos[i].name == NULL)
			r->err = true;
	}
	if (req->api_version >= 8)
		(void) kr_str(r);		/* reason */
	return !r->err && j->group_id && j->member_id;
}

void
h_join_group(KRequest *req)
{
	JoinState  *s = mq_malloc0(sizeof(JoinState));

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
	group_authz_run(req, &s->authz, "read", &s->join.group_id, 1, join_authorized);
}

static void
group_req_free(void *p)
{
	GroupReq   *s = p;

	group_authz_free(&s->authz);
	free(s->group);
	free(s);
}

/* read the group id, then done(req) once the role's READ on it is known */
static void
group_req_start(KRequest *req, KDoneFn done)
{
	GroupReq   *s = mq_malloc0(sizeof(GroupReq));

	req->state = s;
	req->free_state = group_req_free;
	s->group = kslice_dup(kr_str(&req->body));
	if (req->body.err || s->group == NULL)
		req_abort(req);
	else
		group_authz_run(req, &s->authz, "read", &s->group, 1, done);
}

/* KERR_NONE if the group may be served here: allowed, and coordinated here */
static int16_t
group_req_error(KRequest *req)
{
	GroupReq   *s = req->state;
	int16_t		error = group_authz_error(&s->authz, 0);

	if (error == KERR_NONE && !cluster_coordinates(s->group))
		error = KERR_NOT_COORDINATOR;
	return error;
}

static void
sync_authorized(KRequest *req)
{
	GroupReq   *s = req->state;
	KReader    *r = &req->body;
	int32_t		generation = kr_i32(r);
	char	   *member = kslice_dup(kr_str(r));
	char	   *instance = req->api_version >= 3 ? kslice_dup(kr_str(r)) : NULL;
	int32_t		n;
	KAssign    *a;
	int32_t		na = 0;
	int16_t		error = group_req_error(req);
	char	   *protocol_type = NULL;	/* v5+: the group's, as the member knows them */
	char	   *protocol = NULL;

	if (req->api_version >= 5)
	{
		protocol_type = kslice_dup(kr_str(r));
		protocol = kslice_dup(kr_str(r));
	}
	n = kr_array(r, 6);
	a = mq_malloc0(sizeof(KAssign) * (n > 0 ? n : 1));
	for (; na < n && !r->err; na++)
	{
		a[na].member_id = kslice_dup(kr_str(r));
		a[na].bytes = kr_bytes(r);
		kr_tags(r);
		if (a[na].member_id == NULL)
			r->err = true;
	}
	if (r->err || member == NULL)
		req_abort(req);
	else if (error != KERR_NONE)
		sync_respond(req, NULL, NULL, 0, error);
	else
		group_sync(req, &(KSync){s->group, generation, member, instance, protocol_type, protocol}, na, a);
	for (int32_t i = 0; i < na; i++)
		free(a[i].member_id);
	free(a);
	free(member);
	free(instance);
	free(protocol_type);
	free(protocol);
}

void
h_sync_group(KRequest *req)
{
	group_req_start(req, sync_authorized);
}

static void
heartbeat_authorized(KRequest *req)
{
	GroupReq   *s = req->state;
	KReader    *r = &req->body;
	int32_t		generation = kr_i32(r);
	char	   *member = kslice_dup(kr_str(r));
	char	   *instance = req->api_version >= 3 ? kslice_dup(kr_str(r)) : NULL;
	int16_t		error = group_req_error(req);

	if (r->err || member == NULL)
		req_abort(req);
	else
	{
		if (req->api_version >= 1)
			kw_i32(&req->resp, 0);
		kw_i16(&req->resp, error != KERR_NONE ? error :
			   group_heartbeat(s->group, generation, member, instance));
		req_finish(req);
	}
	free(member);
	free(instance);
}

void
h_heartbeat(KRequest *req)
{
	group_req_start(req, heartbeat_authorized);
}

static void
leave_authorized(KRequest *req)
{
	GroupReq   *s = req->state;
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int16_t		error = group_req_error(req);
	int32_t		n;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	if (req->api_version < 3)
	{
		char	   *member = kslice_dup(kr_str(r));

		if (!r->err && member)
			kw_i16(w, error != KERR_NONE ? error : group_leave(s->group, member, NULL));
		free(member);
	}
	else
	{
		kw_i16(w, error);
		n = kr_array(r, 4);
		if (error != KERR_NONE)
			n = 0;
		kw_array(w, n);
		for (int32_t i = 0; i < n && !r->err; i++)
		{
			KSlice		ms = kr_str(r);
			KSlice		is = kr_str(r);
			char	   *member = kslice_dup(ms);
			char	   *instance = kslice_dup(is);

			if (req->api_version >= 5)
				(void) kr_str(r);	/* reason */
			kr_tags(r);
			kw_strn(w, ms.p, ms.len);
			kw_strn(w, is.p, is.len);
			kw_i16(w, group_leave(s->group, member ? member : "", instance));
			kw_tags(w);
			free(member);
			free(instance);
		}
	}
	if (r->err)
		req_abort(req);
	else
		group_store_after_saves(req, req_finish);	/* a group that emptied: forgotten */
}

void
h_leave_group(KRequest *req)
{
	group_req_start(req, leave_authorized);
}
