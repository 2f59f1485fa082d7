/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  The only part of a fetched replica batch the broker reads: the
 *	  header fields of an mq.replica_batch value in binary (record_send
 *	  format), for metrics, for the committed-offsets version the
 *	  follower applied, which its next fetch reports, and to tell an
 *	  answer that brings the follower nothing new (follower.c).  The records themselves are passed on to the
 *	  local mq.replica_append as they came and never decoded here.
 *
 * Pure functions on untrusted bytes (whatever a leader's node sent):
 * fuzzed by fuzz/batch_fuzz.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_BATCH_H
#define MQ_BROKER_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct BatchHeader
{
	int64_t		base_offset;	/* field 1 */
	int64_t		leader_log_end; /* field 2 */
	int64_t		high_watermark; /* field 3 */
	int64_t		offsets_version;	/* field 4: the leader's committed-offsets version */
	int64_t		log_start_offset;	/* field 5 */
} BatchHeader;

#define BATCH_HEADER_FIELDS 5

/*
 * Decode the first five fields (all int8) of an mq.replica_batch in
 * binary: a field count, then per field its type oid, length and bytes,
 * big-endian.  False when the bytes are not that (short, null, not int8).
 */
extern bool batch_header_decode(const unsigned char *data, size_t len, BatchHeader *out);

#endif							/* MQ_BROKER_BATCH_H */
