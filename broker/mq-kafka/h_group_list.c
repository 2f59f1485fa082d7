/*-------------------------------------------------------------------------
 *
 * h_group_list.c
 *	  ListGroups (v0-v5): the groups this daemon coordinates, those it
 *	  holds members of and every other group the database knows
 *	  (mq.groups: SQL groups and groups with committed offsets, as Kafka
 *	  lists a group that only has offsets), shown to a SASL client only
 *	  where its role may DESCRIBE the group, as Kafka's authorizer filters
 *	  them (group_authz.c asks for the held ones, one statement per group;
 *	  mq.groups shows no other), unless it may DESCRIBE the cluster: then
 *	  every group, as Kafka lists them (mq.groups read as the daemon's
 *	  role).  Loop thread only.
 *
 * A group held here answers its own state and protocol type; one known
 * only to the database is "consumer" if it is an SQL group, else "" (a
 * group that only commits offsets), in mq.groups' state (Rebalancing is
 * Kafka's PreparingRebalance).  ListGroups v4+ filters by state
 * (case-insensitive, as Kafka) and answers each group's; v5+ filters by
 * type and answers it: every group served here is "classic" (KIP-848's
 * "consumer" groups are not served).  Flexible versions: v3+.
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
#include "kacl.h"
#include "kerr.h"
#include "util.h"

#define GROUPS_SQL "SELECT group_id, sql_group, state FROM mq.groups"

/* the groups listed: [0, nheld) held here, [nheld, n) known to the database */
typedef struct ListState
{
	KJob		db;
	KJob		scope;			/* SASL: may the client DESCRIBE the cluster? */
	KRequest	daemon_req;		/* then mq.groups is read as the daemon's role */
	bool		all;			/* and every group is listed */
	KGroupAuthz authz;
	int			n;
	int			nheld;
	char	  **names;
	const char **types;			/* of the database's groups */
	const char **states;
} ListState;

static void
list_state_free(void *p)
{
	ListState  *s = p;

	kjob_free(&s->db);
	kjob_free(&s->scope);
	group_authz_free(&s->authz);
	for (int i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->types);
	free(s->states);
	free(s);
}

/* room for n names */
static void
list_state_size(ListState *s, int n)
{
	s->names = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
	s->types = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
	s->states = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
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

/* one group of the answer: its id, protocol type, state (v4+), type (v5+) */
static void
write_group(KRequest *req, const char *id, const char *type, const char *state)
{
	KWriter    *w = &req->resp;

	kw_str(w, id);
	kw_str(w, type);
	if (req->api_version >= 4)
		kw_str(w, state);
	if (req->api_version >= 5)
		kw_str(w, "classic");
	kw_tags(w);
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
		KGroup	   *g = i < s->nheld ? group_find(s->names[i]) : NULL;
		const char *state = g ? group_state_name(g->state) : s->states[i];
		KReader		f = states;

		if ((i < s->nheld && (g == NULL || group_authz_error(&s->authz, i) != KERR_NONE)) ||
			(req->api_version >= 4 && !filter_passes(&f, state)))
			continue;
		n++;
		write_group(req, s->names[i], g ? (g->protocol_type ? g->protocol_type : "") : s->types[i], state);
	}
	kw_fill_count(w, count_at, n);
	req_finish(req);
}

/* the database's groups known: held ones first, then the others this daemon coordinates */
static void
list_known(KRequest *req)
{
	ListState  *s = req->state;
	KStmt	   *st = &s->db.stmts[0];
	int16_t		code;
	const PGresult *res = NULL;
	int			held = 0;

	if (kstmt_failed(st, &code))
		mq_log_warning("list groups: %s", st->err.message);
	else
		res = st->res;
	for (KGroup *g = group_list(); g; g = g->next)
		held++;
	list_state_size(s, held + (res ? PQntuples(res) : 0));
	for (KGroup *g = group_list(); g; g = g->next)
		if (cluster_coordinates(g->id))	/* else it moved to another daemon */
			s->names[s->n++] = mq_strdup(g->id);
	s->nheld = s->n;
	for (int r = 0; res && r < PQntuples(res); r++)
	{
		const char *id = PQgetvalue(res, r, 0);

		if (group_find(id) || !cluster_coordinates(id))
			continue;
		s->types[s->n] = group_protocol_type_of_sql(strcmp(PQgetvalue(res, r, 1), "t") == 0);
		s->states[s->n] = group_state_of_sql(PQgetvalue(res, r, 2));
		s->names[s->n++] = mq_strdup(id);
	}
	if (s->all)
		list_authorized(req);
	else
		group_authz_run(req, &s->authz, "describe", s->names, s->nheld, list_authorized);
}

/* mq.groups read as the daemon's role: every group */
static void
list_known_all(KRequest *sub)
{
	list_known(sub->state);
}

/* DESCRIBE on the cluster lists every group, else those the client may describe */
static void
list_scoped(KRequest *req)
{
	ListState  *s = req->state;

	s->all = kacl_cluster_code(&s->scope.stmts[0]) == KERR_NONE;
	if (!s->all)
	{
		pool_run(req, &s->db, list_known);
		return;
	}
	s->daemon_req.state = req;	/* no role: the daemon's */
	pool_run_on(pool_local(), &s->daemon_req, &s->db, list_known_all);
}

void
h_list_groups(KRequest *req)
{
	ListState  *s = mq_malloc0(sizeof(ListState));

	req->state = s;
	req->free_state = list_state_free;
	kjob_add(&s->db, GROUPS_SQL, 0);
	if (req->role == NULL)
	{
		pool_run(req, &s->db, list_known);
		return;
	}
	kacl_add_cluster_check(&s->scope, "describe");
	pool_run(req, &s->scope, list_scoped);
}
