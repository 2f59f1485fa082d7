/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-kafka: serves the Kafka protocol on top of an mq database.
 *	  Command line, signals, and the event loop (libevent).
 *
 *	  mq-kafka --listen 127.0.0.1:9092 -d "dbname=app"
 *
 * One thread: the event loop owns every client connection, the group
 * coordinator and the asynchronous database connections (pool.c).
 * With --coordinator it is one node's listener in a replicated cluster
 * (cluster.c); mq-broker starts it so from its [kafka] section.
 * SIGTERM or SIGINT ends the loop and the process: clients reconnect and
 * rejoin their groups elsewhere or after a restart (group state lives in
 * memory; committed offsets live in mq).
 *
 *-------------------------------------------------------------------------
 */
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sasl.h"
#include "cluster.h"
#include "group.h"
#include "kmetrics.h"
#include "listener.h"
#include "mqkafka.h"
#include "principal.h"
#include "quota.h"
#include "sdnotify.h"
#include "util.h"

KConfig		kconfig;
struct event_base *kbase;

static const char help[] =
"mq-kafka serves the Kafka protocol on an mq database.\n\n"
"Usage:\n  mq-kafka [OPTION]...\n\n"
"Options:\n"
"  -d, --dbname=CONNINFO        database to serve, as psql takes it (default: libpq\n"
"                               environment); passwords belong in ~/.pgpass\n"
"  -l, --listen=HOST:PORT       address to listen on (default 127.0.0.1:9092)\n"
"      --advertise=HOST:PORT    address Metadata gives clients (default: --listen;\n"
"                               this machine's host name for 0.0.0.0 or ::)\n"
"      --node-id=N              broker id in Metadata (default 1); in a replicated\n"
"                               cluster, the mq-broker id of this node\n"
"      --peer=ID=HOST:PORT      the mq-kafka of another node (repeat for each)\n"
"      --coordinator=CONNINFO   replicated cluster: the coordinator database, where\n"
"                               this daemon registers and reads brokers, leaders\n"
"                               and group coordinators (replaces --peer)\n"
"      --refresh-ms=N           how often the coordinator is read (default 500)\n"
"      --pool=N                 database connections (default 4)\n"
"      --statement-timeout-ms=N  a request's database work is cancelled and\n"
"                               answered with an error after N ms (default\n"
"                               60000; at most 10000 towards other nodes)\n"
"      --sasl=MECH[,MECH...]    clients must authenticate, with the mechanisms\n"
"                               listed: plain (the password checked by PostgreSQL),\n"
"                               scram-sha-256, scram-sha-512 (verifiers set with\n"
"                               mq.set_scram_credential); their requests then run\n"
"                               as the role of the user's name (with --listeners:\n"
"                               the mechanisms of SASL_* listeners; default all)\n"
"      --sasl-plain-on-plaintext  allow PLAIN on a connection without TLS\n"
"                               (passwords in clear text; refused otherwise)\n"
"      --principal-rules=LIST   authenticated name to role: RULE:regex/replacement/[L|U]\n"
"                               and DEFAULT (the name itself), comma-separated, as\n"
"                               Kafka's ssl.principal.mapping.rules (default DEFAULT)\n"
"      --anonymous=daemon|refuse|role:ROLE  a client that did not authenticate\n"
"                               runs as the daemon's own role (default), is\n"
"                               refused, or runs as ROLE\n"
"\nListeners and TLS (Kafka's settings of the same names; docs/kafka.md):\n"
"      --listeners=NAME://HOST:PORT,...  listen on each (replaces --listen);\n"
"                               NAME is a protocol (PLAINTEXT, SSL,\n"
"                               SASL_PLAINTEXT, SASL_SSL) or mapped to one\n"
"      --advertised-listeners=NAME://HOST:PORT,...  what Metadata gives the\n"
"                               clients of each listener (default: its address;\n"
"                               this machine's host name for an empty host,\n"
"                               0.0.0.0 or ::)\n"
"      --listener-security-protocol-map=NAME:PROTOCOL,...\n"
"      --ssl-certificate=FILE   the server's certificate chain (PEM)\n"
"      --ssl-key=FILE           its private key (PEM)\n"
"      --ssl-key-password-file=FILE  the key's passphrase, if it is encrypted\n"
"      --ssl-ca=FILE            CA certificates client certificates must chain to\n"
"      --ssl-client-auth=none|requested|required  client certificates (default none)\n"
"      --ssl-principal-mapping-rules=RULES  client certificate subject to user\n"
"                               name: RULE:pattern/replacement/[LU],...,DEFAULT\n"
"                               (default DEFAULT: the subject)\n"
"      --max-request-bytes=N    larger requests close the connection (default 104857600)\n"
"      --connections-max-idle-ms=N  close a client connection idle this long\n"
"                               (default 600000; 0: never)\n"
"      --max-batch-bytes=N      decompressed size cap per batch (default 67108864)\n"
"      --group-initial-delay-ms=N  wait for more members of a new group (default 3000)\n"
"      --group-min-session-timeout-ms=N  shorter member sessions are refused\n"
"                               (default 6000)\n"
"      --group-max-session-timeout-ms=N  longer member sessions are refused\n"
"                               (default 1800000)\n"
"      --auto-create-topics=N   create unknown topics with N partitions when a\n"
"                               Metadata request allows it (default 1, as Kafka's\n"
"                               auto.create.topics.enable; 0: never); N is also\n"
"                               CreateTopics' default (else 1)\n"
"      --recheck-ms=N           how often a waiting fetch looks for records without\n"
"                               a wake-up from the database (default 2000)\n"
"      --fetch-encoder=database|daemon  Fetch v4+ record batches encoded by\n"
"                               the database (mq.kafka_fetch, default) or here\n"
"      --metrics=HOST:PORT      serve Prometheus metrics on http://HOST:PORT/metrics\n"
"  -V, --version                print the version and exit\n"
"  -h, --help                   show this help and exit\n\n"
"See docs/kafka.md.\n";

