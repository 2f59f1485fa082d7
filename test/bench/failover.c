/*
 * failover.c
 *	  A producer for measuring failover: sends small acks=all batches to
 *	  whichever node the coordinator names leader of a partition, one after
 *	  the other, over connections it keeps, and prints one line per attempt
 *	  with a wall-clock time, so that a script can find the first write
 *	  acknowledged by a new leader after it killed the old one.
 *
 * Usage: failover COORD_CONNINFO TOPIC PARTITION ID=CONNINFO...
 *	 (one ID=CONNINFO per broker id and its node)
 * Prints, line-buffered, until killed:
 *	 ack EPOCH_US BROKER_ID BASE_OFFSET
 *	 err EPOCH_US BROKER_ID SQLSTATE|conn
 *
 * The coordinator is asked for the leader at start and after every failed
 * attempt (a client that already knows the leader does not ask per write).
 * Records carry no producer id: the retries of a timing tool need not be
 * idempotent.  Built and run by test/bench/replication.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define MAX_NODES 16

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A connection that fails fast: a killed node must not hold us up. */
static PGconn *
connect_fast(const char *conninfo)
{
	const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
	const char *vals[] = {conninfo, "2", "mq-bench-failover", NULL};
	PGconn	   *c = PQconnectdbParams(keys, vals, 1);

	if (PQstatus(c) != CONNECTION_OK)
	{
		PQfinish(c);
		return NULL;
	}
	return c;
}

int
main(int argc, char **argv)
{
	const char *ids[MAX_NODES];
	const char *infos[MAX_NODES];
	PGconn	   *conns[MAX_NODES] = {0};
	int			nnodes = 0;
	PGconn	   *coord = NULL;
	int			leader = -1;
	const char *params[2];

	if (argc < 5)
	{
		fprintf(stderr, "usage: %s COORD_CONNINFO TOPIC PARTITION ID=CONNINFO...\n", argv[0]);
		return 2;
	}
	for (int i = 4; i < argc && nnodes < MAX_NODES; i++)
	{
		char	   *eq = strchr(argv[i], '=');

		if (eq == NULL)
		{
			fprintf(stderr, "expected ID=CONNINFO, got \"%s\"\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		ids[nnodes] = argv[i];
		infos[nnodes] = eq + 1;
		nnodes++;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	params[0] = argv[2];
	params[1] = argv[3];

	for (;;)
	{
		PGresult   *res;
		int			slot = -1;
		char		id[16];

		if (leader < 0)
		{
			if (coord == NULL || PQstatus(coord) != CONNECTION_OK)
			{
				PQfinish(coord);
				coord = connect_fast(argv[1]);
				if (coord == NULL)
				{
					usleep(10000);
					continue;
				}
			}
			res = PQexecParams(coord, "SELECT coalesce(leader, -1) FROM mq_coord.partition "
							   "WHERE topic = $1 AND partition = $2::int", 2, NULL, params,
							   NULL, NULL, 0);
			if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
				leader = atoi(PQgetvalue(res, 0, 0));
			PQclear(res);
			if (leader < 0)
			{
				usleep(10000);
				continue;
			}
		}
		snprintf(id, sizeof(id), "%d", leader);
		for (int i = 0; i < nnodes; i++)
			if (strcmp(ids[i], id) == 0)
				slot = i;
		if (slot < 0)
		{
			fprintf(stderr, "the coordinator names broker %d, which was not given\n", leader);
			return 1;
		}
		if (conns[slot] == NULL || PQstatus(conns[slot]) != CONNECTION_OK)
		{
			PQfinish(conns[slot]);
			conns[slot] = connect_fast(infos[slot]);
			if (conns[slot] == NULL)
			{
				printf("err %lld %d conn\n", now_us(), leader);
				leader = -1;
				usleep(10000);
				continue;
			}
		}
		res = PQexecParams(conns[slot],
						   "CALL mq.produce($1, NULL, ARRAY['a','b','c','d','e']::bytea[], $2::int, 'all', "
						   "timeout_ms => 2000)", 2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
			printf("ack %lld %d %s\n", now_us(), leader, PQgetvalue(res, 0, 0));
		else
		{
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

			printf("err %lld %d %s\n", now_us(), leader, state ? state : "conn");
			if (PQstatus(conns[slot]) != CONNECTION_OK)
			{
				PQfinish(conns[slot]);
				conns[slot] = NULL;
			}
			leader = -1;
			usleep(10000);
		}
		PQclear(res);
	}
}
