/*-------------------------------------------------------------------------
 *
 * route.c
 *	  Routing a topic's partitions to their leaders' nodes through the
 *	  coordinator (see route.h): the routes, the connections per broker and
 *	  the back-off between attempts after a leader change.
 *
 * The routes are one query on the coordinator (mq_coord.route).  A
 * partition's connection is its leader broker's: several partitions led by
 * one broker share it.  A broker's node address may change when the
 * broker registers again (a restart with another address): the connection
 * is then made again.  Nothing here prints or exits; the callers decide.
 * Routers of several topics may share one coordinator session
 * (mq_router_open_beside): the first owns it.
 *
 * Layer: broker/common, below every client that routes (mqctl's producer,
 * consumer and pipeline engines, mq-kafka's cluster view); it calls only
 * connpolicy.c, mqconn.c and util.c.  Locking: none; one router per
 * thread (route.h).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"
#include "util.h"

#define ROUTE_SQL \
	"SELECT partition, partitions, coalesce(leader, -1), leader_epoch, leader_conninfo" \
	"  FROM mq_coord.route($1)"

/* clients retry sooner than brokers reconnect: a failover takes ~0.4 s */
#define CLIENT_RETRY_INITIAL_MS 100
#define CLIENT_RETRY_MAX_MS 2000

int
mq_router_detect(PGconn *conn, const char *topic, MqError *err)
{
	MqParams	params;
	PGresult   *res;
	int			found;

	res = mq_exec(conn,
				  "SELECT 1 FROM pg_catalog.pg_proc p"
				  "  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
				  " WHERE n.nspname = 'mq_coord' AND p.proname = 'route'"
				  "   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')"
				  "   AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')",
				  NULL, 0, err);
	if (res == NULL)
		return -1;
	found = PQntuples(res);
	PQclear(res);
	if (found == 0)
		return 0;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	res = mq_exec(conn, "SELECT count(*) FROM mq_coord.route($1)", &params, 0, err);
	if (res == NULL)
		return -1;
	found = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return found > 0 ? 1 : 0;
}

static MqRouteNode *
find_node(MqRouter *r, int32_t broker_id)
{
	for (int i = 0; i < r->nnodes; i++)
		if (r->nodes[i].broker_id == broker_id)
			return &r->nodes[i];
	return NULL;
}

/* Remember broker_id's node address; a changed address drops the connection. */
static void
note_node(MqRouter *r, int32_t broker_id, const char *conninfo)
{
	MqRouteNode *node = find_node(r, broker_id);

	if (node == NULL)
	{
		r->nodes = mq_realloc(r->nodes, sizeof(MqRouteNode) * (r->nnodes + 1));
		node = &r->nodes[r->nnodes++];
		node->broker_id = broker_id;
		node->conninfo = NULL;
		node->conn = NULL;
	}
	if (node->conninfo != NULL && strcmp(node->conninfo, conninfo) == 0)
		return;
	free(node->conninfo);
	node->conninfo = mq_strdup(conninfo);
	PQfinish(node->conn);
	node->conn = NULL;
}

PGconn *
mq_router_coord(MqRouter *r, MqError *err)
{
	if (r->coord_of != NULL)
		return mq_router_coord(r->coord_of, err);
	if (r->coord != NULL && PQstatus(r->coord) == CONNECTION_OK)
		return r->coord;
	PQfinish(r->coord);
	r->coord = mq_connect_policy(r->bootstrap, r->appname, &r->policy, err);
	if (r->coord == NULL)
		return NULL;
	mq_log_notices(r->coord);
	/* topic names and JSON go as UTF-8, whatever the locale */
	if (PQsetClientEncoding(r->coord, "UTF8") != 0)
		mq_log_warning("could not set client_encoding to UTF8");
	return r->coord;
}

void
mq_router_reset_coord(MqRouter *r)
{
	if (r->coord_of != NULL)
	{
		mq_router_reset_coord(r->coord_of);
		return;
	}
	PQfinish(r->coord);
	r->coord = NULL;
}

bool
mq_router_refresh(MqRouter *r, MqError *err)
{
	MqParams	params;
	PGconn	   *coord = mq_router_coord(r, err);
	PGresult   *res;
	int			n;

	if (coord == NULL)
		return false;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, r->topic);
	res = mq_exec(coord, ROUTE_SQL, &params, 0, err);
	if (res == NULL)
		return false;
	n = PQntuples(res);
	if (n == 0)
	{
		PQclear(res);
		mq_error_free(err);
		err->message = mq_strdup("the coordinator knows no replicated topic of that name");
		snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", MQ_SQLSTATE_UNKNOWN_TOPIC);
		return false;
	}
	r->npartitions = atoi(PQgetvalue(res, 0, 1));
	if (r->npartitions < n)
		r->npartitions = n;
	r->leader = mq_realloc(r->leader, sizeof(int32_t) * r->npartitions);
	r->epoch = mq_realloc(r->epoch, sizeof(int32_t) * r->npartitions);
	for (int p = 0; p < r->npartitions; p++)
		r->leader[p] = r->epoch[p] = -1;
	for (int i = 0; i < n; i++)
	{
		int32_t		p = atoi(PQgetvalue(res, i, 0));

		if (p < 0 || p >= r->npartitions)
			continue;
		r->leader[p] = atoi(PQgetvalue(res, i, 2));
		r->epoch[p] = atoi(PQgetvalue(res, i, 3));
		if (r->leader[p] >= 0 && !PQgetisnull(res, i, 4))
			note_node(r, r->leader[p], PQgetvalue(res, i, 4));
		else
			r->leader[p] = -1;
	}
	PQclear(res);
	return true;
}

