/*
 * config_fuzz.c: libFuzzer harness for mq-broker's configuration parser
 * (broker/mq-broker/config.c, broker_config_parse): any bytes as the text
 * of an ini file.  The parser must refuse or accept without a crash, a
 * leak or undefined behaviour, and an accepted config must hold what the
 * parser promises (required keys set, no password in a connection
 * string).  Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);
	BrokerConfig cfg;
	bool		unparsable;

	memcpy(text, data, size);
	text[size] = '\0';
	mq_progname = "config_fuzz";
	if (broker_config_parse(text, "fuzz.ini", &cfg))
	{
		if (cfg.broker_id < 0 || cfg.node == NULL || cfg.coordinator == NULL ||
			cfg.node_advertised == NULL ||
			conninfo_has_password(cfg.node, &unparsable) ||
			conninfo_has_password(cfg.coordinator, &unparsable) ||
			cfg.retry_max_ms < cfg.retry_ms)
			abort();			/* accepted what it must refuse */
	}
	broker_config_free(&cfg);
	free(text);
	return 0;
}
