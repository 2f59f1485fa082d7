/*-------------------------------------------------------------------------
 *
 * h_leader_epoch.c
 *	  OffsetForLeaderEpoch (v0-v4, KIP-101, KIP-320): where a leader epoch
 *	  ends in a partition's log, so that a consumer whose position came
 *	  from an older leader (after a leader change, or from a committed
 *	  offset) can tell whether the log it read was truncated.  Loop
 *	  thread; a request is one job with a statement per partition.
 *
 * The epochs are mq's epoch history (mq.leader_epochs: KIP-101's leader
 * epoch cache, written by each election; a partition never replicated has
 * its one epoch from offset 0).  The answer is Kafka's (epoch_end.c, which
 * Fetch's diverging epoch shares): for the undefined
 * epoch -1, (-1, -1); for the latest epoch, the log end offset; otherwise
 * the start of the first later epoch, with the largest epoch at or below
 * the one asked (the one asked if there is none), or (-1, -1) if no later
 * epoch exists.  v2+ carries the client's current leader epoch, checked
 * as Fetch checks it (FENCED_LEADER_EPOCH when older than the
 * partition's, UNKNOWN_LEADER_EPOCH when newer); a node that is a
 * follower answers NOT_LEADER_OR_FOLLOWER; a topic the role may not
 * describe, TOPIC_AUTHORIZATION_FAILED.  v3+ carries a replica id, which
 * is ignored (mq's replicas do not speak Kafka); v4+ is flexible.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "epoch_end.h"
#include "kerr.h"
#include "offsets.h"
#include "util.h"

/*
 * the partition's current epoch, role and log end; the columns of the
 * end of epoch $3 (epoch_end.h); whether the role may describe the topic
 */
#define EPOCH_SQL \
	"SELECT s.leader_epoch, s.role, s.log_end_offset," \
	EPOCH_END_COLS("$1", "$2", "$3") "," \
	"       mq._describable('topic', $1)" \
	"  FROM (SELECT) d LEFT JOIN mq.partitions s ON s.topic = $1 AND s.partition = $2"

enum
{
	C_EPOCH, C_ROLE, C_LEO, C_LATEST, C_FLOOR, C_HIGHER_START, C_DESCRIBABLE
};

static void
read_epoch_part(KRequest *req, OffState *s, OPart *op, const char *topic)
{
	KStmt	   *st;

	op->partition = kr_i32(&req->body);
	op->current_epoch = req->api_version >= 2 ? kr_i32(&req->body) : -1;
	op->leader_epoch = kr_i32(&req->body);
	st = kjob_add(&s->job, EPOCH_SQL, 0);
	op->job = &s->job;
	op->stmt = s->job.n - 1;
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, op->partition);
	kstmt_int(st, MQ_INT4OID, op->leader_epoch);
}

static bool
null_at(PGresult *res, int col)
{
	return PQgetisnull(res, 0, col);
}

static int64_t
int_at(PGresult *res, int col)
{
	return strtoll(PQgetvalue(res, 0, col), NULL, 10);
}

/* a lookup column, -1 when null */
static int64_t
col_or_none(PGresult *res, int col)
{
	return null_at(res, col) ? -1 : int_at(res, col);
}

/* Kafka's end offset of the epoch asked (epoch_end.c) */
static void
epoch_end(PGresult *res, int32_t asked, int32_t *epoch, int64_t *end)
{
	epoch_end_offset(asked, col_or_none(res, C_LATEST), col_or_none(res, C_FLOOR),
					 col_or_none(res, C_HIGHER_START), int_at(res, C_LEO), epoch, end);
}

/* the error of a partition found (or not) by the statement */
static int16_t
epoch_error(PGresult *res, const OPart *op)
{
	int16_t		code;

	if (null_at(res, C_EPOCH))
		return PQgetvalue(res, 0, C_DESCRIBABLE)[0] == 't' ? KERR_UNKNOWN_TOPIC_OR_PARTITION :
			KERR_TOPIC_AUTHORIZATION_FAILED;
	code = kerr_leader_epoch(op->current_epoch, (int32_t) int_at(res, C_EPOCH));
	if (code != KERR_NONE)
		return code;
	if (strcmp(PQgetvalue(res, 0, C_ROLE), "follower") == 0)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	return KERR_NONE;
}

static void
write_epoch_part(KRequest *req, OffState *s, OPart *op)
{
	KWriter    *w = &req->resp;
	KStmt	   *st = &op->job->stmts[op->stmt];
	int16_t		code;
	int32_t		epoch = -1;
	int64_t		end = -1;

	if (!kstmt_failed(st, &code) && PQntuples(st->res) == 1)
	{
		code = epoch_error(st->res, op);
		if (code == KERR_NONE)
			epoch_end(st->res, op->leader_epoch, &epoch, &end);
	}
	else if (code == KERR_NONE)
		code = KERR_UNKNOWN_SERVER_ERROR;
	kw_i16(w, code);
	kw_i32(w, op->partition);
	if (req->api_version >= 1)
		kw_i32(w, epoch);
	kw_i64(w, end);
}

static void
epoch_done(KRequest *req)
{
	OffState   *s = req->state;

	if (req->api_version >= 2)
		kw_i32(&req->resp, 0);	/* throttle_time_ms */
	write_topics(req, s, write_epoch_part);
	req_finish(req);
}

void
h_offset_for_leader_epoch(KRequest *req)
{
	OffState   *s = off_state(req);

	if (req->api_version >= 3)
		(void) kr_i32(&req->body);	/* replica id */
	read_topics(req, s, req->api_version >= 2 ? 12 : 8, read_epoch_part);
	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	pool_run(req, &s->job, epoch_done);
}
