/*-------------------------------------------------------------------------
 *
 * h_log_dirs_alter.c
 *	  AlterReplicaLogDirs (v0-v2; v2+ flexible) on mq.move_partition.
 *	  Loop thread; a job that checks the client's right, then one with a
 *	  statement per partition, as the client.
 *
 * A log directory is a tablespace (h_log_dirs.c: DescribeLogDirs names
 * each by pg_tablespace's name), so a partition moves to the tablespace
 * its directory names: its segments, and those made later
 * (src/sql/73_move_partition.sql).  The move is done when answered, where
 * Kafka answers once a future replica is made and copies in the
 * background; meanwhile the partition's producers and readers wait.  As
 * in Kafka it needs ALTER on the cluster (else every partition is
 * CLUSTER_AUTHORIZATION_FAILED and nothing moves); mq.move_partition also
 * needs ALTER on the topic (TOPIC_AUTHORIZATION_FAILED) and CREATE on the
 * tablespace.  A directory that names no tablespace is LOG_DIR_NOT_FOUND
 * (MQ064), an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION.  The
 * answer groups the partitions by topic, as Kafka's does.  In a cluster
 * the move is this node's: each broker keeps its replicas where it puts
 * them, as in Kafka.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kacl.h"
#include "kerr.h"
#include "util.h"

#define MOVE_SQL "SELECT mq.move_partition($1, $2, $3::name)"

typedef struct MovePart
{
	int32_t		topic;			/* index in topics */
	int32_t		partition;
	char	   *dir;
} MovePart;

typedef struct MoveState
{
	KJob		authz;
	KJob		moves;			/* one statement per part, once authorized */
	int16_t		code;			/* the whole request's */
	int32_t		ntopics;
	KSlice	   *topics;			/* each topic once */
	int32_t		nparts;
	MovePart   *parts;			/* grouped by topic */
} MoveState;

static void
move_state_free(void *p)
{
	MoveState  *s = p;

	kjob_free(&s->authz);
	kjob_free(&s->moves);
	for (int32_t i = 0; i < s->nparts; i++)
		free(s->parts[i].dir);
	free(s->parts);
	free(s->topics);
	free(s);
}

static int32_t
part_topic(const void *arg, int32_t i)
{
	return ((const MoveState *) arg)->parts[i].topic;
}

static void
write_partition(KWriter *w, void *arg, int32_t i)
{
	MoveState  *s = arg;
	int16_t		code = s->code;

	if (code == KERR_NONE)
		(void) kstmt_failed(&s->moves.stmts[i], &code);
	kw_i32(w, s->parts[i].partition);
	kw_i16(w, code);
}

static void
moves_done(KRequest *req)
{
	MoveState  *s = req->state;

	kw_i32(&req->resp, 0);		/* throttle_time_ms */
	kw_topic_parts(&req->resp, s->topics, 0, s->ntopics, s->nparts, part_topic, write_partition, s);
	req_finish(req);
}

static void
authorized(KRequest *req)
{
	MoveState  *s = req->state;

	s->code = kacl_cluster_code(&s->authz.stmts[0]);
	if (s->code != KERR_NONE)
	{
		moves_done(req);
		return;
	}
	for (int32_t i = 0; i < s->nparts; i++)
	{
		KStmt	   *st = kjob_add(&s->moves, MOVE_SQL, 0);
		KSlice		t = s->topics[s->parts[i].topic];

		kstmt_binary(st, MQ_TEXTOID, t.p, t.len);
		kstmt_int(st, MQ_INT4OID, s->parts[i].partition);
		kstmt_text(st, MQ_TEXTOID, s->parts[i].dir);
	}
	pool_run(req, &s->moves, moves_done);
}

/* the index of topic name in s->topics, added if new */
static int32_t
topic_index(MoveState *s, KSlice name, int32_t *cap)
{
	for (int32_t t = 0; t < s->ntopics; t++)
		if (kslice_same(s->topics[t], name))
			return t;
	if (s->ntopics == *cap)
	{
		*cap = *cap * 2 + 8;
		s->topics = mq_realloc(s->topics, sizeof(KSlice) * *cap);
	}
	s->topics[s->ntopics] = name;
	return s->ntopics++;
}

static int
part_cmp(const void *a, const void *b)
{
	const MovePart *x = a,
			   *y = b;

	return x->topic != y->topic ? (x->topic > y->topic) - (x->topic < y->topic)
		: (x->partition > y->partition) - (x->partition < y->partition);
}

/* one directory's topics and partitions */
static void
read_dir(KReader *r, MoveState *s, int32_t *tcap, int32_t *pcap)
{
	char	   *dir = kslice_dup(kr_str(r));
	int32_t		ntopics = kr_array(r, 6);

	for (int32_t t = 0; t < ntopics && !r->err; t++)
	{
		int32_t		ti = topic_index(s, kr_str(r), tcap);
		int32_t		n = kr_array(r, 4);

		for (int32_t i = 0; i < n && !r->err; i++)
		{
			if (s->nparts == *pcap)
			{
				*pcap = *pcap * 2 + 8;
				s->parts = mq_realloc(s->parts, sizeof(MovePart) * *pcap);
			}
			s->parts[s->nparts].topic = ti;
			s->parts[s->nparts].partition = kr_i32(r);
			s->parts[s->nparts++].dir = mq_strdup(dir ? dir : "");
		}
		kr_tags(r);
	}
	kr_tags(r);
	r->err |= dir == NULL;
	free(dir);
}

void
h_alter_replica_log_dirs(KRequest *req)
{
	KReader    *r = &req->body;
	MoveState  *s = mq_malloc0(sizeof(MoveState));
	int32_t		ndirs = kr_array(r, 6);
	int32_t		tcap = 0,
				pcap = 0;

	req->state = s;
	req->free_state = move_state_free;
	for (int32_t d = 0; d < ndirs && !r->err; d++)
		read_dir(r, s, &tcap, &pcap);
	for (int32_t i = 0; i < s->ntopics && !r->err; i++)
		r->err = s->topics[i].len < 0;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (s->nparts > 0)
		qsort(s->parts, s->nparts, sizeof(MovePart), part_cmp);
	kacl_add_cluster_check(&s->authz, "alter");
	pool_run(req, &s->authz, authorized);
}