/* the listener options' values, resolved into kconfig.listeners */
static const char *opt_listeners,
		   *opt_advertised,
		   *opt_protomap;
static bool opt_listen_given;

static void
on_sighup(evutil_socket_t sig, short what, void *arg)
{
	mq_log_info("sighup: reloading the tls certificate and key");
	server_reload_tls();
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	mq_log_info("signal %d, stopping", (int) sig);
	mq_sd_stopping();
	event_base_loopbreak(kbase);
}

/* "HOST:PORT" (or "[V6]:PORT") into its parts */
static void
parse_hostport(const CliParser *p, const char *opt, const char *arg, char **host, int *port)
{
	const char *colon = strrchr(arg, ':');
	char	   *h;

	if (colon == NULL || colon == arg)
		cli_usage_error(p, "%s must be HOST:PORT", opt);
	*port = (int) cli_int(p, opt, colon + 1, 1, 65535);
	if (arg[0] == '[' && colon[-1] == ']')
		h = strndup(arg + 1, colon - arg - 2);
	else
		h = strndup(arg, colon - arg);
	*host = h;
}

/* "ID=HOST:PORT" */
static void
parse_peer(const CliParser *p, char *arg)
{
	char	   *key,
			   *value;
	KPeer	   *peer;

	if (kconfig.npeers == KMAX_PEERS)
		cli_usage_error(p, "at most %d --peer options", KMAX_PEERS);
	peer = &kconfig.peers[kconfig.npeers++];
	cli_key_value(p, "--peer", arg, &key, &value);
	peer->id = (int) cli_int(p, "--peer", key, 0, INT32_MAX);
	parse_hostport(p, "--peer", value, &peer->host, &peer->port);
}

enum
{
	O_ADV = CLI_OPT_LONG_BASE,
	O_NODE,
	O_POOL,
	O_MAXREQ,
	O_IDLE,
	O_MAXBATCH,
	O_DELAY,
	O_MINSESSION,
	O_MAXSESSION,
	O_AUTO,
	O_RECHECK,
	O_FETCH_ENC,
	O_PEER,
	O_COORD,
	O_REFRESH,
	O_SASL,
	O_METRICS,
	O_STMT,
	O_LISTENERS, O_ADVLISTENERS, O_PROTOMAP, O_SSL_CERT, O_SSL_KEY, O_SSL_KEYPW,
	O_SSL_CA, O_SSL_CLIENT_AUTH, O_SSL_RULES, O_RULES, O_ANON, O_SASL_PT
};

