/*-------------------------------------------------------------------------
 *
 * broker.c
 *	  mq-broker's control loop: its connections to its own data node and to
 *	  the coordinator, liveness, elections, and a leader's duties (ISR
 *	  shrink and expansion).  Following is in follower.c.
 *
 * Every tick (tick.ms) the broker makes sure both connections are up,
 * reads the partitions it holds a replica of from the coordinator, and
 * moves each one's state machine one step (see broker.h).
 *
 * Liveness: the coordinator session holds the advisory lock
 * (broker_lock_class, broker id) and heartbeats.  A broker that loses its
 * node gives up its liveness lock and every leadership lock at once, so
 * the other brokers elect new leaders and drop it from the ISR; when it
 * loses the coordinator it resigns every leadership on its node (produce
 * is refused from then on), because it can no longer prove it leads.
 *
 * Elections: a broker that finds a partition's leadership lock free (the
 * leader's session ended or it gave the lock up) takes it, and
 * mq_coord.elect checks it is in the ISR, bumps the leader epoch and
 * records it, in one transaction.  A paused leader keeps its lock, so a
 * broker that sees the leader's heartbeat older than session.timeout.ms
 * ends that session (mq_coord.fence_broker); the data nodes refuse
 * whatever the paused broker does afterwards by epoch.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "broker.h"
#include "util.h"

static int	log_broker_id = -1;

void
broker_log(const char *level, const char *fmt,...)
{
	va_list		ap;
	struct timeval tv;
	struct tm	tm;
	char		ts[32];

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s.%03d mq-broker[%d] %s: ", ts, (int) (tv.tv_usec / 1000),
			log_broker_id, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static void
log_error(const char *what, const MqError *err)
{
	broker_log("error", "%s: %s%s%s%s", what, err->message ? err->message : "unknown error",
			   err->sqlstate[0] ? " [SQLSTATE " : "", err->sqlstate, err->sqlstate[0] ? "]" : "");
}

const char *
part_label(const Part *p)
{
	static char buf[300];

	snprintf(buf, sizeof(buf), "\"%s\" partition %d", p->topic, p->partition);
	return buf;
}

/* ---------------------------------------------------------------------
 * Connections
 * --------------------------------------------------------------------- */

PGresult *
node_exec(Broker *b, const char *sql, const MqParams *params, int fmt, MqError *err)
{
	PGresult   *res;

	if (b->node == NULL)
	{
		mq_error_free(err);
		err->message = mq_strdup("no connection to the node");
		err->connection_lost = true;
		return NULL;
	}
	res = mq_exec_timeout(b->node, sql, params, fmt, b->cfg->node_timeout_ms, err);
	if (res == NULL && (err->connection_lost || PQstatus(b->node) != CONNECTION_OK))
		broker_node_lost(b, err);
	return res;
}

/*
 * The node's connection is idle between ticks, so when it turns readable
 * the server spoke on its own: almost always to say it is going away
 * (FATAL, then EOF).  main.c watches it, so that a leader whose node dies
 * gives up leadership and liveness at once instead of at its next tick.
 */
void
broker_node_readable(Broker *b)
{
	PGresult   *res;

	if (b->node == NULL)
		return;
	if (!PQconsumeInput(b->node) || PQstatus(b->node) != CONNECTION_OK)
	{
		MqError		err = MQ_ERROR_INIT;

		err.message = mq_strdup(PQerrorMessage(b->node));
		err.connection_lost = true;
		broker_node_lost(b, &err);
		mq_error_free(&err);
		return;
	}
	/* nothing is in flight: whatever arrived is not for a statement of ours */
	while (!PQisBusy(b->node) && (res = PQgetResult(b->node)) != NULL)
		PQclear(res);
}

static void coord_lost(Broker *b, const MqError *err);

static PGresult *
coord_exec(Broker *b, const char *sql, const MqParams *params, MqError *err)
{
	PGresult   *res;

	if (b->coord == NULL)
	{
		mq_error_free(err);
		err->message = mq_strdup("no connection to the coordinator");
		err->connection_lost = true;
		return NULL;
	}
	res = mq_exec_timeout(b->coord, sql, params, 0, b->cfg->coordinator_timeout_ms, err);
	if (res == NULL && (err->connection_lost || PQstatus(b->coord) != CONNECTION_OK))
		coord_lost(b, err);
	return res;
}

