/*-------------------------------------------------------------------------
 *
 * follower.c
 *	  A follower's work for one partition: applying the epoch on its own
 *	  node (event following), leader-epoch truncation (KIP-101 / KIP-279;
 *	  event truncated), and the fetch loop that pulls records from the
 *	  leader's node and appends them locally at the leader's offsets
 *	  (events diverged and append_refused when that goes wrong).
 *
 * The fetch is a long poll on the leader's node (mq.replica_fetch waits
 * there for new records), sent for every partition this broker follows
 * from that node at once by its fetch session (fetch_session.c), whose
 * socket the main loop poll()s: it never sleeps to poll, and neither does
 * the broker while it waits for the coordinator (loop.c), so that a
 * coordinator that stopped answering holds no fetch: each answer is
 * appended and the next fetch sent in the epoch the node applied, and
 * whatever needs the coordinator waits for the tick.
 * The fetched batch is one value of type mq.replica_batch, passed to the
 * local mq.replica_append in binary as it came: the broker reads only its
 * header (batch.c).  The fetch offset is the follower's log end, which is
 * what acknowledges everything below it to the leader.  An answer that
 * brings the node nothing new (no records; the high watermark, log start
 * and offsets version it applied last) is not appended at all.  Nor is
 * one that brings only a new high watermark right after an answer with
 * records (the fetch that acknowledged them moved it): the next answer
 * carries it too (the leader always sends its latest), with the next
 * records under load, or alone once an idle partition's long poll runs
 * out, and is appended.  So a follower's high watermark lags the
 * leader's by up to one long poll, as Kafka's followers' do, and no
 * acks=all record waits for a records-less append on its follower before
 * the next fetch.
 *
 * Truncation by leader epoch asks the leader's node only when the local
 * log holds records to compare (an empty one fetches from offset 0
 * without asking), on one connection per leader's node that every
 * partition truncating against it shares, one statement a partition
 * (Broker.leader_conns; Kafka's followers go further, one
 * OffsetsForLeaderEpoch request a leader's broker for all), made
 * under the broker's policy (connpolicy.h) and closed once no truncation
 * took it for session.timeout.ms (follower_conns_tidy, each tick): a
 * broker that restarts with many partitions connects once per leader's
 * node, not once a partition.
 * Reconnecting backs off with jitter per partition.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "broker.h"
#include "calls.h"
#include "placement.h"
#include "util.h"

/* A connection to a leader's node for truncation, shared by its partitions. */
typedef struct LeaderConn
{
	struct LeaderConn *next;
	char	   *conninfo;
	PGconn	   *conn;
	int64_t		used_us;		/* when a truncation last took it (mq_now_us) */
} LeaderConn;

static LeaderConn *
leader_conn_find(Broker *b, const char *conninfo)
{
	for (LeaderConn *c = b->leader_conns; c; c = c->next)
		if (strcmp(c->conninfo, conninfo) == 0)
			return c;
	return NULL;
}

static void
leader_conn_close(Broker *b, LeaderConn *gone)
{
	for (LeaderConn **cp = &b->leader_conns; *cp; cp = &(*cp)->next)
		if (*cp == gone)
		{
			*cp = gone->next;
			PQfinish(gone->conn);
			free(gone->conninfo);
			free(gone);
			return;
		}
}

/*
 * The tick's end: a connection no truncation took for session.timeout.ms
 * goes (the partitions of a leader change truncate over a few ticks), as
 * does a broken one.
 */
void
follower_conns_tidy(Broker *b)
{
	int64_t		idle_us = (int64_t) b->cfg->session_timeout_ms * 1000;
	LeaderConn *c = b->leader_conns;

	while (c)
	{
		LeaderConn *next = c->next;

		if (mq_now_us() - c->used_us > idle_us || PQstatus(c->conn) != CONNECTION_OK)
			leader_conn_close(b, c);
		c = next;
	}
}