static const struct option longopts[] = {
	{"dbname", required_argument, NULL, 'd'},
	{"listen", required_argument, NULL, 'l'},
	{"advertise", required_argument, NULL, O_ADV},
	{"node-id", required_argument, NULL, O_NODE},
	{"pool", required_argument, NULL, O_POOL},
	{"statement-timeout-ms", required_argument, NULL, O_STMT},
	{"max-request-bytes", required_argument, NULL, O_MAXREQ},
	{"connections-max-idle-ms", required_argument, NULL, O_IDLE},
	{"max-batch-bytes", required_argument, NULL, O_MAXBATCH},
	{"group-initial-delay-ms", required_argument, NULL, O_DELAY},
	{"group-min-session-timeout-ms", required_argument, NULL, O_MINSESSION},
	{"group-max-session-timeout-ms", required_argument, NULL, O_MAXSESSION},
	{"auto-create-topics", required_argument, NULL, O_AUTO},
	{"recheck-ms", required_argument, NULL, O_RECHECK},
	{"fetch-encoder", required_argument, NULL, O_FETCH_ENC},
	{"peer", required_argument, NULL, O_PEER},
	{"coordinator", required_argument, NULL, O_COORD},
	{"refresh-ms", required_argument, NULL, O_REFRESH},
	{"sasl", required_argument, NULL, O_SASL},
	{"sasl-plain-on-plaintext", no_argument, NULL, O_SASL_PT},
	{"metrics", required_argument, NULL, O_METRICS},
	{"listeners", required_argument, NULL, O_LISTENERS},
	{"advertised-listeners", required_argument, NULL, O_ADVLISTENERS},
	{"listener-security-protocol-map", required_argument, NULL, O_PROTOMAP},
	{"ssl-certificate", required_argument, NULL, O_SSL_CERT},
	{"ssl-key", required_argument, NULL, O_SSL_KEY},
	{"ssl-key-password-file", required_argument, NULL, O_SSL_KEYPW},
	{"ssl-ca", required_argument, NULL, O_SSL_CA},
	{"ssl-client-auth", required_argument, NULL, O_SSL_CLIENT_AUTH},
	{"ssl-principal-mapping-rules", required_argument, NULL, O_SSL_RULES},
	{"principal-rules", required_argument, NULL, O_RULES},
	{"anonymous", required_argument, NULL, O_ANON},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0}
};

/* the listener and TLS options; false if c is none of them */
static bool
parse_listener_option(const CliParser *p, int c, const char *arg)
{
	switch (c)
	{
		case O_LISTENERS:
			opt_listeners = arg;
			return true;
		case O_ADVLISTENERS:
			opt_advertised = arg;
			return true;
		case O_PROTOMAP:
			opt_protomap = arg;
			return true;
		case O_SSL_CERT:
			kconfig.tls.cert_file = arg;
			return true;
		case O_SSL_KEY:
			kconfig.tls.key_file = arg;
			return true;
		case O_SSL_KEYPW:
			kconfig.tls.key_password_file = arg;
			return true;
		case O_SSL_CA:
			kconfig.tls.ca_file = arg;
			return true;
		case O_SSL_CLIENT_AUTH:
			if (strcmp(arg, "none") == 0)
				kconfig.tls.client_auth = KCLIENT_AUTH_NONE;
			else if (strcmp(arg, "requested") == 0)
				kconfig.tls.client_auth = KCLIENT_AUTH_REQUESTED;
			else if (strcmp(arg, "required") == 0)
				kconfig.tls.client_auth = KCLIENT_AUTH_REQUIRED;
			else
				cli_usage_error(p, "--ssl-client-auth must be none, requested or required");
			return true;
		case O_SSL_RULES:
			kconfig.tls.mapping_rules = arg;
			return true;
	}
	return false;
}

/*
 * A listener on every interface with no advertised address of its own
 * advertises this machine's host name: its wildcard address would send a
 * client on another machine to itself.
 */
static void
advertise_host_name(void)
{
	for (int i = 0; i < kconfig.nlisteners; i++)
	{
		KListener  *l = &kconfig.listeners[i];

		if (!listener_is_wildcard(l->adv_host))
			continue;
		free(l->adv_host);
		l->adv_host = listener_host_name();
		mq_log_info("listener %s listens on every interface: it advertises this machine's host name %s (--advertise or --advertised-listeners sets another)",
					l->name, l->adv_host);
	}
}

