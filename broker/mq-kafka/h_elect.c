/*-------------------------------------------------------------------------
 *
 * h_elect.c
 *	  ElectLeaders (v0-v2; KIP-183, KIP-460): preferred leader elections
 *	  on the coordinator's mq_coord.elect_preferred (docs/replication.md,
 *	  "Preferred leaders").  Loop thread; a job on this node as the client
 *	  (its rights, the partitions it sees), then, in a cluster, one on the
 *	  coordinator as the daemon, then a wait on this daemon's view.
 *
 * As in Kafka it needs ALTER on the cluster: without, every partition
 * asked (and, v1+, the request) is CLUSTER_AUTHORIZATION_FAILED; an
 * election type other than preferred (0) and unclean (1) is
 * INVALID_REQUEST.  A preferred election of a partition its preferred
 * replica (the first) leads is ELECTION_NOT_NEEDED, one whose preferred
 * replica is out of the ISR or not live PREFERRED_LEADER_NOT_AVAILABLE;
 * otherwise the leader hands over at its next tick, and the answer waits
 * (up to timeout_ms, checked every 100 ms) until this daemon's view names
 * the preferred replica leader, REQUEST_TIMED_OUT if it does not by then.
 * An unclean election of a partition the coordinator names a leader for
 * is ELECTION_NOT_NEEDED; one without is ELIGIBLE_LEADERS_NOT_AVAILABLE:
 * mq elects out of the ISR only for a topic with
 * unclean.leader.election.enable.  Null topic_partitions means every
 * partition the coordinator knows, and then, as Kafka's controller
 * answers, only those where an election was needed are listed.  An unknown partition is
 * UNKNOWN_TOPIC_OR_PARTITION.  The answer lists each partition once, by
 * topic, as Kafka's set of partitions does, however often it was asked.
 *
 * Without --coordinator this daemon leads every partition it has, each
 * its own only replica: every election is ELECTION_NOT_NEEDED.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kacl.h"
#include "kerr.h"
#include "util.h"

/* as the client: the partitions it sees of the topics asked ($1) */
#define PARTITIONS_SQL "SELECT topic, partition FROM mq.partitions WHERE topic = ANY ($1)"
/*
 * On the coordinator, as the daemon: the partitions asked ($1 topics and
 * $2 partitions side by side), or (null) every partition, with the
 * outcome of a preferred election (asked for here,
 * mq_coord.elect_preferred) or of an unclean one (none run here)
 */
#define COORD_PARTITIONS(outcome) \
	"SELECT topic, partition, " outcome " FROM mq_coord.kafka_partitions()" \
	" WHERE $1::text[] IS NULL OR (topic, partition) IN (SELECT * FROM unnest($1::text[], $2::int4[]))"
#define PREFERRED_SQL COORD_PARTITIONS("mq_coord.elect_preferred(topic, partition, $3)")
#define UNCLEAN_SQL COORD_PARTITIONS("CASE WHEN leader IS NULL THEN 'no_leader' ELSE 'not_needed' END")

typedef struct EPart
{
	char	   *topic;
	int32_t		partition;
	int16_t		code;
	const char *message;
	bool		waiting;		/* asked for: until the view names it */
} EPart;

typedef struct ElectState
{
	KJob		job;			/* on this node, as the client */
	KJob		coord;			/* in a cluster: on the coordinator */
	KRequest	coord_req;
	int8_t		type;			/* 0 preferred, 1 unclean */
	bool		all;			/* null topic_partitions */
	int32_t		timeout_ms;
	int64_t		deadline_us;
	struct event *timer;
	int16_t		code;			/* the whole request's */
	int32_t		n;
	int32_t		cap;
	EPart	   *parts;
} ElectState;

static void
elect_state_free(void *p)
{
	ElectState *s = p;

	for (int32_t i = 0; i < s->n; i++)
		free(s->parts[i].topic);
	free(s->parts);
	if (s->timer)
		event_free(s->timer);
	kjob_free(&s->job);
	kjob_free(&s->coord);
	free(s);
}

static EPart *
add_part(ElectState *s, const char *topic, int32_t partition)
{
	EPart	   *p;

	if (s->n == s->cap)
	{
		s->cap = s->cap ? 2 * s->cap : 16;
		s->parts = mq_realloc(s->parts, sizeof(EPart) * s->cap);
	}
	p = &s->parts[s->n++];
	memset(p, 0, sizeof(EPart));
	p->topic = mq_strdup(topic);
	p->partition = partition;
	p->code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
	return p;
}