/* At shutdown: every truncation connection closes. */
void
follower_conns_free(Broker *b)
{
	while (b->leader_conns)
		leader_conn_close(b, b->leader_conns);
}

void
follower_stop(Part *p)
{
	/* out of its session's fetch in flight: that fetch's row for it is dropped */
	p->in_flight = false;
	p->session = NULL;
	p->last_records = false;
}

/* Wait before the next fetch: the leader said "not yet" or "not you". */
static void
wait_a_tick(Broker *b, Part *p)
{
	p->backoff_until_us = mq_now_us() + (int64_t) b->cfg->tick_ms * 1000;
}

/* The leader's node is unreachable: drop the connection, back off with jitter. */
static int
leader_conn_failed(Broker *b, Part *p)
{
	follower_stop(p);
	return mq_retry_failed(&p->fconn_retry, &b->policy);
}

/* A new connection to p's leader's node, shared from now on; NULL: backing off. */
static LeaderConn *
leader_conn_open(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	LeaderConn *c;
	PGconn	   *conn;

	if (!mq_retry_due(&p->fconn_retry))
		return NULL;
	conn = mq_connect_policy(p->leader_conninfo, "mq-broker truncation", &b->policy, &err);
	if (conn == NULL || !leader_setup_conn(b, conn, &err))
	{
		int			pause = leader_conn_failed(b, p);

		if (conn)
			PQfinish(conn);
		mq_log_warning("%s: cannot connect to leader %d (%s): %s; retrying in %d ms",
					   part_label(p), p->leader, p->leader_name ? p->leader_name : "?",
					   err.message, pause);
		mq_error_free(&err);
		return NULL;
	}
	c = mq_malloc0(sizeof(LeaderConn));
	c->conninfo = mq_strdup(p->leader_conninfo);
	c->conn = conn;
	c->next = b->leader_conns;
	b->leader_conns = c;
	return c;
}

/* The shared connection to p's leader's node, opened if need be; NULL: none yet. */
static PGconn *
ensure_leader_conn(Broker *b, Part *p)
{
	LeaderConn *c;

	follower_stop(p);
	if (p->leader_conninfo == NULL)
		return NULL;
	c = leader_conn_find(b, p->leader_conninfo);
	if (c && PQstatus(c->conn) != CONNECTION_OK)
	{
		leader_conn_close(b, c);
		c = NULL;
	}
	if (c == NULL && (c = leader_conn_open(b, p)) == NULL)
		return NULL;
	mq_retry_succeeded(&p->fconn_retry);
	c->used_us = mq_now_us();
	return c->conn;
}

/* Apply the coordinator's epoch and leader on the node. */
static bool
become_follower(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;

	if (!node_become_follower(b, p, p->leader_epoch, p->leader, p->leader_name, &err))
	{
		mq_log_error("%s: the node refused to follow broker %d in epoch %d: %s",
					 part_label(p), p->leader, p->leader_epoch, err.message);
		mq_error_free(&err);
		return false;
	}
	mq_log_info("%s: following broker %d (%s) in leader epoch %d; truncating by leader epoch next",
				part_label(p), p->leader, p->leader_name ? p->leader_name : "?", p->leader_epoch);
	p->applied_epoch = p->leader_epoch;
	p->applied_hwm = p->applied_log_start = -1;
	follower_stop(p);
	/* a back-off earned with the old leader does not delay the new one */
	p->backoff_until_us = 0;
	mq_retry_succeeded(&p->fconn_retry);
	return fsm_fire(b, p, EV_FOLLOWING);
}

static bool
truncate_to(Broker *b, Part *p, int64_t offset, int64_t leo, const char *why)
{
	MqError		err = MQ_ERROR_INIT;
	int64_t		removed;

	if (!node_truncate(b, p, offset, &removed, &err))
	{
		mq_log_error("%s: truncation failed: %s", part_label(p), err.message);
		mq_error_free(&err);
		return false;
	}
	if (offset < leo)
	{
		mq_log_warning("%s: truncated the log from offset %lld (%lld records removed, log end was %lld): %s",
					   part_label(p), (long long) offset, (long long) removed, (long long) leo, why);
		b->stats.truncations++;
	}
	return true;
}

