/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Record batch v2 decoding and encoding (see batch.h).  Layout, from
 *	  Kafka's message-format documentation: baseOffset i64, batchLength
 *	  i32, partitionLeaderEpoch i32, magic i8, crc u32 (CRC-32C of all
 *	  that follows), attributes i16, lastOffsetDelta i32, baseTimestamp
 *	  i64, maxTimestamp i64, producerId i64, producerEpoch i16,
 *	  baseSequence i32, record count i32, records.  No locking.
 *
 *-------------------------------------------------------------------------
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "crc32c.h"
#include "kerr.h"
#include "kjson.h"
#include "util.h"

/* bytes a record takes at least: length, attributes, 2 deltas, key, value, headers */
#define MIN_RECORD_SIZE 7
/* offset of the attributes field, where the CRC starts */
#define CRC_START 21

/* a varint-length field: -1 is null */
static KSlice
varbytes(KReader *r)
{
	int64_t		len = kr_varint(r);

	if (len < -1 || len > INT32_MAX)
		r->err = true;
	if (len < 0 || r->err)
		return (KSlice){NULL, -1};
	return kr_raw(r, (size_t) len);
}

/* the header list: count, then (key, value-or-null) pairs */
static bool
headers_decode(KReader *r, KRecord *rec)
{
	size_t		start = r->pos;
	int64_t		n = kr_varint(r);

	if (n < 0 || n > (int64_t) kr_left(r))
		return false;
	for (int64_t i = 0; i < n && !r->err; i++)
	{
		if (varbytes(r).len < 0)	/* a header key is never null */
			return false;
		(void) varbytes(r);
	}
	rec->nheaders = (int32_t) n;
	rec->headers = (KSlice){r->p + start, (int32_t) (r->pos - start)};
	return !r->err;
}

/* one record from r; false if malformed */
static bool
record_decode(KReader *r, int32_t index, KRecord *rec)
{
	int64_t		len = kr_varint(r);
	KReader		sub;
	KSlice		body;

	if (len < MIN_RECORD_SIZE - 1 || len > INT32_MAX || r->err)
		return false;
	body = kr_raw(r, (size_t) len);
	if (r->err)
		return false;
	kr_init(&sub, body.p, body.len);
	(void) kr_i8(&sub);			/* record attributes: unused */
	rec->timestamp_delta = kr_varint(&sub);
	if (kr_varint(&sub) != index)
		return false;
	rec->key = varbytes(&sub);
	rec->value = varbytes(&sub);
	if (sub.err || !headers_decode(&sub, rec))
		return false;
	return kr_left(&sub) == 0;
}

static int
records_decode(KReader *r, KBatch *b)
{
	if (b->count < 0 || (size_t) b->count > kr_left(r) / MIN_RECORD_SIZE)
		return KERR_CORRUPT_MESSAGE;
	b->records = mq_malloc0(sizeof(KRecord) * (b->count ? b->count : 1));
	for (int32_t i = 0; i < b->count; i++)
		if (!record_decode(r, i, &b->records[i]))
			return KERR_CORRUPT_MESSAGE;
	return kr_left(r) == 0 ? KERR_NONE : KERR_CORRUPT_MESSAGE;
}

/* where the magic byte is, and the attributes' low byte (the codec bits) */
#define MAGIC_AT 16
#define CODEC_AT 22

int
batch_precheck(const uint8_t *p, int32_t len, int16_t produce_version)
{
	if (p == NULL || len <= MAGIC_AT || p[MAGIC_AT] != 2)
		return KERR_INVALID_RECORD;
	if (produce_version < 7 && len > CODEC_AT && (p[CODEC_AT] & KBATCH_CODEC_MASK) == KCODEC_ZSTD)
		return KERR_UNSUPPORTED_COMPRESSION_TYPE;
	return KERR_NONE;
}

int
batch_decode(const uint8_t *p, size_t len, size_t cap, KBatch *b)
{
	KReader		r;
	int32_t		batch_len;
	int32_t		last_delta;
	uint32_t	crc;
	int			codec;

	memset(b, 0, sizeof(*b));
	if (p == NULL || len < KBATCH_HEADER_SIZE)
		return KERR_CORRUPT_MESSAGE;
	kr_init(&r, p, len);
	b->base_offset = kr_i64(&r);
	batch_len = kr_i32(&r);
	if (batch_len < KBATCH_HEADER_SIZE - 12 || (size_t) batch_len > len - 12)
		return KERR_CORRUPT_MESSAGE;
	if ((size_t) batch_len < len - 12)
		return KERR_INVALID_RECORD;	/* v3+ produce: exactly one batch */
	(void) kr_i32(&r);			/* partitionLeaderEpoch */
	if (kr_i8(&r) != 2)
		return KERR_CORRUPT_MESSAGE;
	crc = (uint32_t) kr_i32(&r);
	if (crc32c(p + CRC_START, len - CRC_START) != crc)
		return KERR_CORRUPT_MESSAGE;
	b->attributes = kr_i16(&r);
	last_delta = kr_i32(&r);
	b->base_timestamp = kr_i64(&r);
	(void) kr_i64(&r);			/* maxTimestamp */
	b->producer_id = kr_i64(&r);
	b->producer_epoch = kr_i16(&r);
	b->base_sequence = kr_i32(&r);
	b->count = kr_i32(&r);
	if (b->attributes & KBATCH_CONTROL)
		return KERR_INVALID_RECORD;	/* only brokers write control batches */
	if (b->count < 1 || last_delta != b->count - 1)
		return KERR_CORRUPT_MESSAGE;
	codec = b->attributes & KBATCH_CODEC_MASK;
	if (codec != KCODEC_NONE)
	{
		size_t		n;
		int			rc = kcompress_decode(codec, r.p + r.pos, kr_left(&r), cap,
										  &b->inflated, &n);

		if (rc != KERR_NONE)
			return rc;
		kr_init(&r, b->inflated, n);
	}
	return records_decode(&r, b);
}

