/*-------------------------------------------------------------------------
 *
 * h_admin.c
 *	  CreateTopics (v0-v7) and CreatePartitions (v0-v3) on mq.create_topic
 *	  and mq.add_partitions (DeleteTopics: h_topic_delete.c).  Loop thread;
 *	  one job with a statement per topic.
 *
 * What Kafka refuses before its controller, refused here before the
 * database: a name given twice in one request (INVALID_REQUEST, answered
 * once, nothing of it made), a partition count or replication factor of 0
 * or below -1 (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR), a manual
 * replica assignment beside either (INVALID_REQUEST) or that is not
 * partitions 0 .. n-1 with as many distinct brokers each
 * (INVALID_REPLICA_ASSIGNMENT).  On a single node topics are unreplicated:
 * a replication factor above 1 is INVALID_REPLICATION_FACTOR, an
 * assignment may name only this broker; in a cluster manual assignments
 * are refused (a topic is reassigned once made).  Names (with Kafka's
 * collision rule) and configs (a JSON object of strings) are
 * mq.create_topic's to check (INVALID_TOPIC_EXCEPTION, INVALID_CONFIG).
 * validate_only runs the creation in a transaction that is rolled back.
 *
 * In a replicated cluster (--coordinator) a Kafka topic is the cluster's,
 * so CreateTopics makes it on the coordinator (mq_coord.create_topic, with
 * the request's replication factor, -1 its default of 1): the brokers
 * place it on the replicas' nodes and elect leaders.  This node first runs
 * the creation as the client, rolled back, so that the client's rights,
 * the name, partitions and configs are checked as on a single node; only
 * what passes goes to the coordinator, as the daemon's role (a second
 * job, on cluster.c's coordinator pool).  A name the coordinator knows
 * already is TOPIC_ALREADY_EXISTS (MQ002).  CreatePartitions grows a topic the
 * same way (mq_coord.add_partitions).  validate_only runs the same
 * coordinator statements, each rolled back, so that it answers what the
 * real call would (a replication factor above the registered brokers, a
 * name only other nodes hold).  As a Kafka broker does, the answer waits
 * (up to the request's timeout_ms; none with 0) until this daemon's view
 * has a live leader for every partition, checked every 100 ms, so that
 * its Metadata names the topic at once (kafkajs asks right after); a
 * topic still without them at the deadline is REQUEST_TIMED_OUT (it was
 * made).  Other daemons may lag by up to --refresh-ms; clients retry.
 *
 * CreateTopics v5+ answers the partitions and replication factor made
 * (-1 on an error, as Kafka) and no configs (null, which Kafka's schema
 * allows: its admin client then fails only TopicResult.config()); v7+ the
 * topic's id (topic_id.h).  Flexible: CreateTopics v5+, CreatePartitions v2+.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kerr.h"
#include "kfan.h"
#include "pgbinary.h"
#include "topic_id.h"
#include "util.h"

#define COORD_CREATE_SQL \
	"SELECT mq_coord.create_topic($1, $2, jsonb_object($3::text[], $4::text[]))"
/* CreatePartitions' count is the new total, mq_coord.add_partitions adds */
#define COORD_GROW_SQL \
	"SELECT mq_coord.add_partitions($1, $2 - (SELECT count(*) FROM mq_coord.kafka_partitions() k" \
	"                                          WHERE k.topic = $1)::integer)"

#define CREATE_SQL \
	"SELECT mq.create_topic($1, $2, jsonb_object($3::text[], $4::text[])), " TOPIC_ID_SQL("$1")

typedef struct TopicSpec
{
	KSlice		name;
	int32_t		partitions;		/* CreateTopics: as asked */
	int16_t		replication;	/* CreateTopics: as asked */
	int16_t		code;			/* refused before reaching the database */
	const char *message;		/* and why */
	uint8_t		repeat;			/* KREPEAT_*: its name given more than once */
	MqArray		keys;			/* CreateTopics: its configs */
	MqArray		vals;
	KJob	   *job;			/* the job its statement is in */
	int			stmt;			/* the create or grow statement, or -1 */
	int			coord_stmt;		/* in a cluster: its statement in coord, or -1 */
	int32_t		nassign;		/* CreatePartitions: assignments given, -1 none */
} TopicSpec;

