/*-------------------------------------------------------------------------
 *
 * mqkafka.h
 *	  The core types of mq-kafka: its configuration, client connections,
 *	  and requests as they travel from a socket through a handler (and
 *	  maybe the database pool) back to the socket.
 *
 * One thread: the event loop (libevent) owns every client connection,
 * the group coordinator, the parked fetches and the pool of asynchronous
 * libpq connections (pool.c), so nothing needs a lock.  A handler decodes
 * its request, gives the pool a job of statements, and encodes the
 * response when the results are back.
 *
 * Ordering: a connection has at most one request in flight, and reading
 * stops until its response is written, which is how Kafka brokers keep a
 * connection's responses in request order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_MQKAFKA_H
#define MQK_MQKAFKA_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <libpq-fe.h>

#include "kbuf.h"

/* Another node's mq-kafka (replicated clusters: --peer ID=HOST:PORT) */
typedef struct KPeer
{
	int			id;
	char	   *host;
	int			port;
} KPeer;

#define KMAX_PEERS 64

/* A listener's security protocol, as Kafka's listener.security.protocol.map */
typedef enum KSecProto
{
	KSEC_PLAINTEXT,
	KSEC_SSL,
	KSEC_SASL_PLAINTEXT,
	KSEC_SASL_SSL
} KSecProto;

/* One of --listeners (listener.c): where it listens, what it advertises */
typedef struct KListener
{
	char	   *name;			/* e.g. EXTERNAL; the protocol's name by default */
	KSecProto	proto;
	char	   *host;			/* "" or 0.0.0.0: every interface */
	int			port;
	char	   *adv_host;		/* Metadata's address for clients of this one */
	int			adv_port;
} KListener;

#define KMAX_LISTENERS 16

/* TLS of the SSL and SASL_SSL listeners (tls.c) */
typedef enum KClientAuth
{
	KCLIENT_AUTH_NONE,
	KCLIENT_AUTH_REQUESTED,
	KCLIENT_AUTH_REQUIRED
} KClientAuth;

typedef struct KTlsConfig
{
	const char *cert_file;		/* PEM: the server's certificate (chain) */
	const char *key_file;		/* PEM: its private key */
	const char *key_password_file;	/* the key's passphrase, if encrypted */
	const char *ca_file;		/* PEM: CAs that client certificates chain to */
	KClientAuth client_auth;
	const char *mapping_rules;	/* ssl.principal.mapping.rules; NULL: DEFAULT */
} KTlsConfig;

typedef struct KConfig
{
	const char *conninfo;		/* -d, as psql takes it; NULL: environment */
	char	   *listen_host;	/* default 127.0.0.1 */
	int			listen_port;	/* default 9092 */
	char	   *advertised_host;	/* what Metadata tells clients */
	int			advertised_port;
	/* the listeners; the first's address is the one registered in a cluster */
	int			nlisteners;
	KListener	listeners[KMAX_LISTENERS];
	KTlsConfig	tls;
	int			node_id;
	int			pool_size;		/* database connections */
	int			statement_timeout_ms;	/* a job's deadline (pool.c) */
	int32_t		max_request_bytes;	/* larger frames close the connection */
	int			connections_max_idle_ms;	/* an idle client's is closed; 0: never */
	int32_t		max_inflated_bytes;	/* decompressed size cap per batch */
	int			group_initial_delay_ms;
	int			group_min_session_ms;	/* JoinGroup's session timeout bounds */
	int			group_max_session_ms;
	int			auto_create_partitions;	/* 0: no automatic topic creation */
	int			recheck_ms;		/* parked fetches re-read this often (fetch_watch.c) */
	bool		fetch_in_daemon;	/* Fetch v4+ batches encoded here, not by mq.kafka_fetch */
	int			npeers;
	KPeer		peers[KMAX_PEERS];
	const char *coordinator;	/* --coordinator: the cluster's view (cluster.c) */
	int			refresh_ms;		/* how often the view is read */
	bool		sasl_plain;		/* SASL offered on SASL_* listeners (--sasl) */
	unsigned	sasl_mechs;		/* KSASL_MECH_* bits that --sasl enables */
	bool		sasl_plain_on_plaintext;	/* PLAIN also without TLS */
	char	   *metrics_host;	/* --metrics: Prometheus endpoint; NULL: none */
	int			metrics_port;
} KConfig;

extern KConfig kconfig;

/* Kafka's num.partitions: auto-created topics' and CreateTopics' -1 */
static inline int
kconfig_num_partitions(void)
{
	return kconfig.auto_create_partitions > 0 ? kconfig.auto_create_partitions : 1;
}

extern struct event_base *kbase;

