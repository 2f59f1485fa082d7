/*-------------------------------------------------------------------------
 *
 * group_join.c
 *	  JoinGroup in the classic group coordinator: whether a join fits the
 *	  group, which member it speaks for (a new one, a pending one, a
 *	  static member taken over), and whether it starts a rebalance.  It
 *	  stands above the state machine (group.c), whose rebalance it starts,
 *	  and below h_group.c, which decodes the request.  Loop thread only.
 *
 * A JoinGroup v4+ without a member id first gets one and MEMBER_ID_REQUIRED
 * (KIP-394, id_required).  A static member (group.instance.id) joining
 * without a member id but with a known instance id takes that member over
 * under a new id, fencing the old one; into a stable group whose protocol
 * its protocols would not change that is all (KIP-345, static_rejoin).  A
 * known member joining again with the same protocols starts no rebalance
 * unless it leads a stable group (unchanged_join), as in Kafka.  Every
 * other join rebalances.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

/* a protocol type and at least one protocol shared with the group */
static bool
join_compatible(KGroup *g, KJoin *j)
{
	if (g->nmembers == 0)
		return j->nprotos > 0;
	if (g->protocol_type == NULL || j->protocol_type == NULL ||
		strcmp(g->protocol_type, j->protocol_type) != 0)
		return false;
	for (int i = 0; i < j->nprotos; i++)
	{
		bool		ok = true;

		for (KMember *m = g->members; m && ok; m = m->next)
			ok = member_proto(m, j->protos[i].name) != NULL;
		if (ok)
			return true;
	}
	return false;
}

/* the member a JoinGroup speaks for, created or taken over; NULL: *code says why */
static KMember *
join_member(KGroup *g, KRequest *req, KJoin *j, int16_t *code)
{
	KMember    *m;

	*code = KERR_NONE;
	if (j->member_id[0] != '\0' && member_pending_take(g, j->member_id))
		return member_add(g, mq_strdup(j->member_id), NULL);
	if (j->member_id[0] != '\0')
		return member_lookup(g, j->member_id, j->instance_id, code);
	m = member_by_instance(g, j->instance_id);
	if (m)
	{
		/* a static member restarted: new id, the old one is fenced */
		char	   *id = member_new_id(req);

		if (m->join_req)
			join_respond(m->join_req, g, m, KERR_FENCED_INSTANCE_ID);
		m->join_req = NULL;
		if (g->leader && strcmp(g->leader, m->id) == 0)
		{
			free(g->leader);
			g->leader = mq_strdup(id);
		}
		free(j->replaced_id);
		j->replaced_id = m->id;
		m->id = id;
		return m;
	}
	return member_add(g, member_new_id(req), j->instance_id);
}

/* a member's client, its address and timeouts, from its latest join */
static void
member_update(KMember *m, KRequest *req, const KJoin *j)
{
	m->session_ms = j->session_ms;
	m->rebalance_ms = j->rebalance_ms;
	free(m->client_id);
	m->client_id = mq_strdup(req->client_id ? req->client_id : "");
	free(m->client_host);
	m->client_host = mq_malloc(strlen(conn_peer(req->conn)) + 2);
	/* Kafka's form, Java's InetAddress without a host name: "/127.0.0.1" */
	sprintf(m->client_host, "/%s", conn_peer(req->conn));
}

/* swap the protocols of m and of a join */
static void
swap_protos(KMember *m, KJoin *j)
{
	KProto	   *p = m->protos;
	int			n = m->nprotos;

	m->protos = j->protos;
	m->nprotos = j->nprotos;
	j->protos = p;
	j->nprotos = n;
}

/*
 * KIP-345: a static member that restarted (no member id, a known instance
 * id: join_member gave it a new id) into a stable group gets the current
 * generation at once and then its assignment from SyncGroup: no
 * rebalance, the others keep theirs, as long as the protocol the group
 * would choose with its new protocols is the group's (Kafka's
 * updateStaticMemberAndRebalance).  Its protocols' metadata is then
 * replaced, even when it changed: cooperative-sticky's (and every Java
 * assignor's) lists the partitions the member owned, which a restarted
 * member no longer does.  The leader's answer is join_respond_static's.
 */
