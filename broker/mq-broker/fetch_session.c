/*-------------------------------------------------------------------------
 *
 * fetch_session.c
 *	  A follower broker's fetches, one connection per leader's node: every
 *	  partition this broker follows from that node is fetched by one long
 *	  poll, mq.replica_fetch_commit (src/sql/60_replica_fetch.sql), as
 *	  Kafka's replica fetcher fetches every partition it follows from one
 *	  broker in one request.  The procedure runs mq.replica_fetch_many, or
 *	  mq.replica_fetch for one partition, and commits before it answers, so
 *	  that a broker that stops reading its answer (paused, slow link) holds
 *	  no lock other followers' fetches wait for.  Before this, each
 *	  partition kept its own connection: two backends per partition on the
 *	  leader's node with two followers, 512 for 256 partitions, each long
 *	  poll timing out and sent again every replica.fetch.wait.max.ms.
 *
 * A partition takes part once follower.c has it in the fetch state
 * (epoch applied, log truncated by leader epoch): follower_step asks for
 * a fetch (fetch_session_want), and the session sends one as soon as it
 * has none in flight, with every partition ready then, in an order that
 * turns by one each time (the leader stops filling an answer at its cap;
 * the partitions left out come first later).  A partition that becomes
 * ready while a long poll is in flight cancels it, so that it is fetched
 * at once (a new follower after an election must not wait for others'
 * news).  Each row of the answer goes back to its partition
 * (follower_take_batch, follower_take_error); the next fetch leaves at
 * once.  The session names the partitions it sent (topic, partition,
 * epoch), and finds them again when the answer comes: one that is gone,
 * was stopped meanwhile (follower_stop takes it out of the fetch in
 * flight) or follows another epoch now drops its row.  A session none of
 * whose partitions follows its node any more is closed at the next tick.
 *
 * Layer: below step.c and loop.c, which call it; above follower.c, which
 * it hands the answers to and which never calls it.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "cancel.h"
#include "pgbinary.h"
#include "util.h"

#define SQLSTATE_QUERY_CANCELED "57014"

/* a partition of the fetch in flight */
typedef struct Sent
{
	char	   *topic;
	int			partition;
	int			epoch;
} Sent;

struct FetchSession
{
	char	   *conninfo;		/* the leader's node */
	int			leader;			/* its broker, for messages */
	PGconn	   *conn;
	MqRetry		retry;
	bool		in_flight;
	bool		cancelled;		/* and a cancel was sent for it */
	Part	  **ready;			/* the partitions of the next fetch, in order */
	Sent	   *sent;			/* those of the fetch in flight */
	int			nsent;
	int			cap;
	unsigned	turn;			/* where the next fetch's order starts */
	struct FetchSession *next;
};

static FetchSession *
session_for(Broker *b, const Part *p)
{
	FetchSession *s;

	for (s = b->sessions; s; s = s->next)
		if (strcmp(s->conninfo, p->leader_conninfo) == 0)
			return s;
	s = mq_malloc0(sizeof(FetchSession));
	s->conninfo = mq_strdup(p->leader_conninfo);
	s->leader = p->leader;
	s->next = b->sessions;
	b->sessions = s;
	return s;
}

/* is p ready for s's next fetch? */
static bool
ready(const Broker *b, const FetchSession *s, const Part *p, int64_t now)
{
	return p->state == PART_FOLLOWER_FETCH && p->applied_epoch == p->leader_epoch && !p->in_flight &&
		now >= p->backoff_until_us && p->leader_conninfo != NULL &&
		strcmp(p->leader_conninfo, s->conninfo) == 0 && b->node != NULL;
}

/* The ready partitions, in s->ready from s->turn on; their count. */
static int
gather(Broker *b, FetchSession *s)
{
	int64_t		now = mq_now_us();
	int			n = 0;
	Part	   *p;

	for (p = b->parts; p; p = p->next)
		if (ready(b, s, p, now))
		{
			if (n == s->cap)
			{
				s->cap = s->cap ? 2 * s->cap : 16;
				s->ready = mq_realloc(s->ready, sizeof(Part *) * s->cap);
				s->sent = mq_realloc(s->sent, sizeof(Sent) * s->cap);
			}
			s->ready[n++] = p;
		}
	/* turn the order: the partitions a capped answer left out come first next */
	if (n > 1 && s->turn % (unsigned) n != 0)
	{
		Part	  **copy = mq_malloc(sizeof(Part *) * n);
		int			r = (int) (s->turn % (unsigned) n);

		memcpy(copy, s->ready, sizeof(Part *) * n);
		for (int i = 0; i < n; i++)
			s->ready[i] = copy[(i + r) % n];
		free(copy);
	}
	s->turn++;
	return n;
}

/* The connection failed (what, and why): drop it, back off. */
static void
lose_conn(Broker *b, FetchSession *s, const char *what, const char *why)
{
	int			pause = mq_retry_failed(&s->retry, &b->policy);

	mq_log_warning("%s leader %d's node: %s; reconnecting in %d ms", what, s->leader, why, pause);
	if (s->conn)
		PQfinish(s->conn);
	s->conn = NULL;
}