typedef struct KConn KConn;
typedef struct KRequest KRequest;

typedef void (*KDoneFn) (KRequest *req);
struct KJob;

struct KRequest
{
	KConn	   *conn;
	int16_t		api_key;
	int16_t		api_version;
	int32_t		corr;
	char	   *client_id;
	char	   *role; /* its statements run as this role (sasl.c);
								 * NULL: as the daemon's own */
	uint8_t    *frame;			/* the whole request, header included */
	KReader		body;			/* positioned after the request header */
	KWriter		resp;			/* the response body */
	bool		flexible_resp;	/* response header v1 (tagged fields) */
	bool		no_response;	/* acks=0 produce */
	bool		bare; /* a bare SASL token (KSASL_BARE): the
								 * response is the token alone */
	bool		db_lost;		/* the database was unreachable: close afterwards */
	bool		close_after; /* an acks=0 produce failed: close, so the
								 * client learns (Kafka's way) */
	struct KJob *job;			/* statements being run by the pool */
	KDoneFn		done_fn;		/* when they are done; NULL: respond */
	void	   *state;			/* the handler's own */
	void		(*free_state) (void *state);
	KRequest   *next;			/* the pool's wait queue */
	int64_t		started_us;		/* dispatched at (kmetrics.c); 0: not dispatched */
	int32_t		throttle_ms;	/* its client's quota mutes the connection this long */
	int64_t		db_us;			/* time its statements ran (pool.c) */
};

/* server.c: the listeners */
extern void server_start(void);
/* SIGHUP: new TLS connections use the certificate and key read again */
extern void server_reload_tls(void);

/* kconn.c: connections and request completion */
typedef void (*KFrameFn) (KRequest *req, size_t frame_len);
struct bufferevent;
/* a connection on bev, from listener, whose whole frames go to dispatch */
extern void conn_start(struct bufferevent *bev, const char *peer, const KListener *listener,
					   KFrameFn dispatch);
extern const char *conn_peer(const KConn *c);
extern bool conn_closed(const KConn *c);
/* must c authenticate with SASL (a SASL_PLAINTEXT or SASL_SSL listener)? */
extern bool conn_needs_sasl(const KConn *c);
/* the advertised address of the listener c connected to */
extern void conn_advertised(const KConn *c, const char **host, int *port);
/* send req's response (unless no_response), free req, resume reading */
extern void req_finish(KRequest *req);
/* drop req without a response and close its connection */
extern void req_abort(KRequest *req);
/* send req's response, free req, close the connection once it is sent */
extern void req_finish_close(KRequest *req);

/* kconn.c keeps sasl.c's state of a connection */
typedef enum KSaslStep
{
	KSASL_START,				/* nothing yet */
	KSASL_HANDSHAKEN,			/* SaslHandshake v1 chose a mechanism */
	KSASL_BARE, /* SaslHandshake v0 chose one: its tokens
								 * come as bare frames, without a header */
	KSASL_DONE					/* authenticated: requests carry its role */
} KSaslStep;
extern KSaslStep conn_sasl_step(const KConn *c);
extern void conn_set_sasl(KConn *c, KSaslStep step, const char *role);
/* the mechanism SaslHandshake chose (KSaslMech, sasl.h) */
extern int	conn_sasl_mech(const KConn *c);
extern void conn_set_sasl_mech(KConn *c, int mech);
/* a mechanism's state between SaslAuthenticate rounds, freed with the connection */
extern void *conn_sasl_state(const KConn *c);
extern void conn_set_sasl_state(KConn *c, void *state, void (*free_fn) (void *state));
/* true on a TLS listener's connection (plaintext: false) */
extern bool conn_is_tls(const KConn *c);

/* pool.c: database connections */
typedef struct KPool KPool;
extern void pool_start(void);
/* run job's statements, then done_fn(req) (NULL: req_finish) */
extern void pool_run(KRequest *req, struct KJob *job, KDoneFn done_fn);
/* connections that are up and running nothing */
extern int	pool_idle(void);
/* false while no database connection can be made */
extern bool pool_available(void);
/* a pool of size connections to conninfo; local: this node's database */
extern KPool *pool_new(const char *conninfo, int size, const char *name, bool local);
extern KPool *pool_local(void);
extern void pool_run_on(KPool *p, KRequest *req, struct KJob *job, KDoneFn done_fn);
extern bool pool_up(const KPool *p);
/* cancel what req runs on p, if it runs (its done callback gets 57014) */
extern void pool_cancel(KPool *p, const KRequest *req);

/* api.c: header parsing and dispatch */
extern void api_dispatch(KRequest *req, size_t frame_len);

#endif							/* MQK_MQKAFKA_H */
