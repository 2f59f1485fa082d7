/*-------------------------------------------------------------------------
 *
 * h_reassign.c
 *	  AlterPartitionReassignments (v0) and ListPartitionReassignments (v0),
 *	  KIP-455's replica moves, on the coordinator's mq_coord.reassign and
 *	  mq_coord.partition (docs/replication.md, "Moving replicas").  Loop
 *	  thread; a job on this node as the client (its rights), then, in a
 *	  cluster, one on the coordinator as the daemon.
 *
 * As in Kafka, Alter needs ALTER on the cluster and List DESCRIBE on it
 * (mq.grant(..., 'cluster', 'kafka-cluster')); a client without is
 * answered CLUSTER_AUTHORIZATION_FAILED for the whole request.  Alter
 * answers once each move has started: the replicas become the target
 * followed by those leaving, and the brokers complete it as mqctl
 * reassign's moves.  Null replicas cancel a move (the partition moves back
 * to the replicas it had), or are NO_REASSIGNMENT_IN_PROGRESS when none
 * is; a partition moving elsewhere is REASSIGNMENT_IN_PROGRESS (mq does
 * not retarget a move in flight, as Kafka does); an unknown partition
 * UNKNOWN_TOPIC_OR_PARTITION; an empty, duplicated or too short list, or
 * a broker the coordinator does not know, INVALID_REPLICA_ASSIGNMENT.
 * List names each partition moving (all, or those asked for) with its
 * replicas, the ones being added and the ones leaving.
 *
 * Without --coordinator this daemon is the only broker and nothing ever
 * moves: List answers no partitions, and Alter takes only the replica set
 * of this broker alone (nothing to do); any other is
 * INVALID_REPLICA_ASSIGNMENT.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kacl.h"
#include "kerr.h"
#include "util.h"

/* single daemon: does the partition exist (as the client sees topics)? */
#define EXISTS_SQL \
	"SELECT count(*) FROM mq.partitions WHERE topic = $1 AND partition = $2"
#define MOVE_SQL "SELECT mq_coord.reassign($1, $2, $3)"
/* null replicas: cancel the move in progress, if any (no row: unknown) */
#define CANCEL_SQL \
	"SELECT CASE WHEN p.target_replicas IS NOT NULL" \
	"            THEN mq_coord.reassign($1, $2, p.original_replicas) IS NOT NULL END" \
	"  FROM mq_coord.partition p WHERE p.topic = $1 AND p.partition = $2"
#define MOVING_SQL \
	"SELECT p.topic, p.partition, p.replicas," \
	"       ARRAY(SELECT r FROM unnest(p.target_replicas) r WHERE NOT r = ANY (p.original_replicas))," \
	"       ARRAY(SELECT r FROM unnest(p.original_replicas) r WHERE NOT r = ANY (p.target_replicas))" \
	"  FROM mq_coord.partition p WHERE p.target_replicas IS NOT NULL ORDER BY 1, 2"

typedef struct RPart
{
	int32_t		index;
	int32_t		nreplicas;		/* -1: null (cancel) */
	int32_t    *replicas;
	int			stmt;			/* its statement, or -1 */
} RPart;

typedef struct RTopic
{
	KSlice		name;
	int32_t		n;
	RPart	   *parts;
} RTopic;

typedef struct ReassignState
{
	KJob		job;			/* on this node, as the client */
	KJob		coord;			/* in a cluster: on the coordinator */
	KRequest	coord_req;
	int32_t		ntopics;		/* -1: List of every partition */
	RTopic	   *topics;
	int16_t		code;			/* the whole request's */
} ReassignState;

static void
reassign_state_free(void *p)
{
	ReassignState *s = p;

	for (int32_t t = 0; t < s->ntopics; t++)
	{
		for (int32_t i = 0; i < s->topics[t].n; i++)
			free(s->topics[t].parts[i].replicas);
		free(s->topics[t].parts);
	}
	free(s->topics);
	kjob_free(&s->job);
	kjob_free(&s->coord);
	free(s);
}