static bool
ensure_conn(Broker *b, FetchSession *s)
{
	MqError		err = MQ_ERROR_INIT;

	if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
		return true;
	if (s->conn)
		PQfinish(s->conn);
	s->conn = NULL;
	if (!mq_retry_due(&s->retry))
		return false;
	s->conn = mq_connect_policy(s->conninfo, "mq-broker follower", &b->policy, &err);
	if (s->conn == NULL || !leader_setup_conn(b, s->conn, &err))
	{
		lose_conn(b, s, "cannot connect to fetch from", err.message);
		mq_error_free(&err);
		return false;
	}
	mq_retry_succeeded(&s->retry);
	return true;
}

/* mq.replica_fetch_commit's arguments for the n partitions in s->ready, in binary */
static bool
send_fetch(Broker *b, FetchSession *s, int n, MqError *err)
{
	static const Oid types[5] = {MQ_TEXTARRAYOID, MQ_INT4ARRAYOID, MQ_INT4ARRAYOID,
				MQ_INT8ARRAYOID, MQ_INT8ARRAYOID};
	MqArray		a[5];
	MqParams	prm;
	const char *bytes;
	int			len;
	bool		ok;

	mq_array_init(&a[0], MQ_TEXTOID);
	mq_array_init(&a[1], MQ_INT4OID);
	mq_array_init(&a[2], MQ_INT4OID);
	mq_array_init(&a[3], MQ_INT8OID);
	mq_array_init(&a[4], MQ_INT8OID);
	for (int i = 0; i < n; i++)
	{
		const Part *p = s->ready[i];

		mq_array_add(&a[0], p->topic, strlen(p->topic));
		mq_array_add_int32(&a[1], p->partition);
		mq_array_add_int32(&a[2], p->applied_epoch);
		mq_array_add_int64(&a[3], p->fetch_offset);
		if (p->offsets_version >= 0)
			mq_array_add_int64(&a[4], p->offsets_version);
		else
			mq_array_add(&a[4], NULL, 0);	/* unknown: ship them all */
	}
	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	for (int i = 0; i < 5; i++)
	{
		bytes = mq_array_bytes(&a[i], &len);
		mq_param_binary(&prm, types[i], bytes, len);
	}
	mq_param_int(&prm, MQ_INT4OID, b->cfg->fetch_max_records);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->fetch_wait_ms);
	ok = mq_send(s->conn, "CALL mq.replica_fetch_commit($1, $2, $3, $4, $5, $6, $7, $8)", &prm, 1, err);
	for (int i = 0; i < 5; i++)
		mq_array_free(&a[i]);
	return ok;
}

/* Send s's next fetch, with every partition ready now; none: nothing. */
static void
session_send(Broker *b, FetchSession *s)
{
	MqError		err = MQ_ERROR_INIT;
	int			n;

	if (s->in_flight || (n = gather(b, s)) == 0 || !ensure_conn(b, s))
		return;
	if (!send_fetch(b, s, n, &err))
	{
		lose_conn(b, s, "cannot send a fetch to", err.message);
		mq_error_free(&err);
		return;
	}
	for (int i = 0; i < n; i++)
	{
		Part	   *p = s->ready[i];

		p->in_flight = true;
		p->session = s;
		p->sent_index = i;
		s->sent[i].topic = mq_strdup(p->topic);
		s->sent[i].partition = p->partition;
		s->sent[i].epoch = p->applied_epoch;
	}
	s->nsent = n;
	s->in_flight = true;
	s->cancelled = false;
}

void
fetch_session_want(Broker *b, Part *p)
{
	FetchSession *s;

	if (p->in_flight || p->leader_conninfo == NULL)
		return;
	s = session_for(b, p);
	if (!s->in_flight)
		session_send(b, s);
	else if (!s->cancelled && s->conn)
	{
		/* a long poll without p: end it, so that the next fetch has p */
		(void) mq_cancel_bounded(s->conn, 0);
		s->cancelled = true;
	}
}

/* Element k of the answer: partition k's batch, or its SQLSTATE and message. */
static void
take_element(Broker *b, Part *p, const char *batch, int blen, const char *state, int slen,
			 const char *msg, int mlen)
{
	MqError		err = MQ_ERROR_INIT;

	if (state == NULL)
	{
		if (batch)
			follower_take_batch(b, p, batch, blen);
		return;
	}
	if (msg == NULL)
		mlen = 0;
	snprintf(err.sqlstate, sizeof(err.sqlstate), "%.*s", slen, state);
	err.message = mq_malloc((size_t) mlen + 1);
	memcpy(err.message, msg ? msg : "", mlen);
	err.message[mlen] = '\0';
	follower_take_error(b, p, &err);
	mq_error_free(&err);
}

/*
 * mq.replica_fetch_commit's answer: one row of four binary arrays (each
 * partition's index among those sent, its batch, its SQLSTATE, its
 * message), walked in step.  False: not of that shape.
 */
