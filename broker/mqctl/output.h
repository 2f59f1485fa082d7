/*-------------------------------------------------------------------------
 *
 * output.h
 *	  How mqctl shows results: aligned tables for people, JSON (through
 *	  jansson) for programs, and the test of whether bytes are text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_OUTPUT_H
#define MQCTL_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "cli.h"

typedef enum OutputFormat
{
	OUTPUT_TABLE,
	OUTPUT_JSON
} OutputFormat;

/* the words of --format, in OutputFormat order, NULL-terminated */
extern const char *const output_format_names[];

/* The value of --format (table or json), or a usage error. */
extern OutputFormat output_parse_format(const CliParser *p, const char *arg);

/* All rows of a text-format result as a table; NULLs show as "-". */
extern void output_table(const PGresult *res);
/* All rows of res in the chosen format (a JSON array or a table), flushed. */
extern void output_rows(const PGresult *res, OutputFormat format);

/* Rows of a text-format result as JSON, typed by the columns' types. */
extern json_t *output_row_json(const PGresult *res, int row);
extern json_t *output_rows_json(const PGresult *res);

/* Print a JSON value and a newline on stdout, and release it. */
extern void output_json(json_t *value, size_t flags);

/*
 * Whether bytes are text: valid UTF-8 without NUL bytes, i.e. exactly what
 * convert_from(bytes, 'UTF8') accepts on the server.
 */
extern bool output_is_text(const char *data, size_t len);

/* Bytes as lower-case hex digits, without the \x prefix, in a new string. */
extern char *output_hex(const char *data, size_t len);

/* Flush stdout; a write error (disk full, closed pipe) exits with 5. */
extern void output_flush(void);

#endif							/* MQCTL_OUTPUT_H */
