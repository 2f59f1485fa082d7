/*-------------------------------------------------------------------------
 *
 * group.c
 *	  The classic group coordinator's state machine (see group.h).  Loop
 *	  thread only.
 *
 * Generations: a rebalance completes the JoinGroup barrier by bumping the
 * generation; SyncGroup, Heartbeat and OffsetCommit (and TxnOffsetCommit
 * v3+ with a member, KIP-447) must carry it (ILLEGAL_GENERATION
 * otherwise).  While a rebalance is being prepared,
 * Heartbeat answers REBALANCE_IN_PROGRESS so members rejoin, and commits
 * of the current (old) generation are still accepted, so a member can
 * commit what it consumed before giving partitions up.
 *
 * JoinGroup itself, which member a join speaks for and whether it
 * rebalances, is group_join.c's; it calls group_rebalance here.
 *
 * Groups outlive a restart (group_store.c): each stable group is saved,
 * read back at start (group_adopt), and until then group requests are
 * answered COORDINATOR_LOAD_IN_PROGRESS.  A timer touches the saved
 * groups that still have members, so that SQL sees them live.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"

#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

#define TOUCH_CHECK_MS 1000

static KGroup *groups;
static struct event *touch_timer;
static int64_t touched_us;

static void member_drop(KGroup *g, KMember *m, int16_t error);

KGroup *
group_list(void)
{
	return groups;
}

KGroup *
group_find(const char *group_id)
{
	for (KGroup *g = groups; g; g = g->next)
		if (strcmp(g->id, group_id) == 0)
			return g;
	return NULL;
}

const char *
group_state_name(KGroupState s)
{
	static const char *const names[] = {"Empty", "PreparingRebalance",
										"CompletingRebalance", "Stable"};

	return names[s];
}

const char *
group_state_of_sql(const char *state)
{
	return strcmp(state, "Stable") == 0 ? "Stable" :
		strcmp(state, "Rebalancing") == 0 ? "PreparingRebalance" : "Empty";
}

const char *
group_protocol_type_of_sql(bool sql_group)
{
	return sql_group ? "consumer" : "";
}

static void on_join_timer(evutil_socket_t fd, short what, void *arg);
static void on_expire(evutil_socket_t fd, short what, void *arg);

KGroup *
group_get(const char *group_id)
{
	KGroup	   *g = group_find(group_id);

	if (g)
		return g;
	g = mq_malloc0(sizeof(KGroup));
	g->id = mq_strdup(group_id);
	g->state = KG_EMPTY;
	g->join_timer = evtimer_new(kbase, on_join_timer, g);
	g->next = groups;
	groups = g;
	return g;
}

void
member_touch(KMember *m)
{
	struct timeval tv = {m->session_ms / 1000, (m->session_ms % 1000) * 1000};

	evtimer_add(m->expire, &tv);
}

static bool
all_joined(KGroup *g)
{
	for (KMember *m = g->members; m; m = m->next)
		if (m->join_req == NULL)
			return false;
	return true;
}

/* does every member of g support protocol name? */
static bool
all_support(KGroup *g, const char *name)
{
	for (KMember *m = g->members; m; m = m->next)
		if (member_proto(m, name) == NULL)
			return false;
	return true;
}

/* m's vote: the first of its protocols that every member supports */
static const char *
member_vote(KGroup *g, const KMember *m)
{
	for (int i = 0; i < m->nprotos; i++)
		if (all_support(g, m->protos[i].name))
			return m->protos[i].name;
	return NULL;
}

/*
 * Of the protocols every member supports, the one most members list first
 * among them: Kafka's vote (GroupMetadata.selectProtocol); a tie goes to
 * the one the leader (the group's, or its first member) lists first.
 */
char *
group_choose_protocol(KGroup *g)
{
	KMember    *leader = member_find(g, g->leader);
	const char *best = NULL;
	int			best_votes = 0;

	if (leader == NULL)
		leader = g->members;
	for (int i = 0; leader && i < leader->nprotos; i++)
	{
		const char *name = leader->protos[i].name;
		int			votes = 0;

		for (KMember *m = g->members; m; m = m->next)
		{
			const char *vote = member_vote(g, m);

			votes += vote != NULL && strcmp(vote, name) == 0;
		}
		if (votes > best_votes)
		{
			best = name;
			best_votes = votes;
		}
	}
	return best ? mq_strdup(best) : NULL;
}