/* Give up the leadership lock of one partition (no-op when not held). */
static void
release_lock(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	if (!p->lock_held)
		return;
	p->lock_held = false;
	if (b->coord == NULL)
		return;
	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, p->lock_id);
	res = coord_exec(b, "SELECT pg_catalog.pg_advisory_unlock(mq_coord.partition_lock_class(), $1)",
					 &prm, &err);
	PQclear(res);
	mq_error_free(&err);
}

static void
drop_roles(Broker *b, bool release_locks)
{
	for (Part *p = b->parts; p; p = p->next)
	{
		follower_stop(p);
		p->state = PART_NONE;
		p->applied_epoch = -1;
		if (release_locks)
			release_lock(b, p);
		else
			p->lock_held = false;
	}
}

void
broker_node_lost(Broker *b, const MqError *err)
{
	int			led = 0;

	if (b->node == NULL)
		return;
	for (Part *p = b->parts; p; p = p->next)
		led += (p->state == PART_LEADER);
	log_error("lost the connection to the node", err);
	PQfinish(b->node);
	b->node = NULL;
	b->node_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
	/* leadership and liveness go at once: others elect and shrink us out */
	drop_roles(b, true);
	if (b->coord != NULL && b->live)
	{
		MqParams	prm;
		MqError		e2 = MQ_ERROR_INIT;
		PGresult   *res;

		mq_params_init(&prm);
		mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
		res = coord_exec(b, "SELECT pg_catalog.pg_advisory_unlock(mq_coord.broker_lock_class(), $1)",
						 &prm, &e2);
		PQclear(res);
		mq_error_free(&e2);
		b->live = false;
	}
	broker_log("warning", "gave up leadership of %d partition(s) and liveness; "
			   "reconnecting to the node every %d ms", led, b->cfg->retry_ms);
}

static void
coord_lost(Broker *b, const MqError *err)
{
	MqError		e2 = MQ_ERROR_INIT;
	PGresult   *res;

	if (b->coord == NULL)
		return;
	log_error("lost the connection to the coordinator", err);
	PQfinish(b->coord);
	b->coord = NULL;
	b->live = false;
	b->coord_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
	drop_roles(b, false);		/* the locks went with the session */
	/* without the coordinator we cannot prove we lead: stop taking produce */
	res = node_exec(b, "SELECT mq.replica_resign_all()", NULL, 0, &e2);
	if (res)
		broker_log("warning", "resigned %s leadership(s) on the node; reconnecting to the coordinator every %d ms",
				   PQgetvalue(res, 0, 0), b->cfg->retry_ms);
	PQclear(res);
	mq_error_free(&e2);
}

static void
ensure_node(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	static const char *const keys[] = {"connect_timeout", NULL};
	static const char *const vals[] = {"2", NULL};

	if (b->node != NULL || mq_now_us() < b->node_retry_us)
		return;
	b->node = mq_connect_with(b->cfg->node, "mq-broker", keys, vals, &err);
	if (b->node == NULL)
	{
		b->node_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
		log_error("cannot connect to the node; retrying", &err);
		mq_error_free(&err);
		return;
	}
	/*
	 * Our appends must be durable before our next fetch offset acknowledges
	 * them to the leader: with the server's synchronous_commit = off, a
	 * crash of this node would take back records the leader already counted
	 * as replicated here (test/t/105 loses acknowledged records without
	 * this).  'local' is enough; a stricter setting is kept.
	 */
	if (!mq_command(b->node, "SELECT CASE WHEN pg_catalog.current_setting('synchronous_commit') = 'off' "
					"THEN pg_catalog.set_config('synchronous_commit', 'local', false) END", &err))
	{
		log_error("cannot make the node session's commits durable", &err);
		mq_error_free(&err);
		PQfinish(b->node);
		b->node = NULL;
		b->node_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
		return;
	}
	/* whatever the node led before (say, before a crash) it does not lead now */
	res = node_exec(b, "SELECT mq.replica_resign_all()", NULL, 0, &err);
	if (res == NULL)
	{
		log_error("cannot resign old leaderships on the node", &err);
		mq_error_free(&err);
		return;
	}
	broker_log("info", "connected to the node %s; resigned %s old leadership(s); "
			   "partitions will follow the coordinator's leaders",
			   mq_conn_label(b->node), PQgetvalue(res, 0, 0));
	PQclear(res);

	/*
	 * From now on the node trusts its leaderships only while this session
	 * lives: if we die, clients of its partitions get not_leader at once
	 * instead of waiting for acknowledgements nobody will give.
	 */
	{
		MqParams	prm;

		mq_params_init(&prm);
		mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
		res = node_exec(b, "SELECT mq.replica_attach_broker($1)", &prm, 0, &err);
		if (res == NULL)
		{
			log_error("cannot attach to the node", &err);
			mq_error_free(&err);
			if (b->node)
			{
				PQfinish(b->node);
				b->node = NULL;
			}
			b->node_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
			return;
		}
		PQclear(res);
	}
	drop_roles(b, true);
}