/* the request's topics and partitions (Alter: with replicas) */
static ReassignState *
read_topics(KRequest *req, bool alter)
{
	KReader    *r = &req->body;
	ReassignState *s = mq_malloc0(sizeof(ReassignState));

	req->state = s;
	req->free_state = reassign_state_free;
	(void) kr_i32(r);			/* timeout_ms: moves start at once */
	s->ntopics = kr_array(r, 2);
	if (s->ntopics > 0)
		s->topics = mq_malloc0(sizeof(RTopic) * s->ntopics);
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
	{
		RTopic	   *tp = &s->topics[t];
		int32_t		n;

		tp->name = kr_str(r);
		n = kr_array(r, 4);
		tp->parts = mq_malloc0(sizeof(RPart) * (n > 0 ? n : 1));
		for (; tp->n < n && !r->err; tp->n++)
		{
			RPart	   *p = &tp->parts[tp->n];

			p->stmt = -1;
			p->index = kr_i32(r);
			if (!alter)
				continue;
			p->nreplicas = kr_array(r, 4);
			p->replicas = mq_malloc0(sizeof(int32_t) * (p->nreplicas > 0 ? p->nreplicas : 1));
			for (int32_t k = 0; k < p->nreplicas && !r->err; k++)
				p->replicas[k] = kr_i32(r);
			kr_tags(r);
		}
		kr_tags(r);
	}
	return s;
}

static bool
authorized(ReassignState *s)
{
	s->code = kacl_cluster_code(&s->job.stmts[0]);
	return s->code == KERR_NONE;
}

static void
write_head(KRequest *req, ReassignState *s)
{
	kw_i32(&req->resp, 0);		/* throttle_time_ms */
	kw_i16(&req->resp, s->code);
	kw_strn(&req->resp, NULL, -1);	/* error_message */
}

/* ---- AlterPartitionReassignments ---- */

/* a partition's outcome: its statement's, or this daemon's alone */
static int16_t
alter_code(const ReassignState *s, const RPart *p, const char **msg)
{
	bool		cluster = cluster_enabled();
	const KStmt *st = &(cluster ? &s->coord : &s->job)->stmts[p->stmt];
	int16_t		code;

	*msg = NULL;
	if (kstmt_failed(st, &code))
	{
		*msg = st->err.message;
		return code;
	}
	if (PQntuples(st->res) == 0 || (!cluster && strcmp(PQgetvalue(st->res, 0, 0), "0") == 0))
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (p->nreplicas < 0)
		return cluster && !PQgetisnull(st->res, 0, 0) ? KERR_NONE : KERR_NO_REASSIGNMENT_IN_PROGRESS;
	if (cluster || (p->nreplicas == 1 && p->replicas[0] == kconfig.node_id))
		return KERR_NONE;
	*msg = "mq-kafka runs without --coordinator: this daemon is the only broker";
	return KERR_INVALID_REPLICA_ASSIGNMENT;
}

static void
alter_done(KRequest *req)
{
	ReassignState *s = req->state;
	KWriter    *w = &req->resp;

	write_head(req, s);
	kw_array(w, s->code == KERR_NONE ? s->ntopics : 0);
	for (int32_t t = 0; s->code == KERR_NONE && t < s->ntopics; t++)
	{
		RTopic	   *tp = &s->topics[t];

		kw_strn(w, tp->name.p, tp->name.len);
		kw_array(w, tp->n);
		for (int32_t i = 0; i < tp->n; i++)
		{
			const char *msg;
			int16_t		code = alter_code(s, &tp->parts[i], &msg);

			kw_i32(w, tp->parts[i].index);
			kw_i16(w, code);
			kw_strn(w, msg, msg ? (int32_t) strlen(msg) : -1);
			kw_tags(w);
		}
		kw_tags(w);
	}
	req_finish(req);
}

static void list_done(KRequest *req);

static void
coord_done(KRequest *sub)
{
	KRequest   *req = sub->state;

	if (req->api_key == KAPI_ALTER_PARTITION_REASSIGNMENTS)
		alter_done(req);
	else
		list_done(req);
}

/* a partition's statement in job: sql of its topic and index ($1, $2) */
static KStmt *
partition_stmt(KJob *job, const char *sql, KSlice topic, RPart *p)
{
	char	   *name = kslice_dup(topic);
	KStmt	   *st = kjob_add(job, sql, 0);

	p->stmt = job->n - 1;
	kstmt_text(st, MQ_TEXTOID, name ? name : "");
	kstmt_int(st, MQ_INT4OID, p->index);
	free(name);
	return st;
}