static bool
take_answer(Broker *b, Part **parts, int n, const PGresult *res)
{
	MqArrayReader r[4];
	const char *v[4];
	int			len[4];

	if (PQntuples(res) != 1 || PQnfields(res) != 4)
		return false;
	for (int c = 0; c < 4; c++)
		if (!PQgetisnull(res, 0, c) && !mq_array_read(&r[c], PQgetvalue(res, 0, c), PQgetlength(res, 0, c)))
			return false;
	if (PQgetisnull(res, 0, 0))
		return true;			/* no partition answered */
	while (mq_array_next(&r[0], &v[0], &len[0]))
	{
		int			k = len[0] == 4 ? (int) mq_int32_at(v[0]) : 0;
		Part	   *p = k >= 1 && k <= n ? parts[k - 1] : NULL;

		for (int c = 1; c < 4; c++)
			if (PQgetisnull(res, 0, c) || !mq_array_next(&r[c], &v[c], &len[c]))
				v[c] = NULL, len[c] = -1;
		if (p)					/* NULL: gone, stopped or in another epoch meanwhile */
			take_element(b, p, v[1], len[1], v[2], len[2], v[3], len[3]);
	}
	return true;
}

/* The fetch failed as a whole: each of its partitions hears of it. */
static void
take_failure(Broker *b, FetchSession *s, Part **parts, int n, const MqError *err)
{
	if (err->connection_lost)
	{
		lose_conn(b, s, "lost the fetch connection to", err->message);
		return;
	}
	if (mq_error_is(err, SQLSTATE_QUERY_CANCELED))
		return;					/* cancelled for a partition that joins: fetch again */
	for (int i = 0; i < n; i++)
		if (parts[i])
			follower_take_error(b, parts[i], err);
}

/*
 * The partitions of the fetch that just ended, in the order sent (NULL:
 * gone, stopped meanwhile, or in another epoch); out of the fetch now.
 * One pass over the broker's partitions: each still in this fetch is
 * released from it and knows its place in it (sent_index), checked
 * against the name sent.  (Finding each by name was a pass per
 * partition: at 272 partitions a session, the follower brokers' largest
 * cost.)
 */
static Part **
take_back(Broker *b, FetchSession *s)
{
	Part	  **parts = mq_malloc0(sizeof(Part *) * (s->nsent > 0 ? s->nsent : 1));

	for (Part *p = b->parts; p; p = p->next)
	{
		int			i = p->sent_index;

		if (!p->in_flight || p->session != s)
			continue;
		p->in_flight = false;
		p->session = NULL;
		if (i >= 0 && i < s->nsent && p->partition == s->sent[i].partition &&
			strcmp(p->topic, s->sent[i].topic) == 0 && p->applied_epoch == s->sent[i].epoch)
			parts[i] = p;
	}
	for (int i = 0; i < s->nsent; i++)
		free(s->sent[i].topic);
	return parts;
}

void
fetch_session_readable(Broker *b, FetchSession *s)
{
	MqError		err = MQ_ERROR_INIT;
	bool		done;
	PGresult   *res = mq_collect(s->conn, &done, &err);
	Part	  **parts;
	int			n = s->nsent;

	if (!done)
		return;
	parts = take_back(b, s);
	s->in_flight = false;
	s->nsent = 0;
	if (res != NULL && !take_answer(b, parts, n, res))
	{
		err.message = mq_strdup("the answer was not one row of four arrays");
		PQclear(res);
		res = NULL;
	}
	if (res == NULL)
		take_failure(b, s, parts, n, &err);
	PQclear(res);
	mq_error_free(&err);
	free(parts);
	session_send(b, s);
}

/* loop.c's walk over the sessions: the first (s NULL) or the next */
FetchSession *
fetch_session_next(Broker *b, FetchSession *s)
{
	return s ? s->next : b->sessions;
}

/* the socket of s's fetch in flight, or -1 */
int
fetch_session_fd(const FetchSession *s)
{
	return s->in_flight && s->conn ? PQsocket(s->conn) : -1;
}

static void
session_free(FetchSession *s)
{
	if (s->conn)
		PQfinish(s->conn);
	for (int i = 0; i < s->nsent; i++)
		free(s->sent[i].topic);
	free(s->conninfo);
	free(s->ready);
	free(s->sent);
	free(s);
}

/* At the tick: close the sessions none of whose partitions follows their node. */
void
fetch_sessions_tidy(Broker *b)
{
	FetchSession **ss = &b->sessions;

	while (*ss)
	{
		FetchSession *s = *ss;
		bool		used = s->in_flight;

		for (Part *p = b->parts; p && !used; p = p->next)
			used = (p->state == PART_FOLLOWER_FETCH || p->state == PART_FOLLOWER_TRUNCATE) &&
				p->leader_conninfo && strcmp(p->leader_conninfo, s->conninfo) == 0;
		if (used)
		{
			ss = &s->next;
			continue;
		}
		*ss = s->next;
		session_free(s);
	}
}

/* Shutting down: every session goes. */
void
fetch_sessions_free(Broker *b)
{
	for (Part *p = b->parts; p; p = p->next)
		p->in_flight = false, p->session = NULL;
	while (b->sessions)
	{
		FetchSession *s = b->sessions;

		b->sessions = s->next;
		session_free(s);
	}
}
