/*-------------------------------------------------------------------------
 *
 * kjson.c
 *	  Header lists between Kafka's record encoding and mq's forms (see
 *	  kjson.h).  No state.
 *
 *-------------------------------------------------------------------------
 */
#include "kjson.h"

#include <stdio.h>
#include <string.h>

bool
utf8_text(const uint8_t *p, int32_t len)
{
	for (int32_t i = 0; i < len;)
	{
		uint8_t		c = p[i];
		int			n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 :
			(c & 0xF0) == 0xE0 ? 2 :
			(c & 0xF8) == 0xF0 ? 3 :
			-1;

		if (c == 0 || n < 0 || (c & 0xFE) == 0xC0 || len - i <= n)
			return false;
		for (int k = 1; k <= n; k++)
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
		i += n + 1;
	}
	return true;
}

static void
json_string(KWriter *w, const uint8_t *p, int32_t len)
{
	kw_i8(w, '"');
	for (int32_t i = 0; i < len; i++)
	{
		uint8_t		c = p[i];

		if (c == '"' || c == '\\')
		{
			kw_i8(w, '\\');
			kw_i8(w, (int8_t) c);
		}
		else if (c < 0x20)
		{
			char		esc[8];

			snprintf(esc, sizeof(esc), "\\u%04x", c);
			kw_raw(w, esc, 6);
		}
		else
			kw_i8(w, (int8_t) c);
	}
	kw_i8(w, '"');
}

static void
json_base64(KWriter *w, const uint8_t *p, int32_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	kw_raw(w, "{\"base64\": \"", 12);
	for (int32_t i = 0; i < len; i += 3)
	{
		uint32_t	v = (uint32_t) p[i] << 16 | (i + 1 < len ? (uint32_t) p[i + 1] << 8 : 0) |
			(i + 2 < len ? p[i + 2] : 0);

		kw_i8(w, tab[(v >> 18) & 63]);
		kw_i8(w, tab[(v >> 12) & 63]);
		kw_i8(w, i + 1 < len ? tab[(v >> 6) & 63] : '=');
		kw_i8(w, i + 2 < len ? tab[v & 63] : '=');
	}
	kw_raw(w, "\"}", 2);
}

/* a varint-length field of an already validated header list */
static KSlice
varbytes(KReader *r)
{
	int64_t		len = kr_varint(r);

	return len < 0 ? (KSlice){NULL, -1} : kr_raw(r, (size_t) len);
}

bool
headers_to_json(KSlice encoded, KWriter *json)
{
	KReader		r;
	int64_t		n;

	kr_init(&r, encoded.p, encoded.len);
	n = kr_varint(&r);
	kw_i8(json, '[');
	for (int64_t i = 0; i < n && !r.err; i++)
	{
		KSlice		k = varbytes(&r);
		KSlice		v = varbytes(&r);

		if (k.len < 0 || !utf8_text(k.p, k.len))
			return false;
		if (i > 0)
			kw_raw(json, ", ", 2);
		kw_i8(json, '[');
		json_string(json, k.p, k.len);
		kw_raw(json, ", ", 2);
		if (v.len < 0)
			kw_raw(json, "null", 4);
		else if (utf8_text(v.p, v.len))
			json_string(json, v.p, v.len);
		else
			json_base64(json, v.p, v.len);
		kw_i8(json, ']');
	}
	kw_i8(json, ']');
	return !r.err;
}

bool
pg_array_elems(const char *data, int len, KSlice *elems, int max, int *n)
{
	KReader		r;
	int32_t		ndim,
				count;

	kr_init(&r, data, len);
	ndim = kr_i32(&r);
	(void) kr_i32(&r);			/* has nulls */
	(void) kr_i32(&r);			/* element type */
	*n = 0;
	if (ndim == 0)
		return !r.err;
	if (ndim != 1)
		return false;
	count = kr_i32(&r);
	(void) kr_i32(&r);			/* lower bound */
	if (count < 0 || count > max)
		return false;
	for (int32_t i = 0; i < count && !r.err; i++)
	{
		int32_t		l = kr_i32(&r);

		elems[i] = l < 0 ? (KSlice){NULL, -1} : kr_raw(&r, (size_t) l);
	}
	*n = count;
	return !r.err;
}
