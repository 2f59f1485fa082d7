/*-------------------------------------------------------------------------
 *
 * group_value.c
 *	  The check of a consumer group's metadata record before it is
 *	  appended to __consumer_offsets: the value must be one of Kafka's
 *	  GroupMetadataValue versions 0 to 3 (mq-kafka writes 3), decoded
 *	  exactly, since Kafka tools (Burrow, kafka-consumer-groups' readers
 *	  of the topic) decode every record there, and only mq writes the
 *	  topic (a produce to it is MQ070).  The value comes from mq-kafka
 *	  through mq.kafka_group_save and mq.kafka_group_metadata, which any
 *	  role that may read the group can call.
 *
 * No state, no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bswap.h"

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

/* a STRING (int16 length); -1 is null, allowed if nullable */
static void
take_str(Reader *r, bool nullable)
{
	const uint8 *p = take(r, 2);
	int16		len;

	if (p == NULL)
		return;
	len = (int16) ((p[0] << 8) | p[1]);
	if (len == -1 && nullable)
		return;
	(void) take(r, len);
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
	const uint8 *v = take(&r, 2);
	int			version = v ? (int16) ((v[0] << 8) | v[1]) : -1;
	int32		members;

	if (version < 0 || version > GROUP_VALUE_VERSION_MAX)
		r.bad = true;
	take_str(&r, false);		/* protocol_type */
	(void) take(&r, 4);			/* generation */
	take_str(&r, true);			/* protocol */
	take_str(&r, true);			/* leader */
	if (version >= 2)
		(void) take(&r, 8);		/* current_state_timestamp */
	members = take_i32(&r);
	for (int32 i = 0; i < members && !r.bad; i++)
		take_member(&r, version);
	if (r.bad || members < 0 || r.left != 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("a consumer group's metadata must be Kafka's GroupMetadataValue, version 0 to %d",
						GROUP_VALUE_VERSION_MAX)));
}
