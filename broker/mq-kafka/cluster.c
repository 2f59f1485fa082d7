/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  The cluster's view from the coordinator database (cluster.h), and
 *	  this daemon's registration there.
 *
 * Every --refresh-ms, one job on a one-connection pool to the coordinator
 * (it never blocks the loop but to connect) registers this listener
 * (mq_coord.kafka_register: its broker id and advertised address, and the
 * advisory lock that makes it live, given up while this node's database
 * is unreachable so that its groups move elsewhere), then reads every
 * listener and every replicated partition.  A view that cannot be read
 * leaves the last one in place.
 *
 * A group's coordinator is chosen among the live listeners by rendezvous
 * hashing (the highest hash of group and broker id wins): every daemon
 * with the same view names the same one, and when a listener dies only
 * its own groups move.  Groups this daemon held but no longer coordinates
 * are dropped after each refresh (the on_view callback main.c hands to
 * cluster_start: group_drop_moved), so their members
 * learn NOT_COORDINATOR and look for the new coordinator, as in Kafka
 * when a coordinator moves.
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "kerr.h"
#include "kjob.h"
#include "util.h"

#define REGISTER_SQL "SELECT mq_coord.kafka_register($1, $2, $3, $4)"
#define LISTENERS_SQL \
	"SELECT broker_id, host, port, live, node_conninfo FROM mq_coord.kafka_listeners()"
#define PARTITIONS_SQL \
	"SELECT topic, partition, coalesce(leader, -1), replicas, isr FROM mq_coord.kafka_partitions()"

typedef struct NodePool
{
	int			id;
	char	   *conninfo;
	KPool	   *pool;
} NodePool;

static KPool *coord_pool;
static KRequest refresh_req;
static KJob refresh_job;
static bool refreshing;
static struct event *refresh_ev;

static KBroker *brokers;
static int	nbrokers;
static KPartView *parts;
static int	nparts;
static NodePool node_pools[KMAX_PEERS];
static int	nnode_pools;

bool
cluster_enabled(void)
{
	return kconfig.coordinator != NULL;
}

int
cluster_nbrokers(void)
{
	return nbrokers;
}

const KBroker *
cluster_broker_at(int i)
{
	return &brokers[i];
}

const KBroker *
cluster_broker(int id)
{
	for (int i = 0; i < nbrokers; i++)
		if (brokers[i].id == id)
			return &brokers[i];
	return NULL;
}

