/*-------------------------------------------------------------------------
 *
 * intarray.c
 *	  Small arrays of integers (replica sets, ISRs, broker ids): an int4[]
 *	  read from and written as PostgreSQL's text form, and membership.
 *
 * Layer: the bottom of mq-broker; it calls nothing of the broker.  The
 * typed calls (calls_*.c) need it to pass and read replica sets, and the
 * layers above them to compare ISRs, so it lives below both.
 *
 * Locking: none; pure functions on the caller's arrays.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>

#include "broker.h"

/* The integers of an int4[] in text form ("{1,2,3}"), at most max. */
int
parse_int_array(const char *s, int *out, int max)
{
	int			n = 0;

	while (*s && n < max)
	{
		char	   *end;
		long		v;

		while (*s == '{' || *s == ',' || *s == ' ')
			s++;
		if (*s == '}' || *s == '\0')
			break;
		v = strtol(s, &end, 10);
		if (end == s)
			break;
		out[n++] = (int) v;
		s = end;
	}
	return n;
}

bool
int_in(int v, const int *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return true;
	return false;
}

/* a as an int4[] literal ("{1,2,3}") in buf */
const char *
int_array_text(const int *a, int n, char *buf, size_t size)
{
	size_t		len = 0;

	len += snprintf(buf + len, size - len, "{");
	for (int i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%d", i ? "," : "", a[i]);
	if (len < size)
		snprintf(buf + len, size - len, "}");
	return buf;
}