static void
complete_join(KGroup *g)
{
	KMember    *leader;

	evtimer_del(g->join_timer);
	g->initial_delay = false;
	for (KMember *m = g->members, *next; m; m = next)
	{
		next = m->next;
		if (m->join_req == NULL)
			member_drop(g, m, KERR_UNKNOWN_MEMBER_ID);
	}
	g->generation++;
	free(g->protocol);
	g->protocol = NULL;
	if (g->nmembers == 0)
	{
		g->state = KG_EMPTY;
		group_store_save(g, NULL);
		return;
	}
	leader = member_find(g, g->leader);
	if (leader == NULL)
		leader = g->members;
	free(g->leader);
	g->leader = mq_strdup(leader->id);
	g->protocol = group_choose_protocol(g);
	g->state = KG_COMPLETING;
	mq_log_info("group %s: generation %d with %d members, leader %s", g->id, g->generation,
				g->nmembers, g->leader);
	for (KMember *m = g->members; m; m = m->next)
	{
		KRequest   *req = m->join_req;

		m->join_req = NULL;
		free(m->assignment);
		m->assignment = NULL;
		m->assign_len = 0;
		member_touch(m);
		join_respond(req, g, m, g->protocol ? KERR_NONE : KERR_INCONSISTENT_GROUP_PROTOCOL);
	}
}

static void
maybe_complete_join(KGroup *g)
{
	if (g->state == KG_PREPARING && !g->initial_delay && all_joined(g))
		complete_join(g);
}

/* the longest rebalance timeout of g's members: how long a rebalance waits */
static int32_t
max_rebalance_ms(const KGroup *g)
{
	int32_t		ms = 0;

	for (KMember *m = g->members; m; m = m->next)
		if (m->rebalance_ms > ms)
			ms = m->rebalance_ms;
	return ms;
}

static void
timer_start(KGroup *g, int32_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(g->join_timer, &tv);
}

static void
on_join_timer(evutil_socket_t fd, short what, void *arg)
{
	KGroup	   *g = arg;

	if (g->state != KG_PREPARING)
		return;
	if (g->initial_delay && g->member_added && g->initial_left_ms > 0)
	{
		/* more joined meanwhile: wait as long again for yet more */
		int32_t		ms = g->initial_left_ms < kconfig.group_initial_delay_ms
			? g->initial_left_ms : kconfig.group_initial_delay_ms;

		g->member_added = false;
		g->initial_left_ms -= ms;
		timer_start(g, ms);
		return;
	}
	if (g->initial_delay && !all_joined(g))
	{
		/* members still missing: the rest of the rebalance timeout */
		g->initial_delay = false;
		timer_start(g, max_rebalance_ms(g));
		return;
	}
	complete_join(g);
}

void
group_rebalance(KGroup *g)
{
	int32_t		ms;

	if (g->state == KG_PREPARING)
	{
		maybe_complete_join(g);
		return;
	}
	/* followers waiting for the leader's assignment must rejoin */
	for (KMember *m = g->members; m; m = m->next)
		if (m->sync_req)
		{
			KRequest   *req = m->sync_req;

			m->sync_req = NULL;
			sync_respond(req, NULL, NULL, 0, KERR_REBALANCE_IN_PROGRESS);
		}
	g->initial_delay = g->state == KG_EMPTY && kconfig.group_initial_delay_ms > 0;
	g->member_added = false;
	g->state = KG_PREPARING;
	ms = max_rebalance_ms(g);
	g->initial_left_ms = ms > kconfig.group_initial_delay_ms ? ms - kconfig.group_initial_delay_ms : 0;
	if (g->initial_delay && kconfig.group_initial_delay_ms < ms)
		ms = kconfig.group_initial_delay_ms;
	timer_start(g, ms);
	maybe_complete_join(g);
}

/* drop a member, answering its parked requests with error */
static void
member_drop(KGroup *g, KMember *m, int16_t error)
{
	KMember   **pp = &g->members;

	while (*pp != m)
		pp = &(*pp)->next;
	*pp = m->next;
	g->nmembers--;
	if (m->join_req)
		join_respond(m->join_req, g, m, error);
	if (m->sync_req)
		sync_respond(m->sync_req, NULL, NULL, 0, error);
	member_free(m);
}

void
group_drop_moved(void)
{
	for (KGroup *g = groups; g; g = g->next)
	{
		if (g->nmembers == 0 || cluster_coordinates(g->id))
			continue;
		mq_log_info("group %s: coordinated by broker %d now, dropping its %d members",
					g->id, cluster_group_coordinator(g->id), g->nmembers);
		while (g->members)
			member_drop(g, g->members, KERR_NOT_COORDINATOR);
		evtimer_del(g->join_timer);
		g->state = KG_EMPTY;
		g->initial_delay = false;
	}
}

