/*-------------------------------------------------------------------------
 *
 * kconn.c
 *	  One client connection: framing (an int32 size, then the request),
 *	  one request in flight, writing responses, and request completion
 *	  (req_finish, req_finish_close, req_abort).  It stands below the
 *	  handlers and the pool, which complete requests through it, and
 *	  below server.c, which accepts connections and hands each one the
 *	  function that takes its requests (api_dispatch): a whole frame goes
 *	  up only through that pointer.  Loop thread only: no locking.
 *
 * A connection stops reading while its request is in flight and resumes
 * once the response is queued, so responses leave in request order; if
 * more than RESUME_OUTPUT_BYTES of its output is still unwritten then, it
 * resumes only once the client has read it down to that, as Kafka mutes a
 * connection until its response is sent: a client that pipelines requests
 * and does not read (a slow network, or on purpose) holds at most that
 * and one response in the daemon's memory, not one per request.  A
 * request whose client went over a quota (quota.c: the handler counts its
 * bytes, this file its database time, but for acks=0 as in Kafka) mutes
 * the connection for the longer throttle time after its response, as
 * Kafka's broker does (KIP-219): the next request is read once that time
 * is over.  As
 * Kafka's connections.max.idle.ms, a connection that sends no request
 * while it may (none in flight), or takes none of its answer, for
 * --connections-max-idle-ms is closed (the read and write timeouts of
 * its bufferevent: a parked request, reading disabled, is not idle); its
 * client connects again when it next needs the broker.  A
 * frame with a size below 8 or above max_request_bytes closes the
 * connection: there is no way to answer a request whose header cannot be
 * trusted; so does a request the daemon cannot read (req_abort), each
 * once the answers before it are written (conn_close_when_written).
 * Before a SASL listener's client authenticated, the bound is
 * Kafka's sasl.server.max.receive.size default, 512 KiB, so that no
 * unknown client makes the daemon hold --max-request-bytes.  A connection
 * that closes while its request is with the pool or parked is freed when
 * the request is done (refs).  Each connection
 * keeps who it authenticated as (sasl.c), and each of its requests runs
 * its statements as that role.
 *
 * Each connection remembers its listener (listener.c), which says whether
 * it must authenticate with SASL and which address Metadata advertises to
 * it.  On an SSL listener a verified client certificate authenticates the
 * connection as its mapped subject (tls.c), looked at when the first
 * frame arrives (the handshake is over by then), as SASL would
 * (conn_set_sasl); a failed handshake is logged with OpenSSL's reason.
 *
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "kmetrics.h"
#include "listener.h"
#include "quota.h"
#include "tls.h"
#include "util.h"

/* bytes one write(2) to a client may take */
#define MAX_SINGLE_WRITE (4 * 1024 * 1024)
/* unwritten output above which a connection reads no further request */
#define RESUME_OUTPUT_BYTES (64 * 1024)

struct KConn
{
	struct bufferevent *bev;
	struct event *resume;		/* reads the next buffered frame */
	struct event *unmute;		/* ends a quota's throttle time */
	KFrameFn	dispatch;		/* takes each whole frame */
	int			refs;			/* the socket, a request in flight, a resume, a mute */
	bool		closed;
	bool		busy;
	bool		draining;		/* reads on once its output is down to RESUME_OUTPUT_BYTES */
	bool		closing;		/* closes once its output is written */
	KSaslStep	sasl_step;
	int			sasl_mech;		/* KSaslMech chosen by SaslHandshake */
	void	   *sasl_state;		/* the mechanism's exchange (sasl_scram.c) */
	void		(*sasl_state_free) (void *state);
	char	   *role;			/* authenticated as, or NULL */
	const KListener *listener;	/* it came in through */
	bool		tls_checked;	/* its client certificate was looked at */
	char		peer[64];
};

static void conn_read(struct bufferevent *bev, void *arg);
static void conn_event(struct bufferevent *bev, short what, void *arg);

const char *
conn_peer(const KConn *c)
{
	return c->peer;
}

bool
conn_closed(const KConn *c)
{
	return c->closed;
}

bool
conn_needs_sasl(const KConn *c)
{
	return listener_is_sasl(c->listener);
}

void
conn_advertised(const KConn *c, const char **host, int *port)
{
	*host = c->listener->adv_host;
	*port = c->listener->adv_port;
}

KSaslStep
conn_sasl_step(const KConn *c)
{
	return c->sasl_step;
}

void
conn_set_sasl(KConn *c, KSaslStep step, const char *role)
{
	free(c->role);
	c->role = role ? mq_strdup(role) : NULL;
	c->sasl_step = step;
}

bool
conn_is_tls(const KConn *c)
{
	return c->listener != NULL && listener_is_tls(c->listener);
}

