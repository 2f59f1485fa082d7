/*-------------------------------------------------------------------------
 *
 * group_store.c
 *	  Keeping consumer groups' membership in the database
 *	  (mq.kafka_group_state, src/sql/54_kafka_group_state.sql), so that a
 *	  restarted mq-kafka takes its groups up with the same members,
 *	  generation, leader and assignments, and its members carry on
 *	  without a rebalance, as Kafka's coordinator reloads its groups from
 *	  __consumer_offsets.  A stable group is saved after each SyncGroup
 *	  that completes a rebalance and each static member's rejoin; a group
 *	  that empties is forgotten.  At start, until the saved groups are
 *	  read, group requests are answered COORDINATOR_LOAD_IN_PROGRESS,
 *	  which clients retry.  It stands below group.c, which hands it the
 *	  function that adopts each group read.
 *
 * One node only: with --coordinator, a group's coordinator moves between
 * nodes, and what one node saved would be stale when the group came back
 * to it, so nothing is saved or read; only the group's Kafka metadata is
 * appended to the node's own partitions of __consumer_offsets, for Kafka
 * tools (mq.kafka_group_metadata).  A save runs as the role of the
 * request that changed the group (it needs READ on the group); saves are
 * stamped with the time of day in microseconds, and the database keeps
 * the latest whatever order they commit in.  A failed save is logged and
 * costs only a rebalance after a restart.  Each save also carries the
 * group in Kafka's GroupMetadataValue format, which the database appends
 * to __consumer_offsets for Kafka tools (docs/kafka.md) and keeps with the
 * state, where SQL reads the members (mq.group_members): group.c touches
 * the groups it holds with members (mq.kafka_group_touch) within a third
 * of their shortest session timeout, so that SQL counts them live as long
 * as this daemon holds them, and a session timeout longer if it dies.  A
 * LeaveGroup is answered once the saves issued before it have landed
 * (group_store_after_saves): a DeleteGroups or an SQL reset that follows
 * the last member's leave finds the group empty in the database too.
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cluster.h"
#include "kjob.h"
#include "util.h"

#define FORMAT_VERSION 1
#define SAVE_SQL "SELECT mq.kafka_group_save($1, $2, $3, $4)"
#define TOUCH_SQL "SELECT mq.kafka_group_touch($1)"
#define METADATA_SQL "SELECT mq.kafka_group_metadata($1, $2)"
/* Kafka's GroupMetadataValue version, for __consumer_offsets */
#define KAFKA_GROUP_VALUE_VERSION 3
/* 30 minutes: the longest session timeout a member may have */
#define LOAD_SQL "SELECT group_id, state FROM mq.kafka_group_states('30 minutes')"
#define LOAD_RETRY_MS 1000

typedef struct Save
{
	KRequest	req;			/* the pool's handle: no client behind it */
	KJob		job;
	int64_t		seq;			/* in the order saves were issued */
	struct Save *next;			/* in flight */
} Save;

/* a request answered once the saves issued before it have landed */
typedef struct Waiter
{
	KRequest   *req;
	KDoneFn		fn;
	int64_t		seq;			/* the last save issued before it */
	struct Waiter *next;
} Waiter;

static bool loaded;
static bool disabled;			/* the database lacks the functions */
static int64_t last_version;
static void (*adopt_fn) (KGroup *g);
static KRequest load_req;
static KJob load_job;
static struct event *load_timer;
static Save *in_flight;
static int64_t last_seq;
static Waiter *waiters;

bool
group_store_loading(void)
{
	return !loaded;
}

static void
encode_member(KWriter *w, const KMember *m)
{
	kw_str(w, m->id);
	kw_str(w, m->instance_id);
	kw_str(w, m->client_id);
	kw_str(w, m->client_host);
	kw_i32(w, m->session_ms);
	kw_i32(w, m->rebalance_ms);
	kw_i32(w, m->nprotos);
	for (int i = 0; i < m->nprotos; i++)
	{
		kw_str(w, m->protos[i].name);
		kw_bytes(w, m->protos[i].meta, m->protos[i].len);
	}
	kw_bytes(w, m->assignment, m->assignment ? m->assign_len : -1);
}

static void
encode(KWriter *w, const KGroup *g)
{
	kw_i16(w, FORMAT_VERSION);
	kw_i32(w, g->generation);
	kw_str(w, g->protocol_type);
	kw_str(w, g->protocol);
	kw_str(w, g->leader);
	kw_i32(w, g->nmembers);
	for (const KMember *m = g->members; m; m = m->next)
		encode_member(w, m);
}

/* the metadata of the protocol the group chose, as the member sent it */
static void
write_subscription(KWriter *w, const KMember *m, const char *protocol)
{
	for (int i = 0; protocol && i < m->nprotos; i++)
		if (strcmp(m->protos[i].name, protocol) == 0)
		{
			kw_bytes(w, m->protos[i].meta, m->protos[i].len);
			return;
		}
	kw_bytes(w, "", 0);
}