/* a member left or expired: the others rebalance */
static void
member_gone(KGroup *g, KMember *m)
{
	member_drop(g, m, KERR_UNKNOWN_MEMBER_ID);
	if (g->nmembers == 0)
		complete_join(g);		/* a new, empty generation without a protocol */
	else
		group_rebalance(g);
}

static void
on_expire(evutil_socket_t fd, short what, void *arg)
{
	KMember    *m = arg;

	if (m->join_req || m->sync_req)
	{
		member_touch(m);		/* waiting on us, not gone */
		return;
	}
	mq_log_info("group %s: member %s expired", m->group->id, m->id);
	member_gone(m->group, m);
}

/* a new member with id (taken) of g, not yet joined (group_join.c) */
KMember *
member_add(KGroup *g, char *id, const char *instance_id)
{
	KMember    *m = mq_malloc0(sizeof(KMember));

	m->id = id;
	m->instance_id = instance_id ? mq_strdup(instance_id) : NULL;
	m->group = g;
	m->expire = evtimer_new(kbase, on_expire, m);
	member_link(g, m);
	g->member_added = g->initial_delay;
	return m;
}

/* does a SyncGroup v5+ name the group's protocol type and protocol (Kafka's check)? */
static bool
sync_consistent(const KGroup *g, const KSync *sync)
{
	return (sync->protocol_type == NULL ||
			strcmp(sync->protocol_type, g->protocol_type ? g->protocol_type : "") == 0) &&
		(sync->protocol == NULL || (g->protocol && strcmp(sync->protocol, g->protocol) == 0));
}

void
group_sync(KRequest *req, const KSync *sync, int nassign, const KAssign *assign)
{
	KGroup	   *g = group_find(sync->group_id);
	int16_t		code;
	KMember    *m = member_lookup(g, sync->member_id, sync->instance_id, &code);

	if (group_store_loading())
		code = KERR_COORDINATOR_LOAD_IN_PROGRESS;
	else if (m == NULL)
		;						/* code says why */
	else if (sync->generation != g->generation)
		code = KERR_ILLEGAL_GENERATION;
	else if (!sync_consistent(g, sync))
		code = KERR_INCONSISTENT_GROUP_PROTOCOL;
	else if (g->state == KG_PREPARING)
		code = KERR_REBALANCE_IN_PROGRESS;
	if (code != KERR_NONE)
	{
		sync_respond(req, NULL, NULL, 0, code);
		return;
	}
	member_touch(m);
	if (g->state == KG_STABLE)
	{
		sync_respond(req, g, m->assignment, m->assign_len, KERR_NONE);
		return;
	}
	if (m->sync_req)
		sync_respond(m->sync_req, NULL, NULL, 0, KERR_REBALANCE_IN_PROGRESS);
	m->sync_req = req;
	if (strcmp(m->id, g->leader) != 0)
		return;					/* a follower waits for the leader */
	for (int i = 0; i < nassign; i++)
	{
		KMember    *to = member_find(g, assign[i].member_id);

		if (to == NULL || assign[i].bytes.len < 0)
			continue;
		free(to->assignment);
		to->assignment = mq_malloc(assign[i].bytes.len + 1);
		memcpy(to->assignment, assign[i].bytes.p, assign[i].bytes.len);
		to->assign_len = assign[i].bytes.len;
	}
	g->state = KG_STABLE;
	group_store_save(g, req->role);
	for (KMember *x = g->members; x; x = x->next)
		if (x->sync_req)
		{
			KRequest   *r = x->sync_req;

			x->sync_req = NULL;
			sync_respond(r, g, x->assignment, x->assign_len, KERR_NONE);
		}
}

int16_t
group_heartbeat(const char *group_id, int32_t generation, const char *member_id,
				const char *instance_id)
{
	KGroup	   *g = group_find(group_id);
	int16_t		code;
	KMember    *m = member_lookup(g, member_id, instance_id, &code);

	if (group_store_loading())
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	if (m == NULL)
		return code;
	member_touch(m);
	if (generation != g->generation)
		return KERR_ILLEGAL_GENERATION;
	if (g->state == KG_PREPARING)
		return KERR_REBALANCE_IN_PROGRESS;
	return KERR_NONE;
}

