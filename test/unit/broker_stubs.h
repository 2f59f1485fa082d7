/*
 * broker_stubs.h: stand-ins for what mq-broker's objects call outside
 * themselves, for the unit tests that link one object (isr_test.c,
 * handover_test.c).  Include it once, in the test's only source file.
 */
#ifndef MQ_BROKER_STUBS_H
#define MQ_BROKER_STUBS_H

#include "broker.h"

bool
int_in(int v, const int *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return true;
	return false;
}

const char *
part_label(const Part *p)
{
	(void) p;
	return "\"t\" partition 0";
}

void
log_mq_error(const char *what, const MqError *err)
{
	(void) what;
	(void) err;
}

#endif							/* MQ_BROKER_STUBS_H */