static void
ensure_coordinator(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	MqParams	prm;
	PGresult   *res;

	/* TCP keepalives, so that a vanished peer's session is noticed in seconds */
	static const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
	"keepalives_interval", "keepalives_count", NULL};
	static const char *const vals[] = {"2", "1", "2", "1", "2", NULL};

	if (b->coord == NULL)
	{
		if (mq_now_us() < b->coord_retry_us)
			return;
		b->coord = mq_connect_with(b->cfg->coordinator, "mq-broker", keys, vals, &err);
		if (b->coord == NULL)
		{
			b->coord_retry_us = mq_now_us() + (int64_t) b->cfg->retry_ms * 1000;
			log_error("cannot connect to the coordinator; retrying", &err);
			mq_error_free(&err);
			return;
		}
		/* the server side of the same: it frees our locks if we vanish */
		if (!mq_command(b->coord, "SELECT pg_catalog.set_config('tcp_keepalives_idle', '2', false), "
						"pg_catalog.set_config('tcp_keepalives_interval', '1', false), "
						"pg_catalog.set_config('tcp_keepalives_count', '2', false), "
						"pg_catalog.set_config('statement_timeout', '10s', false)", &err))
		{
			log_error("cannot set up the coordinator session", &err);
			mq_error_free(&err);
		}
		broker_log("info", "connected to the coordinator %s", mq_conn_label(b->coord));
	}
	if (b->live || b->node == NULL)
		return;					/* without a node we are no live replica */

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT pg_catalog.pg_try_advisory_lock(mq_coord.broker_lock_class(), $1)",
					 &prm, &err);
	if (res == NULL)
	{
		mq_error_free(&err);
		return;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
	{
		PQclear(res);
		broker_log("warning", "broker id %d is held by another session (another broker, or our old "
				   "session not yet gone); retrying", b->cfg->broker_id);
		return;
	}
	PQclear(res);
	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->node_advertised);
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->node_name ? b->cfg->node_name : mq_conn_label(b->node));
	res = coord_exec(b, "SELECT mq_coord.register_broker($1, $2, $3)", &prm, &err);
	if (res == NULL)
	{
		log_error("cannot register with the coordinator", &err);
		mq_error_free(&err);
		return;
	}
	PQclear(res);
	b->live = true;
	broker_log("info", "registered as broker %d (liveness lock held); reading assignments",
			   b->cfg->broker_id);
}

/* ---------------------------------------------------------------------
 * Assignments
 * --------------------------------------------------------------------- */

static int
parse_int_array(const char *s, int *out, int max)
{
	int			n = 0;

	while (*s && n < max)
	{
		char	   *end;
		long		v;

		while (*s == '{' || *s == ',' || *s == ' ')
			s++;
		if (*s == '}' || *s == '\0')
			break;
		v = strtol(s, &end, 10);
		if (end == s)
			break;
		out[n++] = (int) v;
		s = end;
	}
	return n;
}

static bool
int_in(int v, const int *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return true;
	return false;
}

