/*-------------------------------------------------------------------------
 *
 * config.c
 *	  Reading mq-broker's ini file into a BrokerConfig (see config.h and
 *	  docs/replication.md, "Broker configuration").
 *
 * Unknown keys are errors, not warnings: a misspelt timeout silently left
 * at its default is the kind of mistake that shows only in an outage.
 * Numbers are whole numbers within the bounds of the table below; the
 * metrics port is 1..65535; connection strings are parsed with libpq's
 * PQconninfoParse, so that a password is found in a URI
 * (postgresql://u:pw@host) as well as in key=value form.  Lines may be
 * CONFIG_MAX_LINE characters long (libinih's own limit, 200, is lifted);
 * a longer line is an error naming it.  The parser takes
 * text (broker_config_parse) so that fuzz/config_fuzz.c can feed it.
 *
 * Locking: none; called once at start.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <libpq-fe.h>

#include "config.h"
#include "util.h"

/*
 * The longest line of the file: a connection string of a few hundred
 * characters (hosts, options, TLS paths) fits; a longer line is refused,
 * never cut.
 */
#define CONFIG_MAX_LINE 8192

typedef struct ParseState
{
	BrokerConfig *cfg;
	const char *path;
	bool		ok;
} ParseState;

typedef struct ConfigKey
{
	const char *section;
	const char *name;
	size_t		offset;			/* of the field in BrokerConfig */
	char		kind;			/* 'i' int, 'l' long, 's' string */
	long		min;
	long		max;
	const char *dflt;			/* set before the file is read; NULL: none */
	const char *doc;			/* docs/replication.md's table (reftables.sh) */
} ConfigKey;

#define KEY(sec, name, field, kind, min, max, dflt, doc) \
	{sec, name, offsetof(BrokerConfig, field), kind, min, max, dflt, doc}

/*
 * Every key, its bounds, default and meaning: the one source of the key
 * tables in docs/replication.md and docs/kafka.md (scripts/reftables.sh
 * generates them; test/static/reftables.sh checks them).
 */
