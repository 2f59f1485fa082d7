/*-------------------------------------------------------------------------
 *
 * msgset.c
 *	  Message formats v0 and v1: a produced message set decoded into a
 *	  KBatch (up-conversion), fetched records encoded as messages
 *	  (down-conversion).  See msgset.h; no locking.
 *
 * Decoding runs in two passes: the first copies each uncompressed
 * message, and the inner messages of each compressed one, into one flat
 * buffer (so every record can point into a single buffer the KBatch owns,
 * b->inflated); the second reads the records from it.  A message set may
 * not end in a partial message: producers never send one.
 *
 *-------------------------------------------------------------------------
 */
#include "msgset.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "compress.h"
#include "kerr.h"
#include "util.h"

#define MSG_OVERHEAD 12			/* offset and size */
#define MSG_MIN_SIZE 14			/* crc, magic, attributes, key and value lengths */

/* a growing byte buffer */
typedef struct MsgFlat
{
	uint8_t    *p;
	size_t		len;
	size_t		cap;
} MsgFlat;

static bool
flat_add(MsgFlat *f, const uint8_t *p, size_t n, size_t cap)
{
	if (f->len + n > cap)
		return false;
	if (f->cap - f->len < n)
	{
		f->cap = (f->len + n) * 2;
		f->p = mq_realloc(f->p, f->cap);
	}
	memcpy(f->p + f->len, p, n);
	f->len += n;
	return true;
}

/*
 * The next message of r: its whole frame (offset to end) in *frame and
 * the reader positioned after it; the body after crc in *body.  Returns
 * 0 or CORRUPT_MESSAGE (short, bad CRC, bad magic).
 */
static int
next_message(KReader *r, KSlice *frame, KReader *body)
{
	size_t		start = r->pos;
	int32_t		size;
	uint32_t	crc;
	KSlice		rest;

	(void) kr_i64(r);			/* offset */
	size = kr_i32(r);
	if (r->err || size < MSG_MIN_SIZE || (size_t) size > kr_left(r))
		return KERR_CORRUPT_MESSAGE;
	crc = (uint32_t) kr_i32(r);
	rest = kr_raw(r, (size_t) size - 4);
	if (r->err || crc32(0L, rest.p, (uInt) rest.len) != crc)
		return KERR_CORRUPT_MESSAGE;
	frame->p = r->p + start;
	frame->len = (int32_t) (r->pos - start);
	kr_init(body, rest.p, rest.len);
	if ((uint8_t) rest.p[0] > 1)
		return KERR_CORRUPT_MESSAGE;
	return KERR_NONE;
}

/* pass 1: the messages of p, compressed ones expanded, into f */
static int
flatten(const uint8_t *p, size_t len, size_t cap, MsgFlat *f, bool inner)
{
	KReader		r;

	kr_init(&r, p, len);
	while (kr_left(&r) > 0)
	{
		KSlice		frame;
		KReader		body;
		int			rc = next_message(&r, &frame, &body);
		int			magic,
					codec;
		KSlice		value;
		uint8_t    *out = NULL;
		size_t		n = 0;

		if (rc != KERR_NONE)
			return rc;
		magic = kr_i8(&body);
		codec = kr_i8(&body) & KBATCH_CODEC_MASK;
		if (codec == KCODEC_NONE)
		{
			if (!flat_add(f, frame.p, frame.len, cap))
				return KERR_MESSAGE_TOO_LARGE;
			continue;
		}
		if (inner || codec == KCODEC_ZSTD)
			return codec == KCODEC_ZSTD ? KERR_UNSUPPORTED_COMPRESSION_TYPE : KERR_CORRUPT_MESSAGE;
		if (magic == 1)
			(void) kr_i64(&body);	/* timestamp */
		(void) kr_bytes(&body); /* key */
		value = kr_bytes(&body);
		if (body.err || value.len < 0)
			return KERR_CORRUPT_MESSAGE;
		rc = kcompress_decode(codec, value.p, value.len, cap - f->len, &out, &n);
		if (rc == KERR_NONE)
			rc = flatten(out, n, cap, f, true);
		free(out);
		if (rc != KERR_NONE)
			return rc;
	}
	return KERR_NONE;
}