/* s->coord's statements, on the coordinator as the daemon (no role) */
static void
run_on_coordinator(KRequest *req, ReassignState *s)
{
	s->coord_req.state = req;
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

/* the moves, on the coordinator as the daemon, once the client may */
static void
alter_authorized(KRequest *req)
{
	ReassignState *s = req->state;

	if (!authorized(s) || !cluster_enabled())
	{
		alter_done(req);
		return;
	}
	for (int32_t t = 0; t < s->ntopics; t++)
		for (int32_t i = 0; i < s->topics[t].n; i++)
		{
			RPart	   *p = &s->topics[t].parts[i];
			KStmt	   *st = partition_stmt(&s->coord, p->nreplicas < 0 ? CANCEL_SQL : MOVE_SQL,
											s->topics[t].name, p);

			if (p->nreplicas >= 0)
				kstmt_int_array(st, p->replicas, p->nreplicas);
		}
	run_on_coordinator(req, s);
}

void
h_alter_partition_reassignments(KRequest *req)
{
	ReassignState *s = read_topics(req, true);

	if (req->body.err || s->ntopics < 0)
	{
		req_abort(req);
		return;
	}
	kacl_add_cluster_check(&s->job, "alter");
	for (int32_t t = 0; !cluster_enabled() && t < s->ntopics; t++)
		for (int32_t i = 0; i < s->topics[t].n; i++)
			(void) partition_stmt(&s->job, EXISTS_SQL, s->topics[t].name, &s->topics[t].parts[i]);
	pool_run(req, &s->job, alter_authorized);
}

/* ---- ListPartitionReassignments ---- */

/* was (topic, partition) asked for?  (all when the request's topics are null) */
static bool
asked(const ReassignState *s, const char *topic, int32_t partition)
{
	if (s->ntopics < 0)
		return true;
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		if (!kslice_eq(s->topics[t].name, topic))
			continue;
		for (int32_t i = 0; i < s->topics[t].n; i++)
			if (s->topics[t].parts[i].index == partition)
				return true;
	}
	return false;
}

static void
list_done(KRequest *req)
{
	ReassignState *s = req->state;
	KWriter    *w = &req->resp;
	const KStmt *st = s->coord.n > 0 ? &s->coord.stmts[0] : NULL;
	int			n = 0;
	size_t		topics_at;
	int32_t		ntopics = 0;

	if (s->code == KERR_NONE && st && kstmt_failed(st, &s->code))
		mq_log_warning("listing the coordinator's reassignments: %s", st->err.message);
	if (s->code == KERR_NONE && st)
		n = PQntuples(st->res);
	write_head(req, s);
	topics_at = kw_later(w);
	for (int i = 0; i < n;)
	{
		const char *topic = PQgetvalue(st->res, i, 0);
		size_t		parts_at = 0;
		int32_t		nparts = 0;

		for (; i < n && strcmp(PQgetvalue(st->res, i, 0), topic) == 0; i++)
		{
			if (!asked(s, topic, atoi(PQgetvalue(st->res, i, 1))))
				continue;
			if (nparts++ == 0)
			{
				kw_str(w, topic);
				parts_at = kw_later(w);
			}
			kw_i32(w, atoi(PQgetvalue(st->res, i, 1)));
			for (int c = 2; c <= 4; c++)
				kw_int32s_text(w, PQgetvalue(st->res, i, c));
			kw_tags(w);
		}
		if (nparts == 0)
			continue;
		kw_fill_count(w, parts_at, nparts);
		kw_tags(w);
		ntopics++;
	}
	kw_fill_count(w, topics_at, ntopics);
	req_finish(req);
}

static void
list_authorized(KRequest *req)
{
	ReassignState *s = req->state;

	if (!authorized(s) || !cluster_enabled())
	{
		list_done(req);
		return;
	}
	(void) kjob_add(&s->coord, MOVING_SQL, 0);
	run_on_coordinator(req, s);
}

void
h_list_partition_reassignments(KRequest *req)
{
	ReassignState *s = read_topics(req, false);

	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	kacl_add_cluster_check(&s->job, "describe");
	pool_run(req, &s->job, list_authorized);
}
