/*
 * config_compat_test.c: mq-broker reads the configuration file of the
 * previous release (test/unit/config/mq-broker-0.1.0.ini, every key 0.1.0
 * knew, none at its default) into the same settings.  A key renamed or
 * removed later must still be read (an alias) or be refused with a message
 * naming what replaces it; then this test changes to say so, the fixture
 * never does (docs/operations.md, "Upgrades").  Run from the repository
 * root, as scripts/test.sh runs the unit tests.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "util.h"
#include "unit.h"

#define FIXTURE "test/unit/config/mq-broker-0.1.0.ini"

#define STR_IS(field, want) \
	CHECK(cfg.field != NULL && strcmp(cfg.field, want) == 0, "%s = %s", #field, want)
#define INT_IS(field, want) \
	CHECK(cfg.field == (want), "%s = %ld (got %ld)", #field, (long) (want), (long) cfg.field)

int
main(void)
{
	BrokerConfig cfg;
	bool		ok;

	mq_progname = "config_compat_test";
	ok = broker_config_load(FIXTURE, &cfg);
	CHECK(ok, "the 0.1.0 configuration file is accepted");
	if (ok)
	{
		INT_IS(broker_id, 7);
		STR_IS(node, "host=/tmp port=5432 dbname=mq application_name=upgraded");
		STR_IS(node_advertised, "host=node7.example port=5432 dbname=mq");
		STR_IS(node_name, "node7:5432");
		STR_IS(rack, "rack-b");
		STR_IS(coordinator, "host=coord.example port=5433 dbname=mq");
		INT_IS(tick_ms, 150);
		INT_IS(node_timeout_ms, 7000);
		INT_IS(coordinator_timeout_ms, 8000);
		INT_IS(session_timeout_ms, 9000);
		INT_IS(retry_ms, 40);
		INT_IS(retry_max_ms, 4000);
		INT_IS(lag_time_max_ms, 31000);
		INT_IS(lag_max_messages, 5000);
		INT_IS(fetch_wait_ms, 600);
		INT_IS(fetch_max_records, 700);
		INT_IS(auto_rebalance, 0);
		INT_IS(rebalance_delay_ms, 12000);
		INT_IS(txn_timeout_ms, 65000);
		STR_IS(metrics_address, "127.0.0.1:9187");
		STR_IS(kafka_listen, "127.0.0.1:19092");
		STR_IS(kafka_advertise, "kafka7.example:9092");
		STR_IS(kafka_program, "/usr/bin/mq-kafka");
		INT_IS(kafka_pool, 6);
		INT_IS(kafka_group_delay_ms, 1500);
		STR_IS(kafka_sasl, "plain");
	}
	broker_config_free(&cfg);
	return unit_done();
}
