/*-------------------------------------------------------------------------
 *
 * config.h
 *	  mq-broker's configuration file: what it holds and its defaults.
 *
 * An ini file (parsed with libinih).  It names the broker, its node and
 * the coordinator with libpq connection strings that carry no password:
 * secrets stay in ~/.pgpass or a service file (PGSERVICEFILE), so the file
 * can be world-readable and the broker never logs a secret.  Every number
 * is range-checked and every connection string is parsed by libpq
 * (key=value and URI forms alike) when the file is read.
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
	char	   *node_name;		/* registered name; NULL: the node conninfo's label */
	char	   *rack;			/* registered for placement, or NULL */
	char	   *coordinator;	/* conninfo of the coordinator database */
	int			tick_ms;		/* control loop period */
	int			tick_idle_ms;	/* ... while steady (step.c) */
	int			node_timeout_ms;	/* a node call slower than this: node lost */
	int			coordinator_timeout_ms;
	int			session_timeout_ms;	/* heartbeat age at which a broker is dead */
	int			lag_time_max_ms;	/* replica.lag.time.max.ms */
	long		lag_max_messages;	/* replica.lag.max.messages, 0 = unset */
	int			fetch_wait_ms;	/* replica.fetch.wait.max.ms */
	int			fetch_max_records;
	int			retry_ms;		/* first reconnect pause */
	int			retry_max_ms;	/* longest reconnect pause (back-off cap) */
	int			auto_rebalance; /* auto.leader.rebalance.enable: 1 or 0 */
	int			rebalance_delay_ms;	/* auto.leader.rebalance.delay.ms */
	int			txn_timeout_ms; /* an undecided mq: prepared transaction lives this long */
	char	   *metrics_address;	/* host:port, or NULL */
	/* [kafka]: the node's mq-kafka, started and kept running (kafka_child.c) */
	char	   *kafka_listen;	/* host:port; NULL: no Kafka listener */
	char	   *kafka_advertise;	/* host:port clients are told; NULL: listen */
	char	   *kafka_program;	/* the mq-kafka executable (default: on PATH) */
	int			kafka_pool;		/* its database connections */
	int			kafka_group_delay_ms;	/* group.initial.rebalance.delay.ms */
	int			kafka_min_session_ms;	/* group.min.session.timeout.ms */
	int			kafka_max_session_ms;	/* group.max.session.timeout.ms */
	int			kafka_idle_ms;	/* connections.max.idle.ms */
	int			kafka_auto_create;	/* auto.create.topics.enable */
	int			kafka_num_partitions;	/* num.partitions */
	char	   *kafka_sasl;		/* mechanisms clients authenticate with (--sasl) */
	int			kafka_sasl_plain_on_plaintext;	/* --sasl-plain-on-plaintext */
	char	   *kafka_principal_rules;	/* --principal-rules */
	char	   *kafka_anonymous;	/* --anonymous */
	char	   *kafka_metrics;	/* host:port of its /metrics (--metrics); NULL: none */
	int			kafka_watchdog_ms;	/* a child silent this long is killed; 0: never */
	/* its listeners and TLS (mq-kafka's --listeners, --ssl-...); NULL: unset */
	char	   *kafka_listeners;
	char	   *kafka_advertised_listeners;
	char	   *kafka_protocol_map;
	char	   *kafka_ssl_cert;
	char	   *kafka_ssl_key;
	char	   *kafka_ssl_key_password_file;
	char	   *kafka_ssl_ca;
	char	   *kafka_ssl_client_auth;
	char	   *kafka_ssl_rules;
} BrokerConfig;

/* Fill cfg from path; on error print what is wrong and return false. */
extern bool broker_config_load(const char *path, BrokerConfig *cfg);

/* The same from the text of a file; name is what messages call it. */
extern bool broker_config_parse(const char *text, const char *name, BrokerConfig *cfg);

/* Free what a load or parse allocated (also after a failed one). */
extern void broker_config_free(BrokerConfig *cfg);

/*
 * Does conninfo (key=value or URI) hold a password?  Also true when libpq
 * cannot parse it, with *unparsable set: then nobody can tell.
 */
extern bool conninfo_has_password(const char *conninfo, bool *unparsable);

/* Split "host:port", "[v6]:port" or ":port"; false unless port is 1..65535. */
extern bool split_host_port(const char *address, char **host, int *port);

#endif							/* MQ_BROKER_CONFIG_H */