static char *
replace_str(char *old, const char *s)
{
	if (old && s && strcmp(old, s) == 0)
		return old;
	free(old);
	return s ? mq_strdup(s) : NULL;
}

static Part *
find_part(Broker *b, const char *topic, int partition)
{
	for (Part *p = b->parts; p; p = p->next)
		if (p->partition == partition && strcmp(p->topic, topic) == 0)
			return p;
	return NULL;
}

static bool
read_assignments(Broker *b)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	Part	  **pp;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT mq_coord.heartbeat($1)", &prm, &err);
	if (res == NULL)
	{
		mq_error_free(&err);
		return false;
	}
	PQclear(res);
	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
	res = coord_exec(b, "SELECT b.broker_id FROM mq_coord.broker b "
					 "WHERE mq_coord.broker_alive(b.broker_id, $1)", &prm, &err);
	if (res == NULL)
	{
		mq_error_free(&err);
		return false;
	}
	b->nlive = 0;
	for (int i = 0; i < PQntuples(res) && b->nlive < 64; i++)
		b->live_brokers[b->nlive++] = atoi(PQgetvalue(res, i, 0));
	PQclear(res);

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT topic, partition, partitions, config, lock_id, replicas, "
					 "coalesce(leader, -1), leader_epoch, isr, leader_conninfo, leader_name "
					 "FROM mq_coord.assignments($1)", &prm, &err);
	if (res == NULL)
	{
		mq_error_free(&err);
		return false;
	}
	for (Part *p = b->parts; p; p = p->next)
		p->seen = false;
	for (int i = 0; i < PQntuples(res); i++)
	{
		const char *topic = PQgetvalue(res, i, 0);
		int			partition = atoi(PQgetvalue(res, i, 1));
		Part	   *p = find_part(b, topic, partition);

		if (p == NULL)
		{
			p = mq_malloc0(sizeof(Part));
			p->topic = mq_strdup(topic);
			p->partition = partition;
			p->state = PART_NONE;
			p->applied_epoch = -1;
			p->m_log_end = p->m_hwm = p->m_leader_log_end = -1;
			p->next = b->parts;
			b->parts = p;
			broker_log("info", "%s: assigned a replica; will create it on the node if missing",
					   part_label(p));
		}
		p->seen = true;
		p->partitions = atoi(PQgetvalue(res, i, 2));
		p->config = replace_str(p->config, PQgetvalue(res, i, 3));
		p->lock_id = atoi(PQgetvalue(res, i, 4));
		p->nreplicas = parse_int_array(PQgetvalue(res, i, 5), p->replicas, MAX_REPLICAS);
		p->leader = atoi(PQgetvalue(res, i, 6));
		p->leader_epoch = atoi(PQgetvalue(res, i, 7));
		p->nisr = parse_int_array(PQgetvalue(res, i, 8), p->isr, MAX_REPLICAS);
		p->leader_conninfo = replace_str(p->leader_conninfo,
										 PQgetisnull(res, i, 9) ? NULL : PQgetvalue(res, i, 9));
		p->leader_name = replace_str(p->leader_name,
									 PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10));
	}
	PQclear(res);

	/* partitions no longer assigned (topic dropped): forget them */
	pp = &b->parts;
	while (*pp)
	{
		Part	   *p = *pp;

		if (p->seen)
		{
			pp = &p->next;
			continue;
		}
		broker_log("info", "%s: no longer assigned; dropping its state", part_label(p));
		follower_stop(p);
		release_lock(b, p);
		*pp = p->next;
		free(p->topic);
		free(p->config);
		free(p->leader_conninfo);
		free(p->leader_name);
		free(p->fconn_info);
		free(p);
	}
	return true;
}

