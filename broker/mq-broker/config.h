/*-------------------------------------------------------------------------
 *
 * config.h
 *	  mq-broker's configuration file: what it holds and its defaults.
 *
 * An ini file (parsed with libinih).  It names the broker, its node and
 * the coordinator with libpq connection strings that carry no password:
 * secrets stay in ~/.pgpass or a service file (PGSERVICEFILE), so the file
 * can be world-readable and the broker never logs a secret.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_CONFIG_H
#define MQ_BROKER_CONFIG_H

#include <stdbool.h>

typedef struct BrokerConfig
{
	int			broker_id;
	char	   *node;			/* conninfo of this broker's data node */
	char	   *node_advertised;	/* conninfo other brokers use for it */
	char	   *node_name;		/* "host:port" for messages */
	char	   *coordinator;	/* conninfo of the coordinator database */
	int			tick_ms;		/* control loop period */
	int			node_timeout_ms;	/* a node call slower than this: node lost */
	int			coordinator_timeout_ms;
	int			session_timeout_ms; /* heartbeat age at which a broker is dead */
	int			lag_time_max_ms;	/* replica.lag.time.max.ms */
	long		lag_max_messages;	/* replica.lag.max.messages, 0 = unset */
	int			fetch_wait_ms;	/* replica.fetch.wait.max.ms */
	int			fetch_max_records;
	int			retry_ms;		/* reconnect interval */
	int			auto_rebalance; /* auto.leader.rebalance.enable: 1 or 0 */
	int			rebalance_delay_ms; /* auto.leader.rebalance.delay.ms */
	char	   *metrics_address;	/* host:port, or NULL */
} BrokerConfig;

/* Fill cfg from path; on error print what is wrong and return false. */
extern bool broker_config_load(const char *path, BrokerConfig *cfg);

#endif							/* MQ_BROKER_CONFIG_H */