bool
mq_router_open(MqRouter *r, PGconn *coord, const char *bootstrap,
			   const char *appname, const char *topic,
			   MqRouteSetup setup, void *setup_arg, MqError *err)
{
	memset(r, 0, sizeof(*r));
	r->bootstrap = bootstrap;
	r->appname = appname;
	r->topic = mq_strdup(topic);
	r->coord = coord;
	r->setup = setup;
	r->setup_arg = setup_arg;
	mq_conn_policy_default(&r->policy);
	r->policy.retry_initial_ms = CLIENT_RETRY_INITIAL_MS;
	r->policy.retry_max_ms = CLIENT_RETRY_MAX_MS;
	return mq_router_refresh(r, err);
}

bool
mq_router_open_beside(MqRouter *r, MqRouter *owner, const char *topic,
					  MqRouteSetup setup, void *setup_arg, MqError *err)
{
	memset(r, 0, sizeof(*r));
	r->bootstrap = owner->bootstrap;
	r->appname = owner->appname;
	r->topic = mq_strdup(topic);
	r->coord_of = owner;
	r->setup = setup;
	r->setup_arg = setup_arg;
	r->policy = owner->policy;
	return mq_router_refresh(r, err);
}

int32_t
mq_router_leader(const MqRouter *r, int32_t partition)
{
	if (partition < 0 || partition >= r->npartitions)
		return -1;
	return r->leader[partition];
}

/*
 * Connect to a node: the client's own connection string with the node's
 * host, hostaddr, port and dbname over it.
 */
static PGconn *
connect_node(MqRouter *r, MqRouteNode *node, MqError *err)
{
	static const char *const wanted[] = {"host", "hostaddr", "port", "dbname", NULL};
	const char *keys[5];
	const char *vals[5];
	int			n = 0;
	char	   *parse_error = NULL;
	PQconninfoOption *opts = PQconninfoParse(node->conninfo, &parse_error);
	PGconn	   *conn;

	if (opts == NULL)
	{
		PQfreemem(parse_error);
		mq_error_free(err);
		err->message = mq_strdup("cannot connect: the coordinator's address of a node is not a connection string");
		err->connection_lost = true;
		return NULL;
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		for (int w = 0; wanted[w] != NULL; w++)
			if (strcmp(o->keyword, wanted[w]) == 0 && o->val != NULL && o->val[0] != '\0')
			{
				keys[n] = wanted[w];
				vals[n++] = o->val;
			}
	keys[n] = NULL;
	vals[n] = NULL;
	conn = mq_connect_policy_with(r->bootstrap, r->appname, &r->policy, keys, vals, err);
	PQconninfoFree(opts);
	if (conn == NULL)
		return NULL;
	mq_log_notices(conn);
	if (PQsetClientEncoding(conn, "UTF8") != 0)
		mq_log_warning("could not set client_encoding to UTF8");
	if (r->setup != NULL && !r->setup(conn, r->setup_arg, err))
	{
		PQfinish(conn);
		err->connection_lost = true;
		return NULL;
	}
	return conn;
}

PGconn *
mq_router_conn(MqRouter *r, int32_t partition, MqError *err)
{
	int32_t		leader = mq_router_leader(r, partition);
	MqRouteNode *node = leader >= 0 ? find_node(r, leader) : NULL;

	if (node == NULL)
	{
		mq_error_free(err);
		err->message = mq_strdup("the partition has no leader at the moment");
		err->connection_lost = true;
		return NULL;
	}
	if (node->conn != NULL && PQstatus(node->conn) != CONNECTION_OK)
	{
		PQfinish(node->conn);
		node->conn = NULL;
	}
	if (node->conn == NULL)
		node->conn = connect_node(r, node, err);
	return node->conn;
}

bool
mq_router_retriable(const MqError *err)
{
	return err->connection_lost ||
		mq_error_is(err, MQ_SQLSTATE_NOT_LEADER) ||
		mq_error_is(err, MQ_SQLSTATE_UNKNOWN_PARTITION);
}

void
mq_router_failed(MqRouter *r, int32_t partition, const MqError *err)
{
	int32_t		leader = mq_router_leader(r, partition);
	MqRouteNode *node = leader >= 0 ? find_node(r, leader) : NULL;

	if (node != NULL && node->conn != NULL &&
		(err->connection_lost || PQstatus(node->conn) != CONNECTION_OK))
	{
		PQfinish(node->conn);
		node->conn = NULL;
	}
	/* until the next refresh, send nothing more there */
	if (partition >= 0 && partition < r->npartitions)
		r->leader[partition] = -1;
}

bool
mq_router_conn_lost(MqRouter *r, PGconn *conn)
{
	for (int i = 0; conn != NULL && i < r->nnodes; i++)
		if (r->nodes[i].conn == conn)
		{
			PQfinish(conn);
			r->nodes[i].conn = NULL;
			return true;
		}
	return false;
}

bool
mq_router_backoff(MqRouter *r, MqError *err)
{
	int			pause = mq_retry_failed(&r->retry, &r->policy);

	mq_sleep_ms(pause);
	return mq_router_refresh(r, err);
}

void
mq_router_succeeded(MqRouter *r)
{
	mq_retry_succeeded(&r->retry);
}

void
mq_router_close(MqRouter *r)
{
	for (int i = 0; i < r->nnodes; i++)
	{
		PQfinish(r->nodes[i].conn);
		free(r->nodes[i].conninfo);
	}
	PQfinish(r->coord);
	free(r->nodes);
	free(r->leader);
	free(r->epoch);
	free(r->topic);
	memset(r, 0, sizeof(*r));
}
