/*
 * redis.c
 *	  The peers benchmark's client for Redis Streams, over hiredis
 *	  (TARGET is host:port, NAME the stream).
 *
 *	  produce  XADD NAME * v VALUE; a batch is that many XADDs pipelined
 *	           (one write, one reply read per command; with appendfsync
 *	           always the server fsyncs before it replies)
 *	  consume  XREADGROUP GROUP g c COUNT max [BLOCK wait] STREAMS NAME >,
 *	           then one XACK of every id read
 *
 * SYSTEM redis-waitN (a primary with replicas): after each produce and
 * each XACK, WAIT N, which returns once N replicas have received every
 * write of the connection so far (not that they fsynced it: Redis 7.0 has
 * no WAITAOF); fewer than N in 10 s is an error.
 *
 * The durability is the server's appendfsync, which the script sets and
 * states.  The connection is the driver thread's own (peers.h); no locking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "peers.h"

typedef struct RedisClient
{
	redisContext *ctx;
	const PeerArgs *a;
	int			wait;			/* redis-waitN: N, else 0 */
	const char **argv;			/* XACK's arguments */
	size_t	   *argl;
}			RedisClient;

static redisReply *
cmd_or_die(RedisClient *c, redisReply *r)
{
	if (r == NULL)
		peer_die("redis: %s", c->ctx->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		peer_die("redis: %s", r->str);
	return r;
}

static void *
redis_open(const PeerArgs *a, int latency)
{
	RedisClient *c = calloc(1, sizeof(RedisClient));
	char		host[256];
	const char *colon = strrchr(a->target, ':');

	(void) latency;
	if (colon == NULL || colon - a->target >= (long) sizeof(host))
		peer_die("redis: TARGET is host:port");
	memcpy(host, a->target, colon - a->target);
	host[colon - a->target] = '\0';
	c->a = a;
	if (strncmp(a->system, "redis-wait", 10) == 0)
		c->wait = atoi(a->system + 10);
	c->ctx = redisConnect(host, atoi(colon + 1));
	if (c->ctx == NULL || c->ctx->err)
		peer_die("redis: cannot connect to %s", a->target);
	c->argv = malloc(sizeof(char *) * 10003);
	c->argl = malloc(sizeof(size_t) * 10003);
	return c;
}

static void
redis_close(void *p)
{
	RedisClient *c = p;

	redisFree(c->ctx);
	free(c->argv);
	free(c->argl);
	free(c);
}

static void
redis_setup(const PeerArgs *a)
{
	RedisClient *c = redis_open(a, 0);

	freeReplyObject(cmd_or_die(c, redisCommand(c->ctx, "XGROUP CREATE %s g 0 MKSTREAM", a->name)));
	redis_close(c);
}

/* redis-waitN: wait until N replicas have the connection's writes */
static void
replicated(RedisClient *c)
{
	redisReply *r;

	if (c->wait <= 0)
		return;
	r = cmd_or_die(c, redisCommand(c->ctx, "WAIT %d 10000", c->wait));
	if (r->type != REDIS_REPLY_INTEGER || r->integer < c->wait)
		peer_die("redis: WAIT %d: only %lld replicas acknowledged", c->wait,
				 r->type == REDIS_REPLY_INTEGER ? r->integer : -1LL);
	freeReplyObject(r);
}

static void
redis_produce(void *p, const char *const *values, int len, int n)
{
	RedisClient *c = p;
	redisReply *r;

	for (int i = 0; i < n; i++)
		redisAppendCommand(c->ctx, "XADD %s * v %b", c->a->name, values[i], (size_t) len);
	for (int i = 0; i < n; i++)
	{
		if (redisGetReply(c->ctx, (void **) &r) != REDIS_OK)
			peer_die("redis: %s", c->ctx->errstr);
		freeReplyObject(cmd_or_die(c, r));
	}
	replicated(c);
}

/* the entries of an XREADGROUP reply: [[stream, [[id, [field, value]], ...]]] */
static redisReply *
entries_of(redisReply *r)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
		return NULL;
	return r->element[0]->element[1];
}

static int
redis_consume(void *p, int max, int wait_ms, PeerRecordFn fn, void *arg)
{
	RedisClient *c = p;
	redisReply *r,
		*e;
	char		count[16],
				block[16];
	int			n = 0;

	snprintf(count, sizeof(count), "%d", max);
	snprintf(block, sizeof(block), "%d", wait_ms);
	r = cmd_or_die(c, redisCommand(c->ctx, "XREADGROUP GROUP g c COUNT %s BLOCK %s STREAMS %s >",
								   count, block, c->a->name));
	e = entries_of(r);
	if (e != NULL && e->elements > 0)
	{
		c->argv[0] = "XACK";
		c->argv[1] = c->a->name;
		c->argv[2] = "g";
		for (size_t i = 0; i < e->elements; i++)
		{
			redisReply *id = e->element[i]->element[0],
					   *fv = e->element[i]->element[1];

			fn(fv->element[1]->str, (int) fv->element[1]->len, arg);
			c->argv[3 + n] = id->str;
			c->argl[3 + n] = id->len;
			n++;
		}
		c->argl[0] = 4;
		c->argl[1] = strlen(c->a->name);
		c->argl[2] = 1;
		freeReplyObject(cmd_or_die(c, redisCommandArgv(c->ctx, 3 + n, c->argv, c->argl)));
		replicated(c);
	}
	freeReplyObject(r);
	return n;
}

const PeerOps peer_ops = {redis_setup, redis_open, redis_produce, redis_consume, redis_close};