/*
 * kconfig.listeners from --listeners, or the one of --listen, --advertise
 * and --sasl; kconfig's listen and advertised addresses are the first
 * listener's (the one registered on a cluster's coordinator).
 */
static void
resolve_listeners(const CliParser *p)
{
	KListener  *l = &kconfig.listeners[0];
	char		err[256];
	bool		sasl = kconfig.sasl_plain;

	if (opt_listeners == NULL)
	{
		if (opt_advertised || opt_protomap)
			cli_usage_error(p, "--advertised-listeners and --listener-security-protocol-map need --listeners");
		l->proto = sasl ? KSEC_SASL_PLAINTEXT : KSEC_PLAINTEXT;
		l->name = (char *) listener_proto_name(l->proto);
		l->host = kconfig.listen_host;
		l->port = kconfig.listen_port;
		/* malloc'd either way: advertise_host_name may replace it */
		l->adv_host = kconfig.advertised_host ? kconfig.advertised_host : mq_strdup(l->host);
		l->adv_port = kconfig.advertised_host ? kconfig.advertised_port : l->port;
		kconfig.nlisteners = 1;
	}
	else if (opt_listen_given)
		cli_usage_error(p, "--listeners replaces --listen and --advertise: give one or the other");
	else if (!listeners_parse(opt_listeners, opt_advertised, opt_protomap,
							  kconfig.listeners, &kconfig.nlisteners, err, sizeof(err)))
		cli_usage_error(p, "%s", err);
	advertise_host_name();
	kconfig.sasl_plain = false;
	for (int i = 0; i < kconfig.nlisteners; i++)
		kconfig.sasl_plain |= listener_is_sasl(&kconfig.listeners[i]);
	/* SASL_* listeners without --sasl: every mechanism (PLAIN without TLS
	 * still only with --sasl-plain-on-plaintext) */
	if (kconfig.sasl_plain && kconfig.sasl_mechs == 0)
		kconfig.sasl_mechs = KSASL_MECH_PLAIN | KSASL_MECH_SCRAM_SHA_256 | KSASL_MECH_SCRAM_SHA_512;
	if (sasl && !kconfig.sasl_plain)
		cli_usage_error(p, "--sasl needs a SASL_PLAINTEXT or SASL_SSL listener");
	kconfig.listen_host = l->host;
	kconfig.listen_port = l->port;
	kconfig.advertised_host = l->adv_host;
	kconfig.advertised_port = l->adv_port;
}

/* --principal-rules, --anonymous (principal.c); false: not one of them */
static bool
parse_principal(CliParser *p, int opt, const char *arg)
{
	char		errbuf[256];

	if (opt == O_RULES && !principal_set_rules(arg, errbuf, sizeof(errbuf)))
		cli_usage_error(p, "--principal-rules: %s", errbuf);
	if (opt == O_ANON && !principal_set_anonymous(arg, errbuf, sizeof(errbuf)))
		cli_usage_error(p, "%s", errbuf);
	return opt == O_RULES || opt == O_ANON;
}

/* --sasl=MECH,... and --sasl-plain-on-plaintext */
static void
parse_sasl(CliParser *p, bool mechs, const char *arg)
{
	if (!mechs)
	{
		kconfig.sasl_plain_on_plaintext = true;
		return;
	}
	if (!sasl_parse_mechs(arg, &kconfig.sasl_mechs))
		cli_usage_error(p, "--sasl takes a list of plain, scram-sha-256, scram-sha-512");
	kconfig.sasl_plain = true;
}