/* One round of KIP-101: 1 = done (fetch_offset set), 0 = ask again, -1 = failed. */
static int
truncation_round(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn;
	int			latest,
				le;
	int64_t		leo,
				hwm,
				lend,
				mine;

	if (!node_log_state(b, p, &latest, &leo, &hwm, &err))
	{
		mq_error_free(&err);
		return -1;
	}
	if (latest < 0 || leo == 0)
	{
		p->fetch_offset = leo;
		p->offsets_version = -1;
		return 1;				/* nothing of any epoch to compare */
	}
	if ((conn = ensure_leader_conn(b, p)) == NULL)
		return -1;
	if (!leader_epoch_end_offset(b, p, conn, latest, &le, &lend, &err))
	{
		mq_log_warning("%s: leader %d cannot answer for epoch %d yet: %s; retrying",
					   part_label(p), p->leader, latest, err.message);
		if (err.connection_lost)
		{
			/* broken, or a statement cancelled after the timeout: not reusable */
			LeaderConn *c = leader_conn_find(b, p->leader_conninfo);

			if (c)
				leader_conn_close(b, c);
		}
		mq_error_free(&err);
		wait_a_tick(b, p);
		return -1;
	}
	if (le < 0)
		/* the leader has no epoch this old: only the committed prefix is safe */
		return truncate_to(b, p, hwm < leo ? hwm : leo, leo,
						   "the leader knows no epoch this old") ? 0 : -1;
	if (le == latest)
	{
		int64_t		cut = lend < leo ? lend : leo;

		if (cut < leo && !truncate_to(b, p, cut, leo, "our last epoch ends earlier on the leader"))
			return -1;
		p->fetch_offset = cut;
		p->offsets_version = -1;
		return 1;
	}
	/* the leader never had our latest epoch: cut where its epoch le ends, in both logs */
	if (!node_epoch_end(b, p, le, &mine, &err))
	{
		mq_error_free(&err);
		return -1;
	}
	return truncate_to(b, p, lend < mine ? lend : mine, leo,
					   "our epochs after the leader's last common one diverged") ? 0 : -1;
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
		int			rc = truncation_round(b, p);

		if (rc != 0)
			return rc > 0;
	}
	mq_log_error("%s: leader-epoch truncation did not converge; retrying", part_label(p));
	return false;
}

/*
 * One step of a follower, from the tick: apply the epoch, truncate by
 * leader epoch.  True when the partition is ready to fetch (the caller
 * has its fetch session fetch it: fetch_session_want).
 */
bool
follower_step(Broker *b, Part *p)
{
	if (p->applied_epoch != p->leader_epoch ||
		(p->state != PART_FOLLOWER_TRUNCATE && p->state != PART_FOLLOWER_FETCH))
	{
		if (!become_follower(b, p))
			return false;
	}
	if (mq_now_us() < p->backoff_until_us)
		return false;
	if (p->state == PART_FOLLOWER_TRUNCATE)
	{
		if (!truncate_by_epoch(b, p))
			return false;
		mq_log_info("%s: fetching from broker %d at offset %lld", part_label(p), p->leader,
					(long long) p->fetch_offset);
		p->applied_hwm = p->applied_log_start = -1;
		fsm_fire(b, p, EV_TRUNCATED);
	}
	return p->state == PART_FOLLOWER_FETCH;
}

