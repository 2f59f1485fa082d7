/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Reading the header of a replica batch in binary (see batch.h).
 *
 * Every read is checked against the length first; nothing is trusted.
 *
 * Locking: none (pure functions).
 *
 *-------------------------------------------------------------------------
 */
#include "batch.h"

static uint32_t
be32(const unsigned char *d)
{
	return (uint32_t) d[0] << 24 | (uint32_t) d[1] << 16 | (uint32_t) d[2] << 8 | d[3];
}

bool
batch_header_decode(const unsigned char *data, size_t len, BatchHeader *out)
{
	int64_t		v[BATCH_HEADER_FIELDS];
	size_t		pos = 4;
	int32_t		nfields;

	if (data == NULL || len < 4)
		return false;
	nfields = (int32_t) be32(data);
	if (nfields < BATCH_HEADER_FIELDS)
		return false;
	for (int f = 0; f < BATCH_HEADER_FIELDS; f++)
	{
		int32_t		flen;
		uint64_t	u = 0;

		if (len - pos < 8)
			return false;
		flen = (int32_t) be32(data + pos + 4);	/* after the type oid */
		pos += 8;
		if (flen != 8 || len - pos < 8)
			return false;		/* null or not an int8 */
		for (int i = 0; i < 8; i++)
			u = u << 8 | data[pos + i];
		v[f] = (int64_t) u;
		pos += 8;
	}
	out->base_offset = v[0];
	out->leader_log_end = v[1];
	out->high_watermark = v[2];
	out->offsets_version = v[3];
	out->log_start_offset = v[4];
	return true;
}
