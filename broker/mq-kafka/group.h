/*-------------------------------------------------------------------------
 *
 * group.h
 *	  Kafka's classic group coordinator, in memory on the loop thread:
 *	  groups move Empty -> PreparingRebalance -> CompletingRebalance ->
 *	  Stable as members join, sync, heartbeat, leave or expire.
 *
 * The clients compute assignments: the leader sends them in SyncGroup and
 * the coordinator relays each member's opaque bytes.  JoinGroup requests
 * are parked until every known member has rejoined (or the rebalance
 * timeout passes, and the missing members are dropped), and a new group
 * waits group_initial_delay_ms for more members first, and that again
 * while more keep joining (Kafka's InitialDelayedJoin); followers'
 * SyncGroup requests are parked until the leader's arrives.  Offsets are
 * not kept here: they live in mq (h_offsets.c).  State is lost on restart,
 * and clients then rejoin (UNKNOWN_MEMBER_ID).  Loop thread only, so no
 * locking.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_GROUP_H
#define MQK_GROUP_H

#include "mqkafka.h"

typedef struct KProto
{
	char	   *name;
	uint8_t    *meta;
	int32_t		len;
} KProto;

typedef struct KGroup KGroup;

typedef struct KMember
{
	char	   *id;
	char	   *instance_id;	/* static membership, or NULL */
	char	   *client_id;
	char	   *client_host;
	int32_t		session_ms;
	int32_t		rebalance_ms;
	int			nprotos;
	KProto	   *protos;
	KRequest   *join_req;		/* parked JoinGroup */
	KRequest   *sync_req;		/* parked SyncGroup */
	uint8_t    *assignment;
	int32_t		assign_len;
	struct event *expire;
	KGroup	   *group;
	struct KMember *next;
} KMember;

/* a member id handed out with MEMBER_ID_REQUIRED, not joined yet (KIP-394) */
typedef struct KPending
{
	char	   *id;
	int64_t		until_us;		/* forgotten after its session timeout */
	struct KPending *next;
} KPending;

typedef enum KGroupState
{
	KG_EMPTY, KG_PREPARING, KG_COMPLETING, KG_STABLE
} KGroupState;

struct KGroup
{
	char	   *id;
	KGroupState state;
	int32_t		generation;
	char	   *protocol_type;
	char	   *protocol;
	char	   *leader;
	KMember    *members;
	int			nmembers;
	KPending   *pending;		/* member ids to come back with (KIP-394) */
	bool		initial_delay;	/* a new group waiting for more members */
	bool		member_added;	/* one joined during this wait: wait again */
	int32_t		initial_left_ms;	/* of the rebalance timeout, for more waits */
	struct event *join_timer;
	struct KGroup *next;
};

/* What a JoinGroup asks, decoded by h_group.c; the group takes protos. */
typedef struct KJoin
{
	char	   *group_id;
	int32_t		session_ms;
	int32_t		rebalance_ms;
	char	   *member_id;
	char	   *instance_id;
	char	   *protocol_type;
	int			nprotos;
	KProto	   *protos;
	char	   *replaced_id;	/* a static member taken over: its old id */
} KJoin;

typedef struct KAssign
{
	char	   *member_id;
	KSlice		bytes;
} KAssign;

extern void group_join(KRequest *req, KJoin *j);
/* What a SyncGroup says of its member; protocol type and name (v5+) or NULL */
typedef struct KSync
{
	const char *group_id;
	int32_t		generation;
	const char *member_id;
	const char *instance_id;
	const char *protocol_type;
	const char *protocol;
} KSync;

extern void group_sync(KRequest *req, const KSync *sync, int nassign, const KAssign *assign);
extern int16_t group_heartbeat(const char *group_id, int32_t generation,
							   const char *member_id, const char *instance_id);
extern int16_t group_leave(const char *group_id, const char *member_id,
						   const char *instance_id);
/* may this member commit offsets for the group now? */
extern int16_t group_commit_check(const char *group_id, const char *member_id,
								  const char *instance_id, int32_t generation);
