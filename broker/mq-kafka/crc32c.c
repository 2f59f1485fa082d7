/*-------------------------------------------------------------------------
 *
 * crc32c.c
 *	  CRC-32C over a buffer (reflected polynomial 0x82F63B78; the check
 *	  value of "123456789" is 0xE3069283).  On x86-64 processors with
 *	  SSE 4.2 (checked once at run time) the crc32 instruction does the
 *	  work eight bytes at a time; elsewhere a table, one byte at a time.
 *	  Fetch checksums every batch it encodes, so this is on the consume
 *	  path (docs/design.md, "The Kafka front end").  The table and the
 *	  choice are made once under pthread_once and read-only after.
 *
 *-------------------------------------------------------------------------
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86 1
#include <nmmintrin.h>
#endif

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int	use_hw;

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
#ifdef CRC32C_X86
	use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#ifdef CRC32C_X86
__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t	c64 = c;

	for (; len >= 8; p += 8, len -= 8)
	{
		uint64_t	v;

		memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
	}
	c = (uint32_t) c64;
	for (; len > 0; p++, len--)
		c = _mm_crc32_u8(c, *p);
	return c;
}
#endif

uint32_t
crc32c(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t	c = 0xFFFFFFFFu;

	pthread_once(&table_once, build_table);
#ifdef CRC32C_X86
	if (use_hw)
		return crc_hw(c, p, len) ^ 0xFFFFFFFFu;
#endif
	for (size_t i = 0; i < len; i++)
		c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}
