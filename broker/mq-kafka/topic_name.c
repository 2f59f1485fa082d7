/*-------------------------------------------------------------------------
 *
 * topic_name.c
 *	  Kafka's rule for a topic name and its messages (see topic_name.h).
 *	  No locking.
 *
 * Kafka counts a name's length in Java characters (UTF-16 units), so a
 * name with non-ASCII bytes is measured that way here too: which message
 * it gets (too long, or characters outside the rule) follows from it.
 *
 *-------------------------------------------------------------------------
 */
#include "topic_name.h"

#include <stdio.h>

#define MAX_NAME_LENGTH 249
#define SHOWN_BYTES 300			/* of a name quoted in a message */

/* the name's length in UTF-16 units, from its UTF-8 */
static int32_t
java_length(const uint8_t *p, int32_t len)
{
	int32_t		n = 0;

	for (int32_t i = 0; i < len; i++)
	{
		if ((p[i] & 0xc0) != 0x80)
			n++;
		if (p[i] >= 0xf0)
			n++;				/* a surrogate pair */
	}
	return n;
}

static bool
legal_chars(const uint8_t *p, int32_t len)
{
	for (int32_t i = 0; i < len; i++)
	{
		uint8_t		c = p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
topic_name_invalid(KSlice name, char *msg, size_t size)
{
	const uint8_t *p = (const uint8_t *) name.p;
	int32_t		len = name.len < 0 ? 0 : name.len;
	int			shown = len > SHOWN_BYTES ? SHOWN_BYTES : len;

	if (len == 0)
		snprintf(msg, size, "Topic name is invalid: the empty string is not allowed");
	else if (len == 1 && p[0] == '.')
		snprintf(msg, size, "Topic name is invalid: '.' is not allowed");
	else if (len == 2 && p[0] == '.' && p[1] == '.')
		snprintf(msg, size, "Topic name is invalid: '..' is not allowed");
	else if (java_length(p, len) > MAX_NAME_LENGTH)
		snprintf(msg, size, "Topic name is invalid: the length of '%.*s' is longer than the max allowed length %d",
				 shown, (const char *) p, MAX_NAME_LENGTH);
	else if (!legal_chars(p, len))
		snprintf(msg, size, "Topic name is invalid: '%.*s' contains one or more characters other than "
				 "ASCII alphanumerics, '.', '_' and '-'", shown, (const char *) p);
	else
		return false;
	return true;
}
