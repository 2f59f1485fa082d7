/*
 * pgbinary_test.c: the binary arrays of pgbinary.c without PostgreSQL:
 * what mq_array_add writes (array_send's format) read back by
 * mq_array_read / mq_array_next, as mq-broker reads the arrays of
 * mq.replica_fetch_commit's answer: elements in order with SQL NULLs, an
 * empty array, and input a broken server or connection could send
 * (cut short, two dimensions, a negative length) refused, never read
 * past.
 */
#include <stdlib.h>
#include <string.h>

#include "mqconn.h"
#include "pgbinary.h"
#include "unit.h"

/* the elements of bytes as "a,NULL,..." (int4 elements as numbers), or "(refused)" */
static const char *
walk(const char *bytes, int len, bool ints)
{
	static char out[256];
	MqArrayReader r;
	const char *e;
	int			n;
	size_t		at = 0;

	if (!mq_array_read(&r, bytes, len))
		return "(refused)";
	out[0] = '\0';
	while (mq_array_next(&r, &e, &n))
	{
		if (e == NULL)
			at += snprintf(out + at, sizeof(out) - at, "%sNULL", at ? "," : "");
		else if (ints)
			at += snprintf(out + at, sizeof(out) - at, "%s%d", at ? "," : "", (int) mq_int32_at(e));
		else
			at += snprintf(out + at, sizeof(out) - at, "%s%.*s", at ? "," : "", n, e);
	}
	if (r.left != 0)
		return "(cut short)";
	return out;
}

int
main(void)
{
	MqArray		a;
	const char *bytes;
	int			len;
	char		buf[64];

	mq_array_init(&a, MQ_TEXTOID);
	mq_array_add(&a, "topic", 5);
	mq_array_add(&a, NULL, 0);
	mq_array_add(&a, "", 0);
	mq_array_add(&a, "xy", 2);
	bytes = mq_array_bytes(&a, &len);
	CHECK(strcmp(walk(bytes, len, false), "topic,NULL,,xy") == 0, "text[] read back: %s", walk(bytes, len, false));
	CHECK(strcmp(walk(bytes, len - 1, false), "(cut short)") == 0, "an element cut short ends the walk");
	CHECK(strcmp(walk(bytes, 11, false), "(refused)") == 0, "a header cut short is refused");
	memcpy(buf, bytes, 20);
	buf[3] = 2;					/* two dimensions */
	CHECK(strcmp(walk(buf, 20, false), "(refused)") == 0, "two dimensions are refused");
	memcpy(buf, bytes, 24);
	memset(buf + 20, 0xff, 3);
	buf[23] = (char) 0xfe;		/* length -2 */
	CHECK(strcmp(walk(buf, 24, false), "(cut short)") == 0, "a negative length other than -1 ends the walk");
	mq_array_free(&a);

	mq_array_init(&a, MQ_INT4OID);
	mq_array_add_int32(&a, 1);
	mq_array_add_int32(&a, -7);
	mq_array_add_int32(&a, 300000);
	bytes = mq_array_bytes(&a, &len);
	CHECK(strcmp(walk(bytes, len, true), "1,-7,300000") == 0, "int4[] read back: %s", walk(bytes, len, true));
	mq_array_reset(&a);
	bytes = mq_array_bytes(&a, &len);
	CHECK(strcmp(walk(bytes, len, true), "") == 0, "an empty array has no elements");
	mq_array_free(&a);
	CHECK(strcmp(walk(NULL, 0, true), "(refused)") == 0, "no bytes are refused");
	return unit_done();
}
