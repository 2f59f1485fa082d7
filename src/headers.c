/*-------------------------------------------------------------------------
 *
 * headers.c
 *	  Kafka record headers: an ordered list of (key text, value bytea or
 *	  null) where keys may repeat, as mq.header[], and its jsonb form.
 *
 * A log row keeps one jsonb per record (the headers column), so that the
 * headers jsonb callers have always given come back exactly as given.
 * Kafka's list is stored in it as an array of pairs, in order:
 *
 *	  [["k", "text value"], ["k", null], ["bin", {"base64": "AAE="}]]
 *
 * a value being a JSON string when it is UTF-8 text without NUL bytes
 * (and the database encoding can hold it), null for a null value, and
 * {"base64": ...} otherwise.  Reading any headers jsonb as a list
 * (mq.record.header_list, mq.header_list()): an array of such pairs gives
 * those headers in order; an object gives one header per key, in jsonb's
 * key order, its value mapped the same way (any other JSON value becomes
 * its JSON text); any other jsonb has no list (NULL).
 *
 * mq.kafka_fetch takes the list as bytes on the wire (keys in UTF-8).
 *
 * No locking: pure functions of their arguments.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/base64.h"
#include "common/string.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_header_list_sql);
PG_FUNCTION_INFO_V1(mq_headers_jsonb_sql);

static JsonbValue
string_value(char *s, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = s;
	v.val.string.len = len;
	return v;
}

/* Push one header value: a string, null, or {"base64": ...}. */
static void
push_value(JsonbParseState **st, bytea *value)
{
	JsonbValue	v;
	char	   *data;
	int			len;

	if (value == NULL)
	{
		v.type = jbvNull;
		(void) pushJsonbValue(st, WJB_ELEM, &v);
		return;
	}
	data = VARDATA_ANY(value);
	len = VARSIZE_ANY_EXHDR(value);
	if (pg_verify_mbstr(PG_UTF8, data, len, true) &&
		(GetDatabaseEncoding() == PG_UTF8 || pg_is_ascii(pnstrdup(data, len))))
	{
		v = string_value(data, len);
		(void) pushJsonbValue(st, WJB_ELEM, &v);
		return;
	}
	else
	{
		int			enclen = pg_b64_enc_len(len);
		char	   *enc = palloc(enclen + 1);
		JsonbValue	k = string_value("base64", 6);

		enclen = pg_b64_encode(data, len, enc, enclen);
		if (enclen < 0)
			elog(ERROR, "mq: base64 encoding of a header value failed");
		v = string_value(enc, enclen);
		(void) pushJsonbValue(st, WJB_BEGIN_OBJECT, NULL);
		(void) pushJsonbValue(st, WJB_KEY, &k);
		(void) pushJsonbValue(st, WJB_VALUE, &v);
		(void) pushJsonbValue(st, WJB_END_OBJECT, NULL);
	}
}

/* Kafka's list (mq.header[]) in its jsonb form: an array of pairs. */
Jsonb *
mq_header_list_to_jsonb(ArrayType *list)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (ARR_NDIM(list) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("header_list must be a one-dimensional array")));
	elems = mq_array_elems(list, ARR_ELEMTYPE(list), &nulls, &n);
	(void) pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
	for (int i = 0; i < n; i++)
	{
		HeapTupleHeader h;
		bool		knull,
					vnull;
		Datum		key,
					value;
		JsonbValue	k;
		char	   *ks;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("header %d is null", i + 1),
					 errhint("A header is a (key, value) pair; its value may be null, the header may not.")));
		h = DatumGetHeapTupleHeader(elems[i]);
		key = GetAttributeByNum(h, 1, &knull);
		value = GetAttributeByNum(h, 2, &vnull);
		if (knull)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("header %d has a null key", i + 1)));
		ks = text_to_cstring(DatumGetTextPP(key));
		k = string_value(ks, strlen(ks));
		(void) pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
		(void) pushJsonbValue(&st, WJB_ELEM, &k);
		push_value(&st, vnull ? NULL : DatumGetByteaPP(value));
		(void) pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	}
	res = pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	return JsonbValueToJsonb(res);
}

static bytea *
bytes_of(const char *s, int len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), s, len);
	return b;
}

/* A JSON string as the UTF-8 bytes Kafka clients see. */
static bytea *
utf8_bytes(const char *s, int len)
{
	char	   *copy = pnstrdup(s, len);
	char	   *utf8 = pg_server_to_any(copy, len, PG_UTF8);

	return bytes_of(utf8, utf8 == copy ? len : strlen(utf8));
}

/* A header value from its jsonb form; NULL for a JSON null. */
static bytea *
value_bytes(JsonbValue *v)
{
	if (v->type == jbvNull)
		return NULL;
	if (v->type == jbvString)
		return utf8_bytes(v->val.string.val, v->val.string.len);
	if (v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data) &&
		JsonContainerSize(v->val.binary.data) == 1)
	{
		JsonbValue *b = getKeyJsonValueFromContainer(v->val.binary.data, "base64", 6, NULL);

		if (b != NULL && b->type == jbvString)
		{
			int			declen = pg_b64_dec_len(b->val.string.len);
			char	   *dec = palloc(declen + 1);

			declen = pg_b64_decode(b->val.string.val, b->val.string.len, dec, declen);
			if (declen < 0)
				ereport(ERROR,
						(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
						 errmsg("invalid base64 in a header value")));
			return bytes_of(dec, declen);
		}
	}
	{
		Jsonb	   *j = JsonbValueToJsonb(v);
		char	   *s = JsonbToCString(NULL, &j->root, VARSIZE(j));

		return utf8_bytes(s, strlen(s));
	}
}

