/*
 * latency.c
 *	  End-to-end latency: from just before a producer's autocommitted send
 *	  to the return of a consumer that was waiting for it.
 *
 * Two modes, measured the same way on the same cluster:
 *	 mq      the consumer waits in mq.poll(..., max_wait_ms => 1000)
 *	 notify  plain PostgreSQL: the producer INSERTs and NOTIFYs in one
 *	         transaction; the consumer LISTENs, waits on its socket and then
 *	         SELECTs the new rows (the baseline)
 * The producer sends one record every 2 ms, so the consumer is waiting when
 * each commit happens.  Each record carries its send time; the consumer
 * computes latency with the same clock (same machine).
 *
 * Usage: latency mq|notify COUNT  (connection from libpq's environment)
 * Prints: avg p50 p99 max in microseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static PGconn *
connect_or_die(void)
{
	PGconn	   *c = PQconnectdb("");

	if (PQstatus(c) != CONNECTION_OK)
	{
		fprintf(stderr, "connection failed: %s", PQerrorMessage(c));
		exit(1);
	}
	return c;
}

static PGresult *
run(PGconn *c, const char *sql, int nparams, const char *const *params, ExecStatusType want)
{
	PGresult   *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(r) != want)
	{
		fprintf(stderr, "query failed: %s: %s", sql, PQerrorMessage(c));
		exit(1);
	}
	return r;
}

static int
cmp_ll(const void *a, const void *b)
{
	long long	x = *(const long long *) a,
				y = *(const long long *) b;

	return (x > y) - (x < y);
}

static void
producer(int mq, int count)
{
	PGconn	   *c = connect_or_die();

	usleep(300000);				/* let the consumer start waiting */
	for (int i = 0; i < count; i++)
	{
		char		t[32];
		const char *p[1] = {t};

		snprintf(t, sizeof(t), "%lld", now_us());
		if (mq)
			PQclear(run(c, "SELECT * FROM mq.send('latency', NULL::bytea, convert_to($1, 'UTF8'), partition => 0)",
						1, p, PGRES_TUPLES_OK));
		else
			PQclear(run(c, "WITH i AS (INSERT INTO latency_plain (sent) VALUES ($1::bigint)) "
						"SELECT pg_notify('latency', '')", 1, p, PGRES_TUPLES_OK));
		usleep(2000);
	}
	PQfinish(c);
}

static void
consumer(int mq, int count)
{
	PGconn	   *c = connect_or_die();
	long long  *lat = malloc(sizeof(long long) * count);
	long long	sum = 0;
	long long	last_id = 0;
	int			got = 0;

	if (!mq)
	{
		PGresult   *r = run(c, "SELECT coalesce(max(id), 0) FROM latency_plain", 0, NULL, PGRES_TUPLES_OK);

		last_id = atoll(PQgetvalue(r, 0, 0));
		PQclear(r);
		PQclear(run(c, "LISTEN latency", 0, NULL, PGRES_COMMAND_OK));
	}
	else						/* offset commits need not wait for fsync, as in Kafka's commitAsync */
		PQclear(run(c, "SET synchronous_commit = off", 0, NULL, PGRES_COMMAND_OK));
	while (got < count)
	{
		PGresult   *r;
		long long	t1;

		if (mq)
			r = run(c, "SELECT convert_from(value, 'UTF8'), msg_offset FROM mq.poll('latency', 'latency', 100, max_wait_ms => 1000)",
					0, NULL, PGRES_TUPLES_OK);
		else
		{
			char		id[32];
			const char *p[1] = {id};
			PGnotify   *n;
			fd_set		fds;
			struct timeval tv = {1, 0};

			PQconsumeInput(c);
			while ((n = PQnotifies(c)) != NULL)
				PQfreemem(n);
			snprintf(id, sizeof(id), "%lld", last_id);
			r = run(c, "SELECT sent::text, id FROM latency_plain WHERE id > $1::bigint ORDER BY id", 1, p, PGRES_TUPLES_OK);
			if (PQntuples(r) == 0)
			{
				PQclear(r);
				FD_ZERO(&fds);
				FD_SET(PQsocket(c), &fds);
				select(PQsocket(c) + 1, &fds, NULL, NULL, &tv);
				continue;
			}
		}
		t1 = now_us();
		for (int i = 0; i < PQntuples(r) && got < count; i++)
		{
			lat[got] = t1 - atoll(PQgetvalue(r, i, 0));
			sum += lat[got++];
			last_id = atoll(PQgetvalue(r, i, 1));
		}
		if (mq && PQntuples(r) > 0)
		{
			char		next[32];
			const char *p[1] = {next};

			snprintf(next, sizeof(next), "%lld", last_id + 1);
			PQclear(run(c, "SELECT mq.commit_offset('latency', 'latency', 0, $1::bigint)", 1, p, PGRES_TUPLES_OK));
		}
		PQclear(r);
	}
	qsort(lat, count, sizeof(long long), cmp_ll);
	printf("%lld %lld %lld %lld\n", sum / count, lat[count / 2], lat[(int) (count * 0.99)], lat[count - 1]);
	PQfinish(c);
}

int
main(int argc, char **argv)
{
	int			mq;
	int			count;
	pid_t		pid;
	int			status;

	if (argc != 3 || (strcmp(argv[1], "mq") != 0 && strcmp(argv[1], "notify") != 0))
	{
		fprintf(stderr, "usage: latency mq|notify COUNT\n");
		return 2;
	}
	mq = strcmp(argv[1], "mq") == 0;
	count = atoi(argv[2]);
	pid = fork();
	if (pid == 0)
	{
		producer(mq, count);
		return 0;
	}
	consumer(mq, count);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