static const ConfigKey keys[] = {
	KEY("broker", "id", broker_id, 'i', 0, INT_MAX, NULL,
		"required; this broker's id, unique in the cluster"),
	KEY("broker", "node", node, 's', 0, 0, NULL,
		"required; libpq connection string of this broker's data node (no password: ~/.pgpass)"),
	KEY("broker", "node.advertised", node_advertised, 's', 0, 0, NULL,
		"connection string other brokers use for this node (default: `node`)"),
	KEY("broker", "node.name", node_name, 's', 0, 0, NULL,
		"name registered on the coordinator and shown in metrics (default: `user@host:port/db` of the node connection)"),
	KEY("broker", "rack", rack, 's', 0, 0, NULL,
		"rack registered for placement (default: none)"),
	KEY("broker", "coordinator", coordinator, 's', 0, 0, NULL,
		"required; libpq connection string of the coordinator database"),
	KEY("broker", "tick.ms", tick_ms, 'i', 10, 10000, "100",
		"control loop period"),
	KEY("broker", "tick.idle.ms", tick_idle_ms, 'i', 10, 10000, "500",
		"control loop period while all this broker serves is steady (at most a quarter of `session.timeout.ms`, not below `tick.ms`)"),
	KEY("broker", "node.timeout.ms", node_timeout_ms, 'i', 100, 600000, "5000",
		"a node statement slower than this counts as a lost node"),
	KEY("broker", "coordinator.timeout.ms", coordinator_timeout_ms, 'i', 100, 600000, "5000",
		"a coordinator statement slower than this counts as a lost coordinator"),
	KEY("broker", "session.timeout.ms", session_timeout_ms, 'i', 100, 600000, "3000",
		"heartbeat age at which a broker counts as dead"),
	KEY("broker", "retry.ms", retry_ms, 'i', 10, 60000, "500",
		"first pause before reconnecting"),
	KEY("broker", "retry.max.ms", retry_max_ms, 'i', 10, 600000, "2000",
		"back-off cap: pauses grow with jitter up to this (not below `retry.ms`)"),
	KEY("replication", "replica.lag.time.max.ms", lag_time_max_ms, 'i', 100, 86400000, "10000",
		"a follower that has not caught up for this long leaves the ISR"),
	KEY("replication", "replica.lag.max.messages", lag_max_messages, 'l', 0, LONG_MAX, "0",
		"a follower this many records behind leaves the ISR (0: not used)"),
	KEY("replication", "replica.fetch.wait.max.ms", fetch_wait_ms, 'i', 0, 60000, "500",
		"long-poll wait of a follower's fetch on the leader (below half of `replica.lag.time.max.ms`)"),
	KEY("replication", "replica.fetch.max.records", fetch_max_records, 'i', 1, 1000000, "10000",
		"records per fetch, in whole producer batches (Kafka's replica.fetch.max.bytes is 1 MiB)"),
	KEY("replication", "auto.leader.rebalance.enable", auto_rebalance, 'i', 0, 1, "true",
		"preferred leaders take leadership back"),
	KEY("replication", "auto.leader.rebalance.delay.ms", rebalance_delay_ms, 'i', 0, 86400000, "10000",
		"how long a preferred leader must be back in the ISR before it takes leadership back"),
	KEY("replication", "txn.timeout.ms", txn_timeout_ms, 'i', 100, 3600000, "10000",
		"an mq: prepared transaction without a commit decision is rolled back after this long"),
	KEY("metrics", "address", metrics_address, 's', 0, 0, NULL,
		"host:port serving Prometheus text on /metrics (default: no endpoint)"),
	KEY("kafka", "listen", kafka_listen, 's', 0, 0, NULL,
		"host:port the node's mq-kafka listens on; it or `listeners` is required by the other [kafka] keys, and starts mq-kafka"),
	KEY("kafka", "listeners", kafka_listeners, 's', 0, 0, NULL,
		"`NAME://HOST:PORT,...`: mq-kafka's listeners, instead of `listen` (its `--listeners`); the first is the one registered on the coordinator"),
	KEY("kafka", "advertised.listeners", kafka_advertised_listeners, 's', 0, 0, NULL,
		"`NAME://HOST:PORT,...`: what Metadata gives each listener's clients (default: the listener's address; this machine's host name for an empty host, 0.0.0.0 or ::)"),
	KEY("kafka", "listener.security.protocol.map", kafka_protocol_map, 's', 0, 0, NULL,
		"`NAME:PROTOCOL,...` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; default: each name is its protocol)"),
	KEY("kafka", "ssl.certificate.location", kafka_ssl_cert, 's', 0, 0, NULL,
		"PEM file of the server's certificate chain (SSL and SASL_SSL listeners)"),
	KEY("kafka", "ssl.key.location", kafka_ssl_key, 's', 0, 0, NULL,
		"PEM file of its private key"),
	KEY("kafka", "ssl.key.password.file", kafka_ssl_key_password_file, 's', 0, 0, NULL,
		"file whose first line is the key's passphrase, if the key is encrypted"),
	KEY("kafka", "ssl.ca.location", kafka_ssl_ca, 's', 0, 0, NULL,
		"PEM file of the CAs client certificates must chain to"),
	KEY("kafka", "ssl.client.auth", kafka_ssl_client_auth, 's', 0, 0, NULL,
		"`none`, `requested` or `required`: client certificates (default: none)"),
	KEY("kafka", "ssl.principal.mapping.rules", kafka_ssl_rules, 's', 0, 0, NULL,
		"client certificate subject to user name: `RULE:pattern/replacement/[LU],...,DEFAULT` (default: DEFAULT)"),
	KEY("kafka", "advertise", kafka_advertise, 's', 0, 0, NULL,
		"host:port Metadata and FindCoordinator give clients (default: `listen`; this machine's host name if that is 0.0.0.0 or ::)"),
	KEY("kafka", "program", kafka_program, 's', 0, 0, NULL,
		"the mq-kafka executable (default: `mq-kafka` on the PATH)"),
	KEY("kafka", "pool", kafka_pool, 'i', 1, 256, NULL,
		"mq-kafka's `--pool` (default: mq-kafka's)"),
	KEY("kafka", "group.initial.rebalance.delay.ms", kafka_group_delay_ms, 'i', 0, 300000, NULL,
		"mq-kafka's `--group-initial-delay-ms` (default: mq-kafka's)"),
	KEY("kafka", "group.min.session.timeout.ms", kafka_min_session_ms, 'i', 1, INT32_MAX, NULL,
		"mq-kafka's `--group-min-session-timeout-ms` (default: mq-kafka's, Kafka's 6000)"),
	KEY("kafka", "group.max.session.timeout.ms", kafka_max_session_ms, 'i', 1, INT32_MAX, NULL,
		"mq-kafka's `--group-max-session-timeout-ms` (default: mq-kafka's, Kafka's 1800000)"),
	KEY("kafka", "auto.create.topics.enable", kafka_auto_create, 'i', 0, 1, NULL,
		"1 or 0: whether a Metadata request may create an unknown topic, on the coordinator (default: mq-kafka's, Kafka's 1; 0 is mq-kafka's `--auto-create-topics=0`)"),
	KEY("kafka", "num.partitions", kafka_num_partitions, 'i', 1, 10000, NULL,
		"partitions of a topic so created, and of a CreateTopics asking for -1 (mq-kafka's `--auto-create-topics`; default 1)"),
	KEY("kafka", "connections.max.idle.ms", kafka_idle_ms, 'i', 0, INT32_MAX, NULL,
		"mq-kafka's `--connections-max-idle-ms`: an idle client connection is closed (default: mq-kafka's, Kafka's 600000; 0: never)"),
	KEY("kafka", "sasl", kafka_sasl, 's', 0, 0, NULL,
		"mechanisms clients authenticate with, a list of `plain`, `scram-sha-256`, `scram-sha-512` (mq-kafka's `--sasl`; default: none)"),
	KEY("kafka", "sasl.plain.on.plaintext", kafka_sasl_plain_on_plaintext, 'i', 0, 1, NULL,
		"allow PLAIN on connections without TLS (mq-kafka's `--sasl-plain-on-plaintext`; default: false)"),
	KEY("kafka", "principal.rules", kafka_principal_rules, 's', 0, 0, NULL,
		"authenticated name to role: `RULE:regex/replacement/[L|U],...,DEFAULT` (mq-kafka's `--principal-rules`; default: DEFAULT)"),
	KEY("kafka", "anonymous", kafka_anonymous, 's', 0, 0, NULL,
		"`daemon`, `refuse` or `role:ROLE`: what clients that do not authenticate run as (mq-kafka's `--anonymous`; default: daemon)"),
	KEY("kafka", "metrics", kafka_metrics, 's', 0, 0, NULL,
		"host:port where mq-kafka serves Prometheus text on /metrics (its `--metrics`; default: none)"),
	KEY("kafka", "watchdog.ms", kafka_watchdog_ms, 'i', 0, 3600000, "10000",
		"mq-kafka whose event loop has not turned for this long (no heartbeat on its pipe to mq-broker) is killed (SIGKILL) and restarted, as Kafka fences a broker silent for `broker.session.timeout.ms`; at least 2000, or 0: never"),
};

