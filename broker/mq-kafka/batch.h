/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  Kafka record batch v2 ("magic 2"): decoding a produced batch into
 *	  records, and encoding fetched rows as batches.
 *
 * Decoding checks everything before a byte reaches the database: the
 * length, magic, CRC-32C, codec, each record's framing and offset delta,
 * and the decompressed size against a cap.  Records point into the
 * request buffer (or into the batch's decompressed buffer), so a KBatch
 * lives no longer than its request.  No locking: one batch, one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_BATCH_H
#define MQK_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "kbuf.h"

#define KBATCH_HEADER_SIZE 61

/* attribute bits */
#define KBATCH_CODEC_MASK		0x07
#define KBATCH_LOG_APPEND_TIME	0x08
#define KBATCH_TRANSACTIONAL	0x10
#define KBATCH_CONTROL			0x20

typedef struct KRecord
{
	int64_t		timestamp_delta;
	KSlice		key;
	KSlice		value;
	int32_t		nheaders;
	KSlice		headers;		/* the encoded header list, for later use */
} KRecord;

typedef struct KBatch
{
	int64_t		base_offset;
	int16_t		attributes;
	int64_t		base_timestamp;
	int64_t		producer_id;
	int16_t		producer_epoch;
	int32_t		base_sequence;
	int32_t		count;
	KRecord    *records;
	uint8_t    *inflated;		/* decompressed records, or NULL */
} KBatch;

/*
 * What Kafka checks of a v3+ Produce partition's records before anything
 * else (ProduceRequest.validateRecords), len -1 for null: a batch (none
 * in null or empty records) of magic 2 (else INVALID_RECORD), and ZSTD
 * only from Produce v7 (KIP-110; else UNSUPPORTED_COMPRESSION_TYPE).
 * Returns 0 or the Kafka error code; batch_decode checks the rest.
 */
extern int	batch_precheck(const uint8_t *p, int32_t len, int16_t produce_version);

/*
 * Decode the records field of one produce partition: exactly one batch.
 * Returns 0 or a Kafka error code (CORRUPT_MESSAGE, INVALID_RECORD,
 * UNSUPPORTED_COMPRESSION_TYPE, MESSAGE_TOO_LARGE).  cap bounds the
 * decompressed size.  Free with batch_free() either way.
 */
extern int	batch_decode(const uint8_t *p, size_t len, size_t cap, KBatch *b);
extern void batch_free(KBatch *b);

/*
 * What mq cannot store is refused here, in one place: a header key that
 * is not UTF-8 text without NUL bytes (mq's header keys are text; Kafka's
 * are strings too, so clients do not send others).  INVALID_RECORD then,
 * and nothing of the batch is stored.  Returns 0 or the Kafka error code.
 */
extern int	batch_check_storable(const KBatch *b);

/*
 * Encoding: batch_begin() starts a batch at w's end, batch_add() appends a
 * record (offsets ascending) with its headers (nh keys and values, a value
 * len -1 for null), batch_end() fills lengths, counts and CRC.  A batch
 * is CreateTime (each record its own timestamp) or LogAppendTime (then
 * clients take maxTimestamp for every record, so such a batch holds
 * records of one millisecond).
 */
typedef struct KBatchEnc
{
	KWriter    *w;
	size_t		start;
	int64_t		base_offset;
	int64_t		base_ts;
	int64_t		max_ts;
	int64_t		last_offset;
	int32_t		count;
} KBatchEnc;

extern void batch_begin(KBatchEnc *e, KWriter *w, int64_t base_offset,
						int32_t leader_epoch, int64_t timestamp_ms, bool log_append_time);
extern void batch_add(KBatchEnc *e, int64_t offset, int64_t timestamp_ms,
					  const void *key, int32_t keylen,
					  const void *value, int32_t valuelen,
					  const KSlice *hkeys, const KSlice *hvals, int nh);
extern void batch_end(KBatchEnc *e);

#endif							/* MQK_BATCH_H */
