/*-------------------------------------------------------------------------
 *
 * arrays.c
 *	  One-dimensional arrays to and from Datums, for the C functions that
 *	  take or build arrays (a produce's records, a replica batch, the
 *	  partitions of a follower's fetch, Kafka fetches, header lists): the
 *	  element type's length, by-value flag and alignment are looked up
 *	  here, once per array.  The callers check dimensions and element
 *	  types themselves, each with its own message.
 *
 * No locks; results in CurrentMemoryContext.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/lsyscache.h"

#include "mq.h"

/* a's elements of type type (*nulls: which are null; *n: how many) */
Datum *
mq_array_elems(ArrayType *a, Oid type, bool **nulls, int *n)
{
	int16		typlen;
	bool		byval;
	char		align;
	Datum	   *d;

	get_typlenbyvalalign(type, &typlen, &byval, &align);
	deconstruct_array(a, type, typlen, byval, align, &d, nulls, n);
	return d;
}

/* the array of type type holding d[0..n) (nulls: which are null) */
Datum
mq_array_of(Datum *d, bool *nulls, int n, Oid type)
{
	int16		typlen;
	bool		byval;
	char		align;
	int			dims[1] = {n};
	int			lbs[1] = {1};

	get_typlenbyvalalign(type, &typlen, &byval, &align);
	return PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs, type, typlen, byval, align));
}
