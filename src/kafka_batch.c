/*-------------------------------------------------------------------------
 *
 * kafka_batch.c
 *	  Kafka's record batch (format v2, "magic 2"), encoded in the backend:
 *	  the bytes mq.kafka_fetch (kafka_fetch.c) returns, so that mq-kafka
 *	  copies them into a Fetch response instead of decoding rows and
 *	  encoding them again.
 *
 * Layout (kafka.apache.org, "Message format"): baseOffset i64,
 * batchLength i32, partitionLeaderEpoch i32, magic i8 (2), crc u32,
 * attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp
 * i64, producerId i64, producerEpoch i16, baseSequence i32, record count
 * i32 (61 bytes), then the records: length, attributes, timestamp delta,
 * offset delta, key, value and headers, lengths and deltas as zigzag
 * varints.  The CRC-32C (PostgreSQL's pg_crc32c, Kafka's polynomial)
 * covers everything from the attributes on.  A batch is uncompressed,
 * not transactional, without producer (-1), and its leader epoch is 0:
 * byte for byte what mq-kafka's own encoder (broker/mq-kafka/batch.c)
 * writes for the same records.
 *
 * No locking: a batch is built in the caller's buffer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bswap.h"
#include "port/pg_crc32c.h"
#include "utils/memutils.h"

#include "mq.h"

#define CRC_START 21			/* the attributes: what the CRC covers */

static void
put_i8(StringInfo b, int8 v)
{
	appendStringInfoCharMacro(b, (char) v);
}

static void
put_i16(StringInfo b, int16 v)
{
	uint16		n = pg_hton16((uint16) v);

	appendBinaryStringInfo(b, (const char *) &n, 2);
}

static void
put_i32(StringInfo b, int32 v)
{
	uint32		n = pg_hton32((uint32) v);

	appendBinaryStringInfo(b, (const char *) &n, 4);
}

static void
put_i64(StringInfo b, int64 v)
{
	uint64		n = pg_hton64((uint64) v);

	appendBinaryStringInfo(b, (const char *) &n, 8);
}

static void
set_i32(StringInfo b, int pos, int32 v)
{
	uint32		n = pg_hton32((uint32) v);

	memcpy(b->data + pos, &n, 4);
}

static void
set_i64(StringInfo b, int pos, int64 v)
{
	uint64		n = pg_hton64((uint64) v);

	memcpy(b->data + pos, &n, 8);
}

/* bytes of a zigzag varint */
static int
varint_size(int64 v)
{
	uint64		u = ((uint64) v << 1) ^ (uint64) (v >> 63);
	int			n = 1;

	while (u >= 0x80)
	{
		u >>= 7;
		n++;
	}
	return n;
}

static void
put_varint(StringInfo b, int64 v)
{
	uint64		u = ((uint64) v << 1) ^ (uint64) (v >> 63);

	while (u >= 0x80)
	{
		appendStringInfoCharMacro(b, (char) ((u & 0x7f) | 0x80));
		u >>= 7;
	}
	appendStringInfoCharMacro(b, (char) u);
}

/* a varint length, then the bytes (none for a negative length: null) */
static void
put_field(StringInfo b, const char *p, int len)
{
	put_varint(b, len);
	if (len > 0)
		appendBinaryStringInfo(b, p, len);
}

/* Start a batch at b's end, its first record at base_offset. */
void
mq_batch_begin(MqBatchWriter *w, StringInfo b, int64 base_offset, int64 timestamp_ms,
			   bool log_append_time)
{
	w->buf = b;
	w->start = b->len;
	w->base_offset = base_offset;
	w->base_ts = timestamp_ms;
	w->max_ts = timestamp_ms;
	w->last_offset = base_offset;
	w->count = 0;
	put_i64(b, base_offset);
	put_i32(b, 0);				/* batchLength, set by mq_batch_end */
	put_i32(b, 0);				/* partitionLeaderEpoch */
	put_i8(b, 2);				/* magic */
	put_i32(b, 0);				/* crc, set by mq_batch_end */
	put_i16(b, log_append_time ? MQ_BATCH_LOG_APPEND_TIME : 0);
	put_i32(b, 0);				/* lastOffsetDelta */
	put_i64(b, timestamp_ms);	/* baseTimestamp */
	put_i64(b, timestamp_ms);	/* maxTimestamp */
	put_i64(b, -1);				/* producerId */
	put_i16(b, -1);				/* producerEpoch */
	put_i32(b, -1);				/* baseSequence */
	put_i32(b, 0);				/* record count */
}

/* Append one record (offsets ascending); a length -1 is null. */
void
mq_batch_add(MqBatchWriter *w, const MqWireRecord *r)
{
	StringInfo	b = w->buf;
	int64		ts_delta = r->timestamp_ms - w->base_ts;
	int64		off_delta = r->offset - w->base_offset;
	int64		len;

	len = 1 + varint_size(ts_delta) + varint_size(off_delta) +
		varint_size(r->keylen) + Max(r->keylen, 0) +
		varint_size(r->valuelen) + Max(r->valuelen, 0) + varint_size(r->nheaders);
	for (int i = 0; i < r->nheaders; i++)
		len += varint_size(r->hkeylens[i]) + Max(r->hkeylens[i], 0) +
			varint_size(r->hvallens[i]) + Max(r->hvallens[i], 0);
	enlargeStringInfo(b, (int) Min(len + 10, MaxAllocSize - 1));
	put_varint(b, len);
	put_i8(b, 0);				/* record attributes */
	put_varint(b, ts_delta);
	put_varint(b, off_delta);
	put_field(b, r->key, r->keylen);
	put_field(b, r->value, r->valuelen);
	put_varint(b, r->nheaders);
	for (int i = 0; i < r->nheaders; i++)
	{
		put_field(b, r->hkeys[i], r->hkeylens[i]);
		put_field(b, r->hvals[i], r->hvallens[i]);
	}
	if (r->timestamp_ms > w->max_ts)
		w->max_ts = r->timestamp_ms;
	w->last_offset = r->offset;
	w->count++;
}

/* Fill in the batch's length, last offset delta, max timestamp, count, CRC. */
void
mq_batch_end(MqBatchWriter *w)
{
	StringInfo	b = w->buf;
	int			s = w->start;
	pg_crc32c	crc;

	set_i32(b, s + 8, b->len - s - 12);
	set_i32(b, s + 23, (int32) (w->last_offset - w->base_offset));
	set_i64(b, s + 35, w->max_ts);
	set_i32(b, s + 57, w->count);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, b->data + s + CRC_START, b->len - s - CRC_START);
	FIN_CRC32C(crc);
	set_i32(b, s + 17, (int32) crc);
}