/*
 * The group as Kafka's GroupMetadataValue (version 3), which mq appends
 * to __consumer_offsets (src/consumer_offsets.c): a group without members
 * is Kafka's Empty group (no protocol, no leader, no members).
 */
static void
encode_kafka(KWriter *w, const KGroup *g, bool stable)
{
	kw_i16(w, KAFKA_GROUP_VALUE_VERSION);
	kw_str(w, g->protocol_type ? g->protocol_type : "consumer");
	kw_i32(w, g->generation);
	kw_str(w, stable ? g->protocol : NULL);
	kw_str(w, stable ? g->leader : NULL);
	kw_i64(w, mq_wall_us() / 1000);	/* current state timestamp */
	kw_i32(w, stable ? g->nmembers : 0);
	for (const KMember *m = stable ? g->members : NULL; m; m = m->next)
	{
		kw_str(w, m->id);
		kw_str(w, m->instance_id);
		kw_str(w, m->client_id);
		kw_str(w, m->client_host);
		kw_i32(w, m->rebalance_ms);
		kw_i32(w, m->session_ms);
		write_subscription(w, m, g->protocol);
		kw_bytes(w, m->assignment ? (const void *) m->assignment : "", m->assignment ? m->assign_len : 0);
	}
}

/* answer the waiters whose saves have all landed */
static void
release_waiters(void)
{
	int64_t		oldest = INT64_MAX;
	Waiter	   *ready = NULL;

	for (Save *s = in_flight; s; s = s->next)
		oldest = s->seq < oldest ? s->seq : oldest;
	for (Waiter **pp = &waiters; *pp;)
	{
		Waiter	   *w = *pp;

		if (w->seq < oldest)
		{
			*pp = w->next;
			w->next = ready;
			ready = w;
		}
		else
			pp = &w->next;
	}
	/* answered after the list is settled: an answer may read more requests */
	while (ready)
	{
		Waiter	   *w = ready;

		ready = w->next;
		w->fn(w->req);
		free(w);
	}
}

void
group_store_after_saves(KRequest *req, KDoneFn fn)
{
	Waiter	   *w;

	if (in_flight == NULL)
	{
		fn(req);
		return;
	}
	w = mq_malloc0(sizeof(Waiter));
	w->req = req;
	w->fn = fn;
	w->seq = last_seq;
	w->next = waiters;
	waiters = w;
}

/* a save's or touch's end: what failed is logged (what: the warning), s freed */
static void
job_end(Save *s, const char *what)
{
	int16_t		code;

	if (kstmt_failed(&s->job.stmts[0], &code))
		mq_log_warning("%s: %s", what, s->job.stmts[0].err.message);
	kjob_free(&s->job);
	free(s->req.role);
	free(s);
}

static void
save_done(KRequest *req)
{
	Save	   *s = req->state;

	for (Save **pp = &in_flight; *pp; pp = &(*pp)->next)
		if (*pp == s)
		{
			*pp = s->next;
			break;
		}
	job_end(s, "cannot keep consumer group state");
	release_waiters();
}

/* The statement of a save: the state and Kafka's metadata, or (in a cluster) the metadata only */
static void
add_save(KJob *job, const KGroup *g)
{
	bool		keep = g->state == KG_STABLE && g->nmembers > 0;
	int64_t		now = mq_wall_us();
	KStmt	   *st;
	KWriter		w;

	st = kjob_add(job, cluster_enabled() ? METADATA_SQL : SAVE_SQL, 0);
	kstmt_text(st, MQ_TEXTOID, g->id);
	if (!cluster_enabled())
	{
		last_version = now > last_version ? now : last_version + 1;
		kstmt_int(st, MQ_INT8OID, last_version);
		if (keep)
		{
			kw_init(&w);
			encode(&w, g);
			kstmt_binary(st, MQ_BYTEAOID, w.buf, (int) w.len);
			kw_free(&w);
		}
		else
			kstmt_text(st, MQ_BYTEAOID, NULL);	/* forget it */
	}
	kw_init(&w);
	encode_kafka(&w, g, keep);
	kstmt_binary(st, MQ_BYTEAOID, w.buf, (int) w.len);
	kw_free(&w);
}

void
group_store_save(const KGroup *g, const char *role)
{
	Save	   *s;

	if (!loaded || disabled)
		return;
	s = mq_malloc0(sizeof(Save));
	add_save(&s->job, g);
	s->req.state = s;
	s->req.role = role ? mq_strdup(role) : NULL;
	if (!cluster_enabled())		/* what SQL reads of the group (in a cluster, nothing) */
	{
		s->seq = ++last_seq;
		s->next = in_flight;
		in_flight = s;
	}
	pool_run(&s->req, &s->job, save_done);
}

static void
touch_done(KRequest *req)
{
	job_end(req->state, "cannot mark consumer groups live");
}