static void
parse_args(int argc, char **argv)
{
	CliParser	p;
	int			c;

	cli_init(&p, argc, argv, "mq-kafka", help, NULL, "d:l:Vh", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		switch (c)
		{
			case 'd':
				kconfig.conninfo = optarg;
				break;
			case 'l':
				parse_hostport(&p, "--listen", optarg, &kconfig.listen_host, &kconfig.listen_port);
				opt_listen_given = true;
				break;
			case O_ADV:
				parse_hostport(&p, "--advertise", optarg, &kconfig.advertised_host,
							   &kconfig.advertised_port);
				opt_listen_given = true;
				break;
			case O_NODE:
				kconfig.node_id = (int) cli_int(&p, "--node-id", optarg, 0, INT32_MAX);
				break;
			case O_POOL:
				kconfig.pool_size = (int) cli_int(&p, "--pool", optarg, 1, 256);
				break;
			case O_STMT:
				kconfig.statement_timeout_ms = (int) cli_int(&p, "--statement-timeout-ms", optarg, 100, 3600000);
				break;
			case O_MAXREQ:
				kconfig.max_request_bytes = (int32_t) cli_int(&p, "--max-request-bytes", optarg, 1024, INT32_MAX);
				break;
			case O_IDLE:
				kconfig.connections_max_idle_ms = (int) cli_int(&p, "--connections-max-idle-ms", optarg, 0, INT32_MAX);
				break;
			case O_MAXBATCH:
				kconfig.max_inflated_bytes = (int32_t) cli_int(&p, "--max-batch-bytes", optarg, 1024, INT32_MAX);
				break;
			case O_DELAY:
				kconfig.group_initial_delay_ms = (int) cli_int(&p, "--group-initial-delay-ms", optarg, 0, 300000);
				break;
			case O_MINSESSION:
				kconfig.group_min_session_ms = (int) cli_int(&p, "--group-min-session-timeout-ms", optarg, 1, INT32_MAX);
				break;
			case O_MAXSESSION:
				kconfig.group_max_session_ms = (int) cli_int(&p, "--group-max-session-timeout-ms", optarg, 1, INT32_MAX);
				break;
			case O_AUTO:
				kconfig.auto_create_partitions = (int) cli_int(&p, "--auto-create-topics", optarg, 0, 10000);
				break;
			case O_PEER:
				parse_peer(&p, optarg);
				break;
			case O_COORD:
				kconfig.coordinator = optarg;
				break;
			case O_REFRESH:
				kconfig.refresh_ms = (int) cli_int(&p, "--refresh-ms", optarg, 10, 60000);
				break;
			case O_SASL:
			case O_SASL_PT:
				parse_sasl(&p, c == O_SASL, optarg);
				break;
			case O_METRICS:
				parse_hostport(&p, "--metrics", optarg, &kconfig.metrics_host, &kconfig.metrics_port);
				break;
			case O_RECHECK:
				kconfig.recheck_ms = (int) cli_int(&p, "--recheck-ms", optarg, 1, 60000);
				break;
			case O_FETCH_ENC:
				kconfig.fetch_in_daemon = cli_choice(&p, "--fetch-encoder", optarg,
													 (const char *const[]){"database", "daemon", NULL}) == 1;
				break;
			case 'V':
				printf("mq-kafka %s\n", MQ_VERSION);
				exit(0);
			case 'h':
				cli_print_help(&p);
				exit(0);
			default:
				if (!parse_principal(&p, c, optarg) && !parse_listener_option(&p, c, optarg))
					cli_usage_error(&p, "unexpected option");
		}
	}
	(void) cli_positionals(&p, 0, 0, "nothing", NULL);
	resolve_listeners(&p);
	cli_free(&p);
}

/* mq-broker's watchdog (its kafka_child.c): the heartbeat pipe, or -1 */
static int	heartbeat_fd = -1;

/* while the loop turns: ping systemd (WatchdogSec=) and mq-broker (a byte; dropped when full) */
static void
on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	if (heartbeat_fd >= 0 && write(heartbeat_fd, "", 1) < 0 && errno == EPIPE)
		heartbeat_fd = -1;		/* mq-broker is gone (SIGPIPE is ignored) */
	mq_sd_watchdog();
}

/* run by mq-broker, MQ_KAFKA_HEARTBEAT_FD names the pipe; standalone, none */
static void
watchdog_start(void)
{
	uint64_t	usec = mq_sd_watchdog_usec() / 2;
	const char *beat = getenv("MQ_KAFKA_HEARTBEAT_FD");
	struct timeval tv;

	if (beat && *beat)
	{
		char	   *end;
		long		fd = strtol(beat, &end, 10);

		if (*end || fd < 0 || fd > INT32_MAX || fcntl((int) fd, F_SETFL, O_NONBLOCK) < 0)
			mq_log_warning("MQ_KAFKA_HEARTBEAT_FD=%s is not a descriptor: no heartbeat", beat);
		else
			heartbeat_fd = (int) fd;
	}
	if (heartbeat_fd >= 0 && (usec == 0 || usec > 1000000))
		usec = 1000000;			/* a beat a second */
	if (usec == 0)
		return;
	tv.tv_sec = (time_t) (usec / 1000000);
	tv.tv_usec = (suseconds_t) (usec % 1000000);
	event_add(event_new(kbase, -1, EV_PERSIST, on_watchdog, NULL), &tv);
}