static bool
parse_long(const char *value, long min, long max, long *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int
set_key(ParseState *st, const ConfigKey *k, const char *section, const char *value)
{
	char	   *field = (char *) st->cfg + k->offset;
	long		v;

	if (k->kind == 's')
	{
		free(*(char **) field);
		*(char **) field = mq_strdup(value);
		return 1;
	}
	/* booleans are ints 0..1 that also take Kafka's spelling */
	if (k->min == 0 && k->max == 1 && (strcmp(value, "true") == 0 || strcmp(value, "false") == 0))
		value = strcmp(value, "true") == 0 ? "1" : "0";
	if (!parse_long(value, k->min, k->max, &v))
	{
		mq_log_error("%s: [%s] %s must be a whole number between %ld and %ld, not \"%s\"",
					 st->path, section, k->name, k->min, k->max, value);
		st->ok = false;
		return 1;
	}
	if (k->kind == 'i')
		*(int *) field = (int) v;
	else
		*(long *) field = v;
	return 1;
}

static int
handler(void *user, const char *section, const char *name, const char *value)
{
	ParseState *st = user;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return set_key(st, &keys[i], section, value);
	mq_log_error("%s: unknown setting \"%s\" in section [%s]", st->path, name, section);
	st->ok = false;
	return 1;
}

bool
conninfo_has_password(const char *conninfo, bool *unparsable)
{
	char	   *errmsg = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &errmsg);
	bool		found = false;

	*unparsable = opts == NULL;
	PQfreemem(errmsg);			/* it may quote the string: never shown */
	if (opts == NULL)
		return true;
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL)
			found = true;
	PQconninfoFree(opts);
	return found;
}