int16_t
group_leave(const char *group_id, const char *member_id, const char *instance_id)
{
	KGroup	   *g = group_find(group_id);
	KMember    *m;
	int16_t		code;

	if (group_store_loading())
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	if (member_id == NULL || member_id[0] == '\0')
		m = member_by_instance(g, instance_id);
	else
		m = member_lookup(g, member_id, instance_id, &code);
	if (m == NULL)
		return member_id && member_id[0] ? code : KERR_UNKNOWN_MEMBER_ID;
	member_gone(g, m);
	return KERR_NONE;
}

int16_t
group_commit_check(const char *group_id, const char *member_id, const char *instance_id,
				   int32_t generation)
{
	KGroup	   *g = group_find(group_id);
	KMember    *m;
	int16_t		code;

	if (group_store_loading())
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	if (generation < 0 && (member_id == NULL || member_id[0] == '\0'))
		return (g == NULL || g->nmembers == 0) ? KERR_NONE : KERR_UNKNOWN_MEMBER_ID;
	if ((m = member_lookup(g, member_id, instance_id, &code)) == NULL)
		return code;
	member_touch(m);
	if (generation != g->generation)
		return KERR_ILLEGAL_GENERATION;
	if (g->state == KG_COMPLETING)
		return KERR_REBALANCE_IN_PROGRESS;
	return KERR_NONE;
}

/*
 * TxnOffsetCommit v3+ (KIP-447): a member is checked as OffsetCommit's,
 * so a zombie whose session expired (its partitions another's now) cannot
 * commit in its transaction.  As Kafka's validateOffsetCommit, a commit
 * without a generation, member or instance (v0-v2, or a producer outside
 * any group) is taken whoever the members are, and a member's commit is
 * not refused while the group completes a rebalance, nor does it count
 * as a heartbeat.
 */
int16_t
group_txn_commit_check(const char *group_id, const char *member_id, const char *instance_id,
					   int32_t generation)
{
	KGroup	   *g = group_find(group_id);
	int16_t		code;

	if (group_store_loading())
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	if (generation < 0 && (member_id == NULL || member_id[0] == '\0') && instance_id == NULL)
		return KERR_NONE;
	if (member_lookup(g, member_id, instance_id, &code) == NULL)
		return code;
	return generation != g->generation ? KERR_ILLEGAL_GENERATION : KERR_NONE;
}

/* DeleteGroups: forget an empty group (one with members stays: false) */
bool
group_forget(const char *group_id)
{
	KGroup	  **pp = &groups;
	KGroup	   *g;

	while (*pp && strcmp((*pp)->id, group_id) != 0)
		pp = &(*pp)->next;
	if ((g = *pp) == NULL || g->nmembers > 0)
		return g == NULL;
	*pp = g->next;
	group_free(g);
	return true;
}

/* a group read back by group_store.c: its timers, then as if it had never gone */
static void
group_adopt(KGroup *g)
{
	g->join_timer = evtimer_new(kbase, on_join_timer, g);
	for (KMember *m = g->members; m; m = m->next)
	{
		m->expire = evtimer_new(kbase, on_expire, m);
		member_touch(m);		/* a session from now: it may not know we were gone */
	}
	g->next = groups;
	groups = g;
}

/*
 * Every second: once a third of the shortest session timeout among the
 * members here has passed since the last touch, touch every group with
 * members (group_store.c), which keeps them live for SQL.
 */
static void
on_touch_timer(evutil_socket_t fd, short what, void *arg)
{
	int32_t		shortest = INT32_MAX;
	int			n = 0;
	const char **ids;
	int64_t		now = mq_now_us();

	for (KGroup *g = groups; g; g = g->next)
	{
		n += g->nmembers > 0;
		for (KMember *m = g->members; m; m = m->next)
			shortest = m->session_ms < shortest ? m->session_ms : shortest;
	}
	if (n == 0 || now - touched_us < (int64_t) shortest * 1000 / 3)
		return;
	ids = mq_malloc(sizeof(char *) * n);
	n = 0;
	for (KGroup *g = groups; g; g = g->next)
		if (g->nmembers > 0)
			ids[n++] = g->id;
	touched_us = now;
	group_store_touch(ids, n);
	free(ids);
}

void
group_start(void)
{
	struct timeval tv = {TOUCH_CHECK_MS / 1000, (TOUCH_CHECK_MS % 1000) * 1000};

	group_store_load(group_adopt);
	touch_timer = event_new(kbase, -1, EV_PERSIST, on_touch_timer, NULL);
	evtimer_add(touch_timer, &tv);
}
