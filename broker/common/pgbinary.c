/*-------------------------------------------------------------------------
 *
 * pgbinary.c
 *	  Binary array parameters and binary integer results (see pgbinary.h).
 *
 * The array format is the one of PostgreSQL's array_send()/array_recv():
 * int32 ndim, int32 has-nulls flag, Oid element type, then per dimension
 * int32 length and int32 lower bound, then per element int32 byte length
 * (-1 for NULL) followed by the element's own binary form.  All integers
 * are in network byte order.  An empty array has ndim 0 and nothing else.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "pgbinary.h"
#include "util.h"

#define ARRAY_HEADER_LEN 20		/* ndim, flags, elemtype, length, lbound */

static void
put_uint32(char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void
reserve(MqArray *a, size_t more)
{
	if (a->len + more <= a->cap)
		return;
	while (a->len + more > a->cap)
		a->cap = a->cap ? a->cap * 2 : 4096;
	a->data = mq_realloc(a->data, a->cap);
}

void
mq_array_init(MqArray *a, Oid elemtype)
{
	memset(a, 0, sizeof(*a));
	a->elemtype = elemtype;
	mq_array_reset(a);
}

void
mq_array_reset(MqArray *a)
{
	/* the header is written by mq_array_bytes, once the count is known */
	a->nelems = 0;
	a->len = 0;
	reserve(a, ARRAY_HEADER_LEN);
	a->len = ARRAY_HEADER_LEN;
}

void
mq_array_add(MqArray *a, const void *elem, size_t len)
{
	if (len > INT32_MAX - 4)
		mq_fatal(MQ_EXIT_LOCAL, "array element of %zu bytes is too large", len);
	reserve(a, 4 + (elem ? len : 0));
	put_uint32(a->data + a->len, elem ? (uint32_t) len : (uint32_t) -1);
	a->len += 4;
	if (elem != NULL)
	{
		memcpy(a->data + a->len, elem, len);
		a->len += len;
	}
	a->nelems++;
}

void
mq_array_add_int32(MqArray *a, int32_t v)
{
	char		buf[4];

	put_uint32(buf, (uint32_t) v);
	mq_array_add(a, buf, 4);
}

void
mq_array_add_int64(MqArray *a, int64_t v)
{
	char		buf[8];

	put_uint32(buf, (uint32_t) ((uint64_t) v >> 32));
	put_uint32(buf + 4, (uint32_t) v);
	mq_array_add(a, buf, 8);
}

const char *
mq_array_bytes(MqArray *a, int *len)
{
	if (a->len > INT32_MAX)
		mq_fatal(MQ_EXIT_LOCAL, "array parameter of %zu bytes is too large", a->len);
	if (a->nelems == 0)
	{
		/* zero dimensions: flags and element type still follow */
		put_uint32(a->data, 0);
		put_uint32(a->data + 4, 0);
		put_uint32(a->data + 8, a->elemtype);
		*len = 12;
		return a->data;
	}
	put_uint32(a->data, 1);
	/* has-nulls is informational: array_recv finds NULLs itself */
	put_uint32(a->data + 4, 0);
	put_uint32(a->data + 8, a->elemtype);
	put_uint32(a->data + 12, (uint32_t) a->nelems);
	put_uint32(a->data + 16, 1);
	*len = (int) a->len;
	return a->data;
}

void
mq_array_free(MqArray *a)
{
	free(a->data);
	memset(a, 0, sizeof(*a));
}

static uint32_t
get_uint32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

bool
mq_array_read(MqArrayReader *r, const char *bytes, int len)
{
	const unsigned char *p = (const unsigned char *) bytes;
	int32_t		ndim;

	r->p = r->end = p;
	r->left = 0;
	if (bytes == NULL || len < 12)
		return false;
	ndim = (int32_t) get_uint32(p);
	if (ndim == 0)
		return true;
	if (ndim != 1 || len < ARRAY_HEADER_LEN || (int32_t) get_uint32(p + 12) < 0)
		return false;
	r->left = (int) get_uint32(p + 12);
	r->p = p + ARRAY_HEADER_LEN;
	r->end = p + len;
	return true;
}

bool
mq_array_next(MqArrayReader *r, const char **elem, int *elen)
{
	int32_t		n;

	if (r->left <= 0 || r->end - r->p < 4)
		return false;
	n = (int32_t) get_uint32(r->p);
	r->p += 4;
	if (n < -1 || (n > 0 && r->end - r->p < n))
		return false;
	*elem = n < 0 ? NULL : (const char *) r->p;
	*elen = n;
	if (n > 0)
		r->p += n;
	r->left--;
	return true;
}

int32_t
mq_int32_at(const char *bytes)
{
	return (int32_t) get_uint32((const unsigned char *) bytes);
}

int32_t
mq_get_int32(const PGresult *res, int row, int col)
{
	return mq_int32_at(PQgetvalue(res, row, col));
}

int64_t
mq_get_int64(const PGresult *res, int row, int col)
{
	const unsigned char *p = (const unsigned char *) PQgetvalue(res, row, col);
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return (int64_t) v;
}