/* pass 2: one record per message of the flat set */
static int
records_of(KBatch *b, const uint8_t *p, size_t len)
{
	KReader		r;
	bool		all_timed = true;
	int64_t    *ts = mq_malloc0(sizeof(int64_t) * (len / (MSG_OVERHEAD + MSG_MIN_SIZE) + 1));

	b->records = mq_malloc0(sizeof(KRecord) * (len / (MSG_OVERHEAD + MSG_MIN_SIZE) + 1));
	kr_init(&r, p, len);
	while (kr_left(&r) > 0)
	{
		KSlice		frame;
		KReader		body;
		KRecord    *rec = &b->records[b->count];

		(void) next_message(&r, &frame, &body);	/* checked by flatten */
		ts[b->count] = -1;
		if (kr_i8(&body) == 1)
		{
			(void) kr_i8(&body);
			ts[b->count] = kr_i64(&body);
		}
		else
			(void) kr_i8(&body);
		all_timed &= ts[b->count] >= 0;
		rec->key = kr_bytes(&body);
		rec->value = kr_bytes(&body);
		if (body.err || kr_left(&body) != 0)
		{
			free(ts);
			return KERR_CORRUPT_MESSAGE;
		}
		b->count++;
	}
	/* magic 1 timestamps become CreateTime; magic 0 (none): mq stamps them */
	b->base_timestamp = all_timed && b->count > 0 ? 0 : -1;
	for (int32_t i = 0; i < b->count; i++)
		b->records[i].timestamp_delta = all_timed ? ts[i] : 0;
	free(ts);
	return b->count > 0 ? KERR_NONE : KERR_CORRUPT_MESSAGE;
}

int
msgset_decode(const uint8_t *p, size_t len, size_t cap, KBatch *b)
{
	MsgFlat		f = {NULL, 0, 0};
	int			rc;

	memset(b, 0, sizeof(*b));
	b->producer_id = -1;
	b->producer_epoch = -1;
	b->base_sequence = -1;
	if (p == NULL || len == 0)
		return KERR_CORRUPT_MESSAGE;
	rc = flatten(p, len, cap, &f, false);
	b->inflated = f.p;
	return rc != KERR_NONE ? rc : records_of(b, f.p, f.len);
}

size_t
msgset_size(int magic, int32_t keylen, int32_t valuelen)
{
	return MSG_OVERHEAD + MSG_MIN_SIZE + (magic == 1 ? 8 : 0) +
		(keylen > 0 ? keylen : 0) + (valuelen > 0 ? valuelen : 0);
}

void
msgset_add(KWriter *w, int magic, int64_t offset, int64_t timestamp_ms,
		   bool log_append_time, const void *key, int32_t keylen,
		   const void *value, int32_t valuelen)
{
	size_t		start;
	uint32_t	crc;

	kw_i64(w, offset);
	kw_i32(w, (int32_t) (msgset_size(magic, keylen, valuelen) - MSG_OVERHEAD));
	start = w->len;
	kw_i32(w, 0);				/* crc, below */
	kw_i8(w, (int8_t) magic);
	kw_i8(w, magic == 1 && log_append_time ? KBATCH_LOG_APPEND_TIME : 0);
	if (magic == 1)
		kw_i64(w, timestamp_ms);
	kw_i32(w, keylen < 0 ? -1 : keylen);
	kw_raw(w, key, keylen > 0 ? keylen : 0);
	kw_i32(w, valuelen < 0 ? -1 : valuelen);
	kw_raw(w, value, valuelen > 0 ? valuelen : 0);
	crc = crc32(0L, w->buf + start + 4, (uInt) (w->len - start - 4));
	kw_put_i32_at(w, start, (int32_t) crc);
}