/* Create the topic on the node the first time we see one of its replicas. */
static bool
ensure_topic(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	bool		exists;

	if (p->applied_epoch >= 0 || p->state != PART_NONE)
		return true;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	res = node_exec(b, "SELECT EXISTS (SELECT 1 FROM mq.topics WHERE topic = $1)", &prm, 0, &err);
	if (res == NULL)
	{
		mq_error_free(&err);
		return false;
	}
	exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (exists)
		return true;
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partitions);
	mq_param_text(&prm, MQ_JSONBOID, p->config);
	res = node_exec(b, "SELECT mq.create_topic($1, $2, $3)", &prm, 0, &err);
	if (res == NULL && !mq_error_is(&err, MQ_SQLSTATE_TOPIC_EXISTS))
	{
		log_error("cannot create the topic on the node", &err);
		mq_error_free(&err);
		return false;
	}
	PQclear(res);
	mq_error_free(&err);
	broker_log("info", "created topic \"%s\" (%d partitions) on the node", p->topic, p->partitions);
	return true;
}

/* ---------------------------------------------------------------------
 * Elections
 * --------------------------------------------------------------------- */

static const char *
int_array_text(const int *a, int n, char *buf, size_t size)
{
	size_t		len = 0;

	len += snprintf(buf + len, size - len, "{");
	for (int i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%d", i ? "," : "", a[i]);
	if (len < size)
		snprintf(buf + len, size - len, "}");
	return buf;
}

static bool
broker_is_live(Broker *b, int id)
{
	return int_in(id, b->live_brokers, b->nlive);
}

/*
 * Try to become the leader: take the partition's lock (free means the
 * leader is gone or gave up), get elected, and make the node the leader.
 */
static void
try_elect(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	int			epoch;
	int			prev = p->leader;
	char		rbuf[128],
				ibuf[128];
	int			me = b->cfg->broker_id;

	if (!p->lock_held)
	{
		mq_params_init(&prm);
		mq_param_int(&prm, MQ_INT4OID, p->lock_id);
		res = coord_exec(b, "SELECT pg_catalog.pg_try_advisory_lock(mq_coord.partition_lock_class(), $1)",
						 &prm, &err);
		if (res == NULL)
		{
			mq_error_free(&err);
			return;
		}
		p->lock_held = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		PQclear(res);
		if (!p->lock_held)
		{
			/* held: by a live leader, or by a paused one we must fence */
			if (p->leader >= 0 && p->leader != me && !broker_is_live(b, p->leader))
			{
				mq_params_init(&prm);
				mq_param_int(&prm, MQ_INT4OID, p->leader);
				mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
				mq_param_int(&prm, MQ_INT4OID, me);
				res = coord_exec(b, "SELECT mq_coord.fence_broker($1, $2, $3)", &prm, &err);
				if (res && strcmp(PQgetvalue(res, 0, 0), "t") == 0)
					broker_log("warning", "%s: leader broker %d missed its heartbeats for %d ms; "
							   "ended its coordinator session so that an election can run",
							   part_label(p), p->leader, b->cfg->session_timeout_ms);
				PQclear(res);
				mq_error_free(&err);
			}
			return;
		}
	}

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, me);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
	res = coord_exec(b, "SELECT mq_coord.elect($1, $2, $3, $4), isr FROM mq_coord.partition "
					 "WHERE topic = $1 AND partition = $2", &prm, &err);
	if (res == NULL)
	{
		log_error("election failed", &err);
		mq_error_free(&err);
		release_lock(b, p);
		return;
	}
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		release_lock(b, p);		/* not eligible: leave it to an ISR member */
		return;
	}
	epoch = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	/* the ISR as elect left it (unclean election resets it to us) */
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	res = coord_exec(b, "SELECT isr FROM mq_coord.partition WHERE topic = $1 AND partition = $2",
					 &prm, &err);
	if (res)
	{
		p->nisr = parse_int_array(PQgetvalue(res, 0, 0), p->isr, MAX_REPLICAS);
		PQclear(res);
	}
	mq_error_free(&err);

	follower_stop(p);
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, epoch);
	mq_param_int(&prm, MQ_INT4OID, me);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(p->replicas, p->nreplicas, rbuf, sizeof(rbuf)));
	/* the ISR as elect left it, not as we read it before */
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(p->isr, p->nisr, ibuf, sizeof(ibuf)));
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->node_name ? b->cfg->node_name : "");
	res = node_exec(b, "SELECT mq.replica_become_leader($1, $2, $3, $4, $5, $6, $7)", &prm, 0, &err);
	if (res == NULL)
	{
		log_error("elected, but the node refused to lead; giving the leadership up", &err);
		mq_error_free(&err);
		release_lock(b, p);
		return;
	}
	broker_log("info", "%s: elected leader in epoch %d (previous leader %d, ISR %s, log end %s); "
			   "the node takes produce now", part_label(p), epoch, prev, ibuf, PQgetvalue(res, 0, 0));
	PQclear(res);
	p->leader = me;
	p->leader_epoch = epoch;
	p->applied_epoch = epoch;
	p->state = PART_LEADER;
	p->leader_since_us = mq_now_us();
	p->nfollowers = 0;
	b->stats.elections++;
}

