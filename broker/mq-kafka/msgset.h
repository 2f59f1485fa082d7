/*-------------------------------------------------------------------------
 *
 * msgset.h
 *	  Kafka's message formats v0 and v1 ("magic 0" and "magic 1", the
 *	  MessageSet of Produce v0-v2 and Fetch v0-v3): converted to and from
 *	  what record batches (batch.h) carry, as a Kafka broker converts them
 *	  -- up-converted on produce, down-converted on fetch.
 *
 * A message is offset (int64), size (int32), CRC-32 (IEEE, zlib's, of the
 * rest), magic, attributes (codec bits 0-2; magic 1: bit 3 LogAppendTime),
 * a timestamp (magic 1 only), key and value (int32-length bytes).  A
 * compressed message's value is a message set of its own (gzip, snappy or
 * lz4, one level deep).  Messages have no headers, producer ids or
 * sequences: an up-converted batch is not idempotent, and a down-
 * converted record loses its headers, as in Kafka.  No locking.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_MSGSET_H
#define MQK_MSGSET_H

#include <stdbool.h>
#include <stdint.h>

#include "batch.h"

/*
 * Decode a produced message set into b's records (one KBatch, not
 * idempotent), checking each message's CRC and magic; compressed
 * messages are expanded, to at most cap bytes in all.  Returns 0 or a
 * Kafka error code (CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION_TYPE,
 * MESSAGE_TOO_LARGE).  Free with batch_free() either way.
 */
extern int	msgset_decode(const uint8_t *p, size_t len, size_t cap, KBatch *b);

/* the size of one message of this magic as msgset_add writes it */
extern size_t msgset_size(int magic, int32_t keylen, int32_t valuelen);

/* append one uncompressed message (magic 0 or 1) to w */
extern void msgset_add(KWriter *w, int magic, int64_t offset, int64_t timestamp_ms,
					   bool log_append_time, const void *key, int32_t keylen,
					   const void *value, int32_t valuelen);

#endif							/* MQK_MSGSET_H */