int
conn_sasl_mech(const KConn *c)
{
	return c->sasl_mech;
}

void
conn_set_sasl_mech(KConn *c, int mech)
{
	c->sasl_mech = mech;
}

void *
conn_sasl_state(const KConn *c)
{
	return c->sasl_state;
}

void
conn_set_sasl_state(KConn *c, void *state, void (*free_fn) (void *state))
{
	if (c->sasl_state && c->sasl_state_free)
		c->sasl_state_free(c->sasl_state);
	c->sasl_state = state;
	c->sasl_state_free = free_fn;
}

static void
conn_unref(KConn *c)
{
	if (--c->refs == 0)
	{
		conn_set_sasl_state(c, NULL, NULL);
		event_free(c->resume);
		event_free(c->unmute);
		free(c->role);
		free(c);
	}
}

/*
 * After a response, the next frame may already be buffered: read it from
 * the loop rather than from here, so that a client pipelining thousands of
 * requests answered at once cannot grow the stack.
 */
static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	KConn	   *c = arg;

	if (!c->closed)
		conn_read(c->bev, c);
	conn_unref(c);
}

static void
conn_close(KConn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	kmetrics_connection(-1);
	if (listener_is_tls(c->listener))
		tls_close_notify(c->bev);
	bufferevent_free(c->bev);
	c->bev = NULL;
	conn_unref(c);
}

static void
req_free(KRequest *req)
{
	kmetrics_request_done(req);
	if (req->free_state && req->state)
		req->free_state(req->state);
	kw_free(&req->resp);
	free(req->frame);
	free(req->client_id);
	free(req->role);
	free(req);
}

static void
write_response(KRequest *req)
{
	struct evbuffer *out = bufferevent_get_output(req->conn->bev);
	uint8_t		hdr[9];
	size_t		hlen = req->flexible_resp ? 9 : 8;
	uint32_t	size;

	if (req->bare)
	{
		hlen = 4;				/* a bare SASL token: no header */
		size = (uint32_t) req->resp.len;
	}
	else
	{
		kw_tags(&req->resp);	/* a flexible body ends with its tagged fields */
		size = (uint32_t) (hlen - 4 + req->resp.len);
	}
	hdr[0] = size >> 24;
	hdr[1] = size >> 16;
	hdr[2] = size >> 8;
	hdr[3] = size;
	hdr[4] = (uint32_t) req->corr >> 24;
	hdr[5] = (uint32_t) req->corr >> 16;
	hdr[6] = (uint32_t) req->corr >> 8;
	hdr[7] = (uint32_t) req->corr;
	hdr[8] = 0;					/* no tagged fields */
	evbuffer_add(out, hdr, hlen);
	evbuffer_add(out, req->resp.buf, req->resp.len);
}

/* read the next request, from the loop (on_resume) */
static void
conn_resume(KConn *c)
{
	bufferevent_enable(c->bev, EV_READ);
	c->refs++;
	event_active(c->resume, 0, 0);
}

/* the next request, once the client has read enough of its output */
static void
conn_read_on(KConn *c)
{
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > RESUME_OUTPUT_BYTES)
		c->draining = true;		/* conn_written resumes */
	else
		conn_resume(c);
}

/* a throttle time is over */
static void
on_unmute(evutil_socket_t fd, short what, void *arg)
{
	KConn	   *c = arg;

	if (!c->closed)
		conn_read_on(c);
	conn_unref(c);
}

void
req_finish(KRequest *req)
{
	KConn	   *c = req->conn;

	if (!c->closed && (req->db_lost || req->close_after))
		conn_close(c);			/* the client tries again, or another broker */
	if (!c->closed)
	{
		if (!req->no_response)
			write_response(req);
		c->busy = false;
		if (req->db_us > 0 && !req->no_response)
		{
			int32_t		ms = quota_record(req, KQUOTA_REQUEST, req->db_us);

			req->throttle_ms = ms > req->throttle_ms ? ms : req->throttle_ms;
		}
		if (req->throttle_ms > 0)
		{
			struct timeval tv = {req->throttle_ms / 1000, (req->throttle_ms % 1000) * 1000};

			c->refs++;
			evtimer_add(c->unmute, &tv);
		}
		else
			conn_read_on(c);
	}
	req_free(req);
	conn_unref(c);
}

/*
 * The output is down to the write low watermark: a connection that was
 * closing closes (its watermark is 0), one that was draining reads on.
 */
static void
conn_written(struct bufferevent *bev, void *arg)
{
	KConn	   *c = arg;

	if (c->closing)
		conn_close(c);
	else if (c->draining && !c->closed)
	{
		c->draining = false;
		conn_resume(c);
	}
}

/*
 * Close once the output already queued is written: the answers to the
 * requests before (a client pipelines up to five), which Kafka has sent
 * before it reads the next request, so that a bad request does not take
 * away the answer to a Produce that was written.  Nothing more is read.
 */
