/*-------------------------------------------------------------------------
 *
 * config.c
 *	  Reading mq-broker's ini file into a BrokerConfig (see config.h and
 *	  docs/replication.md, "Broker configuration").
 *
 * Unknown keys are errors, not warnings: a misspelt timeout silently left
 * at its default is the kind of mistake that shows only in an outage.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "config.h"
#include "util.h"

typedef struct ParseState
{
	BrokerConfig *cfg;
	const char *path;
	bool		ok;
} ParseState;

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
handler(void *user, const char *section, const char *name, const char *value)
{
	ParseState *st = user;
	BrokerConfig *cfg = st->cfg;
	struct
	{
		const char *section;
		const char *name;
		int		   *ivar;
		long	   *lvar;
		char	  **svar;
		long		min;
		long		max;
	}			keys[] = {
		{"broker", "id", &cfg->broker_id, NULL, NULL, 0, INT_MAX},
		{"broker", "node", NULL, NULL, &cfg->node, 0, 0},
		{"broker", "node.advertised", NULL, NULL, &cfg->node_advertised, 0, 0},
		{"broker", "node.name", NULL, NULL, &cfg->node_name, 0, 0},
		{"broker", "coordinator", NULL, NULL, &cfg->coordinator, 0, 0},
		{"broker", "tick.ms", &cfg->tick_ms, NULL, NULL, 10, 10000},
		{"broker", "node.timeout.ms", &cfg->node_timeout_ms, NULL, NULL, 100, 600000},
		{"broker", "coordinator.timeout.ms", &cfg->coordinator_timeout_ms, NULL, NULL, 100, 600000},
		{"broker", "session.timeout.ms", &cfg->session_timeout_ms, NULL, NULL, 100, 600000},
		{"broker", "retry.ms", &cfg->retry_ms, NULL, NULL, 10, 60000},
		{"replication", "replica.lag.time.max.ms", &cfg->lag_time_max_ms, NULL, NULL, 100, INT_MAX},
		{"replication", "replica.lag.max.messages", NULL, &cfg->lag_max_messages, NULL, 0, LONG_MAX},
		{"replication", "replica.fetch.wait.max.ms", &cfg->fetch_wait_ms, NULL, NULL, 0, 60000},
		{"replication", "replica.fetch.max.records", &cfg->fetch_max_records, NULL, NULL, 1, 1000000},
		{"replication", "auto.leader.rebalance.enable", &cfg->auto_rebalance, NULL, NULL, 0, 1},
		{"replication", "auto.leader.rebalance.delay.ms", &cfg->rebalance_delay_ms, NULL, NULL, 0, INT_MAX},
		{"metrics", "address", NULL, NULL, &cfg->metrics_address, 0, 0},
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
	{
		long		v;

		if (strcmp(keys[i].section, section) != 0 || strcmp(keys[i].name, name) != 0)
			continue;
		if (keys[i].svar)
		{
			free(*keys[i].svar);
			*keys[i].svar = mq_strdup(value);
			return 1;
		}
		/* booleans are ints 0..1 that also take Kafka's spelling */
		if (keys[i].min == 0 && keys[i].max == 1 &&
			(strcmp(value, "true") == 0 || strcmp(value, "false") == 0))
			value = strcmp(value, "true") == 0 ? "1" : "0";
		if (!parse_long(value, keys[i].min, keys[i].max, &v))
		{
			mq_log_error("%s: [%s] %s must be a whole number between %ld and %ld, not \"%s\"",
						 st->path, section, name, keys[i].min, keys[i].max, value);
			st->ok = false;
			return 1;
		}
		if (keys[i].ivar)
			*keys[i].ivar = (int) v;
		else
			*keys[i].lvar = v;
		return 1;
	}
	mq_log_error("%s: unknown setting \"%s\" in section [%s]", st->path, name, section);
	st->ok = false;
	return 1;
}

bool
broker_config_load(const char *path, BrokerConfig *cfg)
{
	ParseState	st = {cfg, path, true};
	int			rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->broker_id = -1;
	cfg->tick_ms = 100;
	cfg->node_timeout_ms = 5000;
	cfg->coordinator_timeout_ms = 5000;
	cfg->session_timeout_ms = 3000;
	cfg->lag_time_max_ms = 10000;
	cfg->lag_max_messages = 0;
	cfg->fetch_wait_ms = 500;
	cfg->fetch_max_records = 10000;
	cfg->retry_ms = 500;
	cfg->auto_rebalance = 1;
	cfg->rebalance_delay_ms = 10000;

	rc = ini_parse(path, handler, &st);
	if (rc < 0)
	{
		mq_log_error("cannot read configuration file \"%s\": %s", path, strerror(errno));
		return false;
	}
	if (rc > 0)
	{
		mq_log_error("%s:%d: syntax error", path, rc);
		return false;
	}
	if (st.ok && cfg->broker_id < 0)
	{
		mq_log_error("%s: [broker] id is required", path);
		st.ok = false;
	}
	if (st.ok && (cfg->node == NULL || cfg->coordinator == NULL))
	{
		mq_log_error("%s: [broker] node and coordinator are required (libpq connection strings)", path);
		st.ok = false;
	}
	if (st.ok && (strstr(cfg->node, "password") || strstr(cfg->coordinator, "password") ||
				  (cfg->node_advertised && strstr(cfg->node_advertised, "password"))))
	{
		mq_log_error("%s: connection strings must not hold passwords; use ~/.pgpass or a service file", path);
		st.ok = false;
	}
	if (st.ok && cfg->fetch_wait_ms * 2 >= cfg->lag_time_max_ms)
	{
		mq_log_error("%s: replica.fetch.wait.max.ms (%d) must be below half of replica.lag.time.max.ms (%d)",
					 path, cfg->fetch_wait_ms, cfg->lag_time_max_ms);
		st.ok = false;
	}
	if (st.ok && cfg->node_advertised == NULL)
		cfg->node_advertised = mq_strdup(cfg->node);
	return st.ok;
}