bool
split_host_port(const char *address, char **host, int *port)
{
	const char *colon = strrchr(address, ':');
	long		v;
	size_t		hlen;

	if (colon == NULL || !parse_long(colon + 1, 1, 65535, &v))
		return false;
	hlen = (size_t) (colon - address);
	if (hlen >= 2 && address[0] == '[' && address[hlen - 1] == ']')
	{
		address++;
		hlen -= 2;
	}
	*host = mq_malloc(hlen + 1);
	memcpy(*host, address, hlen);
	(*host)[hlen] = '\0';
	*port = (int) v;
	return true;
}

/* Each connection string: parsable by libpq and without a password. */
static bool
check_conninfos(BrokerConfig *cfg, const char *path)
{
	const char *names[] = {"node", "node.advertised", "coordinator"};
	const char *vals[] = {cfg->node, cfg->node_advertised, cfg->coordinator};

	for (int i = 0; i < 3; i++)
	{
		bool		unparsable;

		if (vals[i] == NULL || !conninfo_has_password(vals[i], &unparsable))
			continue;
		if (unparsable)
			mq_log_error("%s: [broker] %s is not a libpq connection string (key=value or postgresql:// URI)",
						 path, names[i]);
		else
			mq_log_error("%s: [broker] %s must not hold a password; use ~/.pgpass or a service file",
						 path, names[i]);
		return false;
	}
	return true;
}