/* ---------------------------------------------------------------------
 * Leader duties: the ISR
 * --------------------------------------------------------------------- */

static bool
set_local_isr(Broker *b, Part *p, const int *isr, int n)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	char		buf[128];

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(isr, n, buf, sizeof(buf)));
	res = node_exec(b, "SELECT mq.replica_set_isr($1, $2, $3, $4)", &prm, 0, &err);
	if (res == NULL)
	{
		log_error("cannot set the ISR on the node", &err);
		mq_error_free(&err);
		return false;
	}
	PQclear(res);
	return true;
}

static bool
set_coordinator_isr(Broker *b, Part *p, const int *isr, int n)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	char		buf[128];
	bool		ok;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(isr, n, buf, sizeof(buf)));
	res = coord_exec(b, "SELECT mq_coord.alter_isr($1, $2, $3, $4, $5)", &prm, &err);
	if (res == NULL)
	{
		log_error("cannot change the ISR on the coordinator", &err);
		mq_error_free(&err);
		return false;
	}
	ok = !PQgetisnull(res, 0, 0);
	PQclear(res);
	if (!ok)
	{
		broker_log("warning", "%s: the coordinator refused an ISR change for epoch %d: we were deposed; "
				   "resigning", part_label(p), p->applied_epoch);
		p->state = PART_NONE;
		p->applied_epoch = -1;
		release_lock(b, p);
	}
	else
	{
		memcpy(p->isr, isr, sizeof(int) * n);
		p->nisr = n;
	}
	return ok;
}

static void
leader_duties(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	int			isr[MAX_REPLICAS];
	int			n = 0;
	int			nshrink = 0;
	int			grow[MAX_REPLICAS],
				ngrow = 0;
	char		buf[128];

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	res = node_exec(b, "SELECT replica_id, in_isr, coalesce(log_end_offset, -1), lag_ms, "
					"leader_log_end_offset, high_watermark, coalesce(epoch_start_offset, 0) "
					"FROM mq.replica_leader_state($1, $2, $3)", &prm, 0, &err);
	if (res == NULL)
	{
		if (!err.connection_lost)
		{
			log_error("the node no longer leads as we think; resigning", &err);
			p->state = PART_NONE;
			p->applied_epoch = -1;
			release_lock(b, p);
		}
		mq_error_free(&err);
		return;
	}
	isr[n++] = b->cfg->broker_id;
	p->nfollowers = 0;
	for (int i = 0; i < PQntuples(res); i++)
	{
		int			id = atoi(PQgetvalue(res, i, 0));
		bool		in_isr = strcmp(PQgetvalue(res, i, 1), "t") == 0;
		long long	leo = atoll(PQgetvalue(res, i, 2));
		long long	lag = atoll(PQgetvalue(res, i, 3));
		long long	lleo = atoll(PQgetvalue(res, i, 4));
		long long	hwm = atoll(PQgetvalue(res, i, 5));
		long long	start = atoll(PQgetvalue(res, i, 6));
		bool		live = broker_is_live(b, id);

		/* for metrics.c */
		p->m_log_end = lleo;
		p->m_hwm = hwm;
		if (p->nfollowers < MAX_REPLICAS)
		{
			p->followers[p->nfollowers].id = id;
			p->followers[p->nfollowers].in_isr = in_isr;
			p->followers[p->nfollowers].log_end = leo;
			p->followers[p->nfollowers].lag_ms = lag;
			p->nfollowers++;
		}

		if (in_isr)
		{
			const char *why = NULL;

			if (!live)
				why = "its broker is not live";
			else if (lag > b->cfg->lag_time_max_ms)
				why = "it has not caught up within replica.lag.time.max.ms";
			else if (b->cfg->lag_max_messages > 0 && lleo - leo > b->cfg->lag_max_messages)
				why = "it lags more than replica.lag.max.messages";
			if (why)
			{
				broker_log("warning", "%s: removing replica %d from the ISR: %s (log end %lld, leader's %lld, "
						   "last caught up %lld ms ago)", part_label(p), id, why, leo, lleo, lag);
				nshrink++;
			}
			else
				isr[n++] = id;
		}
		else if (live && leo >= 0 && leo >= hwm && leo >= start && lag <= b->cfg->lag_time_max_ms)
		{
			broker_log("info", "%s: replica %d caught up (log end %lld, high watermark %lld); adding it to the ISR",
					   part_label(p), id, leo, hwm);
			grow[ngrow++] = id;
		}
	}
	PQclear(res);

	if (nshrink > 0)
	{
		/* shrink: the coordinator first, then the node */
		if (!set_coordinator_isr(b, p, isr, n))
			return;
		if (!set_local_isr(b, p, isr, n))
			return;
		b->stats.isr_shrinks++;
		broker_log("info", "%s: ISR is now %s", part_label(p), int_array_text(isr, n, buf, sizeof(buf)));
	}
	if (ngrow > 0)
	{
		/* expansion: the node first (maximal ISR), then the coordinator */
		for (int i = 0; i < ngrow; i++)
			isr[n++] = grow[i];
		if (!set_local_isr(b, p, isr, n))
			return;
		if (!set_coordinator_isr(b, p, isr, n))
			return;
		b->stats.isr_expands++;
		broker_log("info", "%s: ISR is now %s", part_label(p), int_array_text(isr, n, buf, sizeof(buf)));
	}
}

