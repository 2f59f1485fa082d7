/*-------------------------------------------------------------------------
 *
 * pool_conn.h
 *	  The pool's connections (pool_conn.c) and the structures pool.c and
 *	  pool_conn.c share.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_KAFKA_POOL_CONN_H
#define MQ_KAFKA_POOL_CONN_H

#include "connpolicy.h"
#include "mqkafka.h"

typedef struct Slot Slot;
typedef void (*KSlotFn) (Slot *s);

struct Slot
{
	KPool	   *pool;
	PGconn	   *conn;
	struct event *ev;
	struct event *deadline_ev;	/* the running job's statement deadline */
	bool		writing;		/* output not flushed: also wait for EV_WRITE */
	bool		connecting;		/* other databases: connecting asynchronously */
	KRequest   *req;			/* the running job's request, or NULL */
	int64_t		started_us;		/* when its job was sent */
	int			next;			/* statement whose results come next */
	bool		saw_null;
	bool		role_result;	/* the next result is set_config's */
	MqRetry		retry;			/* no reconnect attempt before retry.next_us */
};

struct KPool
{
	char	   *conninfo;		/* NULL: libpq's environment */
	char	   *name;			/* for messages */
	bool		local;			/* this node's: failures close client connections */
	int			size;
	int			statement_timeout_ms;	/* a job's deadline */
	MqConnPolicy policy;
	Slot	   *slots;
	KRequest   *wait_head,
			   *wait_tail;
	bool		db_down;		/* an attempt failed and no connection works */
	bool		refusing;		/* the server refused one, others work (conn_failed) */
	struct event *retry_ev;		/* reconnects idle slots when due */
	KSlotFn		io_fn;			/* the socket of a connected slot is ready */
	KSlotFn		connected_fn;	/* an asynchronous connect succeeded */
	KSlotFn		failed_fn;		/* an asynchronous connect failed */
};

extern void pool_conn_init(KPool *p);
/* s holds a connection that is up (not one still connecting) */
extern bool pool_slot_connected(const Slot *s);
/* an idle slot's connection, read for what the server sent: not closed */
extern bool pool_slot_idle_alive(Slot *s);
extern bool pool_slot_ready(Slot *s);
extern void pool_slot_drop(Slot *s);
extern void pool_slot_watch(Slot *s, bool writing);
/* a connection failed or was given up: schedule its reconnect */
extern void pool_slot_lost(Slot *s);

#endif							/* MQ_KAFKA_POOL_CONN_H */