static bool
is_loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
		strcmp(host, "localhost") == 0;
}

/*
 * Every Fetch allocates and frees buffers of about a megabyte (the query
 * result, the encoded batches, the response).  glibc would map and unmap
 * each, and the page faults of the fresh pages were a fifth of the
 * daemon's time when consuming: keep them in the heap instead, and give
 * memory back to the system only above 64 MB free.
 */
static void
keep_freed_memory(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
	(void) mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	(void) mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
}

int
main(int argc, char **argv)
{
	struct event *sigint,
			   *sigterm,
			   *sighup;

	mq_progname = "mq-kafka";
	kconfig.listen_host = "127.0.0.1";
	kconfig.listen_port = 9092;
	kconfig.node_id = 1;
	kconfig.pool_size = 4;
	kconfig.statement_timeout_ms = 60000;
	kconfig.max_request_bytes = 100 * 1024 * 1024;
	kconfig.connections_max_idle_ms = 600000;	/* Kafka's connections.max.idle.ms */
	kconfig.max_inflated_bytes = 64 * 1024 * 1024;
	kconfig.group_initial_delay_ms = 3000;
	kconfig.group_min_session_ms = 6000;	/* Kafka's group.min.session.timeout.ms */
	kconfig.group_max_session_ms = 1800000;	/* and group.max.session.timeout.ms */
	kconfig.recheck_ms = 2000;
	kconfig.auto_create_partitions = 1;	/* Kafka's auto.create.topics.enable */
	kconfig.refresh_ms = 500;
	parse_args(argc, argv);
	if (kconfig.coordinator && kconfig.npeers > 0)
	{
		mq_log_error("--peer and --coordinator exclude each other: the coordinator names the peers");
		return MQ_EXIT_USAGE;
	}
	if (kconfig.coordinator)
	{
		static char progname[32];

		/* its lines go into its mq-broker's log: name the broker, stamp the time */
		snprintf(progname, sizeof(progname), "mq-kafka[%d]", kconfig.node_id);
		mq_progname = progname;
		mq_log_set_timestamps(!mq_sd_stderr_is_journal());
	}
	for (int i = 0; i < kconfig.nlisteners; i++)
	{
		const KListener *l = &kconfig.listeners[i];

		if (l->proto != KSEC_SASL_PLAINTEXT || !(kconfig.sasl_mechs & KSASL_MECH_PLAIN))
			continue;
		if (kconfig.sasl_plain_on_plaintext)
			mq_log_warning("sasl plain allowed without tls on %s (--sasl-plain-on-plaintext): passwords cross %s in clear text",
						   l->host, is_loopback(l->host) ? "the loopback interface" : "the network");
		else
			mq_log_info("sasl plain on %s: refused on connections without tls", l->host);
	}

	signal(SIGPIPE, SIG_IGN);
	keep_freed_memory();
	kbase = event_base_new();
	if (kbase == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "cannot create the event loop");
	sigint = evsignal_new(kbase, SIGINT, on_signal, NULL);
	sigterm = evsignal_new(kbase, SIGTERM, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	sighup = evsignal_new(kbase, SIGHUP, on_sighup, NULL);
	event_add(sighup, NULL);

	server_start();
	if (kconfig.metrics_host)
		kmetrics_start(kconfig.metrics_host, kconfig.metrics_port);
	pool_start();
	cluster_start(group_drop_moved);
	group_cleanup_start();		/* group_start() first */
	quota_start();
	mq_log_info("listening on %s:%d%s (pool of %d database connections%s; unauthenticated clients: %s)",
				kconfig.listen_host, kconfig.listen_port,
				kconfig.nlisteners > 1 ? " and more" : "", kconfig.pool_size,
				kconfig.sasl_plain ? ", sasl" : "", principal_anonymous_describe());
	/* listening, the pool started: serving (systemd: Type=notify) */
	watchdog_start();
	mq_sd_ready();
	event_base_dispatch(kbase);
	return 0;
}
