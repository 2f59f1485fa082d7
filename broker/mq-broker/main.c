/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-broker: one per PostgreSQL node.  The command line (parsed with
 *	  broker/common/cli.c, as mqctl's is), signals, and the start of the
 *	  event loop (loop.c).
 *
 *	  mq-broker -c /etc/mq/broker.ini
 *	  mq-broker --print-fsm     the partition state machine as Graphviz dot
 *
 * With a [kafka] section it also runs the node's mq-kafka (kafka_child.c).
 * SIGHUP: passed on to mq-kafka, which reloads its TLS certificate and key.
 * SIGTERM or SIGINT: stop mq-kafka, resign every leadership on the node (producers get
 * not_leader at once, not a timeout) and exit 0.  The loop is safe to
 * restart at any point: on start the broker resigns whatever its node
 * led, and re-earns leadership by election with a new epoch.
 *
 * Layer: the top of mq-broker; it also hands the lower layers the
 * functions they call up through (BrokerHooks, below).
 *
 * Locking: none; one thread (the signal handler only sets a flag).
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "cli.h"
#include "config.h"
#include "kafka_child.h"
#include "sdnotify.h"
#include "util.h"

static volatile int stop_requested = 0;

/*
 * What the lower layers call up through (broker.h, BrokerHooks): the
 * state machine's actions and the reactions to a lost connection
 * (step.c), and the serving while the coordinator is waited for (loop.c).
 */
static const BrokerHooks hooks = {
	.fsm_actions = broker_fsm_actions,
	.serve_while_waiting = broker_serve_while_waiting,
	.node_lost = broker_node_lost_roles,
	.coord_lost = broker_coord_lost_roles,
};

static void
on_signal(int sig)
{
	stop_requested = sig;
}

/* SIGHUP: mq-kafka reloads its TLS certificate and key */
static void
on_hup(int sig)
{
	kafka_child_forward(sig);
}

static const char help[] =
"mq-broker replicates mq partitions between PostgreSQL nodes.\n\n"
"Usage:\n  mq-broker -c CONFIG_FILE\n  mq-broker --print-fsm\n\n"
"Options:\n"
"  -c, --config=FILE   ini file: [broker] id, node, coordinator, ...\n"
"      --print-fsm     print the partition state machine (Graphviz dot) and exit\n"
"  -V, --version       print the version and exit\n"
"  -h, --help          show this help and exit\n\n"
"Passwords belong in ~/.pgpass or a service file, never in the config.\n"
"See docs/replication.md.\n";

enum
{
	OPT_PRINT_FSM = CLI_OPT_LONG_BASE
};

/* Parse argv; returns the config path (NULL after --print-fsm was handled). */
static const char *
parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"print-fsm", no_argument, NULL, OPT_PRINT_FSM},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	CliParser	cli;
	const char *config_path = NULL;
	int			c;

	cli_init(&cli, argc, argv, "mq-broker", help, NULL, "c:Vh", longopts);
	while ((c = cli_next(&cli)) != -1)
	{
		switch (c)
		{
			case 'c':
				config_path = optarg;
				break;
			case OPT_PRINT_FSM:
				fsm_print_dot(stdout);
				exit(MQ_EXIT_OK);
			case 'V':
				printf("mq-broker %s\n", MQ_VERSION);
				exit(MQ_EXIT_OK);
			case 'h':
				cli_print_help(&cli);
				exit(MQ_EXIT_OK);
		}
	}
	(void) cli_positionals(&cli, 0, 0, "", NULL);
	if (config_path == NULL)
		cli_usage_error(&cli, "-c CONFIG_FILE is required");
	cli_free(&cli);
	return config_path;
}

int
main(int argc, char **argv)
{
	static char progname[32];
	const char *config_path;
	BrokerConfig cfg;
	Broker		b;
	struct sigaction sa;

	mq_progname = "mq-broker";
	config_path = parse_args(argc, argv);
	if (!broker_config_load(config_path, &cfg))
	{
		broker_config_free(&cfg);
		return MQ_EXIT_USAGE;
	}
	/* every line of the log names the broker and its time */
	snprintf(progname, sizeof(progname), "mq-broker[%d]", cfg.broker_id);
	mq_progname = progname;
	/* the journal stamps lines itself (the systemd unit) */
	mq_log_set_timestamps(!mq_sd_stderr_is_journal());

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	broker_init(&b, &cfg, &hooks);
	mq_log_info("starting broker %d (tick %d ms, replica.lag.time.max.ms %d, "
				"session timeout %d ms)", cfg.broker_id, cfg.tick_ms, cfg.lag_time_max_ms,
				cfg.session_timeout_ms);
	if (cfg.metrics_address && !metrics_start(&b, cfg.metrics_address))
		return 1;
	kafka_child_start(&cfg);

	broker_run(&b, &stop_requested);
	mq_log_info("received signal %d; shutting down cleanly", (int) stop_requested);
	mq_sd_stopping();
	kafka_child_stop();
	broker_shutdown(&b);
	metrics_stop();
	broker_config_free(&cfg);
	return 0;
}
