/*
 * batch_fuzz.c: libFuzzer harness for the decoding of a replica batch that
 * a leader's node sent (broker/mq-broker/batch.c, batch_header_decode):
 * any bytes as the binary mq.replica_batch value.  It must never read
 * outside them; what it accepts must be what it read.  Built and run by
 * scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so that any overread hits ASan */
	unsigned char *copy = malloc(size ? size : 1);
	BatchHeader h;

	memcpy(copy, data, size);
	if (batch_header_decode(copy, size, &h) && size < 4 + BATCH_HEADER_FIELDS * 16)
		abort();				/* accepted fewer bytes than the int8 fields take */
	free(copy);
	return 0;
}
