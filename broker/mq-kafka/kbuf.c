/*-------------------------------------------------------------------------
 *
 * kbuf.c
 *	  Kafka primitive types: bounded reading and growing writing (see
 *	  kbuf.h for the contract).  No locking.
 *
 *-------------------------------------------------------------------------
 */
#include "kbuf.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void
kr_init(KReader *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->err = false;
	r->flex = false;
}

size_t
kr_left(const KReader *r)
{
	return r->err ? 0 : r->len - r->pos;
}

/* n bytes from the current position, or NULL (and err) if fewer are left */
static const uint8_t *
take(KReader *r, size_t n)
{
	const uint8_t *p;

	if (r->err || r->len - r->pos < n)
	{
		r->err = true;
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

static uint64_t
take_be(KReader *r, int n)
{
	const uint8_t *p = take(r, n);
	uint64_t	v = 0;

	if (p == NULL)
		return 0;
	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

int8_t
kr_i8(KReader *r)
{
	return (int8_t) take_be(r, 1);
}

int16_t
kr_i16(KReader *r)
{
	return (int16_t) take_be(r, 2);
}

int32_t
kr_i32(KReader *r)
{
	return (int32_t) take_be(r, 4);
}

int64_t
kr_i64(KReader *r)
{
	return (int64_t) take_be(r, 8);
}

uint64_t
kr_uvarint(KReader *r)
{
	uint64_t	v = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		const uint8_t *p = take(r, 1);

		if (p == NULL)
			return 0;
		v |= (uint64_t) (*p & 0x7f) << shift;
		if ((*p & 0x80) == 0)
			return v;
	}
	r->err = true;				/* more than 10 bytes */
	return 0;
}

int64_t
kr_varint(KReader *r)
{
	uint64_t	u = kr_uvarint(r);

	return (int64_t) (u >> 1) ^ -(int64_t) (u & 1);
}

static KSlice
slice_of(KReader *r, int64_t len)
{
	KSlice		s = {NULL, -1};

	if (len < -1)
		r->err = true;
	if (len < 0 || r->err)
		return s;
	s.p = take(r, (size_t) len);
	s.len = s.p ? (int32_t) len : -1;
	return s;
}

KSlice
kr_str(KReader *r)
{
	return r->flex ? kr_compact_str(r) : slice_of(r, kr_i16(r));
}

KSlice
kr_bytes(KReader *r)
{
	return r->flex ? kr_compact_str(r) : slice_of(r, kr_i32(r));
}

KSlice
kr_uuid(KReader *r)
{
	return slice_of(r, 16);
}

KSlice
kr_compact_str(KReader *r)
{
	uint64_t	n = kr_uvarint(r);

	if (n > INT32_MAX)
	{
		r->err = true;
		n = 0;
	}
	return slice_of(r, (int64_t) n - 1);
}

KSlice
kr_raw(KReader *r, size_t n)
{
	return slice_of(r, n > INT32_MAX ? -2 : (int64_t) n);
}

int32_t
kr_array(KReader *r, size_t min_size)
{
	int64_t		n;

	if (r->flex)
	{
		uint64_t	u = kr_uvarint(r);

		n = u > INT32_MAX ? -2 : (int64_t) u - 1;
	}
	else
		n = kr_i32(r);

	if (n < -1 || (n > 0 && (size_t) n > kr_left(r) / (min_size ? min_size : 1)))
	{
		r->err = true;
		return 0;
	}
	return r->err ? 0 : (int32_t) n;
}

void
kr_skip_tags(KReader *r)
{
	uint64_t	n = kr_uvarint(r);

	for (uint64_t i = 0; i < n && !r->err; i++)
	{
		(void) kr_uvarint(r);	/* tag */
		(void) kr_raw(r, kr_uvarint(r));
	}
}

void
kr_tags(KReader *r)
{
	if (r->flex)
		kr_skip_tags(r);
}

char *
kslice_dup(KSlice s)
{
	char	   *c;

	if (s.len < 0)
		return NULL;
	c = mq_malloc((size_t) s.len + 1);
	memcpy(c, s.p, s.len);
	c[s.len] = '\0';
	return c;
}

bool
kslice_same(KSlice a, KSlice b)
{
	return a.len == b.len && (a.len <= 0 || memcmp(a.p, b.p, (size_t) a.len) == 0);
}

bool
kslice_eq(KSlice s, const char *cstr)
{
	if (s.len < 0 || cstr == NULL)
		return s.len < 0 && cstr == NULL;
	return strlen(cstr) == (size_t) s.len && memcmp(s.p, cstr, s.len) == 0;
}

typedef struct KIndexedSlice
{
	KSlice		s;
	int32_t		i;
} KIndexedSlice;

/* by length, bytes, then position: equal slices adjacent, first one first */
static int
indexed_slice_cmp(const void *a, const void *b)
{
	const KIndexedSlice *x = a;
	const KIndexedSlice *y = b;
	int			c;

	if (x->s.len != y->s.len)
		return x->s.len < y->s.len ? -1 : 1;
	c = x->s.len > 0 ? memcmp(x->s.p, y->s.p, x->s.len) : 0;
	if (c != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* sorted, so that a request of many names costs n log n */
void
kslice_repeats(const KSlice *s, int32_t n, uint8_t *repeat)
{
	KIndexedSlice *sorted;

	if (n <= 0)
		return;
	memset(repeat, KREPEAT_NONE, (size_t) n);
	sorted = mq_malloc(sizeof(KIndexedSlice) * (size_t) n);
	for (int32_t i = 0; i < n; i++)
		sorted[i] = (KIndexedSlice){s[i], i};
	qsort(sorted, (size_t) n, sizeof(KIndexedSlice), indexed_slice_cmp);
	for (int32_t k = 1; k < n; k++)
	{
		const KIndexedSlice *a = &sorted[k - 1];
		const KIndexedSlice *b = &sorted[k];

		if (b->s.len < 0 || a->s.len != b->s.len ||
			(b->s.len > 0 && memcmp(a->s.p, b->s.p, b->s.len) != 0))
			continue;
		if (repeat[a->i] == KREPEAT_NONE)
			repeat[a->i] = KREPEAT_FIRST;
		repeat[b->i] = KREPEAT_LATER;
	}
	free(sorted);
}

void
kw_init(KWriter *w)
{
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
	w->flex = false;
}

void
kw_reset(KWriter *w)
{
	w->len = 0;
}

void
kw_free(KWriter *w)
{
	free(w->buf);
	kw_init(w);
}

uint8_t *
kw_reserve(KWriter *w, size_t n)
{
	uint8_t    *p;

	if (w->cap - w->len < n)
	{
		size_t		cap = w->cap ? w->cap : 256;

		while (cap - w->len < n)
			cap *= 2;
		w->buf = mq_realloc(w->buf, cap);
		w->cap = cap;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

static void
put_be(KWriter *w, uint64_t v, int n)
{
	uint8_t    *p = kw_reserve(w, n);

	for (int i = n - 1; i >= 0; i--)
	{
		p[i] = (uint8_t) v;
		v >>= 8;
	}
}

void
kw_i8(KWriter *w, int8_t v)
{
	put_be(w, (uint8_t) v, 1);
}

void
kw_i16(KWriter *w, int16_t v)
{
	put_be(w, (uint16_t) v, 2);
}

void
kw_i32(KWriter *w, int32_t v)
{
	put_be(w, (uint32_t) v, 4);
}

void
kw_i64(KWriter *w, int64_t v)
{
	put_be(w, (uint64_t) v, 8);
}

void
kw_uvarint(KWriter *w, uint64_t v)
{
	while (v >= 0x80)
	{
		kw_i8(w, (int8_t) ((v & 0x7f) | 0x80));
		v >>= 7;
	}
	kw_i8(w, (int8_t) v);
}

void
kw_varint(KWriter *w, int64_t v)
{
	kw_uvarint(w, ((uint64_t) v << 1) ^ (uint64_t) (v >> 63));
}

void
kw_raw(KWriter *w, const void *p, size_t n)
{
	if (n > 0)
		memcpy(kw_reserve(w, n), p, n);
}

void
kw_strn(KWriter *w, const void *p, int32_t len)
{
	if (w->flex)
		kw_uvarint(w, len < 0 ? 0 : (uint64_t) len + 1);
	else
		kw_i16(w, (int16_t) (len < 0 ? -1 : len));
	if (len > 0)
		kw_raw(w, p, len);
}

void
kw_str(KWriter *w, const char *s)
{
	kw_strn(w, s, s ? (int32_t) strlen(s) : -1);
}

void
kw_bytes(KWriter *w, const void *p, int32_t len)
{
	if (w->flex)
		kw_uvarint(w, len < 0 ? 0 : (uint64_t) len + 1);
	else
		kw_i32(w, len < 0 ? -1 : len);
	if (len > 0)
		kw_raw(w, p, len);
}

void
kw_compact_str(KWriter *w, const char *s)
{
	size_t		n = s ? strlen(s) : 0;

	kw_uvarint(w, s ? n + 1 : 0);
	kw_raw(w, s, n);
}

void
kw_put_i32_at(KWriter *w, size_t pos, int32_t v)
{
	uint32_t	u = (uint32_t) v;

	for (int i = 3; i >= 0; i--)
	{
		w->buf[pos + i] = (uint8_t) u;
		u >>= 8;
	}
}

void
kw_array(KWriter *w, int32_t n)
{
	if (w->flex)
		kw_uvarint(w, n < 0 ? 0 : (uint64_t) n + 1);
	else
		kw_i32(w, n);
}

void
kw_tags(KWriter *w)
{
	if (w->flex)
		kw_uvarint(w, 0);
}

void
kw_uuid(KWriter *w, const uint8_t *uuid)
{
	kw_raw(w, uuid, 16);
}

size_t
kw_later(KWriter *w)
{
	size_t		pos = w->len;

	if (!w->flex)
		kw_i32(w, 0);
	return pos;
}

/* insert the unsigned varint v at pos, moving what follows */
static void
insert_uvarint(KWriter *w, size_t pos, uint64_t v)
{
	uint8_t		tmp[10];
	size_t		n = 0;
	size_t		tail = w->len - pos;

	while (v >= 0x80)
	{
		tmp[n++] = (uint8_t) ((v & 0x7f) | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t) v;
	kw_reserve(w, n);
	memmove(w->buf + pos + n, w->buf + pos, tail);
	memcpy(w->buf + pos, tmp, n);
}

void
kw_fill_count(KWriter *w, size_t pos, int32_t n)
{
	if (w->flex)
		insert_uvarint(w, pos, n < 0 ? 0 : (uint64_t) n + 1);
	else
		kw_put_i32_at(w, pos, n);
}

void
kw_fill_len(KWriter *w, size_t pos)
{
	if (w->flex)
		insert_uvarint(w, pos, (uint64_t) (w->len - pos) + 1);
	else
		kw_put_i32_at(w, pos, (int32_t) (w->len - pos - 4));
}

void
kw_topic_parts(KWriter *w, const KSlice *names, int32_t t0, int32_t t1, int32_t nparts,
			   KPartTopicFn topic_of, KPartWriteFn write_part, void *arg)
{
	int32_t		i = 0;

	kw_array(w, t1 > t0 ? t1 - t0 : 0);
	for (int32_t t = t0; t < t1; t++)
	{
		size_t		count_at;
		int32_t		n = 0;

		kw_strn(w, names[t].p, names[t].len);
		count_at = kw_later(w);
		while (i < nparts && topic_of(arg, i) < t)
			i++;
		for (; i < nparts && topic_of(arg, i) == t; i++, n++)
		{
			write_part(w, arg, i);
			kw_tags(w);
		}
		kw_fill_count(w, count_at, n);
		kw_tags(w);
	}
}

void
kw_int32s_text(KWriter *w, const char *text)
{
	size_t		count_at = kw_later(w);
	int32_t		n = 0;

	for (const char *c = text; *c; c++)
		if (*c >= '0' && *c <= '9' && (c == text || c[-1] < '0' || c[-1] > '9'))
		{
			kw_i32(w, atoi(c));
			n++;
		}
	kw_fill_count(w, count_at, n);
}