void
group_store_touch(const char *const *ids, int n)
{
	Save	   *s;
	MqArray		a;

	if (!loaded || disabled || cluster_enabled() || n == 0)
		return;
	s = mq_malloc0(sizeof(Save));
	mq_array_init(&a, MQ_TEXTOID);
	for (int i = 0; i < n; i++)
		mq_array_add(&a, ids[i], strlen(ids[i]));
	kstmt_array(kjob_add(&s->job, TOUCH_SQL, 0), MQ_TEXTARRAYOID, &a);
	mq_array_free(&a);
	s->req.state = s;
	pool_run(&s->req, &s->job, touch_done);
}

static KMember *
decode_member(KReader *r, KGroup *g)
{
	KMember    *m = mq_malloc0(sizeof(KMember));
	KSlice		a;

	m->id = kslice_dup(kr_str(r));
	m->instance_id = kslice_dup(kr_str(r));
	m->client_id = kslice_dup(kr_str(r));
	m->client_host = kslice_dup(kr_str(r));
	m->session_ms = kr_i32(r);
	m->rebalance_ms = kr_i32(r);
	m->nprotos = kr_array(r, 6);
	if (m->nprotos < 0)
		m->nprotos = 0;
	m->protos = mq_malloc0(sizeof(KProto) * (m->nprotos > 0 ? m->nprotos : 1));
	for (int i = 0; i < m->nprotos; i++)
	{
		KSlice		meta;

		m->protos[i].name = kslice_dup(kr_str(r));
		meta = kr_bytes(r);
		m->protos[i].len = meta.len > 0 ? meta.len : 0;
		m->protos[i].meta = mq_malloc(m->protos[i].len + 1);
		if (meta.len > 0)
			memcpy(m->protos[i].meta, meta.p, meta.len);
	}
	a = kr_bytes(r);
	if (a.len >= 0)
	{
		m->assignment = mq_malloc(a.len + 1);
		memcpy(m->assignment, a.p, a.len);
		m->assign_len = a.len;
	}
	m->group = g;
	return m;
}

static bool
member_sane(const KMember *m)
{
	if (m->id == NULL || m->client_id == NULL || m->client_host == NULL ||
		m->session_ms <= 0 || m->rebalance_ms < 0)
		return false;
	for (int i = 0; i < m->nprotos; i++)
		if (m->protos[i].name == NULL)
			return false;
	return true;
}

/* a group from its saved state; NULL if it does not decode whole */
static KGroup *
decode(const char *id, const uint8_t *p, int len)
{
	KReader		r;
	KGroup	   *g = mq_malloc0(sizeof(KGroup));
	int32_t		n;
	bool		ok;

	kr_init(&r, p, len);
	ok = kr_i16(&r) == FORMAT_VERSION;
	g->id = mq_strdup(id);
	g->state = KG_STABLE;
	g->generation = kr_i32(&r);
	g->protocol_type = kslice_dup(kr_str(&r));
	g->protocol = kslice_dup(kr_str(&r));
	g->leader = kslice_dup(kr_str(&r));
	n = kr_array(&r, 40);
	for (int32_t i = 0; ok && i < n && !r.err; i++)
	{
		KMember    *m = decode_member(&r, g);

		member_link(g, m);
		ok = member_sane(m);
	}
	if (ok && !r.err && kr_left(&r) == 0 && g->nmembers > 0 && g->leader && g->protocol)
		return g;
	mq_log_warning("consumer group %s: saved state unreadable, not taken up", id);
	group_free(g);
	return NULL;
}

static void load(void);

static void
on_load_retry(evutil_socket_t fd, short what, void *arg)
{
	load();
}

static void
load_done(KRequest *req)
{
	KStmt	   *st = &load_job.stmts[0];
	int16_t		code;
	int			n = 0;

	if (kstmt_failed(st, &code))
	{
		struct timeval tv = {LOAD_RETRY_MS / 1000, (LOAD_RETRY_MS % 1000) * 1000};

		if (st->err.sqlstate[0] && strcmp(st->err.sqlstate, "42883") == 0)
		{
			/* an mq older than mq-kafka: groups are not kept */
			mq_log_warning("consumer groups are not kept across restarts: %s", st->err.message);
			disabled = loaded = true;
		}
		else
			evtimer_add(load_timer, &tv);	/* the database is down: again */
		kjob_free(&load_job);
		return;
	}
	for (int row = 0; row < PQntuples(st->res); row++)
	{
		KGroup	   *g = decode(PQgetvalue(st->res, row, 0),
							   (const uint8_t *) PQgetvalue(st->res, row, 1),
							   PQgetlength(st->res, row, 1));

		if (g)
		{
			adopt_fn(g);
			n++;
		}
	}
	if (n > 0)
		mq_log_info("took up %d consumer group%s kept before the restart", n, n == 1 ? "" : "s");
	kjob_free(&load_job);
	loaded = true;
}

static void
load(void)
{
	memset(&load_req, 0, sizeof(load_req));
	(void) kjob_add(&load_job, LOAD_SQL, 1);
	pool_run(&load_req, &load_job, load_done);
}

void
group_store_load(void (*adopt) (KGroup *g))
{
	if (cluster_enabled())
	{
		loaded = true;
		return;
	}
	adopt_fn = adopt;
	load_timer = evtimer_new(kbase, on_load_retry, NULL);
	load();
}
