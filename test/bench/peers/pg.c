/*
 * pg.c
 *	  The peers benchmark's client for the systems that live in PostgreSQL,
 *	  over libpq, chosen by SYSTEM:
 *
 *	  mq        mq.send / mq.send_batch to partition 0 of a one-partition
 *	            topic; consume: mq.poll of group 'g' and mq.commit_polled in
 *	            one transaction
 *	  mq-async  the same with synchronous_commit = off in the session
 *	  mq-rf3    a topic of replication.factor 3 in a cluster of three nodes
 *	            and brokers (TARGET is the partition leader's node; the
 *	            script made the topic): CALL mq.produce with acks=all, which
 *	            returns once the in-sync replicas hold the records; consume:
 *	            mq.poll and mq.commit_polled in one transaction, then
 *	            mq.await_commit, which returns once the in-sync replicas
 *	            hold the committed offset
 *	  pgq       PgQ: pgq.insert_event; consume: pgq.next_batch,
 *	            pgq.get_batch_events and pgq.finish_batch of consumer 'g' in
 *	            one transaction (batches are what the ticker, pgqd, cut; with
 *	            no batch ready it sleeps 1 ms, as PgQ consumers poll)
 *	  plain     a table (id bigserial primary key, payload bytea): INSERT;
 *	            consume: DELETE ... WHERE id IN (SELECT ... ORDER BY id
 *	            LIMIT n FOR UPDATE SKIP LOCKED) RETURNING payload; for the
 *	            latency run the producer also NOTIFYs and the consumer
 *	            LISTENs and waits on its socket
 *
 * A batch is one statement with the values joined by newlines and split by
 * string_to_array on the server.  Every call is one transaction.  The
 * connection is the driver thread's own (peers.h); no locking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "peers.h"

typedef struct PgClient
{
	PGconn	   *conn;
	const PeerArgs *a;
	int			kind;			/* K_MQ, K_MQRF, K_PGQ, K_PLAIN */
	int			latency;
	char		sql[512];
	char	   *joined;			/* a batch's values, newline-separated */
}			PgClient;

enum
{
	K_MQ, K_MQRF, K_PGQ, K_PLAIN
};

static PGresult *
run(PgClient *c, const char *sql, int nparams, const char *const *params,
	int binary)
{
	PGresult   *r = PQexecParams(c->conn, sql, nparams, NULL, params, NULL, NULL,
								 binary);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		peer_die("%s: %s", sql, PQerrorMessage(c->conn));
	return r;
}

static void
run_clear(PgClient *c, const char *sql, int nparams, const char *const *params)
{
	PQclear(run(c, sql, nparams, params, 0));
}

static int
kind_of(const char *system)
{
	if (strcmp(system, "mq") == 0 || strcmp(system, "mq-async") == 0)
		return K_MQ;
	if (strcmp(system, "mq-rf3") == 0)
		return K_MQRF;
	if (strcmp(system, "pgq") == 0)
		return K_PGQ;
	if (strcmp(system, "plain") == 0)
		return K_PLAIN;
	peer_die("pg client: unknown system %s", system);
}

static void *
pg_open(const PeerArgs *a, int latency)
{
	PgClient *c = calloc(1, sizeof(PgClient));

	c->a = a;
	c->kind = kind_of(a->system);
	c->latency = latency;
	c->conn = PQconnectdb(a->target);
	if (PQstatus(c->conn) != CONNECTION_OK)
		peer_die("connection failed: %s", PQerrorMessage(c->conn));
	if (strcmp(a->system, "mq-async") == 0)
		run_clear(c, "SET synchronous_commit = off", 0, NULL);
	if (c->kind == K_PLAIN && latency)
	{
		snprintf(c->sql, sizeof(c->sql), "LISTEN \"%s\"", a->name);
		run_clear(c, c->sql, 0, NULL);
	}
	return c;
}

static void
pg_close(void *p)
{
	PgClient *c = p;

	PQfinish(c->conn);
	free(c->joined);
	free(c);
}

static void
pg_setup(const PeerArgs *a)
{
	PgClient *c = pg_open(a, 0);
	const char *p[1] = {a->name};

	if (c->kind == K_MQ)
		run_clear(c, "SELECT mq.create_topic($1, 1)", 1, p);
	else if (c->kind == K_MQRF)
		;						/* made by the script, on the coordinator */
	else if (c->kind == K_PGQ)
	{
		run_clear(c, "SELECT pgq.create_queue($1)", 1, p);
		run_clear(c, "SELECT pgq.register_consumer($1, 'g')", 1, p);
	}
	else
	{
		snprintf(c->sql, sizeof(c->sql),
				 "CREATE TABLE \"%s\" (id bigserial PRIMARY KEY, payload bytea NOT NULL)",
				 a->name);
		run_clear(c, c->sql, 0, NULL);
	}
	pg_close(c);
}