static int
part_cmp(const void *a, const void *b)
{
	const EPart *x = a,
			   *y = b;
	int			c = strcmp(x->topic, y->topic);

	return c != 0 ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* sorted by topic and partition, each once: Kafka's set of partitions */
static void
sort_parts(ElectState *s)
{
	int32_t		n = 0;

	if (s->n > 0)
		qsort(s->parts, s->n, sizeof(EPart), part_cmp);
	for (int32_t i = 0; i < s->n; i++)
	{
		if (n > 0 && part_cmp(&s->parts[n - 1], &s->parts[i]) == 0)
			free(s->parts[i].topic);
		else
			s->parts[n++] = s->parts[i];
	}
	s->n = n;
}

/* the request: each partition asked for (none: all), the timeout */
static bool
read_request(KRequest *req, ElectState *s)
{
	KReader    *r = &req->body;
	int32_t		ntopics;

	s->type = req->api_version >= 1 ? kr_i8(r) : 0;
	ntopics = kr_array(r, 2);
	s->all = ntopics < 0;
	for (int32_t t = 0; t < ntopics && !r->err; t++)
	{
		char	   *topic = kslice_dup(kr_str(r));
		int32_t		n = kr_array(r, 4);

		for (int32_t i = 0; i < n && !r->err; i++)
			add_part(s, topic ? topic : "", kr_i32(r));
		kr_tags(r);
		free(topic);
		r->err |= topic == NULL;
	}
	s->timeout_ms = kr_i32(r);
	sort_parts(s);
	return !r->err;
}

/* is part p listed?  With every partition asked, only elections needed */
static bool
listed(const ElectState *s, const EPart *p)
{
	return !(s->all && p->code == KERR_ELECTION_NOT_NEEDED && s->code == KERR_NONE);
}

/* the partitions from i on of parts[i]'s topic; the next topic's first */
static int32_t
write_topic(KWriter *w, const ElectState *s, int32_t i)
{
	size_t		parts_at;
	int32_t		j,
				n = 0;

	for (j = i; j < s->n && strcmp(s->parts[j].topic, s->parts[i].topic) == 0; j++)
		n += listed(s, &s->parts[j]);
	if (n == 0)
		return j;
	kw_str(w, s->parts[i].topic);
	parts_at = kw_later(w);
	for (n = 0; i < j; i++)
	{
		const EPart *p = &s->parts[i];

		if (!listed(s, p))
			continue;
		kw_i32(w, p->partition);
		kw_i16(w, s->code != KERR_NONE ? s->code : p->code);
		kw_str(w, s->code == KERR_NONE ? p->message : NULL);
		kw_tags(w);
		n++;
	}
	kw_fill_count(w, parts_at, n);
	kw_tags(w);
	return j;
}

static void
elect_answer(KRequest *req)
{
	ElectState *s = req->state;
	KWriter    *w = &req->resp;
	size_t		topics_at;
	int32_t		ntopics = 0;

	kw_i32(w, 0);				/* throttle_time_ms */
	if (req->api_version >= 1)
		kw_i16(w, s->code);
	topics_at = kw_later(w);
	for (int32_t i = 0; i < s->n;)
	{
		size_t		before = w->len;

		i = write_topic(w, s, i);
		ntopics += w->len != before;
	}
	kw_fill_count(w, topics_at, ntopics);
	req_finish(req);
}

/* this daemon's view names p's preferred replica (its first) leader */
static bool
preferred_leads(const EPart *p)
{
	const KPartView *v = cluster_partition(p->topic, p->partition);

	return v && v->leader >= 0 && v->replicas && v->replicas[0] == '{' &&
		atoi(v->replicas + 1) == v->leader;
}

/* until every election asked for shows in the view, or the deadline */
static void
on_view_wait(evutil_socket_t fd, short what, void *arg)
{
	KRequest   *req = arg;
	ElectState *s = req->state;
	bool		deadline = mq_now_us() >= s->deadline_us;
	bool		waiting = false;
	struct timeval tv = {0, 100000};

	for (int32_t i = 0; i < s->n; i++)
	{
		EPart	   *p = &s->parts[i];

		if (!p->waiting)
			continue;
		if (preferred_leads(p))
			p->waiting = false;
		else if (deadline)
		{
			p->waiting = false;
			p->code = KERR_REQUEST_TIMED_OUT;
			p->message = "the preferred replica did not take the leadership within timeout_ms";
		}
		waiting |= p->waiting;
	}
	if (!waiting || conn_closed(req->conn))
		elect_answer(req);
	else
		evtimer_add(s->timer, &tv);
}

/* a coordinator's outcome for p (see COORD_PARTITIONS) */
static void
apply_outcome(EPart *p, const char *out)
{
	p->waiting = strcmp(out, "requested") == 0;
	if (p->waiting)
		p->code = KERR_NONE;
	else if (strcmp(out, "not_needed") == 0)
		p->code = KERR_ELECTION_NOT_NEEDED;
	else if (strcmp(out, "not_available") == 0)
		p->code = KERR_PREFERRED_LEADER_NOT_AVAILABLE;
	else
	{
		p->code = KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
		p->message = "mq elects a leader out of the ISR only for a topic with unclean.leader.election.enable";
	}
}

/* part (topic, partition) of those asked, or with all asked a new one */
static EPart *
find_part(ElectState *s, const char *topic, int32_t partition)
{
	EPart		key = {.topic = (char *) topic, .partition = partition};

	if (s->all)
		return add_part(s, topic, partition);
	return bsearch(&key, s->parts, s->n, sizeof(EPart), part_cmp);
}

/* the coordinator's outcomes, then the wait; a partition it lacks keeps this node's */
static void
coord_done(KRequest *sub)
{
	KRequest   *req = sub->state;
	ElectState *s = req->state;
	const KStmt *st = &s->coord.stmts[0];
	int16_t		code;

	if (kstmt_failed(st, &code))
	{
		s->code = code;
		elect_answer(req);
		return;
	}
	for (int r = 0; r < PQntuples(st->res); r++)
	{
		EPart	   *p = find_part(s, PQgetvalue(st->res, r, 0), atoi(PQgetvalue(st->res, r, 1)));

		if (p)
			apply_outcome(p, PQgetvalue(st->res, r, 2));
	}
	s->deadline_us = mq_now_us() + (int64_t) s->timeout_ms * 1000;
	s->timer = evtimer_new(kbase, on_view_wait, req);
	on_view_wait(-1, 0, req);
}

/* the coordinator's statement: the partitions asked, or every one */
static void
add_coord_stmt(ElectState *s)
{
	KStmt	   *st = kjob_add(&s->coord, s->type == 0 ? PREFERRED_SQL : UNCLEAN_SQL, 0);
	MqArray		topics,
				parts;

	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int32_t i = 0; i < s->n; i++)
	{
		mq_array_add(&topics, s->parts[i].topic, strlen(s->parts[i].topic));
		mq_array_add_int32(&parts, s->parts[i].partition);
	}
	if (s->all)
	{
		kstmt_text(st, MQ_TEXTARRAYOID, NULL);
		kstmt_text(st, MQ_INT4ARRAYOID, NULL);
	}
	else
	{
		kstmt_array(st, MQ_TEXTARRAYOID, &topics);
		kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	}
	if (s->type == 0)
		kstmt_int(st, MQ_INT4OID, s->timeout_ms);
	mq_array_free(&topics);
	mq_array_free(&parts);
}