typedef struct AdminState
{
	KJob		job;
	KFan		fan;			/* CreatePartitions in a cluster: the checks */
	int32_t		n;
	TopicSpec  *specs;
	KJob		coord;			/* CreateTopics in a cluster: on the coordinator */
	KRequest	coord_req;		/* what the coordinator's pool runs */
	int32_t		timeout_ms;		/* the request's */
	bool		validate_only;	/* the coordinator's statements rolled back */
	int64_t		deadline_us;	/* waiting for the view's leaders until then */
	struct event *timer;
} AdminState;

/* CreatePartitions: assignments that do not name each partition added (NULL) */
static bool
wrong_assignment_count(const TopicSpec *t, const KStmt *st)
{
	return t->nassign >= 0 && st->res && PQntuples(st->res) == 1 && PQgetisnull(st->res, 0, 0);
}

static void
admin_state_free(void *p)
{
	AdminState *s = p;

	kjob_free(&s->job);
	kfan_free(&s->fan);
	kjob_free(&s->coord);
	if (s->timer)
		event_free(s->timer);
	for (int32_t i = 0; i < s->n; i++)
	{
		mq_array_free(&s->specs[i].keys);
		mq_array_free(&s->specs[i].vals);
	}
	free(s->specs);
	free(s);
}

static AdminState *
admin_state(KRequest *req, int32_t n)
{
	AdminState *s = mq_malloc0(sizeof(AdminState));

	req->state = s;
	req->free_state = admin_state_free;
	s->n = n;
	s->specs = mq_malloc0(sizeof(TopicSpec) * (n > 0 ? n : 1));
	for (int32_t i = 0; i < n; i++)
		s->specs[i].job = &s->job;
	return s;
}

/* a refusal before the database: Kafka's code and message */
static void
refuse(TopicSpec *t, int16_t code, const char *message)
{
	if (t->code == KERR_NONE)
	{
		t->code = code;
		t->message = message;
	}
}

/*
 * One partition's replica list of a manual assignment, of *replicas (the
 * first list's) brokers: this one alone on a single node, refused in a
 * cluster (a topic is made, then moved: AlterPartitionReassignments).
 */
static void
read_replica_list(KReader *r, TopicSpec *t, int32_t *replicas)
{
	int32_t		n = kr_array(r, 4);

	/* the first refusal is the answer (refuse) */
	if (cluster_enabled())
		refuse(t, KERR_INVALID_REPLICA_ASSIGNMENT,
			   "manual replica assignments are not supported in a replicated cluster: create the topic, then reassign");
	for (int32_t j = 0; j < n && !r->err; j++)
		if (kr_i32(r) != kconfig.node_id)
			refuse(t, KERR_INVALID_REPLICA_ASSIGNMENT, "unknown broker in the replica assignment");
	kr_tags(r);
	if (n <= 0 || (*replicas >= 0 && n != *replicas))
		refuse(t, KERR_INVALID_REPLICA_ASSIGNMENT, "every partition needs the same number of replicas, at least one");
	else if (n > 1)
		refuse(t, KERR_INVALID_REPLICA_ASSIGNMENT, "duplicate brokers in the replica assignment");
	*replicas = n;
}

/*
 * CreateTopics' manual assignment: partitions 0 .. n-1 once each, as
 * Kafka's controller checks it, and then the topic's partitions and
 * replication factor.
 */
static void
read_assignment(KReader *r, TopicSpec *t, int32_t nassign)
{
	uint8_t    *seen = mq_malloc0(nassign > 0 ? nassign : 1);
	int32_t		replicas = -1;

	if (nassign > 0 && (t->partitions != -1 || t->replication != -1))
		refuse(t, KERR_INVALID_REQUEST, "both a partition count or replication factor and a replica assignment were given");
	for (int32_t i = 0; i < nassign && !r->err; i++)
	{
		int32_t		index = kr_i32(r);

		if (index < 0 || index >= nassign || seen[index])
			refuse(t, KERR_INVALID_REPLICA_ASSIGNMENT, "the assigned partitions must be 0, 1, 2, ... each once");
		else
			seen[index] = 1;
		read_replica_list(r, t, &replicas);
	}
	free(seen);
	if (nassign > 0)
	{
		t->partitions = nassign;
		t->replication = (int16_t) replicas;
	}
}

