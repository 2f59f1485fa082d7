/*-------------------------------------------------------------------------
 *
 * producer_options.c
 *	  The producing options of "mqctl produce" and "mqctl perf produce"
 *	  (see producer_options.h): one parser, so that both commands accept
 *	  the same spellings and ranges and say the same things about them.
 *
 * Every number is checked here, before anything connects: a partition is
 * a PostgreSQL integer (whether it exists is the server's to say), and a
 * batch or a wait has bounds that keep memory and time finite.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "producer_options.h"

void
producer_options_init(ProducerConfig *cfg)
{
	cfg->partition = -1;
	cfg->batch_size = 500;
	cfg->acks = MQ_ACKS_1;
	cfg->idempotent = true;
	cfg->request_timeout_ms = 0;
}

/* The value of --acks: 0, 1, all or -1 (Kafka's other name for all). */
static MqAcks
parse_acks(const CliParser *p, const char *arg)
{
	static const char *const names[] = {"0", "1", "all", "-1", NULL};
	int			acks = cli_choice(p, "--acks", arg, names);

	return acks >= MQ_ACKS_ALL ? MQ_ACKS_ALL : (MqAcks) acks;
}

bool
producer_option(const CliParser *p, int c, const char *arg, ProducerConfig *cfg)
{
	switch (c)
	{
		case 'p':
			cfg->partition = (int32_t) cli_int(p, "--partition", arg, 0, INT32_MAX);
			return true;
		case 'b':
			cfg->batch_size = (int) cli_int(p, "--batch-size", arg, 1, PRODUCER_MAX_BATCH_SIZE);
			return true;
		case PRODUCER_OPT_ACKS:
			cfg->acks = parse_acks(p, arg);
			return true;
		case PRODUCER_OPT_NO_IDEMPOTENCE:
			cfg->idempotent = false;
			return true;
		case PRODUCER_OPT_REQUEST_TIMEOUT_MS:
			cfg->request_timeout_ms = (int) cli_int(p, "--request-timeout-ms", arg, 1,
													PRODUCER_MAX_REQUEST_TIMEOUT_MS);
			return true;
	}
	return false;
}

void
producer_options_check(const CliParser *p, const ProducerConfig *cfg)
{
	if (cfg->request_timeout_ms > 0 && cfg->acks != MQ_ACKS_ALL)
		cli_usage_error(p, "--request-timeout-ms is the wait of --acks all");
}
