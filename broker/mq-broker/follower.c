/*-------------------------------------------------------------------------
 *
 * follower.c
 *	  A follower's work for one partition: applying the epoch on its own
 *	  node, leader-epoch truncation (KIP-101 / KIP-279), and the fetch loop
 *	  that pulls records from the leader's node and appends them locally at
 *	  the leader's offsets.
 *
 * The fetch is a long poll on a non-blocking connection to the leader's
 * node (mq.replica_fetch waits on the leader for new records), so the main
 * loop select()s on every follower's socket and never sleeps to poll.
 * The fetched batch is one value of type mq.replica_batch, passed to the
 * local mq.replica_append in binary as it came: the broker never decodes
 * records.  The fetch offset is the follower's log end, which is what
 * acknowledges everything below it to the leader.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "util.h"

static const char *const fetch_sql =
"SELECT mq.replica_fetch($1, $2, $3, $4, $5, $6, $7)";

void
follower_stop(Part *p)
{
	if (p->fconn)
		PQfinish(p->fconn);		/* also abandons a fetch in flight */
	p->fconn = NULL;
	p->in_flight = false;
}

static void
backoff(Broker *b, Part *p, int ms)
{
	p->backoff_until_us = mq_now_us() + (int64_t) ms * 1000;
}

static bool
ensure_leader_conn(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	static const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
	"keepalives_interval", "keepalives_count", NULL};
	static const char *const vals[] = {"2", "1", "2", "1", "2", NULL};

	if (p->fconn && p->fconn_info && p->leader_conninfo &&
		strcmp(p->fconn_info, p->leader_conninfo) == 0 && PQstatus(p->fconn) == CONNECTION_OK)
		return true;
	follower_stop(p);
	if (p->leader_conninfo == NULL)
		return false;
	p->fconn = mq_connect_with(p->leader_conninfo, "mq-broker follower", keys, vals, &err);
	if (p->fconn == NULL)
	{
		broker_log("warning", "%s: cannot connect to leader %d (%s): %s; retrying in %d ms",
				   part_label(p), p->leader, p->leader_name ? p->leader_name : "?",
				   err.message, b->cfg->retry_ms);
		mq_error_free(&err);
		backoff(b, p, b->cfg->retry_ms);
		return false;
	}
	/*
	 * What our fetches write on the leader (our progress, its high
	 * watermark) is soft state that dies with its leadership: no WAL flush
	 * per fetch for it.  The records themselves are flushed on our node
	 * before a fetch offset acknowledges them (broker.c, ensure_node).
	 */
	if (!mq_command(p->fconn, "SET synchronous_commit = off", &err))
	{
		broker_log("warning", "%s: cannot set up the session with leader %d: %s; retrying in %d ms",
				   part_label(p), p->leader, err.message, b->cfg->retry_ms);
		mq_error_free(&err);
		follower_stop(p);
		backoff(b, p, b->cfg->retry_ms);
		return false;
	}
	free(p->fconn_info);
	p->fconn_info = mq_strdup(p->leader_conninfo);
	return true;
}

/* Apply the coordinator's epoch and leader on the node. */
static bool
become_follower(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->leader_epoch);
	mq_param_int(&prm, MQ_INT4OID, p->leader);
	mq_param_text(&prm, MQ_TEXTOID, p->leader_name);
	res = node_exec(b, "SELECT mq.replica_become_follower($1, $2, $3, $4, $5)", &prm, 0, &err);
	if (res == NULL)
	{
		broker_log("error", "%s: the node refused to follow broker %d in epoch %d: %s",
				   part_label(p), p->leader, p->leader_epoch, err.message);
		mq_error_free(&err);
		return false;
	}
	PQclear(res);
	broker_log("info", "%s: following broker %d (%s) in leader epoch %d; truncating by leader epoch next",
			   part_label(p), p->leader, p->leader_name ? p->leader_name : "?", p->leader_epoch);
	p->applied_epoch = p->leader_epoch;
	p->state = PART_FOLLOWER_TRUNCATE;
	follower_stop(p);
	/* a back-off earned with the old leader does not delay the new one */
	p->backoff_until_us = 0;
	return true;
}

static bool
truncate_to(Broker *b, Part *p, long long offset, long long leo, const char *why)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_int(&prm, MQ_INT8OID, offset);
	res = node_exec(b, "SELECT mq.replica_truncate($1, $2, $3, $4)", &prm, 0, &err);
	if (res == NULL)
	{
		broker_log("error", "%s: truncation failed: %s", part_label(p), err.message);
		mq_error_free(&err);
		return false;
	}
	if (offset < leo)
	{
		broker_log("warning", "%s: truncated the log from offset %lld (%s records removed, log end was %lld): %s",
				   part_label(p), offset, PQgetvalue(res, 0, 0), leo, why);
		b->stats.truncations++;
	}
	PQclear(res);
	return true;
}