/* may this member commit offsets in a transaction (TxnOffsetCommit v3+)? */
extern int16_t group_txn_commit_check(const char *group_id, const char *member_id,
									  const char *instance_id, int32_t generation);
extern KGroup *group_find(const char *group_id);
/* drop the members of groups another daemon coordinates now (after each
 * cluster view: main.c hands it to cluster_start) */
extern void group_drop_moved(void);
extern KGroup *group_list(void);
/* DeleteGroups: forget an empty group; false if it has members */
extern bool group_forget(const char *group_id);
extern const char *group_state_name(KGroupState s);
/* mq.groups' state (Empty, Rebalancing, Stable) as Kafka names it */
extern const char *group_state_of_sql(const char *state);
/* its protocol type: an SQL group's is "consumer", one that only has
 * committed offsets has none, as in Kafka */
extern const char *group_protocol_type_of_sql(bool sql_group);

/* group_member.c: the member list */
extern void free_protos(int n, KProto *p);
extern KMember *member_find(KGroup *g, const char *member_id);
/* add m at the end of g's members, which are in the order they joined */
extern void member_link(KGroup *g, KMember *m);
extern KMember *member_by_instance(KGroup *g, const char *instance_id);
/* the member a request speaks for; NULL: *code is UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID */
extern KMember *member_lookup(KGroup *g, const char *member_id, const char *instance_id,
							  int16_t *code);
extern bool member_same_protos(const KMember *m, const KJoin *j);
/* a new member id (malloc'd) for the client of req */
extern char *member_new_id(const KRequest *req);
/* KIP-394's pending member ids: add one (taken), or take one back */
extern void member_pending_add(KGroup *g, char *id, int32_t session_ms);
extern bool member_pending_take(KGroup *g, const char *id);
extern bool member_pending_any(KGroup *g);
extern void member_free(KMember *m);
extern void group_free(KGroup *g);

/* group.c: read the groups kept before a restart (group_store.c) */
extern void group_start(void);
/* group_cleanup.c: drop the Empty groups the database holds nothing of
 * (after DeleteTopics; every 10 minutes once group_cleanup_start, which
 * runs group_start first, ran) */
extern void group_cleanup(void);
extern void group_cleanup_start(void);
/* group.c, for group_join.c: a group (created empty), a member added to
 * it (id taken), a member's session restarted, a rebalance started */
extern KGroup *group_get(const char *group_id);
extern KMember *member_add(KGroup *g, char *id, const char *instance_id);
extern void member_touch(KMember *m);
extern void group_rebalance(KGroup *g);
/* the protocol a generation completed now would choose (malloc'd, or NULL) */
extern char *group_choose_protocol(KGroup *g);

/* group_store.c: keeping groups across restarts */
extern bool group_store_loading(void);
/* save a stable group, or forget one that emptied, as role */
extern void group_store_save(const KGroup *g, const char *role);
/* fn(req) once the saves issued so far have landed (at once if none) */
extern void group_store_after_saves(KRequest *req, KDoneFn fn);
/* these groups (ids) still have their members here */
extern void group_store_touch(const char *const *ids, int n);
extern void group_store_load(void (*adopt) (KGroup *g));

/* group_reply.c: a member's metadata for a protocol, and the answers */
extern const KProto *member_proto(const KMember *m, const char *name);
extern void join_respond(KRequest *req, KGroup *g, KMember *m, int16_t error);
/* the answer to a static member that rejoined a stable group (KIP-345);
 * old_id: its id before */
extern void join_respond_static(KRequest *req, KGroup *g, KMember *m, const char *old_id);
/* an error answer that hands the client a member id (MEMBER_ID_REQUIRED) */
extern void join_respond_id(KRequest *req, const char *member_id, int16_t error);
/* g: the group whose protocol a SyncGroup v5+ answer names; NULL on errors */
extern void sync_respond(KRequest *req, const KGroup *g, const uint8_t *assign, int32_t len,
						 int16_t error);

#endif							/* MQK_GROUP_H */
