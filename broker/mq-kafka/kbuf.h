/*-------------------------------------------------------------------------
 *
 * kbuf.h
 *	  Readers and writers of Kafka's primitive types: big-endian integers,
 *	  zigzag and unsigned varints, int16-length strings, int32-length
 *	  bytes, arrays, and their compact (KIP-482) forms.
 *
 * A reader or writer with flex set (a flexible version's body, api.c sets
 * it) reads and writes strings, bytes and array counts in the compact
 * forms (unsigned varint length + 1, 0 for null), and kr_tags / kw_tags
 * read and write the tagged-field section that ends each structure; with
 * flex clear, kr_tags and kw_tags do nothing.  So one decoder or encoder
 * serves a message's old and flexible versions alike.
 *
 * A KReader never reads past its end: the first short read sets err and
 * every later read returns zero, so a decoder checks err once at the end.
 * Array counts are checked against the bytes left (an element takes at
 * least one byte), so a forged count cannot make a decoder allocate
 * gigabytes.  A KWriter grows its buffer as needed.  No locking: each
 * reader or writer belongs to one request.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KBUF_H
#define MQK_KBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct KReader
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		err;
	bool		flex;			/* compact forms and tagged fields */
} KReader;

/* A string or bytes field pointing into the reader's buffer. */
typedef struct KSlice
{
	const uint8_t *p;
	int32_t		len;			/* -1 for null */
} KSlice;

extern void kr_init(KReader *r, const void *p, size_t len);
extern size_t kr_left(const KReader *r);
extern int8_t kr_i8(KReader *r);
extern int16_t kr_i16(KReader *r);
extern int32_t kr_i32(KReader *r);
extern int64_t kr_i64(KReader *r);
extern uint64_t kr_uvarint(KReader *r);
extern int64_t kr_varint(KReader *r);	/* zigzag */
extern KSlice kr_str(KReader *r);	/* int16 length, -1 null */
extern KSlice kr_bytes(KReader *r);	/* int32 length, -1 null */
extern KSlice kr_compact_str(KReader *r);	/* uvarint length + 1, 0 null */
extern KSlice kr_raw(KReader *r, size_t n);
/* int32 count of an array of elements of at least min_size bytes; -1 null */
extern int32_t kr_array(KReader *r, size_t min_size);
extern void kr_skip_tags(KReader *r);
/* a structure's tagged fields (skipped), if flex */
extern void kr_tags(KReader *r);
extern KSlice kr_uuid(KReader *r);	/* 16 bytes */
/* a NUL-terminated copy of a string field (NULL for null), mq_malloc'ed */
extern char *kslice_dup(KSlice s);
extern bool kslice_eq(KSlice s, const char *cstr);
/* the same bytes, or both null */
extern bool kslice_same(KSlice a, KSlice b);

/*
 * A name (or id) given more than once in one admin request, which Kafka
 * answers once with INVALID_REQUEST: repeat[i] is KREPEAT_FIRST for the
 * first of several equal slices, KREPEAT_LATER for the others, else
 * KREPEAT_NONE.  Null slices (len -1) repeat nothing.
 */
#define KREPEAT_NONE 0
#define KREPEAT_FIRST 1
#define KREPEAT_LATER 2
extern void kslice_repeats(const KSlice *s, int32_t n, uint8_t *repeat);

typedef struct KWriter
{
	uint8_t    *buf;
	size_t		len;
	size_t		cap;
	bool		flex;			/* compact forms and tagged fields */
} KWriter;

extern void kw_init(KWriter *w);
extern void kw_reset(KWriter *w);
extern void kw_free(KWriter *w);
extern uint8_t *kw_reserve(KWriter *w, size_t n);
extern void kw_i8(KWriter *w, int8_t v);
extern void kw_i16(KWriter *w, int16_t v);
extern void kw_i32(KWriter *w, int32_t v);
extern void kw_i64(KWriter *w, int64_t v);
extern void kw_uvarint(KWriter *w, uint64_t v);
extern void kw_varint(KWriter *w, int64_t v);
extern void kw_raw(KWriter *w, const void *p, size_t n);
/* int16-length string; NULL writes the null string */
extern void kw_str(KWriter *w, const char *s);
extern void kw_strn(KWriter *w, const void *p, int32_t len);	/* len -1: null */
extern void kw_bytes(KWriter *w, const void *p, int32_t len);	/* len -1: null */
extern void kw_compact_str(KWriter *w, const char *s);
/* an array's count (-1: null), compact if flex */
extern void kw_array(KWriter *w, int32_t n);
/* an empty tagged-field section, if flex */
extern void kw_tags(KWriter *w);
extern void kw_uuid(KWriter *w, const uint8_t *uuid);	/* 16 bytes */
/* overwrite an int32 written earlier (lengths and counts known later) */
extern void kw_put_i32_at(KWriter *w, size_t pos, int32_t v);

/*
 * A count or length known only after its elements are written:
 * pos = kw_later(w) where it goes, then kw_fill_count(w, pos, n) (an
 * array count) or kw_fill_len(w, pos) (the length of bytes written since
 * pos); compact forms are varints, inserted by moving what follows.
 */
extern size_t kw_later(KWriter *w);
extern void kw_fill_count(KWriter *w, size_t pos, int32_t n);
extern void kw_fill_len(KWriter *w, size_t pos);

/* an int[] in PostgreSQL's text form ("{1,2,3}") as an int32 array */
extern void kw_int32s_text(KWriter *w, const char *text);

/*
 * The topics -> partitions array most responses carry: topics t0 .. t1 - 1
 * (names[t]), each with the parts i (0 .. nparts - 1, in topic order)
 * whose topic_of(arg, i) is t, each written by write_part(w, arg, i); the
 * tagged fields after each partition and each topic are written here.
 */
typedef int32_t (*KPartTopicFn) (const void *arg, int32_t i);
typedef void (*KPartWriteFn) (KWriter *w, void *arg, int32_t i);
extern void kw_topic_parts(KWriter *w, const KSlice *names, int32_t t0, int32_t t1, int32_t nparts,
						   KPartTopicFn topic_of, KPartWriteFn write_part, void *arg);

#endif							/* MQK_KBUF_H */