/* ---------------------------------------------------------------------
 * The tick
 * --------------------------------------------------------------------- */

/* ---------------------------------------------------------------------
 * Preferred leaders
 *
 * The first replica of a partition's placement is its preferred leader:
 * create_topic spreads preferred leaders over the brokers, so leadership
 * (and produce load) spreads with them.  After a failover leadership sits
 * elsewhere; once the preferred replica has been back in the ISR for
 * auto.leader.rebalance.delay.ms, the leader hands it over (Kafka's
 * auto.leader.rebalance.enable): it resigns on its node and gives up the
 * partition's lock, and the preferred replica, which tries that lock every
 * tick while it is in the ISR and not leading, wins the election.  Only
 * records beyond the preferred replica's log end are cut from the old
 * leader, and those were never acknowledged with acks=all (the high
 * watermark is the minimum over the ISR, which holds the preferred one).
 * --------------------------------------------------------------------- */

static int
preferred_leader(const Part *p)
{
	return p->nreplicas > 0 ? p->replicas[0] : -1;
}

/* Is the preferred replica (not us) alive and in the ISR? */
static bool
preferred_ready(Broker *b, const Part *p)
{
	int			pref = preferred_leader(p);

	return pref >= 0 && pref != b->cfg->broker_id &&
		int_in(pref, p->isr, p->nisr) && broker_is_live(b, pref);
}

/* The leader's side: hand leadership to the preferred replica when due. */
static void
maybe_hand_over(Broker *b, Part *p)
{
	MqParams	prm;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	int64_t		now = mq_now_us();

	if (!b->cfg->auto_rebalance || !preferred_ready(b, p))
	{
		p->preferred_ready_since_us = 0;
		return;
	}
	if (p->preferred_ready_since_us == 0)
		p->preferred_ready_since_us = now;
	if (now - p->preferred_ready_since_us < (int64_t) b->cfg->rebalance_delay_ms * 1000)
		return;

	/* resign in our epoch: produce is refused and acks=all waiters fail over */
	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	res = node_exec(b, "SELECT mq.replica_become_follower($1, $2, $3, NULL, NULL)", &prm, 0, &err);
	if (res == NULL)
	{
		log_error("cannot resign to hand leadership to the preferred replica", &err);
		mq_error_free(&err);
		return;
	}
	PQclear(res);
	broker_log("info", "%s: the preferred leader, broker %d, has been in the ISR for %d ms; "
			   "resigned epoch %d and released the leadership for it", part_label(p),
			   preferred_leader(p), b->cfg->rebalance_delay_ms, p->applied_epoch);
	p->state = PART_NONE;
	p->applied_epoch = -1;
	p->preferred_ready_since_us = 0;
	b->stats.handovers++;
	release_lock(b, p);
	/* do not take it straight back: give the preferred replica its chance */
	p->hold_off_until_us = now + (int64_t) b->cfg->session_timeout_ms * 1000;
}