/* CreateTopics: one topic of the request, and what is refused at once */
static void
read_spec(KReader *r, TopicSpec *t)
{
	int32_t		n;

	t->name = kr_str(r);
	t->partitions = kr_i32(r);
	t->replication = kr_i16(r);
	read_assignment(r, t, kr_array(r, 8));
	t->nassign = -1;			/* CreatePartitions' */
	mq_array_init(&t->keys, MQ_TEXTOID);
	mq_array_init(&t->vals, MQ_TEXTOID);
	n = kr_array(r, 4);
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		KSlice		k = kr_str(r);
		KSlice		v = kr_str(r);

		kr_tags(r);
		mq_array_add(&t->keys, k.p, k.len < 0 ? 0 : k.len);
		mq_array_add(&t->vals, v.len < 0 ? NULL : v.p, v.len < 0 ? 0 : v.len);
	}
	kr_tags(r);
	t->stmt = t->coord_stmt = -1;
	if (t->partitions == 0 || t->partitions < -1)
		refuse(t, KERR_INVALID_PARTITIONS, "the number of partitions must be positive, or -1 for the default");
	if (t->replication == 0 || t->replication < -1)
		refuse(t, KERR_INVALID_REPLICATION_FACTOR, "the replication factor must be positive, or -1 for the default");
	if (t->replication > 1 && !cluster_enabled())
		refuse(t, KERR_INVALID_REPLICATION_FACTOR, "a single mq-kafka is one broker: replication factor 1 at most");
	if (t->partitions < 0)
		t->partitions = kconfig_num_partitions();
}

