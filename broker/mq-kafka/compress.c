/*-------------------------------------------------------------------------
 *
 * compress.c
 *	  The four Kafka codecs, decompression only, with an output cap (see
 *	  compress.h).  Each decoder streams into an output buffer that grows
 *	  up to the cap; a codec that wants more than the cap fails.  No state
 *	  outside the call.
 *
 *-------------------------------------------------------------------------
 */
#include "compress.h"

#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "kerr.h"
#include "util.h"

/* An output buffer that never exceeds cap bytes. */
typedef struct Out
{
	uint8_t    *p;
	size_t		len;
	size_t		cap_now;
	size_t		cap;
} Out;

/* make room for at least one more byte; false when at the cap */
static bool
out_grow(Out *o)
{
	size_t		n = o->cap_now ? o->cap_now * 2 : 64 * 1024;

	if (o->cap_now >= o->cap)
		return false;
	if (n > o->cap)
		n = o->cap;
	o->p = mq_realloc(o->p, n);
	o->cap_now = n;
	return true;
}

static int
gzip_decode(const uint8_t *in, size_t inlen, Out *o)
{
	z_stream	z;
	int			rc = Z_OK;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32) != Z_OK)	/* 32: zlib or gzip header */
		return KERR_CORRUPT_MESSAGE;
	z.next_in = (Bytef *) in;
	z.avail_in = (uInt) inlen;
	while (rc != Z_STREAM_END)
	{
		if (o->len == o->cap_now && !out_grow(o))
		{
			inflateEnd(&z);
			return KERR_MESSAGE_TOO_LARGE;
		}
		z.next_out = o->p + o->len;
		z.avail_out = (uInt) (o->cap_now - o->len);
		rc = inflate(&z, Z_NO_FLUSH);
		o->len = o->cap_now - z.avail_out;
		if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && z.avail_out == 0))
		{
			inflateEnd(&z);
			return KERR_CORRUPT_MESSAGE;
		}
	}
	inflateEnd(&z);
	return KERR_NONE;
}

/* one raw snappy block appended to o */
static int
snappy_block(const uint8_t *in, size_t inlen, Out *o)
{
	size_t		n;

	if (snappy_uncompressed_length((const char *) in, inlen, &n) != SNAPPY_OK)
		return KERR_CORRUPT_MESSAGE;
	if (n > o->cap - o->len)
		return KERR_MESSAGE_TOO_LARGE;
	while (o->cap_now - o->len < n)
		(void) out_grow(o);
	if (snappy_uncompress((const char *) in, inlen, (char *) o->p + o->len, &n) != SNAPPY_OK)
		return KERR_CORRUPT_MESSAGE;
	o->len += n;
	return KERR_NONE;
}

static uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

/* xerial framing: magic, version, compatible version, then length-prefixed blocks */
static int
snappy_decode(const uint8_t *in, size_t inlen, Out *o)
{
	static const uint8_t magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
	size_t		pos = 16;

	if (inlen < 16 || memcmp(in, magic, 8) != 0)
		return snappy_block(in, inlen, o);
	while (pos < inlen)
	{
		uint32_t	n;
		int			rc;

		if (inlen - pos < 4)
			return KERR_CORRUPT_MESSAGE;
		n = be32(in + pos);
		pos += 4;
		if (n > inlen - pos)
			return KERR_CORRUPT_MESSAGE;
		if ((rc = snappy_block(in + pos, n, o)) != KERR_NONE)
			return rc;
		pos += n;
	}
	return KERR_NONE;
}

static int
lz4_decode(const uint8_t *in, size_t inlen, Out *o)
{
	LZ4F_dctx  *ctx;
	size_t		rc = 1;
	size_t		pos = 0;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION)))
		return KERR_CORRUPT_MESSAGE;
	while (rc != 0)
	{
		size_t		src = inlen - pos;
		size_t		dst;

		if (o->len == o->cap_now && !out_grow(o))
			break;
		dst = o->cap_now - o->len;
		rc = LZ4F_decompress(ctx, o->p + o->len, &dst, in + pos, &src, NULL);
		if (LZ4F_isError(rc) || (src == 0 && dst == 0 && pos == inlen && rc != 0))
		{
			LZ4F_freeDecompressionContext(ctx);
			return KERR_CORRUPT_MESSAGE;
		}
		pos += src;
		o->len += dst;
	}
	LZ4F_freeDecompressionContext(ctx);
	return rc == 0 ? KERR_NONE : KERR_MESSAGE_TOO_LARGE;
}

static int
zstd_decode(const uint8_t *in, size_t inlen, Out *o)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer ib = {in, inlen, 0};
	size_t		rc = 1;

	if (ds == NULL || ZSTD_isError(ZSTD_initDStream(ds)))
		return KERR_CORRUPT_MESSAGE;
	while (rc != 0)
	{
		ZSTD_outBuffer ob;
		size_t		before = ib.pos;

		if (o->len == o->cap_now && !out_grow(o))
			break;
		ob.dst = o->p + o->len;
		ob.size = o->cap_now - o->len;
		ob.pos = 0;
		rc = ZSTD_decompressStream(ds, &ob, &ib);
		o->len += ob.pos;
		if (ZSTD_isError(rc) || (rc != 0 && ib.pos == inlen && before == ib.pos && ob.pos == 0))
		{
			ZSTD_freeDStream(ds);
			return KERR_CORRUPT_MESSAGE;
		}
	}
	ZSTD_freeDStream(ds);
	return rc == 0 ? KERR_NONE : KERR_MESSAGE_TOO_LARGE;
}

int
kcompress_decode(int codec, const uint8_t *in, size_t inlen, size_t cap,
				 uint8_t **out, size_t *outlen)
{
	Out			o = {NULL, 0, 0, cap};
	int			rc;

	switch (codec)
	{
		case KCODEC_GZIP:
			rc = gzip_decode(in, inlen, &o);
			break;
		case KCODEC_SNAPPY:
			rc = snappy_decode(in, inlen, &o);
			break;
		case KCODEC_LZ4:
			rc = lz4_decode(in, inlen, &o);
			break;
		case KCODEC_ZSTD:
			rc = zstd_decode(in, inlen, &o);
			break;
		default:
			rc = KERR_UNSUPPORTED_COMPRESSION_TYPE;
	}
	if (rc != KERR_NONE)
	{
		free(o.p);
		return rc;
	}
	*out = o.p;
	*outlen = o.len;
	return KERR_NONE;
}