/*
 * KIP-101 with KIP-279's iteration: ask the leader where our latest epoch
 * ends in its log; when it does not know our epoch it answers with its
 * largest epoch below it, and we cut at the smaller of its end and ours,
 * then ask again.  Never truncates by high watermark.
 */
static bool
truncate_by_epoch(Broker *b, Part *p)
{
	for (int round = 0; round < 16; round++)
	{
		MqParams	prm;
		MqError		err = MQ_ERROR_INIT;
		PGresult   *res;
		int			latest;
		long long	leo,
					hwm;
		int			le;
		long long	lend;
		long long	mine;

		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, p->topic);
		mq_param_int(&prm, MQ_INT4OID, p->partition);
		res = node_exec(b, "SELECT latest_epoch, log_end_offset, coalesce(high_watermark, 0) "
						"FROM mq.replica_log_state($1, $2)", &prm, 0, &err);
		if (res == NULL)
		{
			mq_error_free(&err);
			return false;
		}
		latest = atoi(PQgetvalue(res, 0, 0));
		leo = atoll(PQgetvalue(res, 0, 1));
		hwm = atoll(PQgetvalue(res, 0, 2));
		PQclear(res);
		if (latest < 0 || leo == 0)
		{
			p->fetch_offset = leo;
			return true;		/* nothing of any epoch to compare */
		}

		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, p->topic);
		mq_param_int(&prm, MQ_INT4OID, p->partition);
		mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
		mq_param_int(&prm, MQ_INT4OID, latest);
		res = mq_exec_timeout(p->fconn, "SELECT leader_epoch, end_offset FROM mq.replica_epoch_end_offset($1, $2, $3, $4)",
							  &prm, 0, b->cfg->node_timeout_ms, &err);
		if (res == NULL)
		{
			broker_log("warning", "%s: leader %d cannot answer for epoch %d yet: %s; retrying",
					   part_label(p), p->leader, latest, err.message);
			if (err.connection_lost)
				follower_stop(p);
			mq_error_free(&err);
			backoff(b, p, b->cfg->tick_ms);
			return false;
		}
		le = atoi(PQgetvalue(res, 0, 0));
		lend = atoll(PQgetvalue(res, 0, 1));
		PQclear(res);

		if (le < 0)
		{
			/* the leader has no epoch this old: only the committed prefix is safe */
			if (!truncate_to(b, p, hwm < leo ? hwm : leo, leo, "the leader knows no epoch this old"))
				return false;
			continue;
		}
		if (le == latest)
		{
			long long	cut = lend < leo ? lend : leo;

			if (cut < leo && !truncate_to(b, p, cut, leo, "our last epoch ends earlier on the leader"))
				return false;
			p->fetch_offset = cut;
			return true;
		}
		/* the leader never had our latest epoch: cut where its epoch le ends, in both logs */
		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, p->topic);
		mq_param_int(&prm, MQ_INT4OID, p->partition);
		mq_param_int(&prm, MQ_INT4OID, le);
		res = node_exec(b, "SELECT coalesce(requested_end_offset, 0) FROM mq.replica_log_state($1, $2, $3)",
						&prm, 0, &err);
		if (res == NULL)
		{
			mq_error_free(&err);
			return false;
		}
		mine = atoll(PQgetvalue(res, 0, 0));
		PQclear(res);
		if (!truncate_to(b, p, lend < mine ? lend : mine, leo,
						 "our epochs after the leader's last common one diverged"))
			return false;
	}
	broker_log("error", "%s: leader-epoch truncation did not converge; retrying", part_label(p));
	return false;
}

static void
send_fetch(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT8OID, p->fetch_offset);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->fetch_max_records);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->fetch_wait_ms);
	if (!mq_send(p->fconn, fetch_sql, &prm, 1, &err))
	{
		broker_log("warning", "%s: cannot send a fetch to leader %d: %s", part_label(p), p->leader, err.message);
		mq_error_free(&err);
		follower_stop(p);
		backoff(b, p, b->cfg->retry_ms);
		return;
	}
	p->in_flight = true;
}

