/*-------------------------------------------------------------------------
 *
 * loop.c
 *	  mq-broker's event loop: run the control tick every tick.ms, or
 *	  tick.idle.ms while steady (step.c decides), and, until the next one, wait with poll() on every
 *	  long-polling fetch (fetch_session.c, one per leader's node), on the node's own connection to
 *	  notice its death at once (session.c), and on the metrics endpoint
 *	  (metrics.c), without sleeping to poll.
 *
 * poll() rather than select(): a descriptor number is never limited by
 * FD_SETSIZE, so a broker with many connections (or started with many
 * descriptors open) cannot overflow a stack fd_set.
 *
 * While session.c waits for a coordinator statement, it calls
 * broker_serve_while_waiting() (main.c hands it down in Broker.hooks)
 * instead of sleeping in poll() on the coordinator alone: the same watch (fetch answers, the node, scrapes)
 * plus the coordinator's socket, and every tick.ms the leaders' progress
 * read (isr.c, leaders_refresh).  So a coordinator that stopped
 * answering holds none of that for up to coordinator.timeout.ms: a
 * follower appends what its leader sent and fetches again, in the epoch
 * its node applied, and its offset acknowledges what it wrote, exactly as
 * between ticks.  Nothing served there calls the coordinator (session.c
 * refuses a nested statement, and defers the roles of a node lost
 * meanwhile until the statement is over): the broker's state keeps one
 * writer, the one thread, and no work waits on another's half-done step
 * (docs/design.md, "Waiting for the coordinator").
 *
 * Layer: the top of the dispatch, below main.c only: it calls the tick
 * (step.c) and the handlers of what turned readable.
 *
 * Locking: none; the broker's one thread.  A signal handler only sets
 * *stop_requested; poll() returns EINTR and the loop looks at it.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "kafka_child.h"
#include "sdnotify.h"
#include "util.h"

typedef struct Watch
{
	struct pollfd *fds;
	FetchSession **sessions;	/* sessions[i]: whose fetch fds[i] is, NULL */
	int			n;
	int			cap;
} Watch;

static void
watch_add(Watch *w, int fd, FetchSession *s)
{
	if (w->n == w->cap)
	{
		w->cap = w->cap ? w->cap * 2 : 16;
		w->fds = mq_realloc(w->fds, sizeof(struct pollfd) * w->cap);
		w->sessions = mq_realloc(w->sessions, sizeof(FetchSession *) * w->cap);
	}
	w->fds[w->n].fd = fd;
	w->fds[w->n].events = POLLIN;
	w->fds[w->n].revents = 0;
	w->sessions[w->n] = s;
	w->n++;
}

/* Fill w: metrics first, then the node, then each fetch session's fetch in flight. */
static int64_t
watch_build(Broker *b, Watch *w, int64_t timeout_ms, int *metrics_n)
{
	struct pollfd mfd;

	w->n = 0;
	*metrics_n = metrics_pollfds(&mfd, &timeout_ms);
	if (*metrics_n)
		watch_add(w, mfd.fd, NULL);
	if (b->node && PQsocket(b->node) >= 0)
		watch_add(w, PQsocket(b->node), NULL);
	for (FetchSession *s = fetch_session_next(b, NULL); s; s = fetch_session_next(b, s))
		if (fetch_session_fd(s) >= 0)
			watch_add(w, fetch_session_fd(s), s);
	return timeout_ms;
}

/* Serve what poll() found ready. */
static void
watch_dispatch(Broker *b, Watch *w, int metrics_n)
{
	int			node_fd = b->node ? PQsocket(b->node) : -1;

	if (metrics_n)
		metrics_run();			/* also its own timeouts */
	for (int i = metrics_n; i < w->n; i++)
	{
		FetchSession *s = w->sessions[i];

		if (w->fds[i].revents == 0)
			continue;
		if (s == NULL)
		{
			if (b->node && w->fds[i].fd == node_fd)
				broker_node_readable(b);
		}
		else if (fetch_session_fd(s) == w->fds[i].fd)
			fetch_session_readable(b, s);
	}
}

/*
 * Until the next tick, serve fetch answers, node events and scrapes.
 * tick.c says when it is; an event may unsettle the broker and bring it
 * forward, so it is asked again every tick.ms (not after each event: it
 * looks at every partition, and a broker with thousands of them serves
 * thousands of fetch answers a second).
 */
static void
wait_for_tick(Broker *b, Watch *w, int64_t tick_start, volatile int *stop_requested)
{
	int64_t		tick_end = broker_next_tick_us(b, tick_start);
	int64_t		asked = mq_now_us();
	int64_t		every = (int64_t) b->cfg->tick_ms * 1000;

	while (!*stop_requested)
	{
		int64_t		now = mq_now_us();
		int64_t		until;
		int64_t		left_ms;
		int			metrics_n;
		int			rc;

		if (now - asked >= every)
		{
			tick_end = broker_next_tick_us(b, tick_start);
			asked = now;
		}
		until = tick_end < asked + every ? tick_end : asked + every;
		if (now >= tick_end)
			return;
		left_ms = (until - now + 999) / 1000;
		left_ms = watch_build(b, w, left_ms, &metrics_n);
		rc = poll(w->fds, (nfds_t) w->n, (int) left_ms);
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			mq_log_error("poll failed: %s", strerror(errno));
			return;
		}
		watch_dispatch(b, w, metrics_n);
	}
}

/*
 * One wait of session.c for the coordinator: until fd (its socket) turns
 * readable or deadline_us, serve what the loop serves between ticks.  The
 * watch is its own: the loop's may be in the middle of a dispatch that
 * led here (a node lost between ticks gives its locks up).
 */
void
broker_serve_while_waiting(Broker *b, int fd, int64_t deadline_us)
{
	static Watch w;
	int64_t		now = mq_now_us();
	int64_t		left_ms;
	int			metrics_n;
	int			rc;

	if (now >= b->wait_refresh_us)
	{
		broker_renew_lease(b);
		/* the high watermark of a leader alone in its ISR moves only so */
		leaders_refresh(b, false);
		now = mq_now_us();
		b->wait_refresh_us = now + (int64_t) b->cfg->tick_ms * 1000;
	}
	if (deadline_us > b->wait_refresh_us)
		deadline_us = b->wait_refresh_us;
	left_ms = (deadline_us - now + 999) / 1000;
	if (left_ms <= 0)
		return;
	left_ms = watch_build(b, &w, left_ms, &metrics_n);
	watch_add(&w, fd, NULL);
	rc = poll(w.fds, (nfds_t) w.n, (int) left_ms);
	if (rc < 0 && errno != EINTR)
		mq_log_error("poll failed: %s", strerror(errno));
	if (rc <= 0)
		return;
	w.n--;						/* the coordinator's is session.c's to read */
	watch_dispatch(b, &w, metrics_n);
}

void
broker_run(Broker *b, volatile int *stop_requested)
{
	Watch		w = {0};

	while (!*stop_requested)
	{
		int64_t		tick_start = mq_now_us();

		broker_tick(b);
		kafka_child_check();
		/* a broker that has ticked once serves (systemd: Type=notify) */
		mq_sd_ready();
		mq_sd_watchdog();
		wait_for_tick(b, &w, tick_start, stop_requested);
	}
	free(w.fds);
	free(w.sessions);
}
