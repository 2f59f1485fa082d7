/*-------------------------------------------------------------------------
 *
 * group_value.c
 *	  Kafka's GroupMetadataValue, a consumer group's metadata record in
 *	  __consumer_offsets: its check before it is appended, and its members
 *	  decoded for SQL.  The value must be one of versions 0 to 3 (mq-kafka
 *	  writes 3), decoded exactly, since Kafka tools (Burrow,
 *	  kafka-consumer-groups' readers of the topic) decode every record
 *	  there, and only mq writes the topic (a produce to it is MQ070).  The
 *	  value comes from mq-kafka through mq.kafka_group_save and
 *	  mq.kafka_group_metadata, which any role that may read the group can
 *	  call.  mq._kafka_group_members decodes the members of the value kept
 *	  with each Kafka group's state (mq.kafka_group_state), with the topics
 *	  of each consumer's subscription and assignment (Kafka's
 *	  ConsumerProtocolSubscription and ConsumerProtocolAssignment), for
 *	  the group views (src/sql/56_group_views.sql).
 *
 * No state, no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "mq.h"

#define GROUP_VALUE_VERSION_MAX 3

typedef struct Reader
{
	const uint8 *p;
	int64		left;
	bool		bad;
} Reader;

/* take n bytes (n < 0 or beyond the end: bad) */
static const uint8 *
take(Reader *r, int64 n)
{
	const uint8 *at = r->p;

	if (r->bad || n < 0 || n > r->left)
	{
		r->bad = true;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return at;
}

static int32
take_i32(Reader *r)
{
	const uint8 *p = take(r, 4);
	uint32		v;

	if (p == NULL)
		return -1;
	memcpy(&v, p, 4);
	return (int32) pg_ntoh32(v);
}

static int16
take_i16(Reader *r)
{
	const uint8 *p = take(r, 2);

	return p ? (int16) ((p[0] << 8) | p[1]) : -1;
}

/*
 * A STRING (int16 length); -1 is null, allowed if nullable.  Its bytes
 * (NULL for null) and length in *len.
 */
static const uint8 *
take_strn(Reader *r, bool nullable, int16 *len)
{
	*len = take_i16(r);
	if (*len == -1 && nullable && !r->bad)
		return NULL;
	return take(r, *len);
}

static void
take_str(Reader *r, bool nullable)
{
	int16		len;

	(void) take_strn(r, nullable, &len);
}

/* a STRING as text, NULL for null (or past the end) */
static text *
take_text(Reader *r, bool nullable)
{
	int16		len;
	const uint8 *p = take_strn(r, nullable, &len);

	return p ? cstring_to_text_with_len((const char *) p, len) : NULL;
}

/* what a value says of its group, before its members */
typedef struct GroupHeader
{
	int			version;
	text	   *protocol_type;
	int32		generation;
	text	   *protocol;		/* NULL: none (an empty group) */
} GroupHeader;

static void
take_header(Reader *r, GroupHeader *h)
{
	h->version = take_i16(r);
	if (h->version < 0 || h->version > GROUP_VALUE_VERSION_MAX)
		r->bad = true;
	h->protocol_type = take_text(r, false);
	h->generation = take_i32(r);
	h->protocol = take_text(r, true);
	take_str(r, true);			/* leader */
	if (h->version >= 2)
		(void) take(r, 8);		/* current_state_timestamp */
}

static void
take_member(Reader *r, int version)
{
	take_str(r, false);			/* member_id */
	if (version >= 3)
		take_str(r, true);		/* group_instance_id */
	take_str(r, false);			/* client_id */
	take_str(r, false);			/* client_host */
	(void) take(r, version >= 1 ? 8 : 4);	/* rebalance and session timeouts */
	(void) take(r, take_i32(r));	/* subscription */
	(void) take(r, take_i32(r));	/* assignment */
}

void
mq_check_group_value(const bytea *value)
{
	Reader		r = {(const uint8 *) VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value), false};
	GroupHeader h;
	int32		members;

	take_header(&r, &h);
	members = take_i32(&r);
	for (int32 i = 0; i < members && !r.bad; i++)
		take_member(&r, h.version);
	if (r.bad || members < 0 || r.left != 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("a consumer group's metadata must be Kafka's GroupMetadataValue, version 0 to %d",
						GROUP_VALUE_VERSION_MAX)));
}

/*
 * The topics a consumer subscribes to, from its ConsumerProtocolSubscription
 * (any version: the topics come first); an empty array if it is not one.
 */
