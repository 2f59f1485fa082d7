/*-------------------------------------------------------------------------
 *
 * partitioner.c
 *	  Kafka's default partitioner: murmur2 of the key, made positive, modulo
 *	  the partition count, so that a key lands on the partition a Kafka
 *	  client would choose.  Records without a key are spread round-robin
 *	  from a per-backend starting point.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/pg_prng.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_murmur2_sql);
PG_FUNCTION_INFO_V1(mq_partition_for);

/*
 * MurmurHash2 as Kafka's clients compute it: 32-bit, little-endian words,
 * seed 0x9747b28c.  Unsigned arithmetic gives Java's wrap-around int maths.
 */
int32
mq_murmur2(const char *data, int len)
{
	const uint32 m = 0x5bd1e995;
	const unsigned char *p = (const unsigned char *) data;
	uint32		h = 0x9747b28c ^ (uint32) len;
	int			nwords = len / 4;

	for (int i = 0; i < nwords; i++, p += 4)
	{
		uint32		k = (uint32) p[0] | ((uint32) p[1] << 8) |
			((uint32) p[2] << 16) | ((uint32) p[3] << 24);

		k *= m;
		k ^= k >> 24;
		k *= m;
		h *= m;
		h ^= k;
	}

	switch (len & 3)
	{
		case 3:
			h ^= (uint32) p[2] << 16;
			/* FALLTHROUGH */
		case 2:
			h ^= (uint32) p[1] << 8;
			/* FALLTHROUGH */
		case 1:
			h ^= (uint32) p[0];
			h *= m;
	}

	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;
	return (int32) h;
}

/* Partition for a record: by key hash, or round-robin for a null key. */
int32
mq_default_partition(bytea *key, int32 npartitions)
{
	static uint32 next_null_key = 0;
	static bool seeded = false;

	if (key == NULL)
	{
		if (!seeded)
		{
			next_null_key = (uint32) pg_prng_uint64(&pg_global_prng_state);
			seeded = true;
		}
		return (int32) (next_null_key++ % (uint32) npartitions);
	}
	return (mq_murmur2(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) & 0x7fffffff) % npartitions;
}

Datum
mq_murmur2_sql(PG_FUNCTION_ARGS)
{
	bytea	   *data = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_INT32(mq_murmur2(VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data)));
}

/* mq.partition_for(topic, key): where a record with this key goes. */
Datum
mq_partition_for(PG_FUNCTION_ARGS)
{
	MqTopic    *topic;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topic must not be null")));
	topic = mq_topic_authorized(PG_GETARG_TEXT_PP(0), MQ_ACL_DESCRIBE);
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();		/* a null key has no fixed partition */
	PG_RETURN_INT32(mq_default_partition(PG_GETARG_BYTEA_PP(1), topic->npartitions));
}