static Datum
make_header(TupleDesc desc, const char *key, int keylen, bytea *value)
{
	Datum		values[2];
	bool		nulls[2] = {false, value == NULL};

	values[0] = PointerGetDatum(cstring_to_text_with_len(key, keylen));
	values[1] = PointerGetDatum(value);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/*
 * Any headers jsonb as Kafka's list: the number of headers, or -1 when it
 * has no list form; keys (in the server encoding) and values in order.
 */
static int
parse_list(Jsonb *headers, char ***keys, int **keylens, bytea ***values)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;
	int			max = Max(JB_ROOT_COUNT(headers), 1);
	bool		object = JB_ROOT_IS_OBJECT(headers);

	if (JB_ROOT_IS_SCALAR(headers))
		return -1;
	*keys = palloc(sizeof(char *) * max);
	*keylens = palloc(sizeof(int) * max);
	*values = palloc(sizeof(bytea *) * max);
	it = JsonbIteratorInit(&headers->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *k = NULL;
		JsonbValue *val = &v;

		if (object && tok == WJB_KEY)
		{
			(*keys)[n] = pnstrdup(v.val.string.val, v.val.string.len);
			(*keylens)[n] = v.val.string.len;
			(void) JsonbIteratorNext(&it, &v, true);
			(*values)[n++] = value_bytes(&v);
			continue;
		}
		if (object || tok != WJB_ELEM)
			continue;
		if (v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data) &&
			JsonContainerSize(v.val.binary.data) == 2)
		{
			k = getIthJsonbValueFromContainer(v.val.binary.data, 0);
			val = getIthJsonbValueFromContainer(v.val.binary.data, 1);
		}
		if (k == NULL || k->type != jbvString)
			return -1;			/* not a list of pairs */
		(*keys)[n] = k->val.string.val;
		(*keylens)[n] = k->val.string.len;
		(*values)[n++] = value_bytes(val);
	}
	return n;
}

/*
 * Any headers jsonb as Kafka's list (an mq.header[] of element type
 * elemtype), or *isnull when it has no list form.
 */
Datum
mq_header_list_from_jsonb(Jsonb *headers, Oid elemtype, bool *isnull)
{
	char	  **keys;
	int		   *keylens;
	bytea	  **values;
	int			n = parse_list(headers, &keys, &keylens, &values);
	TupleDesc	desc;
	Datum	   *elems;

	*isnull = (n < 0);
	if (n < 0)
		return (Datum) 0;
	desc = lookup_rowtype_tupdesc_copy(elemtype, -1);
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		elems[i] = make_header(desc, keys[i], keylens[i], values[i]);
	return PointerGetDatum(construct_array(elems, n, elemtype, -1, false, TYPALIGN_DOUBLE));
}

/*
 * For record_size.c: the UTF-8 lengths of the keys and values (-1 for a
 * null value) of a headers jsonb's list, Kafka's wire sizes; returns the
 * number of headers, or -1 when the jsonb has no list form.
 */
int
mq_header_list_lengths(Jsonb *headers, int64 **keylens, int64 **vallens)
{
	char	  **keys;
	int		   *klens;
	bytea	  **values;
	int			n = parse_list(headers, &keys, &klens, &values);

	if (n < 0)
		return -1;
	*keylens = palloc(sizeof(int64) * Max(n, 1));
	*vallens = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		(*keylens)[i] = VARSIZE_ANY_EXHDR(utf8_bytes(keys[i], klens[i]));
		(*vallens)[i] = values[i] == NULL ? -1 : VARSIZE_ANY_EXHDR(values[i]);
	}
	return n;
}

/*
 * For mq.kafka_fetch: any headers jsonb as Kafka's list on the wire, keys
 * and values as UTF-8 bytes with their lengths (-1 for a null value);
 * returns the number of headers, or -1 when the jsonb has no list form.
 */
int
mq_header_list_wire(Jsonb *headers, char ***keys, int **keylens, char ***values, int **vallens)
{
	bytea	  **vals;
	int			n = parse_list(headers, keys, keylens, &vals);

	if (n < 0)
		return -1;
	*values = palloc(sizeof(char *) * Max(n, 1));
	*vallens = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (GetDatabaseEncoding() != PG_UTF8)
		{
			bytea	   *k = utf8_bytes((*keys)[i], (*keylens)[i]);

			(*keys)[i] = VARDATA(k);
			(*keylens)[i] = VARSIZE(k) - VARHDRSZ;
		}
		(*values)[i] = vals[i] ? VARDATA(vals[i]) : NULL;
		(*vallens)[i] = vals[i] ? (int) (VARSIZE(vals[i]) - VARHDRSZ) : -1;
	}
	return n;
}

/* mq.header_list(headers jsonb) RETURNS mq.header[] */
Datum
mq_header_list_sql(PG_FUNCTION_ARGS)
{
	Oid			elemtype = get_element_type(get_fn_expr_rettype(fcinfo->flinfo));
	bool		isnull;
	Datum		result = mq_header_list_from_jsonb(PG_GETARG_JSONB_P(0), elemtype, &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* mq.headers_jsonb(header_list mq.header[]) RETURNS jsonb */
Datum
mq_headers_jsonb_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_JSONB_P(mq_header_list_to_jsonb(PG_GETARG_ARRAYTYPE_P(0)));
}