/* a comma-separated list of mq-kafka's SASL mechanisms */
static bool
sasl_list_ok(const char *list)
{
	const char *p = list;

	while (true)
	{
		size_t		n = strcspn(p, ",");

		if (!((n == 5 && strncmp(p, "plain", 5) == 0) ||
			  (n == 13 && (strncmp(p, "scram-sha-256", 13) == 0 ||
						   strncmp(p, "scram-sha-512", 13) == 0))))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

/* [kafka]: addresses that are host:port, and listen when anything is set */
static bool
check_kafka(BrokerConfig *cfg, const char *path)
{
	const char *names[] = {"listen", "advertise", "metrics"};
	const char *vals[] = {cfg->kafka_listen, cfg->kafka_advertise, cfg->kafka_metrics};

	if (cfg->kafka_listen == NULL && cfg->kafka_listeners == NULL &&
		(cfg->kafka_advertise || cfg->kafka_program || cfg->kafka_pool || cfg->kafka_group_delay_ms >= 0 ||
		 cfg->kafka_min_session_ms >= 0 || cfg->kafka_max_session_ms >= 0 || cfg->kafka_idle_ms >= 0 ||
		 cfg->kafka_auto_create >= 0 || cfg->kafka_num_partitions >= 0 ||
		 cfg->kafka_sasl || cfg->kafka_metrics || cfg->kafka_ssl_cert))
	{
		mq_log_error("%s: [kafka] needs listen (host:port) or listeners to start mq-kafka", path);
		return false;
	}
	if (cfg->kafka_listen && cfg->kafka_listeners)
	{
		mq_log_error("%s: [kafka] listeners replaces listen and advertise: give one or the other", path);
		return false;
	}
	if (cfg->kafka_ssl_client_auth && strcmp(cfg->kafka_ssl_client_auth, "none") != 0 &&
		strcmp(cfg->kafka_ssl_client_auth, "requested") != 0 &&
		strcmp(cfg->kafka_ssl_client_auth, "required") != 0)
	{
		mq_log_error("%s: [kafka] ssl.client.auth must be none, requested or required, not \"%s\"",
					 path, cfg->kafka_ssl_client_auth);
		return false;
	}
	if (cfg->kafka_watchdog_ms > 0 && cfg->kafka_watchdog_ms < 2000)
	{
		/* mq-kafka beats once a second: less would kill a healthy one */
		mq_log_error("%s: [kafka] watchdog.ms must be 0 (never) or at least 2000, not %d",
					 path, cfg->kafka_watchdog_ms);
		return false;
	}
	if (cfg->kafka_sasl && !sasl_list_ok(cfg->kafka_sasl))
	{
		mq_log_error("%s: [kafka] sasl must be a list of plain, scram-sha-256 and scram-sha-512, not \"%s\"",
					 path, cfg->kafka_sasl);
		return false;
	}
	for (int i = 0; i < 3; i++)
	{
		char	   *host = NULL;
		int			port;

		if (vals[i] && !split_host_port(vals[i], &host, &port))
		{
			mq_log_error("%s: [kafka] %s must be host:port with a port from 1 to 65535, not \"%s\"",
						 path, names[i], vals[i]);
			return false;
		}
		free(host);
	}
	return true;
}

/* What no single key can say: required keys and relations between keys. */
static bool
check_config(BrokerConfig *cfg, const char *path)
{
	char	   *host = NULL;
	int			port;

	if (cfg->broker_id < 0)
	{
		mq_log_error("%s: [broker] id is required", path);
		return false;
	}
	if (cfg->node == NULL || cfg->coordinator == NULL)
	{
		mq_log_error("%s: [broker] node and coordinator are required (libpq connection strings)", path);
		return false;
	}
	if (!check_conninfos(cfg, path))
		return false;
	if (cfg->fetch_wait_ms * 2 >= cfg->lag_time_max_ms)
	{
		mq_log_error("%s: replica.fetch.wait.max.ms (%d) must be below half of replica.lag.time.max.ms (%d)",
					 path, cfg->fetch_wait_ms, cfg->lag_time_max_ms);
		return false;
	}
	if (cfg->retry_max_ms < cfg->retry_ms)
	{
		mq_log_error("%s: retry.max.ms (%d) must not be below retry.ms (%d)",
					 path, cfg->retry_max_ms, cfg->retry_ms);
		return false;
	}
	if (cfg->metrics_address && !split_host_port(cfg->metrics_address, &host, &port))
	{
		mq_log_error("%s: [metrics] address must be host:port with a port from 1 to 65535, not \"%s\"",
					 path, cfg->metrics_address);
		return false;
	}
	free(host);
	return check_kafka(cfg, path);
}

/* Defaults from the key table, and the markers of keys left unset. */
static void
set_defaults(BrokerConfig *cfg)
{
	ParseState	st = {cfg, "built-in defaults", true};

	memset(cfg, 0, sizeof(*cfg));
	cfg->broker_id = -1;		/* required */
	cfg->kafka_group_delay_ms = -1;	/* unset: mq-kafka's default */
	cfg->kafka_min_session_ms = -1;
	cfg->kafka_max_session_ms = -1;
	cfg->kafka_idle_ms = -1;
	cfg->kafka_auto_create = -1;
	cfg->kafka_num_partitions = -1;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].dflt)
			(void) set_key(&st, &keys[i], keys[i].section, keys[i].dflt);
}

