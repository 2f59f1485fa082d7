/*-------------------------------------------------------------------------
 *
 * crc32c.h
 *	  CRC-32C (Castagnoli), the checksum of Kafka's record batch v2.
 *
 * The crc32 instruction of SSE 4.2 where the processor has it, a table
 * elsewhere; both are set up once at first use under pthread_once, so it
 * is safe from any thread.  (PostgreSQL's
 * pg_crc32c lives in server headers, which frontend code does not include.)
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_CRC32C_H
#define MQK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

extern uint32_t crc32c(const void *data, size_t len);

#endif							/* MQK_CRC32C_H */