static void
conn_close_when_written(KConn *c)
{
	c->closing = true;
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_setcb(c->bev, NULL, conn_written, conn_event, c);
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close(c);
}

void
req_finish_close(KRequest *req)
{
	KConn	   *c = req->conn;

	if (!c->closed)
	{
		write_response(req);
		conn_close_when_written(c);
	}
	req_free(req);
	conn_unref(c);
}

void
req_abort(KRequest *req)
{
	KConn	   *c = req->conn;

	kmetrics_protocol_error();
	if (!c->closed)
		conn_close_when_written(c);
	req_free(req);
	conn_unref(c);
}

/*
 * A TLS connection's client certificate, once: on an SSL listener it
 * authenticates the connection as its mapped subject (SASL_SSL
 * authenticates with SASL, whatever the certificate).  False if the
 * connection was closed: no mapping rule applies to the subject.
 */
static bool
conn_tls_principal(KConn *c)
{
	char		dn[1024];
	bool		refuse;
	char	   *user;

	c->tls_checked = true;
	if (c->listener->proto != KSEC_SSL)
		return true;
	user = tls_peer_principal(c->bev, &refuse, dn, sizeof(dn));
	if (refuse)
	{
		mq_log_warning("%s: no ssl principal mapping rule applies to certificate subject \"%s\", closing",
					   c->peer, dn);
		conn_close(c);
		return false;
	}
	if (user)
		conn_set_sasl(c, KSASL_DONE, user);
	free(user);
	return true;
}

/* Kafka's sasl.server.max.receive.size default */
#define PRE_AUTH_MAX_BYTES (512 * 1024)

/* the largest frame c may send now */
static int32_t
frame_max(const KConn *c)
{
	if (conn_needs_sasl(c) && c->sasl_step != KSASL_DONE && kconfig.max_request_bytes > PRE_AUTH_MAX_BYTES)
		return PRE_AUTH_MAX_BYTES;
	return kconfig.max_request_bytes;
}

/* the next whole frame, if one has arrived and none is in flight */
static void
conn_read(struct bufferevent *bev, void *arg)
{
	KConn	   *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t		szb[4];
	int32_t		size;
	KRequest   *req;

	if (c->busy || c->closed || evbuffer_get_length(in) < 4)
		return;
	if (!c->tls_checked && !conn_tls_principal(c))
		return;
	evbuffer_copyout(in, szb, 4);
	size = (int32_t) (((uint32_t) szb[0] << 24) | (szb[1] << 16) | (szb[2] << 8) | szb[3]);
	if (size < (c->sasl_step == KSASL_BARE ? 1 : 8) || size > frame_max(c))
	{
		mq_log_warning("%s: frame size %d out of range%s, closing", c->peer, size,
					   frame_max(c) < kconfig.max_request_bytes ? " before authentication" : "");
		kmetrics_protocol_error();
		conn_close_when_written(c);
		return;
	}
	if (evbuffer_get_length(in) < (size_t) size + 4)
		return;
	evbuffer_drain(in, 4);
	req = mq_malloc0(sizeof(KRequest));
	req->frame = mq_malloc(size);
	evbuffer_remove(in, req->frame, size);
	req->conn = c;
	req->role = c->role ? mq_strdup(c->role) : NULL;
	c->refs++;
	c->busy = true;
	bufferevent_disable(bev, EV_READ);
	c->dispatch(req, size);
}

static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	KConn	   *c = arg;

	if ((what & BEV_EVENT_ERROR) && listener_is_tls(c->listener))
		tls_log_failure(bev, c->peer);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_close(c);
}

void
conn_start(struct bufferevent *bev, const char *peer, const KListener *listener,
		   KFrameFn dispatch)
{
	KConn	   *c = mq_malloc0(sizeof(KConn));

	c->listener = listener;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->refs = 1;
	c->dispatch = dispatch;
	kmetrics_connection(1);
	c->resume = event_new(kbase, -1, 0, on_resume, c);
	c->unmute = evtimer_new(kbase, on_unmute, c);
	c->bev = bev;
	bufferevent_setcb(bev, conn_read, conn_written, conn_event, c);
	bufferevent_setwatermark(bev, EV_WRITE, RESUME_OUTPUT_BYTES, 0);
	if (kconfig.connections_max_idle_ms > 0)
	{
		struct timeval idle = {kconfig.connections_max_idle_ms / 1000,
							   (kconfig.connections_max_idle_ms % 1000) * 1000};

		bufferevent_set_timeouts(bev, &idle, &idle);
	}
	/* a Fetch response is often a megabyte: not libevent's 16 kB per write */
	bufferevent_set_max_single_write(bev, MAX_SINGLE_WRITE);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}
