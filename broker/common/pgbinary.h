/*-------------------------------------------------------------------------
 *
 * pgbinary.h
 *	  PostgreSQL's binary wire formats, for mqctl and mq-broker: array
 *	  parameters built in memory, integers read from binary results.
 *
 * Batches of records go to mq.send_batch as bytea[] parameters.  In
 * binary form the payload bytes travel as they are; the text form would
 * hex-encode every byte (twice the size) and make the server decode it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_PGBINARY_H
#define MQ_PGBINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/* A one-dimensional array in the format array_recv() reads. */
typedef struct MqArray
{
	Oid			elemtype;
	int			nelems;
	char	   *data;
	size_t		len;
	size_t		cap;
} MqArray;

extern void mq_array_init(MqArray *a, Oid elemtype);
/* empty the array, keeping its memory for the next batch */
extern void mq_array_reset(MqArray *a);
/* add an element of len bytes (its binary send form); NULL is SQL NULL */
extern void mq_array_add(MqArray *a, const void *elem, size_t len);
extern void mq_array_add_int32(MqArray *a, int32_t v);
extern void mq_array_add_int64(MqArray *a, int64_t v);
/* the finished array, valid until the next add or reset */
extern const char *mq_array_bytes(MqArray *a, int *len);
extern void mq_array_free(MqArray *a);

/*
 * Reading a one-dimensional array of a binary-format result column: the
 * reader walks its elements in order.  The bytes stay the result's.
 */
typedef struct MqArrayReader
{
	const unsigned char *p;
	const unsigned char *end;
	int			left;			/* elements not read yet */
} MqArrayReader;

/* false: not an array of at most one dimension, or cut short */
extern bool mq_array_read(MqArrayReader *r, const char *bytes, int len);
/* the next element (*elem NULL, *elen -1 for SQL NULL); false: none left or cut short */
extern bool mq_array_next(MqArrayReader *r, const char **elem, int *elen);

/* An int4 in its binary form (4 bytes, network order). */
extern int32_t mq_int32_at(const char *bytes);

/* Integers of a binary-format result column (int4 / int8). */
extern int32_t mq_get_int32(const PGresult *res, int row, int col);
extern int64_t mq_get_int64(const PGresult *res, int row, int col);

#endif							/* MQ_PGBINARY_H */