static void
step(Broker *b, Part *p)
{
	int			me = b->cfg->broker_id;
	bool		unclean;

	if (b->node == NULL || b->coord == NULL || !b->live)
		return;
	if (!ensure_topic(b, p))
		return;

	if (p->leader == me)
	{
		if (p->state == PART_LEADER && p->applied_epoch == p->leader_epoch && p->lock_held)
		{
			leader_duties(b, p);
			if (p->state == PART_LEADER)
				maybe_hand_over(b, p);
		}
		else if (mq_now_us() >= p->hold_off_until_us || !preferred_ready(b, p))
			try_elect(b, p);	/* e.g. restarted: re-elect to bump the epoch */
		return;
	}
	if (p->state == PART_LEADER)
	{
		broker_log("warning", "%s: the coordinator names broker %d leader in epoch %d; "
				   "we led epoch %d: becoming a follower", part_label(p), p->leader,
				   p->leader_epoch, p->applied_epoch);
		p->state = PART_NONE;
		release_lock(b, p);
	}
	unclean = strstr(p->config, "\"unclean.leader.election.enable\": true") != NULL;
	if (p->leader < 0 || !broker_is_live(b, p->leader))
	{
		/*
		 * Leaderless.  When the preferred replica is alive and in the ISR it
		 * runs for the election this tick: the others give it a few ticks,
		 * so that leadership starts (and returns) where placement wants it
		 * without a second change later.
		 */
		if (p->leaderless_since_us == 0)
			p->leaderless_since_us = mq_now_us();
		if ((int_in(me, p->isr, p->nisr) || unclean) &&
			(preferred_leader(p) == me || !preferred_ready(b, p) ||
			 mq_now_us() - p->leaderless_since_us > (int64_t) b->cfg->tick_ms * 3000))
			try_elect(b, p);
		if (p->state == PART_LEADER)
			return;
	}
	else
	{
		p->leaderless_since_us = 0;
		/* the preferred replica, back in the ISR, takes the lock when it is let go */
		if (b->cfg->auto_rebalance && preferred_leader(p) == me && int_in(me, p->isr, p->nisr))
		{
			try_elect(b, p);
			if (p->state == PART_LEADER)
				return;
		}
	}
	if (p->leader >= 0 && p->leader != me)
		follower_step(b, p);
}

void
broker_tick(Broker *b)
{
	log_broker_id = b->cfg->broker_id;
	ensure_node(b);
	ensure_coordinator(b);
	if (b->node == NULL || b->coord == NULL || !b->live)
		return;
	if (!read_assignments(b))
		return;
	for (Part *p = b->parts; p; p = p->next)
		step(b, p);
}

/* SIGTERM: resign every leadership on the node, then leave. */
void
broker_shutdown(Broker *b)
{
	int			n = 0;

	for (Part *p = b->parts; p; p = p->next)
	{
		follower_stop(p);
		n += (p->state == PART_LEADER);
	}
	if (b->node)
	{
		MqError		err = MQ_ERROR_INIT;
		PGresult   *res = node_exec(b, "SELECT mq.replica_resign_all()", NULL, 0, &err);

		PQclear(res);
		mq_error_free(&err);
	}
	if (b->coord)
		PQfinish(b->coord);		/* our locks go with the session */
	if (b->node)
		PQfinish(b->node);
	b->coord = b->node = NULL;
	broker_log("info", "shut down: resigned %d leadership(s) and released every lock", n);
}