static const char *
produce_sql(PgClient *c, int batch)
{
	if (c->kind == K_MQ)
		return batch ? "SELECT count(*) FROM mq.send_batch($1, NULL, string_to_array($2, E'\\n')::bytea[], partition => 0)"
			: "SELECT 1 FROM mq.send($1, NULL::bytea, $2::bytea, partition => 0)";
	if (c->kind == K_MQRF)
		return batch ? "CALL mq.produce($1, NULL, string_to_array($2, E'\\n')::bytea[], 0, 'all')"
			: "CALL mq.produce($1, NULL, ARRAY[$2::bytea], 0, 'all')";
	if (c->kind == K_PGQ)
		return batch ? "SELECT count(pgq.insert_event($1, 'x', e)) FROM unnest(string_to_array($2, E'\\n')) e"
			: "SELECT pgq.insert_event($1, 'x', $2)";
	/* plain: the table name is ours (the script's), not user input */
	if (batch)
		snprintf(c->sql, sizeof(c->sql),
				 "INSERT INTO \"%s\" (payload) SELECT e::bytea FROM unnest(string_to_array($2, E'\\n')) e WHERE $1::text IS NOT NULL",
				 c->a->name);
	else if (c->latency)
		snprintf(c->sql, sizeof(c->sql),
				 "WITH i AS (INSERT INTO \"%s\" (payload) VALUES ($2::bytea) RETURNING 1) SELECT pg_notify($1::text, '') FROM i",
				 c->a->name);
	else
		snprintf(c->sql, sizeof(c->sql),
				 "INSERT INTO \"%s\" (payload) SELECT $2::bytea WHERE $1::text IS NOT NULL",
				 c->a->name);
	return c->sql;
}

static void
pg_produce(void *p, const char *const *values, int len, int n)
{
	PgClient *c = p;
	const char *params[2] = {c->a->name, values[0]};

	if (n > 1)
	{
		char	   *w;

		if (c->joined == NULL)
			c->joined = malloc((size_t) (len + 1) * 10000);
		w = c->joined;
		for (int i = 0; i < n; i++)
		{
			memcpy(w, values[i], len);
			w += len;
			*w++ = i + 1 < n ? '\n' : '\0';
		}
		params[1] = c->joined;
	}
	run_clear(c, produce_sql(c, n > 1), 2, params);
}

static int
deliver(PGresult *r, PeerRecordFn fn, void *arg)
{
	int			n = PQntuples(r);

	for (int i = 0; i < n; i++)
		fn(PQgetvalue(r, i, 0), PQgetlength(r, i, 0), arg);
	PQclear(r);
	return n;
}

static int
consume_mq(PgClient *c, int max, int wait_ms, PeerRecordFn fn, void *arg)
{
	char		maxs[16],
				waits[16];
	const char *p[3] = {c->a->name, maxs, waits};
	int			n;

	snprintf(maxs, sizeof(maxs), "%d", max);
	snprintf(waits, sizeof(waits), "%d", wait_ms);
	run_clear(c, "BEGIN", 0, NULL);
	n = deliver(run(c, "SELECT value FROM mq.poll('g', $1, $2::int, max_wait_ms => $3::int)",
					3, p, 1), fn, arg);
	if (n > 0)
		run_clear(c, "SELECT mq.commit_polled('g', $1)", 1, p);
	run_clear(c, "COMMIT", 0, NULL);
	if (n > 0 && c->kind == K_MQRF)
		run_clear(c, "SELECT mq.await_commit()", 0, NULL);
	return n;
}

static int
consume_pgq(PgClient *c, PeerRecordFn fn, void *arg)
{
	const char *p[1] = {c->a->name};
	PGresult   *r;
	char		batch[32];
	const char *b[1] = {batch};
	int			n;

	run_clear(c, "BEGIN", 0, NULL);
	r = run(c, "SELECT pgq.next_batch($1, 'g')", 1, p, 0);
	if (PQgetisnull(r, 0, 0))
	{
		PQclear(r);
		run_clear(c, "COMMIT", 0, NULL);
		usleep(1000);
		return 0;
	}
	snprintf(batch, sizeof(batch), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	n = deliver(run(c, "SELECT ev_data FROM pgq.get_batch_events($1::bigint)", 1, b, 1),
				fn, arg);
	run_clear(c, "SELECT pgq.finish_batch($1::bigint)", 1, b);
	run_clear(c, "COMMIT", 0, NULL);
	return n;
}

/* wait up to wait_ms for a notification on the LISTENing connection */
static void
wait_notify(PgClient *c, int wait_ms)
{
	int			sock = PQsocket(c->conn);
	fd_set		fds;
	struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
	PGnotify   *n;

	FD_ZERO(&fds);
	FD_SET(sock, &fds);
	if (select(sock + 1, &fds, NULL, NULL, &tv) > 0)
		PQconsumeInput(c->conn);
	while ((n = PQnotifies(c->conn)) != NULL)
		PQfreemem(n);
}

static int
consume_plain(PgClient *c, int max, int wait_ms, PeerRecordFn fn, void *arg)
{
	char		maxs[16];
	const char *p[1] = {maxs};
	int			n;

	snprintf(maxs, sizeof(maxs), "%d", max);
	snprintf(c->sql, sizeof(c->sql),
			 "DELETE FROM \"%s\" WHERE id IN (SELECT id FROM \"%s\" ORDER BY id LIMIT $1::int "
			 "FOR UPDATE SKIP LOCKED) RETURNING payload", c->a->name, c->a->name);
	n = deliver(run(c, c->sql, 1, p, 1), fn, arg);
	if (n == 0 && c->latency)
	{
		wait_notify(c, wait_ms);
		n = deliver(run(c, c->sql, 1, p, 1), fn, arg);
	}
	return n;
}

static int
pg_consume(void *p, int max, int wait_ms, PeerRecordFn fn, void *arg)
{
	PgClient *c = p;

	if (c->kind == K_MQ || c->kind == K_MQRF)
		return consume_mq(c, max, wait_ms, fn, arg);
	if (c->kind == K_PGQ)
		return consume_pgq(c, fn, arg);
	return consume_plain(c, max, wait_ms, fn, arg);
}

const PeerOps peer_ops = {pg_setup, pg_open, pg_produce, pg_consume, pg_close};