/*
 * The number of the first line of text longer than CONFIG_MAX_LINE
 * characters, or 0.
 */
static int
overlong_line(const char *text)
{
	int			lineno = 1;

	for (const char *p = text;; lineno++)
	{
		const char *nl = strchr(p, '\n');
		size_t		len = nl ? (size_t) (nl - p) : strlen(p);

		if (len > CONFIG_MAX_LINE)
			return lineno;
		if (nl == NULL)
			return 0;
		p = nl + 1;
	}
}

bool
broker_config_parse(const char *text, const char *name, BrokerConfig *cfg)
{
	ParseState	st = {cfg, name, true};
	int			rc;

	set_defaults(cfg);
	if ((rc = overlong_line(text)) != 0)
	{
		mq_log_error("%s:%d: line longer than %d characters (a value is never cut)",
					 name, rc, CONFIG_MAX_LINE);
		return false;
	}
	/*
	 * libinih reads lines into a buffer of 200 bytes unless told otherwise
	 * (Debian's build makes these settings variables): a heap buffer that
	 * grows to hold any line overlong_line let through, '\r', '\n' and
	 * '\0' included.
	 */
	ini_use_stack = false;
	ini_allow_realloc = true;
	ini_max_line = CONFIG_MAX_LINE + 3;
	rc = ini_parse_string(text, handler, &st);
	if (rc != 0)
	{
		mq_log_error("%s:%d: syntax error", name, rc);
		return false;
	}
	if (!st.ok || !check_config(cfg, name))
		return false;
	if (cfg->node_advertised == NULL)
		cfg->node_advertised = mq_strdup(cfg->node);
	return true;
}

bool
broker_config_load(const char *path, BrokerConfig *cfg)
{
	FILE	   *f = fopen(path, "r");
	char	   *text = NULL;
	size_t		len = 0;
	size_t		cap = 0;
	size_t		n;
	bool		ok;

	if (f == NULL)
	{
		set_defaults(cfg);
		mq_log_error("cannot read configuration file \"%s\": %s", path, strerror(errno));
		return false;
	}
	do
	{
		if (cap - len < 4096)
			text = mq_realloc(text, cap = cap * 2 + 4096);
		n = fread(text + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0 && len < 1024 * 1024);
	fclose(f);
	text[len] = '\0';
	if (len >= 1024 * 1024)
	{
		free(text);
		set_defaults(cfg);
		mq_log_error("%s: larger than 1 MB; not a broker configuration", path);
		return false;
	}
	if (strlen(text) != len)
	{
		free(text);
		set_defaults(cfg);
		mq_log_error("%s: the file holds a NUL byte; it is not an ini file", path);
		return false;
	}
	ok = broker_config_parse(text, path, cfg);
	free(text);
	return ok;
}

void
broker_config_free(BrokerConfig *cfg)
{
	free(cfg->node);
	free(cfg->node_advertised);
	free(cfg->node_name);
	free(cfg->rack);
	free(cfg->coordinator);
	free(cfg->metrics_address);
	free(cfg->kafka_listen);
	free(cfg->kafka_advertise);
	free(cfg->kafka_program);
	free(cfg->kafka_sasl);
	free(cfg->kafka_principal_rules);
	free(cfg->kafka_anonymous);
	free(cfg->kafka_listeners);
	free(cfg->kafka_advertised_listeners);
	free(cfg->kafka_protocol_map);
	free(cfg->kafka_ssl_cert);
	free(cfg->kafka_ssl_key);
	free(cfg->kafka_ssl_key_password_file);
	free(cfg->kafka_ssl_ca);
	free(cfg->kafka_ssl_client_auth);
	free(cfg->kafka_ssl_rules);
	free(cfg->kafka_metrics);
	memset(cfg, 0, sizeof(*cfg));
}