void
batch_free(KBatch *b)
{
	free(b->records);
	free(b->inflated);
	b->records = NULL;
	b->inflated = NULL;
}

/* ---- the one place that decides what mq can store (see batch.h) ---- */
int
batch_check_storable(const KBatch *b)
{
	KWriter		json;
	bool		ok = true;

	kw_init(&json);
	for (int32_t i = 0; i < b->count && ok; i++)
		if (b->records[i].nheaders > 0)
		{
			kw_reset(&json);
			ok = headers_to_json(b->records[i].headers, &json);
		}
	kw_free(&json);
	return ok ? KERR_NONE : KERR_INVALID_RECORD;
}

/* ---- encoding ---- */

void
batch_begin(KBatchEnc *e, KWriter *w, int64_t base_offset, int32_t leader_epoch,
			int64_t timestamp_ms, bool log_append_time)
{
	e->w = w;
	e->start = w->len;
	e->base_offset = base_offset;
	e->base_ts = timestamp_ms;
	e->max_ts = timestamp_ms;
	e->last_offset = base_offset;
	e->count = 0;
	kw_i64(w, base_offset);
	kw_i32(w, 0);				/* batchLength, set by batch_end */
	kw_i32(w, leader_epoch);
	kw_i8(w, 2);
	kw_i32(w, 0);				/* crc */
	kw_i16(w, log_append_time ? KBATCH_LOG_APPEND_TIME : 0);
	kw_i32(w, 0);				/* lastOffsetDelta */
	kw_i64(w, timestamp_ms);
	kw_i64(w, timestamp_ms);	/* maxTimestamp */
	kw_i64(w, -1);				/* producerId */
	kw_i16(w, -1);
	kw_i32(w, -1);				/* baseSequence */
	kw_i32(w, 0);				/* count */
}

/* bytes of a zigzag varint */
static size_t
varint_size(int64_t v)
{
	uint64_t	u = ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
	size_t		n = 1;

	while (u >= 0x80)
	{
		u >>= 7;
		n++;
	}
	return n;
}

void
batch_add(KBatchEnc *e, int64_t offset, int64_t timestamp_ms,
		  const void *key, int32_t keylen, const void *value, int32_t valuelen,
		  const KSlice *hkeys, const KSlice *hvals, int nh)
{
	int64_t		ts_delta = timestamp_ms - e->base_ts;
	int64_t		off_delta = offset - e->base_offset;
	size_t		len;

	len = 1 + varint_size(ts_delta) + varint_size(off_delta) +
		varint_size(keylen) + (keylen > 0 ? keylen : 0) +
		varint_size(valuelen) + (valuelen > 0 ? valuelen : 0) + varint_size(nh);
	for (int i = 0; i < nh; i++)
		len += varint_size(hkeys[i].len) + (hkeys[i].len > 0 ? hkeys[i].len : 0) +
			varint_size(hvals[i].len) + (hvals[i].len > 0 ? hvals[i].len : 0);
	kw_varint(e->w, (int64_t) len);
	kw_i8(e->w, 0);				/* record attributes */
	kw_varint(e->w, ts_delta);
	kw_varint(e->w, off_delta);
	kw_varint(e->w, keylen);
	kw_raw(e->w, key, keylen > 0 ? keylen : 0);
	kw_varint(e->w, valuelen);
	kw_raw(e->w, value, valuelen > 0 ? valuelen : 0);
	kw_varint(e->w, nh);
	for (int i = 0; i < nh; i++)
	{
		kw_varint(e->w, hkeys[i].len);
		kw_raw(e->w, hkeys[i].p, hkeys[i].len > 0 ? hkeys[i].len : 0);
		kw_varint(e->w, hvals[i].len);
		kw_raw(e->w, hvals[i].p, hvals[i].len > 0 ? hvals[i].len : 0);
	}
	if (timestamp_ms > e->max_ts)
		e->max_ts = timestamp_ms;
	e->last_offset = offset;
	e->count++;
}

static void
put_i64_at(KWriter *w, size_t pos, int64_t v)
{
	kw_put_i32_at(w, pos, (int32_t) (v >> 32));
	kw_put_i32_at(w, pos + 4, (int32_t) v);
}

void
batch_end(KBatchEnc *e)
{
	KWriter    *w = e->w;

	kw_put_i32_at(w, e->start + 8, (int32_t) (w->len - e->start - 12));
	kw_put_i32_at(w, e->start + 23, (int32_t) (e->last_offset - e->base_offset));
	put_i64_at(w, e->start + 35, e->max_ts);
	kw_put_i32_at(w, e->start + 57, e->count);
	kw_put_i32_at(w, e->start + 17,
				  (int32_t) crc32c(w->buf + e->start + CRC_START,
								   w->len - e->start - CRC_START));
}
