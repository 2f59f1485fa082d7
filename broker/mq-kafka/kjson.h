/*-------------------------------------------------------------------------
 *
 * kjson.h
 *	  Kafka record headers to and from mq's forms: the jsonb pair list that
 *	  mq.send_batch takes (docs/sql.md, Headers), and the binary arrays of
 *	  keys and values a fetch reads from mq.record.header_list.
 *
 * No state, no locking.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KJSON_H
#define MQK_KJSON_H

#include <stdbool.h>

#include "kbuf.h"

/*
 * Append the encoded header list of a record (count, then key and value
 * varbytes) as mq's jsonb pair list: [["key", "text" | null |
 * {"base64": "..."}], ...].  A value that is UTF-8 text without NUL bytes
 * becomes a JSON string, other bytes base64.  False if a key is not UTF-8
 * text without NUL bytes (mq's header keys are text).
 */
extern bool headers_to_json(KSlice encoded, KWriter *json);

/* true if p[0..len) is valid UTF-8 without NUL bytes */
extern bool utf8_text(const uint8_t *p, int32_t len);

/*
 * Elements of a one-dimensional array in PostgreSQL's binary format:
 * *n elements, each a slice into data (len -1 for NULL).  False if the
 * bytes are not such an array.  elems has room for max elements.
 */
extern bool pg_array_elems(const char *data, int len, KSlice *elems, int max, int *n);

#endif							/* MQK_KJSON_H */