static bool
static_rejoin(KGroup *g, KRequest *req, KMember *m, KJoin *j)
{
	char	   *next;
	bool		same;

	if (j->replaced_id == NULL || g->state != KG_STABLE || m->join_req != NULL)
		return false;
	swap_protos(m, j);
	next = group_choose_protocol(g);
	same = next && g->protocol && strcmp(next, g->protocol) == 0;
	free(next);
	if (!same)
	{
		swap_protos(m, j);		/* group_join takes them as it rebalances */
		return false;
	}
	member_update(m, req, j);
	member_touch(m);
	mq_log_info("group %s: static member %s rejoined as %s, generation %d kept", g->id,
				m->instance_id, m->id, g->generation);
	group_store_save(g, req->role);	/* before the answer frees req */
	join_respond_static(req, g, m, j->replaced_id);
	return true;
}

/*
 * A known member's JoinGroup that changes nothing, answered as Kafka's
 * coordinator answers it: with the same protocols, a follower of a stable
 * group, or any member while the group completes its rebalance (its
 * JoinGroup answer may have been lost), gets the current generation again
 * and no rebalance starts.  A stable group's leader rebalances it (its
 * client rejoins to reassign, say for new partitions).
 */
static bool
unchanged_join(KGroup *g, KMember *m, KRequest *req, const KJoin *j)
{
	bool		leader = g->leader && strcmp(g->leader, m->id) == 0;

	if (j->member_id[0] == '\0' || m->join_req != NULL || !member_same_protos(m, j) ||
		!(g->state == KG_COMPLETING || (g->state == KG_STABLE && !leader)))
		return false;
	member_touch(m);
	join_respond(req, g, m, KERR_NONE);
	return true;
}

/*
 * KIP-394: a JoinGroup v4+ without a member id or an instance id gets a
 * member id and MEMBER_ID_REQUIRED, and joins when it comes back with that
 * id within its session timeout; until then the id is only pending, so a
 * client that never returns leaves no member behind to wait for.
 */
static bool
id_required(KGroup *g, KRequest *req, const KJoin *j)
{
	char	   *id;

	if (req->api_version < 4 || j->member_id[0] != '\0' || j->instance_id != NULL)
		return false;
	id = member_new_id(req);
	member_pending_add(g, id, j->session_ms);
	join_respond_id(req, id, KERR_MEMBER_ID_REQUIRED);
	return true;
}

void
group_join(KRequest *req, KJoin *j)
{
	KGroup	   *g;
	KMember    *m;
	int16_t		code;

	if (group_store_loading())
	{
		join_respond(req, NULL, NULL, KERR_COORDINATOR_LOAD_IN_PROGRESS);
		return;
	}
	/* refused before a group is made for it, as Kafka's coordinator does */
	if (j->session_ms < kconfig.group_min_session_ms || j->session_ms > kconfig.group_max_session_ms)
	{
		join_respond(req, group_find(j->group_id), NULL, KERR_INVALID_SESSION_TIMEOUT);
		return;
	}
	if (j->member_id[0] != '\0' && group_find(j->group_id) == NULL)
	{
		join_respond(req, NULL, NULL, KERR_UNKNOWN_MEMBER_ID);	/* a member of no group */
		return;
	}
	g = group_get(j->group_id);
	if (!join_compatible(g, j))
	{
		join_respond(req, g, NULL, KERR_INCONSISTENT_GROUP_PROTOCOL);
		return;
	}
	if (id_required(g, req, j))
		return;
	if ((m = join_member(g, req, j, &code)) == NULL)
	{
		join_respond(req, g, NULL, code);
		return;
	}
	if (static_rejoin(g, req, m, j) || unchanged_join(g, m, req, j))
		return;
	if (g->nmembers == 1)
	{
		free(g->protocol_type);
		g->protocol_type = mq_strdup(j->protocol_type ? j->protocol_type : "");
	}
	free_protos(m->nprotos, m->protos);
	m->protos = j->protos;
	m->nprotos = j->nprotos;
	j->protos = NULL;
	j->nprotos = 0;
	member_update(m, req, j);
	if (m->join_req)			/* the same member again: the older one is stale */
		join_respond(m->join_req, g, m, KERR_UNKNOWN_MEMBER_ID);
	m->join_req = req;
	member_touch(m);
	group_rebalance(g);
}