static int
part_cmp(const void *a, const void *b)
{
	const KPartView *x = a,
			   *y = b;
	int			c = strcmp(x->topic, y->topic);

	return c != 0 ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

int
cluster_npartitions(void)
{
	return nparts;
}

const KPartView *
cluster_partition_at(int i)
{
	return &parts[i];
}

const KPartView *
cluster_partition(const char *topic, int partition)
{
	KPartView	key = {(char *) topic, partition, 0, NULL, NULL};

	if (nparts == 0)
		return NULL;
	return bsearch(&key, parts, nparts, sizeof(KPartView), part_cmp);
}

bool
cluster_topic_ready(const char *topic, int partitions)
{
	for (int i = 0; i < partitions; i++)
	{
		const KPartView *p = cluster_partition(topic, i);
		const KBroker *b = p && p->leader >= 0 ? cluster_broker(p->leader) : NULL;

		if (b == NULL || !b->live)
			return false;
	}
	return true;
}

/* FNV-1a of the group, mixed with the broker id (splitmix64's finalizer) */
static uint64_t
rendezvous(const char *group, int id)
{
	uint64_t	h = 1469598103934665603ULL;

	for (const unsigned char *c = (const unsigned char *) group; *c; c++)
		h = (h ^ *c) * 1099511628211ULL;
	h ^= (uint64_t) (uint32_t) id * 0x9E3779B97F4A7C15ULL;
	h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
	h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
	return h ^ (h >> 31);
}

int
cluster_group_coordinator(const char *group)
{
	int			best = -1;
	uint64_t	best_h = 0;

	if (!cluster_enabled())
		return kconfig.node_id;
	for (int i = 0; i < nbrokers; i++)
	{
		uint64_t	h;

		if (!brokers[i].live)
			continue;
		h = rendezvous(group, brokers[i].id);
		if (best < 0 || h > best_h)
		{
			best = brokers[i].id;
			best_h = h;
		}
	}
	return best;
}

bool
cluster_coordinates(const char *group)
{
	return cluster_group_coordinator(group) == kconfig.node_id;
}

KPool *
cluster_coord_pool(void)
{
	return coord_pool;
}

KPool *
cluster_node_pool(const KBroker *b)
{
	char		name[64];

	if (b->node_conninfo == NULL)
		return NULL;
	for (int i = 0; i < nnode_pools; i++)
		if (node_pools[i].id == b->id && strcmp(node_pools[i].conninfo, b->node_conninfo) == 0)
			return node_pools[i].pool;
	if (nnode_pools == KMAX_PEERS)
		return NULL;
	snprintf(name, sizeof(name), "the node of broker %d", b->id);
	node_pools[nnode_pools].id = b->id;
	node_pools[nnode_pools].conninfo = mq_strdup(b->node_conninfo);
	node_pools[nnode_pools].pool = pool_new(b->node_conninfo, 2, name, false);
	return node_pools[nnode_pools++].pool;
}

KPool *
cluster_leader_pool(const char *topic, int partition, int16_t *code)
{
	const KPartView *p = cluster_enabled() ? cluster_partition(topic, partition) : NULL;
	const KBroker *b;

	*code = KERR_NONE;
	if (p == NULL || p->leader == kconfig.node_id)
		return pool_local();
	b = p->leader >= 0 ? cluster_broker(p->leader) : NULL;
	if (b == NULL || b->node_conninfo == NULL)
	{
		*code = KERR_COORDINATOR_NOT_AVAILABLE; /* retriable: no leader yet */
		return NULL;
	}
	return cluster_node_pool(b);
}

/* the broker ids of a replica list in text form ("{1,3}"), at most max */
static int
replica_ids(const char *text, int *ids, int max)
{
	int			n = 0;
	char	   *end;

	for (const char *q = text; q && *q && n < max;)
		if (*q >= '0' && *q <= '9')
		{
			ids[n++] = (int) strtol(q, &end, 10);
			q = end;
		}
		else
			q++;
	return n;
}

KPool *
cluster_topic_pool(const char *topic)
{
	const KPartView *p = cluster_enabled() ? cluster_partition(topic, 0) : NULL;
	int			ids[16];
	int			n = p ? replica_ids(p->replicas, ids, 16) : 0;
	KPool	   *pool;
	int16_t		code;

	for (int i = 0; i < n; i++)
		if (ids[i] == kconfig.node_id)
			return pool_local();	/* a replica here */
	if (p == NULL || (pool = cluster_leader_pool(topic, 0, &code)) != NULL)
		return p ? pool : pool_local();
	for (int i = 0; i < n; i++)
	{
		const KBroker *b = cluster_broker(ids[i]);

		if (b && b->node_conninfo)
			return cluster_node_pool(b);
	}
	return pool_local();
}

KPool *
cluster_txn_pool(const char *id)
{
	const KBroker *best = NULL;
	uint64_t	best_h = 0;

	for (int i = 0; cluster_enabled() && i < nbrokers; i++)
	{
		uint64_t	h = rendezvous(id, brokers[i].id);

		if (brokers[i].node_conninfo && (best == NULL || h > best_h))
		{
			best = &brokers[i];
			best_h = h;
		}
	}
	return best == NULL || best->id == kconfig.node_id ? pool_local() : cluster_node_pool(best);
}

static void
free_view(void)
{
	for (int i = 0; i < nbrokers; i++)
	{
		free(brokers[i].host);
		free(brokers[i].node_conninfo);
	}
	for (int i = 0; i < nparts; i++)
	{
		free(parts[i].topic);
		free(parts[i].replicas);
		free(parts[i].isr);
	}
	free(brokers);
	free(parts);
	brokers = NULL;
	parts = NULL;
	nbrokers = nparts = 0;
}

static void
take_view(PGresult *lr, PGresult *pr)
{
	free_view();
	nbrokers = PQntuples(lr);
	brokers = mq_malloc0(sizeof(KBroker) * (nbrokers + 1));
	for (int i = 0; i < nbrokers; i++)
	{
		brokers[i].id = atoi(PQgetvalue(lr, i, 0));
		brokers[i].host = mq_strdup(PQgetvalue(lr, i, 1));
		brokers[i].port = atoi(PQgetvalue(lr, i, 2));
		brokers[i].live = strcmp(PQgetvalue(lr, i, 3), "t") == 0;
		brokers[i].node_conninfo = PQgetisnull(lr, i, 4) ? NULL : mq_strdup(PQgetvalue(lr, i, 4));
	}
	nparts = PQntuples(pr);
	parts = mq_malloc0(sizeof(KPartView) * (nparts + 1));
	for (int i = 0; i < nparts; i++)
	{
		parts[i].topic = mq_strdup(PQgetvalue(pr, i, 0));
		parts[i].partition = atoi(PQgetvalue(pr, i, 1));
		parts[i].leader = atoi(PQgetvalue(pr, i, 2));
		parts[i].replicas = mq_strdup(PQgetvalue(pr, i, 3));
		parts[i].isr = mq_strdup(PQgetvalue(pr, i, 4));
	}
	qsort(parts, nparts, sizeof(KPartView), part_cmp);
}

/* called after each view taken (group.c's group_drop_moved) */
static void (*on_view) (void);

static void
refresh_done(KRequest *req)
{
	KStmt	   *reg = &refresh_job.stmts[0];
	KStmt	   *ls = &refresh_job.stmts[1];
	KStmt	   *ps = &refresh_job.stmts[2];
	static bool was_live = false;
	bool		live;

	if (reg->err.message)
		mq_log_warning("cannot register on the coordinator: %s", reg->err.message);
	live = reg->res && strcmp(PQgetvalue(reg->res, 0, 0), "t") == 0;
	if (live != was_live)
		mq_log_info("%s on the coordinator as broker %d (%s:%d)",
					live ? "live" : "not live", kconfig.node_id,
					kconfig.advertised_host, kconfig.advertised_port);
	was_live = live;
	if (ls->res && ps->res)
	{
		take_view(ls->res, ps->res);
		if (on_view)
			on_view();
	}
	kjob_free(&refresh_job);
	refreshing = false;
}

static void
on_refresh(evutil_socket_t fd, short what, void *arg)
{
	KStmt	   *st;

	if (refreshing)
		return;
	refreshing = true;
	memset(&refresh_req, 0, sizeof(refresh_req));
	st = kjob_add(&refresh_job, REGISTER_SQL, 0);
	kstmt_int(st, MQ_INT4OID, kconfig.node_id);
	kstmt_text(st, MQ_TEXTOID, kconfig.advertised_host);
	kstmt_int(st, MQ_INT4OID, kconfig.advertised_port);
	kstmt_text(st, MQ_BOOLOID, pool_available() ? "t" : "f");
	(void) kjob_add(&refresh_job, LISTENERS_SQL, 0);
	(void) kjob_add(&refresh_job, PARTITIONS_SQL, 0);
	pool_run_on(coord_pool, &refresh_req, &refresh_job, refresh_done);
}

void
cluster_start(void (*view_changed) (void))
{
	struct timeval every = {kconfig.refresh_ms / 1000, (kconfig.refresh_ms % 1000) * 1000};

	if (!cluster_enabled())
		return;
	on_view = view_changed;
	coord_pool = pool_new(kconfig.coordinator, 1, "the coordinator", false);
	refresh_ev = event_new(kbase, -1, EV_PERSIST, on_refresh, NULL);
	event_add(refresh_ev, &every);
	on_refresh(-1, 0, NULL);
}