/* The fetch failed: a diverged log, or a refusal (the session handles its connection). */
void
follower_take_error(Broker *b, Part *p, const MqError *err)
{
	if (err->connection_lost)
		return;
	if (mq_error_is(err, MQ_SQLSTATE_OFFSET_OUT_OF_RANGE))
	{
		mq_log_warning("%s: leader %d says our log end %lld is outside its log: %s; truncating again",
					   part_label(p), p->leader, (long long) p->fetch_offset, err->message);
		fsm_fire(b, p, EV_DIVERGED);
	}
	else if (mq_error_is(err, MQ_SQLSTATE_UNKNOWN_PARTITION))
	{
		/*
		 * The leader's node lacks it: its topic deleted (the leader's broker
		 * dropped its copy, topic_drop.c) or not placed there yet.  No
		 * refusal to warn of: the next tick's assignment forgets a deleted
		 * one, as any partition no longer assigned (assign.c).
		 */
		mq_log_info("%s: broker %d's node has no such partition (%s); waiting for the next tick's assignment",
					part_label(p), p->leader, err->message);
		wait_a_tick(b, p);
	}
	else
	{
		/* fenced, unknown epoch, not leader: the coordinator will tell us more */
		mq_log_warning("%s: fetch refused by broker %d: %s [SQLSTATE %s]; retrying after the next tick",
					   part_label(p), p->leader, err->message, err->sqlstate);
		wait_a_tick(b, p);
	}
}

static void
append_failed(Broker *b, Part *p, const MqError *err)
{
	if (err->connection_lost)
		return;					/* session.c gave up the node */
	if (mq_error_is(err, MQ_SQLSTATE_OFFSET_OUT_OF_RANGE))
	{
		mq_log_warning("%s: append refused: %s; truncating again", part_label(p), err->message);
		fsm_fire(b, p, EV_DIVERGED);
	}
	else
	{
		mq_log_warning("%s: append refused: %s [SQLSTATE %s]; re-applying the epoch",
					   part_label(p), err->message, err->sqlstate);
		fsm_fire(b, p, EV_APPEND_REFUSED);
	}
}

/*
 * Does the answer bring the node at most a high watermark: no records, and
 * the log start and committed offsets it was given last?  The leader
 * answers so a long poll that timed out and the fetch that acknowledges an
 * append (with the high watermark the node has while another follower
 * still lags, else the one that fetch moved).  Appending such an answer was
 * a round trip to the node and a transaction, in series before the long
 * poll that waits for the next record (docs/design.md, "acks=all: where a
 * record's time goes").
 */
static bool
brings_at_most_hwm(const Part *p, const BatchHeader *h)
{
	return h->base_offset == p->fetch_offset && h->leader_log_end == h->base_offset &&
		h->log_start_offset == p->applied_log_start && h->offsets_version == p->offsets_version;
}

/*
 * A fetch's answer for p: append it, unless it brings nothing, or only a
 * new high watermark right after records.
 */
void
follower_take_batch(Broker *b, Part *p, const char *batch, int len)
{
	MqError		err = MQ_ERROR_INIT;
	BatchHeader hdr;
	bool		hdr_ok = batch_header_decode((const unsigned char *) batch, (size_t) len, &hdr);
	int64_t		log_end;
	bool		after_records;

	if (p->state != PART_FOLLOWER_FETCH || b->node == NULL)
		return;
	if (!hdr_ok)
		hdr.offsets_version = -1;
	else
	{
		p->m_leader_log_end = hdr.leader_log_end;
		p->m_hwm = hdr.high_watermark;
	}
	after_records = p->last_records;
	p->last_records = hdr_ok && hdr.leader_log_end > hdr.base_offset;
	if (hdr_ok && brings_at_most_hwm(p, &hdr) && (hdr.high_watermark == p->applied_hwm || after_records))
		return;
	/* append the batch as it came, in binary */
	if (!node_append(b, p, batch, len, &log_end, &err))
	{
		append_failed(b, p, &err);
		mq_error_free(&err);
		return;
	}
	placement_throttle(b, p, len);	/* a new replica of a move */
	p->fetch_offset = log_end;
	p->offsets_version = hdr.offsets_version;	/* applied with the batch */
	p->applied_hwm = hdr_ok ? hdr.high_watermark : -1;
	p->applied_log_start = hdr_ok ? hdr.log_start_offset : -1;
	p->m_log_end = log_end;
}
