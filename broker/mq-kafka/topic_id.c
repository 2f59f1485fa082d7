/*-------------------------------------------------------------------------
 *
 * topic_id.c
 *	  Kafka topic ids of mq's topics: their hex and wire forms (see
 *	  topic_id.h for why an id is the MD5 of the name).  No locking.
 *
 *-------------------------------------------------------------------------
 */
#include "topic_id.h"

#include <string.h>

#include <openssl/evp.h>

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
topic_id_from_hex(const char *hex, uint8_t *id)
{
	memset(id, 0, 16);
	if (hex == NULL || strlen(hex) != 32)
		return false;
	for (int i = 0; i < 16; i++)
	{
		int			hi = hexval(hex[2 * i]),
					lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
		{
			memset(id, 0, 16);
			return false;
		}
		id[i] = (uint8_t) (hi << 4 | lo);
	}
	return true;
}

void
topic_id_to_hex(const uint8_t *id, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++)
	{
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[32] = '\0';
}

void
topic_id_of(const char *name, uint8_t *id)
{
	unsigned int len = 16;

	if (!EVP_Digest(name, strlen(name), id, &len, EVP_md5(), NULL))
		memset(id, 0, 16);
}