static Datum
subscription_topics(const uint8 *p, int32 len)
{
	Reader		r = {p, len, false};
	ArrayBuildState *topics = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	int32		n;

	(void) take_i16(&r);		/* version */
	n = take_i32(&r);
	for (int32 i = 0; i < n && !r.bad; i++)
	{
		text	   *topic = take_text(&r, false);

		if (topic)
			accumArrayResult(topics, PointerGetDatum(topic), false, TEXTOID, CurrentMemoryContext);
	}
	return makeArrayResult(topics, CurrentMemoryContext);
}

/*
 * The partitions a ConsumerProtocolAssignment gives, as two arrays of the
 * same length: the topics (values[0]) and the partitions (values[1]).
 */
static void
assignment_partitions(const uint8 *p, int32 len, Datum *values)
{
	Reader		r = {p, len, false};
	ArrayBuildState *topics = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	ArrayBuildState *parts = initArrayResult(INT4OID, CurrentMemoryContext, false);
	int32		n;

	(void) take_i16(&r);		/* version */
	n = take_i32(&r);
	for (int32 i = 0; i < n && !r.bad; i++)
	{
		text	   *topic = take_text(&r, false);
		int32		m = take_i32(&r);

		for (int32 j = 0; topic && j < m && !r.bad; j++)
		{
			int32		partition = take_i32(&r);

			if (r.bad)
				break;
			accumArrayResult(topics, PointerGetDatum(topic), false, TEXTOID, CurrentMemoryContext);
			accumArrayResult(parts, Int32GetDatum(partition), false, INT4OID, CurrentMemoryContext);
		}
	}
	values[0] = makeArrayResult(topics, CurrentMemoryContext);
	values[1] = makeArrayResult(parts, CurrentMemoryContext);
}

#define MEMBER_COLUMNS 10

/* one member of a checked value, as a row of mq._kafka_group_members */
static void
member_row(Reader *r, int version, bool consumer, Datum *values, bool *nulls)
{
	const uint8 *sub;
	const uint8 *assign;
	int32		sub_len;
	int32		assign_len;

	values[0] = PointerGetDatum(take_text(r, false));	/* member_id */
	values[1] = PointerGetDatum(version >= 3 ? take_text(r, true) : NULL);
	nulls[1] = DatumGetPointer(values[1]) == NULL;
	values[2] = PointerGetDatum(take_text(r, false));	/* client_id */
	values[3] = PointerGetDatum(take_text(r, false));	/* client_host */
	if (version >= 1)
		(void) take_i32(r);		/* rebalance timeout */
	values[4] = Int32GetDatum(take_i32(r));	/* session timeout */
	sub_len = take_i32(r);
	sub = take(r, sub_len);
	assign_len = take_i32(r);
	assign = take(r, assign_len);
	values[7] = consumer && sub ? subscription_topics(sub, sub_len)
		: PointerGetDatum(construct_empty_array(TEXTOID));
	if (consumer && assign)
		assignment_partitions(assign, assign_len, &values[8]);
	else
	{
		values[8] = PointerGetDatum(construct_empty_array(TEXTOID));
		values[9] = PointerGetDatum(construct_empty_array(INT4OID));
	}
}

/*
 * mq._kafka_group_members(value bytea): the members of a GroupMetadataValue
 * (none if it does not decode), each with the group's generation and
 * protocol, its subscribed topics and its assigned partitions (topics and
 * partitions side by side).
 */
PG_FUNCTION_INFO_V1(mq_kafka_group_members);
Datum
mq_kafka_group_members(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bytea	   *value = PG_GETARG_BYTEA_PP(0);
	Reader		r = {(const uint8 *) VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value), false};
	Datum		values[MEMBER_COLUMNS];
	bool		nulls[MEMBER_COLUMNS] = {false};
	GroupHeader h;
	int32		members;
	bool		consumer;

	InitMaterializedSRF(fcinfo, 0);
	take_header(&r, &h);
	consumer = h.protocol_type && VARSIZE_ANY_EXHDR(h.protocol_type) == 8 &&
		memcmp(VARDATA_ANY(h.protocol_type), "consumer", 8) == 0;
	values[5] = Int32GetDatum(h.generation);
	values[6] = PointerGetDatum(h.protocol);
	nulls[6] = h.protocol == NULL;
	members = take_i32(&r);
	for (int32 i = 0; i < members && !r.bad; i++)
	{
		member_row(&r, h.version, consumer, values, nulls);
		if (r.bad)
			break;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_NULL();
}
