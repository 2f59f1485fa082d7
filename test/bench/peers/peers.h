/*
 * peers.h
 *	  The interface between the peers benchmark's driver (driver.c: threads,
 *	  clocks, counting, percentiles) and one system's client (pg.c for mq,
 *	  PgQ and plain PostgreSQL; redis.c for Redis Streams; nats.c for NATS
 *	  JetStream).  Each client binary is driver.c linked with one of them.
 *
 * A client opens one connection per driver thread; the driver never shares
 * a connection between threads, so the clients need no locking.  Every
 * produce and every consume call is one durable unit of the system (one
 * transaction, one fsynced write, one acknowledged publish) as far as the
 * system's configuration makes it durable; the script states which.
 */
#ifndef PEERS_H
#define PEERS_H

#include <stdint.h>

/* what the driver was told on its command line, passed to the client */
typedef struct PeerArgs
{
	const char *system;			/* pg.c: mq, mq-async, pgq or plain */
	const char *target;			/* conninfo, host:port or URL */
	const char *name;			/* topic, queue, stream (and subject) */
}			PeerArgs;

/* called for each record a consume call returned */
typedef void (*PeerRecordFn) (const char *value, int len, void *arg);

typedef struct PeerOps
{
	/* once, before any thread: create the topic/queue/stream and group */
	void		(*setup) (const PeerArgs *a);
	void *(*open) (const PeerArgs *a, int latency);
	/* one durable unit of n records (n == 1: a single send) */
	void		(*produce) (void *c, const char *const *values, int len, int n);
	/* up to max records, waiting up to wait_ms for the first; acknowledged
	 * (committed) before it returns; returns how many */
	int			(*consume) (void *c, int max, int wait_ms, PeerRecordFn fn, void *arg);
	void		(*close) (void *c);
}			PeerOps;

extern const PeerOps peer_ops;

extern void peer_die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern int64_t peer_now_ns(void);

#endif							/* PEERS_H */