/* names given twice: INVALID_REQUEST, once (Kafka's "Duplicate topic name.") */
static void
refuse_repeats(AdminState *s)
{
	KSlice	   *names = mq_malloc(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	uint8_t    *repeat = mq_malloc(s->n > 0 ? s->n : 1);

	for (int32_t i = 0; i < s->n; i++)
		names[i] = s->specs[i].name;
	kslice_repeats(names, s->n, repeat);
	for (int32_t i = 0; i < s->n; i++)
	{
		s->specs[i].repeat = repeat[i];
		if (repeat[i] != KREPEAT_NONE)
		{
			s->specs[i].code = KERR_NONE;
			refuse(&s->specs[i], KERR_INVALID_REQUEST, "duplicate topic name");
		}
	}
	free(names);
	free(repeat);
}

/* CreateTopics: the statement of a topic not refused */
static void
add_create(AdminState *s, TopicSpec *t)
{
	KStmt	   *st;
	char	   *name;

	if (cluster_enabled() && t->replication > 0)
	{
		char		rf[8];

		snprintf(rf, sizeof(rf), "%d", t->replication);
		mq_array_add(&t->keys, "replication.factor", 18);
		mq_array_add(&t->vals, rf, strlen(rf));
	}
	name = kslice_dup(t->name);
	st = kjob_add(&s->job, CREATE_SQL, 0);
	t->stmt = s->job.n - 1;
	kstmt_text(st, MQ_TEXTOID, name ? name : "");
	kstmt_int(st, MQ_INT4OID, t->partitions);
	kstmt_array(st, MQ_TEXTARRAYOID, &t->keys);
	kstmt_array(st, MQ_TEXTARRAYOID, &t->vals);
	free(name);
}

/* validate_only: each statement between BEGIN and ROLLBACK, each synced */
static void
wrap_in_rollback(AdminState *s)
{
	kjob_rollback_each(&s->job);
	for (int i = 0; i < s->fan.n; i++)
		kjob_rollback_each(&s->fan.routes[i]->job);
	for (int32_t i = 0; i < s->n; i++)
		if (s->specs[i].stmt >= 0)
			s->specs[i].stmt = 3 * s->specs[i].stmt + 1;
}

/*
 * The per-topic results of CreateTopics and CreatePartitions: an optional
 * throttle time, then name, error code and (optionally) error message of
 * each topic, from its statement's outcome or the code set while parsing.
 */
static void
write_topic_results(KRequest *req, bool throttle, bool messages)
{
	AdminState *s = req->state;
	KWriter    *w = &req->resp;

	bool		create = req->api_key == KAPI_CREATE_TOPICS;

	size_t		count_at;
	int32_t		n = 0;

	if (throttle)
		kw_i32(w, 0);
	count_at = kw_later(w);
	for (int32_t i = 0; i < s->n; i++)
	{
		TopicSpec  *t = &s->specs[i];
		KStmt	   *st = t->stmt >= 0 ? &t->job->stmts[t->stmt] : NULL;
		KStmt	   *cst = t->coord_stmt >= 0 ? &s->coord.stmts[t->coord_stmt] : NULL;
		const char *message = t->message;
		int16_t		code = t->code,
					failed;
		uint8_t		id[16];

		if (t->repeat == KREPEAT_LATER)
			continue;			/* answered at its first */
		n++;

		if (st && kstmt_failed(st, &failed))
		{
			code = failed;
			message = st->err.message;
		}
		else if (st && wrong_assignment_count(t, st))
		{
			code = KERR_INVALID_REPLICA_ASSIGNMENT;
			message = "the assignments must name each partition added, one list each";
		}
		else if (cst && kstmt_failed(cst, &failed))
		{
			code = failed;		/* MQ002: TOPIC_ALREADY_EXISTS */
			message = cst->err.message;
		}
		kw_strn(w, t->name.p, t->name.len);
		if (create && req->api_version >= 7)
		{
			(void) topic_id_from_hex(code == KERR_NONE && st && st->res && PQntuples(st->res) > 0
									 ? PQgetvalue(st->res, 0, 1) : NULL, id);
			kw_uuid(w, id);
		}
		kw_i16(w, code);
		if (messages)
			kw_str(w, message);
		if (create && req->api_version >= 5)
		{
			kw_i32(w, code == KERR_NONE ? t->partitions : -1);
			/* replication factor */
			kw_i16(w, code != KERR_NONE ? -1 : cst && t->replication > 0 ? t->replication : 1);
			kw_array(w, -1);	/* configs: not answered */
		}
		kw_tags(w);
	}
	kw_fill_count(w, count_at, n);
	req_finish(req);
}

static void
create_topics_done(KRequest *req)
{
	write_topic_results(req, req->api_version >= 2, req->api_version >= 1);
}

/* CreateTopics' results, or CreatePartitions' (throttle, messages) */
static void
coord_answer(KRequest *req)
{
	if (req->api_key == KAPI_CREATE_TOPICS)
		create_topics_done(req);
	else
		write_topic_results(req, true, true);
}

/*
 * Whether every topic the coordinator made or grew has its leaders in
 * this daemon's view; at the deadline, those that have not time out.
 */
static bool
view_has_leaders(AdminState *s, bool deadline)
{
	bool		ready = true;
	int16_t		code;

	for (int32_t i = 0; i < s->n; i++)
	{
		TopicSpec  *t = &s->specs[i];
		KStmt	   *cst = t->coord_stmt >= 0 ? &s->coord.stmts[t->coord_stmt] : NULL;
		char	   *name;

		if (cst == NULL || kstmt_failed(cst, &code) || t->code != KERR_NONE)
			continue;
		name = kslice_dup(t->name);
		if (!cluster_topic_ready(name ? name : "", t->partitions))
		{
			ready = false;
			if (deadline)
				t->code = KERR_REQUEST_TIMED_OUT;
		}
		free(name);
	}
	return ready;
}

static void
on_view_wait(evutil_socket_t fd, short what, void *arg)
{
	KRequest   *req = arg;
	AdminState *s = req->state;
	bool		deadline = mq_now_us() >= s->deadline_us;
	struct timeval tv = {0, 100000};

	if (view_has_leaders(s, deadline) || deadline || conn_closed(req->conn))
		coord_answer(req);
	else
		evtimer_add(s->timer, &tv);
}

static void
coord_done(KRequest *sub)
{
	KRequest   *req = sub->state;
	AdminState *s = req->state;

	if (s->timeout_ms <= 0 || s->validate_only)
	{
		coord_answer(req);
		return;
	}
	s->deadline_us = mq_now_us() + (int64_t) s->timeout_ms * 1000;
	s->timer = evtimer_new(kbase, on_view_wait, req);
	on_view_wait(-1, 0, req);
}

/*
 * In a cluster, after this node checked each topic (rolled back): those
 * that passed, created or grown on the coordinator (rolled back too with
 * validate_only), with the checked statement's parameters.
 */
static void
create_checked(KRequest *req)
{
	AdminState *s = req->state;
	bool		create = req->api_key == KAPI_CREATE_TOPICS;
	int16_t		code;

	for (int32_t i = 0; i < s->n; i++)
	{
		TopicSpec  *t = &s->specs[i];
		KStmt	   *st = t->stmt >= 0 ? &t->job->stmts[t->stmt] : NULL;
		KStmt	   *cst;

		if (st == NULL || kstmt_failed(st, &code) || wrong_assignment_count(t, st))
			continue;
		cst = kjob_add(&s->coord, create ? COORD_CREATE_SQL : COORD_GROW_SQL, 0);
		t->coord_stmt = s->coord.n - 1;
		kstmt_text(cst, MQ_TEXTOID, st->values[0]);
		kstmt_text(cst, MQ_INT4OID, st->values[1]);
		if (create)
		{
			kstmt_binary(cst, MQ_TEXTARRAYOID, st->values[2], st->lengths[2]);
			kstmt_binary(cst, MQ_TEXTARRAYOID, st->values[3], st->lengths[3]);
		}
	}
	if (s->validate_only)
	{
		kjob_rollback_each(&s->coord);
		for (int32_t i = 0; i < s->n; i++)
			if (s->specs[i].coord_stmt >= 0)
				s->specs[i].coord_stmt = 3 * s->specs[i].coord_stmt + 1;
	}
	s->coord_req.state = req;	/* no role: the daemon's on the coordinator */
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

void
h_create_topics(KRequest *req)
{
	KReader    *r = &req->body;
	AdminState *s = admin_state(req, kr_array(r, 12));
	bool		validate_only = false;

	for (int32_t i = 0; i < s->n && !r->err; i++)
		read_spec(r, &s->specs[i]);
	s->timeout_ms = kr_i32(r);
	if (req->api_version >= 1)
		validate_only = kr_i8(r) != 0;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	refuse_repeats(s);
	for (int32_t i = 0; i < s->n; i++)
		if (s->specs[i].code == KERR_NONE)
			add_create(s, &s->specs[i]);
	s->validate_only = validate_only;
	if (validate_only || cluster_enabled())
		wrap_in_rollback(s);
	pool_run(req, &s->job, cluster_enabled() ? create_checked : create_topics_done);
}

/* a replicated topic (MQ039 here): ALTER checked, then the coordinator's */
#define ADD_PARTITIONS_SQL \
	"SELECT CASE WHEN $3 >= 0 AND $2 > c.n AND $3 <> $2 - c.n THEN NULL" \
	"            WHEN c.replicated AND mq.has_topic_privilege($1, 'alter') THEN c.n" \
	"            ELSE mq.add_partitions($1, $2 - c.n) END" \
	"  FROM (SELECT (SELECT partitions FROM mq.topics WHERE topic = $1) AS n," \
	"               EXISTS (SELECT 1 FROM mq.replica_status r WHERE r.topic = $1" \
	"                        AND r.role IS DISTINCT FROM 'standalone') AS replicated) c"

static void
create_partitions_done(KRequest *req)
{
	write_topic_results(req, true, true);
}

/* CreatePartitions: one topic of the request */
static void
read_growth(KReader *r, TopicSpec *t)
{
	int32_t		nassign,
				replicas = -1;

	t->name = kr_str(r);
	t->partitions = kr_i32(r);
	nassign = kr_array(r, 4);
	for (int32_t a = 0; a < nassign && !r->err; a++)
		read_replica_list(r, t, &replicas);
	kr_tags(r);
	t->nassign = nassign;
	t->stmt = t->coord_stmt = -1;
}

/* CreatePartitions: the statement of a topic not refused */
static void
add_growth(AdminState *s, TopicSpec *t)
{
	char	   *name = kslice_dup(t->name);
	KStmt	   *st;

	if (cluster_enabled())
		t->job = kfan_job(&s->fan, cluster_topic_pool(name ? name : ""));
	st = kjob_add(t->job, ADD_PARTITIONS_SQL, 0);
	t->stmt = t->job->n - 1;
	kstmt_text(st, MQ_TEXTOID, name ? name : "");
	kstmt_int(st, MQ_INT4OID, t->partitions);
	kstmt_int(st, MQ_INT4OID, t->nassign);
	free(name);
}

/*
 * CreatePartitions (v0-v3): Kafka's count is the new total, mq.add_partitions
 * takes the number to add; a total not above it is INVALID_PARTITIONS
 * (MQ005).  In a cluster, as CreateTopics: checked as the client (rolled
 * back) on a node holding the topic (cluster_topic_pool: clients send it to
 * any broker), then grown on the coordinator (mq_coord.add_partitions).
 */
void
h_create_partitions(KRequest *req)
{
	KReader    *r = &req->body;
	AdminState *s = admin_state(req, kr_array(r, 10));
	bool		validate_only;

	for (int32_t i = 0; i < s->n && !r->err; i++)
		read_growth(r, &s->specs[i]);
	s->timeout_ms = kr_i32(r);
	validate_only = kr_i8(r) != 0;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	refuse_repeats(s);
	for (int32_t i = 0; i < s->n; i++)
		if (s->specs[i].code == KERR_NONE)
			add_growth(s, &s->specs[i]);
	s->validate_only = validate_only;
	if (validate_only || cluster_enabled())
		wrap_in_rollback(s);
	if (cluster_enabled())
		kfan_run(&s->fan, req, create_checked);
	else
		pool_run(req, &s->job, create_partitions_done);
}