/* One step of the follower state machine, from the tick. */
void
follower_step(Broker *b, Part *p)
{
	if (p->applied_epoch != p->leader_epoch ||
		(p->state != PART_FOLLOWER_TRUNCATE && p->state != PART_FOLLOWER_FETCH))
	{
		if (!become_follower(b, p))
			return;
	}
	if (p->in_flight || mq_now_us() < p->backoff_until_us)
		return;
	if (!ensure_leader_conn(b, p))
		return;
	if (p->state == PART_FOLLOWER_TRUNCATE)
	{
		if (!truncate_by_epoch(b, p))
			return;
		broker_log("info", "%s: fetching from broker %d at offset %lld", part_label(p), p->leader,
				   (long long) p->fetch_offset);
		p->state = PART_FOLLOWER_FETCH;
	}
	send_fetch(b, p);
}

/*
 * The leader's log end and high watermark from a fetched batch, for
 * metrics.c: fields 2 and 3 of the mq.replica_batch value in binary
 * (record_send: field count, then per field its type oid, length, bytes;
 * all big-endian).  Nothing else of the batch is ever decoded here.
 */
static void
note_batch_header(Part *p, const unsigned char *d, int len)
{
	int64_t		v[3];
	int			pos = 4;

	if (len < 4)
		return;
	for (int f = 0; f < 3; f++)
	{
		int32_t		flen;

		if (pos + 8 > len)
			return;
		flen = (int32_t) ((uint32_t) d[pos + 4] << 24 | (uint32_t) d[pos + 5] << 16 |
						  (uint32_t) d[pos + 6] << 8 | d[pos + 7]);
		pos += 8;
		if (flen != 8 || pos + 8 > len)
			return;				/* null or not an int8 */
		v[f] = 0;
		for (int i = 0; i < 8; i++)
			v[f] = (int64_t) ((uint64_t) v[f] << 8 | d[pos + i]);
		pos += 8;
	}
	p->m_leader_log_end = v[1];
	p->m_hwm = v[2];
}

/* The leader's node answered (or dropped) our fetch. */
void
follower_on_readable(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	bool		done;
	PGresult   *res = mq_collect(p->fconn, &done, &err);
	PGresult   *ares;
	MqParams	prm;

	if (!done)
		return;
	p->in_flight = false;
	if (res == NULL)
	{
		if (err.connection_lost)
		{
			broker_log("warning", "%s: lost the connection to leader %d: %s; reconnecting in %d ms",
					   part_label(p), p->leader, err.message, b->cfg->retry_ms);
			follower_stop(p);
			backoff(b, p, b->cfg->retry_ms);
		}
		else if (mq_error_is(&err, MQ_SQLSTATE_OFFSET_OUT_OF_RANGE))
		{
			broker_log("warning", "%s: leader %d says our log end %lld is outside its log: %s; truncating again",
					   part_label(p), p->leader, (long long) p->fetch_offset, err.message);
			p->state = PART_FOLLOWER_TRUNCATE;
		}
		else
		{
			/* fenced, unknown epoch, not leader: the coordinator will tell us more */
			broker_log("warning", "%s: fetch refused by broker %d: %s [SQLSTATE %s]; retrying after the next tick",
					   part_label(p), p->leader, err.message, err.sqlstate);
			backoff(b, p, b->cfg->tick_ms);
		}
		mq_error_free(&err);
		return;
	}

	/* append the batch as it came, in binary */
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_binary(&prm, 0, PQgetvalue(res, 0, 0), PQgetlength(res, 0, 0));
	note_batch_header(p, (const unsigned char *) PQgetvalue(res, 0, 0), PQgetlength(res, 0, 0));
	ares = node_exec(b, "SELECT mq.replica_append($1, $2, $3, $4)", &prm, 0, &err);
	PQclear(res);
	if (ares == NULL)
	{
		if (!err.connection_lost)
		{
			if (mq_error_is(&err, MQ_SQLSTATE_OFFSET_OUT_OF_RANGE))
			{
				broker_log("warning", "%s: append refused: %s; truncating again", part_label(p), err.message);
				p->state = PART_FOLLOWER_TRUNCATE;
			}
			else
			{
				broker_log("warning", "%s: append refused: %s [SQLSTATE %s]; re-applying the epoch",
						   part_label(p), err.message, err.sqlstate);
				p->state = PART_NONE;
				p->applied_epoch = -1;
			}
		}
		mq_error_free(&err);
		return;
	}
	p->fetch_offset = atoll(PQgetvalue(ares, 0, 0));
	p->m_log_end = p->fetch_offset;
	PQclear(ares);
	/* the next long poll at once: its offset acknowledges what we just wrote */
	if (p->state == PART_FOLLOWER_FETCH && b->node != NULL)
		send_fetch(b, p);
}
