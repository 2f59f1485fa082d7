/*-------------------------------------------------------------------------
 *
 * crc32c.c
 *	  CRC-32C over a buffer (reflected polynomial 0x82F63B78; the check
 *	  value of "123456789" is 0xE3069283).  The table is read-only after
 *	  pthread_once builds it.
 *
 *-------------------------------------------------------------------------
 */
#include "crc32c.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void
build_table(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[i] = c;
	}
}

uint32_t
crc32c(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t	c = 0xFFFFFFFFu;

	pthread_once(&table_once, build_table);
	for (size_t i = 0; i < len; i++)
		c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}
