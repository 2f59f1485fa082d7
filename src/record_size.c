/*-------------------------------------------------------------------------
 *
 * record_size.c
 *	  Record size limits: a record's size as Kafka counts it, the topic's
 *	  max.message.bytes, and the server-wide default mq.message_max_bytes
 *	  (Kafka's broker setting message.max.bytes).
 *
 * Size.  Kafka's broker refuses a record batch larger than the topic's
 * max.message.bytes (RecordTooLargeException, error MESSAGE_TOO_LARGE).
 * A Kafka client's batch is checked as such: mq-kafka passes its size as
 * sent (batch_bytes of the produce contract and of a transaction's staged
 * batch), and only that is limited, as in Kafka.  SQL calls have no
 * producer batches, so there each record is limited, counted as the
 * Kafka record batch (format v2, uncompressed) that holds this record
 * alone, which is what a Kafka producer sends for a single record:
 *
 *   61 bytes of batch header
 *   + the record: a varint of its length, then attributes (1 byte),
 *     timestamp delta and offset delta (0: 1 byte each), key length
 *     (varint, -1 for null) and key, value length and value, the number
 *     of headers (varint), and per header its key length and key (UTF-8),
 *     its value length (-1 for null) and value.
 *
 * Varints are zigzag-encoded, 7 bits a byte.  Headers given as a jsonb
 * object: each key/value pair is a header, a JSON string value counts as
 * its UTF-8 text, JSON null as a null value, any other value as its JSON
 * text.  Kafka's header list, stored as an array of [key, value] pairs
 * (headers.c), counts header by header as Kafka sends it.  Any other jsonb
 * counts as one header with an empty key and the JSON text as value.
 *
 * Limit.  The topic's max.message.bytes when set, else the setting
 * mq.message_max_bytes (default 1048588, Kafka's); as in Kafka a topic's
 * value overrides the server's either way.  The leader's produce path
 * (produce.c) checks every record of a call before it appends any, so a
 * call with one record too large writes nothing.  A follower's replica
 * append does not check: the leader validated the records, and refusing
 * them on a follower whose copy of the topic config differs would stop
 * replication for good (docs/sql.md, "Record size").
 *
 * No locks: the check reads only the caller's arguments and the topic cache.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_record_size_sql);

/* Kafka's DefaultRecordBatch.RECORD_BATCH_OVERHEAD */
#define KAFKA_BATCH_OVERHEAD 61
/* Kafka's broker default for message.max.bytes (1 MiB + 12 bytes of log overhead) */
#define KAFKA_MESSAGE_MAX_BYTES 1048588

int			mq_message_max_bytes = KAFKA_MESSAGE_MAX_BYTES;

void
mq_record_size_init(void)
{
	DefineCustomIntVariable("mq.message_max_bytes",
							"Largest record a topic without max.message.bytes accepts.",
							"Like Kafka's broker setting message.max.bytes; sizes are counted as Kafka counts a record batch holding the record alone.",
							&mq_message_max_bytes, KAFKA_MESSAGE_MAX_BYTES, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
}

/* Bytes of a zigzag varint (Kafka's ByteUtils.sizeOfVarlong). */
static int
varint_size(int64 v)
{
	uint64		z = ((uint64) v << 1) ^ (uint64) (v >> 63);
	int			n = 1;

	while (z >= 0x80)
	{
		z >>= 7;
		n++;
	}
	return n;
}

/* A length-prefixed field: len bytes, or null when len < 0. */
static int64
field_size(int64 len)
{
	return len < 0 ? varint_size(-1) : varint_size(len) + len;
}

/* Length in UTF-8 of a string in the server encoding. */
static int64
utf8_len(const char *s, int len)
{
	char	   *u;

	if (GetDatabaseEncoding() == PG_UTF8 || len == 0)
		return len;
	u = pg_server_to_any(s, len, PG_UTF8);
	return u == s ? len : (int64) strlen(u);
}

/* A header value's length: -1 for JSON null, else as documented above. */
static int64
header_value_len(JsonbValue *v)
{
	char	   *text;

	switch (v->type)
	{
		case jbvNull:
			return -1;
		case jbvString:
			return utf8_len(v->val.string.val, v->val.string.len);
		case jbvBinary:
			text = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
			break;
		default:
			{
				Jsonb	   *scalar = JsonbValueToJsonb(v);

				text = JsonbToCString(NULL, &scalar->root, VARSIZE(scalar));
			}
			break;
	}
	return utf8_len(text, strlen(text));
}

/* Header count and bytes of the headers of a record. */
static int64
headers_size(Jsonb *headers)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int64		count = 0;
	int64		bytes = 0;

	if (headers == NULL)
		return varint_size(0);
	if (JB_ROOT_IS_ARRAY(headers) && !JB_ROOT_IS_SCALAR(headers))
	{
		/* Kafka's header list as [[key, value], ...] pairs (headers.c) */
		int64	   *keylens;
		int64	   *vallens;
		int			n = mq_header_list_lengths(headers, &keylens, &vallens);

		for (int i = 0; i < n; i++)
			bytes += field_size(keylens[i]) + field_size(vallens[i]);
		if (n >= 0)
			return varint_size(n) + bytes;
	}
	if (!JB_ROOT_IS_OBJECT(headers) || JB_ROOT_IS_SCALAR(headers))
	{
		char	   *text = JsonbToCString(NULL, &headers->root, VARSIZE(headers));

		return varint_size(1) + field_size(0) + field_size(utf8_len(text, strlen(text)));
	}
	it = JsonbIteratorInit(&headers->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			count++;
			bytes += field_size(utf8_len(v.val.string.val, v.val.string.len));
		}
		else if (tok == WJB_VALUE)
			bytes += field_size(header_value_len(&v));
	}
	return varint_size(count) + bytes;
}

