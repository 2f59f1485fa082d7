/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-broker: one per PostgreSQL node.  Command line, signals, and the
 *	  event loop that runs the control tick (broker.c) and waits on every
 *	  follower's long-polling fetch (follower.c), on the node's own
 *	  connection to notice its death at once, and on the metrics endpoint
 *	  (metrics.c), without sleeping to poll.
 *
 *	  mq-broker -c /etc/mq/broker.ini
 *
 * SIGTERM or SIGINT: resign every leadership on the node (producers get
 * not_leader at once, not a timeout) and exit 0.  The loop is safe to
 * restart at any point: on start the broker resigns whatever its node
 * led, and re-earns leadership by election with a new epoch.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include "broker.h"
#include "config.h"
#include "util.h"

static volatile sig_atomic_t stop_requested = 0;

static void
on_signal(int sig)
{
	stop_requested = sig;
}

static void
usage(FILE *out)
{
	fprintf(out,
			"mq-broker replicates mq partitions between PostgreSQL nodes.\n\n"
			"Usage:\n  mq-broker -c CONFIG_FILE\n\n"
			"Options:\n"
			"  -c, --config=FILE   ini file: [broker] id, node, coordinator, ...\n"
			"  -V, --version       print the version and exit\n"
			"  -h, --help          show this help and exit\n\n"
			"Passwords belong in ~/.pgpass or a service file, never in the config.\n"
			"See docs/replication.md.\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *config_path = NULL;
	BrokerConfig cfg;
	Broker		b;
	struct sigaction sa;
	int			c;

	mq_progname = "mq-broker";
	while ((c = getopt_long(argc, argv, "c:Vh", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'c':
				config_path = optarg;
				break;
			case 'V':
				printf("mq-broker %s\n", MQ_VERSION);
				return 0;
			case 'h':
				usage(stdout);
				return 0;
			default:
				usage(stderr);
				return MQ_EXIT_USAGE;
		}
	}
	if (config_path == NULL || optind != argc)
	{
		usage(stderr);
		return MQ_EXIT_USAGE;
	}
	if (!broker_config_load(config_path, &cfg))
		return MQ_EXIT_USAGE;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: select() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&b, 0, sizeof(b));
	b.cfg = &cfg;
	broker_log("info", "starting broker %d (tick %d ms, replica.lag.time.max.ms %d, "
			   "session timeout %d ms)", cfg.broker_id, cfg.tick_ms, cfg.lag_time_max_ms,
			   cfg.session_timeout_ms);
	if (cfg.metrics_address && !metrics_start(&b, cfg.metrics_address))
		return 1;

	while (!stop_requested)
	{
		int64_t		tick_end = mq_now_us() + (int64_t) cfg.tick_ms * 1000;

		broker_tick(&b);

		/* until the next tick, serve fetch answers as they arrive */
		while (!stop_requested)
		{
			fd_set		rfds,
						wfds,
						efds;
			int			maxfd = -1;
			int64_t		left = tick_end - mq_now_us();
			struct timeval tv;
			int			rc;

			if (left <= 0)
				break;
			FD_ZERO(&rfds);
			FD_ZERO(&wfds);
			FD_ZERO(&efds);
			/* scrapes of [metrics] address are served in this loop too */
			metrics_fdset(&rfds, &wfds, &efds, &maxfd, &left);
			/* our node's connection: EOF there means the node is gone */
			if (b.node && PQsocket(b.node) >= 0)
			{
				FD_SET(PQsocket(b.node), &rfds);
				if (PQsocket(b.node) > maxfd)
					maxfd = PQsocket(b.node);
			}
			for (Part *p = b.parts; p; p = p->next)
			{
				if (p->in_flight && p->fconn)
				{
					int			fd = PQsocket(p->fconn);

					if (fd >= 0)
					{
						FD_SET(fd, &rfds);
						if (fd > maxfd)
							maxfd = fd;
					}
				}
			}
			tv.tv_sec = left / 1000000;
			tv.tv_usec = left % 1000000;
			rc = select(maxfd + 1, &rfds, &wfds, &efds, &tv);
			if (rc < 0)
			{
				if (errno == EINTR)
					continue;
				broker_log("error", "select failed: %s", strerror(errno));
				break;
			}
			if (rc == 0)
			{
				metrics_run(&rfds, &wfds, &efds);	/* its own timeouts */
				if (mq_now_us() >= tick_end)
					break;
				continue;
			}
			metrics_run(&rfds, &wfds, &efds);
			if (b.node && PQsocket(b.node) >= 0 && FD_ISSET(PQsocket(b.node), &rfds))
				broker_node_readable(&b);
			for (Part *p = b.parts; p; p = p->next)
				if (p->in_flight && p->fconn && PQsocket(p->fconn) >= 0 &&
					FD_ISSET(PQsocket(p->fconn), &rfds))
					follower_on_readable(&b, p);
		}
	}
	broker_log("info", "received signal %d; shutting down cleanly", (int) stop_requested);
	broker_shutdown(&b);
	metrics_stop();
	return 0;
}
