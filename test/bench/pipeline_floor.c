/*
 * pipeline_floor.c
 *	  test/bench/pipeline_floor.sh's client: one producer's writes timed in
 *	  three orders of the same statements on three nodes, to bound what
 *	  acks=all could cost if followers wrote while their leader writes.
 *
 *	  one        the leader's write, committed with its flush (acks=1)
 *	  serial     today's order: the leader's write committed without its
 *	             flush; then its flush (a small committed write standing
 *	             for mq.produce_await's) beside the two followers' appends;
 *	             then the acknowledgement (a small committed write on the
 *	             leader standing for the fetch that moves the high watermark)
 *	  pipelined  the leader's write with its flush beside the two
 *	             followers' appends of the same records; then the
 *	             acknowledgement
 *
 *	  No fetch, no broker: the records reach the followers as the client's
 *	  parameters, so both orders leave out the transfer (the leader's read,
 *	  the brokers, the wire) and differ only in what runs side by side.
 *
 *	  Usage: pipeline_floor MODE RECORDS SECONDS LEADER FOLLOWER1 FOLLOWER2
 *	  Prints: calls records/s p50_ms p99_ms
 *	  The followers' function bench_append(base, vals) and the leader's
 *	  table ack are the script's.  One thread, libpq's asynchronous calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#define VALUE_LEN 100

static const char *WRITE_SQL =
"SELECT count(*) FROM mq.send_batch('t', NULL, string_to_array($1, E'\\n')::bytea[], partition => 0)";
static const char *APPEND_SQL =
"SELECT bench_append($2::bigint, string_to_array($1, E'\\n')::bytea[])";
static const char *ACK_SQL = "UPDATE ack SET n = n + 1";

static void
die(const char *what, PGconn *c)
{
	fprintf(stderr, "pipeline_floor: %s: %s", what, c ? PQerrorMessage(c) : "\n");
	exit(1);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static PGconn *
open_conn(const char *conninfo, const char *setup)
{
	PGconn	   *c = PQconnectdb(conninfo);
	PGresult   *r;

	if (PQstatus(c) != CONNECTION_OK)
		die("connect", c);
	if (setup)
	{
		r = PQexec(c, setup);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			die(setup, c);
		PQclear(r);
	}
	return c;
}

/* send one statement; its result is collected by finish() */
static void
start(PGconn *c, const char *sql, const char *vals, const char *base)
{
	const char *params[2] = {vals, base};
	int			n = vals ? (base ? 2 : 1) : 0;

	if (!PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0))
		die(sql, c);
}

static void
finish(PGconn *c)
{
	PGresult   *r;

	while ((r = PQgetResult(c)) != NULL)
	{
		if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
			die("statement", c);
		PQclear(r);
	}
}

static int
cmp(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	const char *mode;
	int			records,
				seconds;
	PGconn	   *lead,
			   *lead_async,
			   *fol[2];
	char	   *vals,
				base[32];
	int64_t		next = 0,
				t0,
				end,
			   *lat;
	long		calls = 0,
				cap = 1 << 20;

	if (argc != 7)
	{
		fprintf(stderr, "usage: %s one|serial|pipelined RECORDS SECONDS LEADER FOLLOWER1 FOLLOWER2\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	records = atoi(argv[2]);
	seconds = atoi(argv[3]);
	if (records < 1 || seconds < 1 ||
		(strcmp(mode, "one") != 0 && strcmp(mode, "serial") != 0 && strcmp(mode, "pipelined") != 0))
		die("bad arguments", NULL);
	lead = open_conn(argv[4], "SET synchronous_commit = on");
	lead_async = open_conn(argv[4], "SET synchronous_commit = off");
	fol[0] = open_conn(argv[5], "SET synchronous_commit = on");
	fol[1] = open_conn(argv[6], "SET synchronous_commit = on");
	/* the followers go on from where an earlier run left them */
	{
		PGresult   *r = PQexec(fol[0], "SELECT log_end_offset FROM mq.partitions WHERE topic = 't'");

		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
			die("the followers' log end", fol[0]);
		next = atoll(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	vals = malloc((size_t) records * (VALUE_LEN + 1));
	for (int i = 0; i < records; i++)
	{
		memset(vals + (size_t) i * (VALUE_LEN + 1), 'x', VALUE_LEN);
		vals[(size_t) i * (VALUE_LEN + 1) + VALUE_LEN] = i + 1 < records ? '\n' : '\0';
	}
	lat = malloc(sizeof(int64_t) * cap);
	t0 = now_ns();
	end = t0 + (int64_t) seconds * 1000000000;
	while (now_ns() < end && calls < cap)
	{
		int64_t		s = now_ns();

		snprintf(base, sizeof(base), "%lld", (long long) next);
		if (strcmp(mode, "one") == 0)
		{
			start(lead, WRITE_SQL, vals, NULL);
			finish(lead);
		}
		else
		{
			if (strcmp(mode, "serial") == 0)
			{
				start(lead_async, WRITE_SQL, vals, NULL);
				finish(lead_async);
				start(lead, ACK_SQL, NULL, NULL);	/* the leader's flush */
			}
			else
				start(lead, WRITE_SQL, vals, NULL);
			start(fol[0], APPEND_SQL, vals, base);
			start(fol[1], APPEND_SQL, vals, base);
			finish(lead);
			finish(fol[0]);
			finish(fol[1]);
			next += records;
			start(lead, ACK_SQL, NULL, NULL);
			finish(lead);
		}
		lat[calls++] = now_ns() - s;
	}
	{
		double		secs = (now_ns() - t0) / 1e9;

		qsort(lat, calls, sizeof(int64_t), cmp);
		printf("%ld %.0f %.3f %.3f\n", calls, calls * (double) records / secs,
			   lat[calls / 2] / 1e6, lat[(calls * 99) / 100] / 1e6);
	}
	PQfinish(lead);
	PQfinish(lead_async);
	PQfinish(fol[0]);
	PQfinish(fol[1]);
	free(vals);
	free(lat);
	return 0;
}
