/*
 * unit.h: the few TAP helpers of mq's C unit tests (test/unit/NAME_test.c),
 * which run without PostgreSQL.  Each test prints "ok N - what" or
 * "not ok N - what" and, at the end, the plan; it exits 1 if any failed.
 */
#ifndef MQ_UNIT_H
#define MQ_UNIT_H

#include <stdio.h>

static int	unit_n = 0;
static int	unit_failed = 0;

#define CHECK(cond, ...) \
	do { \
		int unit_ok_ = (cond) ? 1 : 0; \
		unit_n++; \
		if (!unit_ok_) unit_failed++; \
		printf("%s %d - ", unit_ok_ ? "ok" : "not ok", unit_n); \
		printf(__VA_ARGS__); \
		putchar('\n'); \
	} while (0)

static int
unit_done(void)
{
	printf("1..%d\n", unit_n);
	if (unit_failed)
		printf("# %d of %d failed\n", unit_failed, unit_n);
	return unit_failed ? 1 : 0;
}

#endif
