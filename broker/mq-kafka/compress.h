/*-------------------------------------------------------------------------
 *
 * compress.h
 *	  Decompressing the records of a produced batch: gzip (zlib), snappy
 *	  (raw, and the xerial framing Java clients use), lz4 frame and zstd,
 *	  each from its Debian library.
 *
 * Output is capped: a block that would decompress to more than cap bytes
 * is refused with MESSAGE_TOO_LARGE before more than cap bytes are
 * allocated, so a small "bomb" cannot exhaust memory.  Only decompression
 * exists: fetches return uncompressed batches.  Thread-safe (no state).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_COMPRESS_H
#define MQK_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's codec numbers (attribute bits 0-2) */
#define KCODEC_NONE		0
#define KCODEC_GZIP		1
#define KCODEC_SNAPPY	2
#define KCODEC_LZ4		3
#define KCODEC_ZSTD		4

/*
 * Decompress in[0..inlen) into a new buffer *out (free() it) of *outlen
 * bytes.  Returns 0, or the Kafka error: CORRUPT_MESSAGE,
 * MESSAGE_TOO_LARGE (over cap), UNSUPPORTED_COMPRESSION_TYPE.
 */
extern int	kcompress_decode(int codec, const uint8_t *in, size_t inlen, size_t cap,
							 uint8_t **out, size_t *outlen);

#endif							/* MQK_COMPRESS_H */