/* The size Kafka counts for the record (see the file header). */
int64
mq_record_size(bytea *key, bytea *value, Jsonb *headers)
{
	int64		body;

	body = 1					/* attributes */
		+ varint_size(0)		/* timestamp delta */
		+ varint_size(0)		/* offset delta */
		+ field_size(key ? (int64) VARSIZE_ANY_EXHDR(key) : -1)
		+ field_size(value ? (int64) VARSIZE_ANY_EXHDR(value) : -1)
		+ headers_size(headers);
	return KAFKA_BATCH_OVERHEAD + varint_size(body) + body;
}

/* The limit on the topic's records and batches. */
static int64
size_limit(MqTopic *topic)
{
	return topic->max_message_bytes >= 0 ? topic->max_message_bytes : (int64) mq_message_max_bytes;
}

/* The limit's name, for a refusal's message (only then: produce's path builds no text). */
static char *
limit_name(MqTopic *topic)
{
	return topic->max_message_bytes >= 0 ?
		psprintf("max.message.bytes " INT64_FORMAT " of topic \"%s\"", topic->max_message_bytes, topic->name) :
		psprintf("mq.message_max_bytes %d", mq_message_max_bytes);
}

static int
size_hint(MqTopic *topic)
{
	return errhint(topic->max_message_bytes >= 0 ?
				   "Send smaller records, or raise the topic's max.message.bytes with mq.alter_topic()." :
				   "Send smaller records, or set max.message.bytes on the topic (or mq.message_max_bytes on the server).");
}

/*
 * Refuse the call (MQ040) if it is larger than the topic allows: the
 * Kafka batch the records came in, as Kafka's broker counts it (its size
 * as the producer sent it, compressed or not: batch_bytes), or else
 * (batch_bytes < 0) any of its records.  Called before anything is
 * appended.
 */
void
mq_check_record_sizes(MqTopic *topic, MqRecordIn *recs, int n, int64 batch_bytes)
{
	int64		limit = size_limit(topic);

	if (batch_bytes >= 0)
	{
		if (batch_bytes > limit)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_RECORD_TOO_LARGE),
					 errmsg("record batch of " INT64_FORMAT " bytes is larger than %s", batch_bytes, limit_name(topic)),
					 errdetail("Nothing was written.  As in Kafka, the limit applies to each record batch as its producer sent it (compressed, if it was)."),
					 size_hint(topic)));
		return;
	}
	for (int i = 0; i < n; i++)
	{
		int64		size = mq_record_size(recs[i].key, recs[i].value,
										  recs[i].headers ? DatumGetJsonbP(recs[i].headers) : NULL);

		if (size <= limit)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_MQ_RECORD_TOO_LARGE),
				 n > 1 ?
				 errmsg("record %d of the batch, " INT64_FORMAT " bytes, is larger than %s", i + 1, size, limit_name(topic)) :
				 errmsg("record of " INT64_FORMAT " bytes is larger than %s", size, limit_name(topic)),
				 errdetail("Nothing was written.  A record counts as Kafka counts a record batch holding it alone: its key, value and headers with their lengths, a few bytes of record framing and 61 of batch header."),
				 size_hint(topic)));
	}
}

/* mq.record_size(key bytea, value bytea, headers jsonb): the size limits compare */
Datum
mq_record_size_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(mq_record_size(PG_ARGISNULL(0) ? NULL : PG_GETARG_BYTEA_PP(0),
								   PG_ARGISNULL(1) ? NULL : PG_GETARG_BYTEA_PP(1),
								   PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2)));
}