/* the client's rights and partitions, then the elections on the coordinator */
static void
elect_authorized(KRequest *req)
{
	ElectState *s = req->state;
	const KStmt *st;
	int16_t		code;

	s->code = kacl_cluster_code(&s->job.stmts[0]);
	if (s->code != KERR_NONE)
	{
		elect_answer(req);
		return;
	}
	/* a partition asked that this node has: no election needed, unless the coordinator says */
	st = s->all ? NULL : &s->job.stmts[1];
	for (int32_t i = 0; st && !kstmt_failed(st, &code) && i < PQntuples(st->res); i++)
	{
		EPart	   *p = find_part(s, PQgetvalue(st->res, i, 0), atoi(PQgetvalue(st->res, i, 1)));

		if (p)
			p->code = KERR_ELECTION_NOT_NEEDED;
	}
	if (!cluster_enabled() || (s->n == 0 && !s->all))
	{
		elect_answer(req);
		return;
	}
	add_coord_stmt(s);
	s->coord_req.state = req;
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

void
h_elect_leaders(KRequest *req)
{
	ElectState *s = mq_malloc0(sizeof(ElectState));
	MqArray		topics;
	KStmt	   *st;

	req->state = s;
	req->free_state = elect_state_free;
	if (!read_request(req, s))
	{
		req_abort(req);
		return;
	}
	if (s->type != 0 && s->type != 1)
	{
		s->code = KERR_INVALID_REQUEST;
		elect_answer(req);
		return;
	}
	kacl_add_cluster_check(&s->job, "alter");
	if (!s->all)
	{
		st = kjob_add(&s->job, PARTITIONS_SQL, 0);
		mq_array_init(&topics, MQ_TEXTOID);
		for (int32_t i = 0; i < s->n; i++)
			mq_array_add(&topics, s->parts[i].topic, strlen(s->parts[i].topic));
		kstmt_array(st, MQ_TEXTARRAYOID, &topics);
		mq_array_free(&topics);
	}
	pool_run(req, &s->job, elect_authorized);
}
