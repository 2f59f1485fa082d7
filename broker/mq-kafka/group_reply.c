/*-------------------------------------------------------------------------
 *
 * group_reply.c
 *	  The answers a group gives its members: the JoinGroup response (the
 *	  leader's copy lists every member's metadata for the chosen
 *	  protocol) and the SyncGroup response (a member's assignment), sent
 *	  both by the handlers (h_group.c) when they refuse a request and by
 *	  the group state machine (group.c) when a rebalance completes.  It
 *	  stands below both, so that neither calls back into the other.
 *	  Loop thread only: no locking.
 *
 * JoinGroup v7+ names the protocol type (null, as the protocol name, on
 * an error), v9+ answers skip_assignment, false but to a static leader
 * that rejoined a stable group (join_respond_static); SyncGroup v5+ names
 * the group's protocol type and name (null on an error).
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"

#include <string.h>

#include "kbuf.h"
#include "kerr.h"

const KProto *
member_proto(const KMember *m, const char *name)
{
	for (int i = 0; name && i < m->nprotos; i++)
		if (strcmp(m->protos[i].name, name) == 0)
			return &m->protos[i];
	return NULL;
}

/*
 * a JoinGroup answer to member_id (m's, or one handed out) naming leader
 * as the group's leader; the members for that leader, who may be told to
 * skip the assignment (v9+)
 */
static void
join_write(KRequest *req, KGroup *g, KMember *m, const char *member_id, int16_t error,
		   const char *leader_id, bool skip)
{
	KWriter    *w = &req->resp;
	bool		leader = error == KERR_NONE && m && leader_id && strcmp(leader_id, m->id) == 0;
	const char *none = req->api_version >= 7 ? NULL : "";

	if (req->api_version >= 2)
		kw_i32(w, 0);
	kw_i16(w, error);
	kw_i32(w, error == KERR_NONE ? g->generation : -1);
	if (req->api_version >= 7)
		kw_str(w, error == KERR_NONE ? g->protocol_type : NULL);
	kw_str(w, error == KERR_NONE ? g->protocol : none);
	kw_str(w, error == KERR_NONE ? leader_id : "");
	if (req->api_version >= 9)
		kw_i8(w, leader && skip);	/* skip_assignment */
	kw_str(w, member_id);
	kw_array(w, leader ? g->nmembers : 0);
	for (KMember *x = leader ? g->members : NULL; x; x = x->next)
	{
		const KProto *p = member_proto(x, g->protocol);

		kw_str(w, x->id);
		if (req->api_version >= 5)
			kw_str(w, x->instance_id);
		kw_bytes(w, p ? p->meta : NULL, p ? p->len : 0);
		kw_tags(w);
	}
	req_finish(req);
}

void
join_respond(KRequest *req, KGroup *g, KMember *m, int16_t error)
{
	join_write(req, g, m, m ? m->id : "", error, g ? g->leader : NULL, false);
}

/*
 * As Kafka's coordinator answers a static member that rejoined a stable
 * group without a rebalance: a follower as any; the leader, from v9, with
 * the members and skip_assignment (it keeps watching the metadata but
 * need not assign, the group keeping its assignment), before v9 with its
 * old id as the leader's, so that it does not take itself for the leader
 * and send an assignment the stable group would ignore.
 */
void
join_respond_static(KRequest *req, KGroup *g, KMember *m, const char *old_id)
{
	bool		leader = g->leader && strcmp(g->leader, m->id) == 0;

	join_write(req, g, m, m->id, KERR_NONE, leader && req->api_version < 9 ? old_id : g->leader, true);
}

void
join_respond_id(KRequest *req, const char *member_id, int16_t error)
{
	join_write(req, NULL, NULL, member_id, error, NULL, false);
}

void
sync_respond(KRequest *req, const KGroup *g, const uint8_t *assign, int32_t len, int16_t error)
{
	KWriter    *w = &req->resp;
	bool		ok = error == KERR_NONE && g;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i16(w, error);
	if (req->api_version >= 5)
	{
		kw_str(w, ok ? g->protocol_type : NULL);
		kw_str(w, ok ? g->protocol : NULL);
	}
	kw_bytes(w, assign, error == KERR_NONE ? len : 0);
	req_finish(req);
}
