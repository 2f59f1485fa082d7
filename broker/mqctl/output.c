/*-------------------------------------------------------------------------
 *
 * output.c
 *	  Tables, JSON and text detection for mqctl's output (see output.h).
 *
 * Tables are for people: upper-case headers, columns aligned by character
 * (not byte) width, "-" for NULL, no trailing blanks.  JSON is for
 * programs: numbers stay numbers and json/jsonb columns (topic config,
 * record headers) are embedded as JSON rather than as strings.
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "mqconn.h"
#include "output.h"
#include "util.h"

const char *const output_format_names[] = {"table", "json", NULL};

OutputFormat
output_parse_format(const CliParser *p, const char *arg)
{
	return (OutputFormat) cli_choice(p, "--format", arg, output_format_names);
}

/* Characters in a UTF-8 string (continuation bytes do not count). */
static size_t
display_width(const char *s)
{
	size_t		n = 0;

	for (; *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80)
			n++;
	return n;
}

void
output_table(const PGresult *res)
{
	int			ncols = PQnfields(res);
	int			nrows = PQntuples(res);
	size_t	   *width = mq_malloc0(sizeof(size_t) * (ncols ? ncols : 1));

	for (int c = 0; c < ncols; c++)
	{
		width[c] = display_width(PQfname(res, c));
		for (int r = 0; r < nrows; r++)
		{
			size_t		w = PQgetisnull(res, r, c) ? 1 : display_width(PQgetvalue(res, r, c));

			if (w > width[c])
				width[c] = w;
		}
	}
	for (int r = -1; r < nrows; r++)
	{
		int			lastcol = ncols - 1;

		/* pad up to the last non-empty column only: no trailing blanks */
		while (r >= 0 && lastcol > 0 && !PQgetisnull(res, r, lastcol) &&
			   *PQgetvalue(res, r, lastcol) == '\0')
			lastcol--;
		for (int c = 0; c <= lastcol; c++)
		{
			const char *v;
			bool		last = (c == lastcol);

			if (r < 0)
			{
				for (const char *h = PQfname(res, c); *h; h++)
					putchar(toupper((unsigned char) *h));
				v = PQfname(res, c);
			}
			else
			{
				v = PQgetisnull(res, r, c) ? "-" : PQgetvalue(res, r, c);
				fputs(v, stdout);
			}
			if (!last)
				printf("%*s", (int) (width[c] - display_width(v) + 2), "");
		}
		putchar('\n');
	}
	free(width);
}

json_t *
output_row_json(const PGresult *res, int row)
{
	json_t	   *obj = json_object();

	for (int c = 0; c < PQnfields(res); c++)
	{
		const char *v = PQgetvalue(res, row, c);
		json_t	   *j = NULL;

		if (PQgetisnull(res, row, c))
			j = json_null();
		else
			switch (PQftype(res, c))
			{
				case MQ_INT2OID:
				case MQ_INT4OID:
				case MQ_INT8OID:
				case MQ_NUMERICOID:
				case MQ_JSONOID:
				case MQ_JSONBOID:
					j = json_loads(v, JSON_DECODE_ANY, NULL);
					break;
				case MQ_BOOLOID:
					j = json_boolean(v[0] == 't');
					break;
			}
		if (j == NULL)
			j = json_stringn(v, strlen(v));
		/* only invalid UTF-8 could fail, and the connection is UTF8 */
		json_object_set_new(obj, PQfname(res, c), j ? j : json_null());
	}
	return obj;
}

json_t *
output_rows_json(const PGresult *res)
{
	json_t	   *arr = json_array();

	for (int r = 0; r < PQntuples(res); r++)
		json_array_append_new(arr, output_row_json(res, r));
	return arr;
}

void
output_json(json_t *value, size_t flags)
{
	if (json_dumpf(value, stdout, flags | JSON_ENCODE_ANY) != 0)
		mq_fatal(MQ_EXIT_LOCAL, "could not write JSON output");
	putchar('\n');
	json_decref(value);
}

/*
 * UTF-8 validation after RFC 3629: no overlong forms, no surrogates, no
 * code points above U+10FFFF.  Hand-written because jansson keeps its own
 * checker private and glibc's mbrtowc() depends on the locale; NUL is
 * refused as PostgreSQL's text refuses it.
 */
bool
output_is_text(const char *data, size_t len)
{
	const unsigned char *s = (const unsigned char *) data;
	const unsigned char *end = s + len;

	while (s < end)
	{
		unsigned char c = *s;
		int			n;
		unsigned char lo = 0x80,
					hi = 0xBF;

		if (c == 0)
			return false;
		if (c < 0x80)
		{
			s++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1;
		else if (c >= 0xE0 && c <= 0xEF)
		{
			n = 2;
			if (c == 0xE0)
				lo = 0xA0;		/* overlong */
			else if (c == 0xED)
				hi = 0x9F;		/* surrogates */
		}
		else if (c >= 0xF0 && c <= 0xF4)
		{
			n = 3;
			if (c == 0xF0)
				lo = 0x90;		/* overlong */
			else if (c == 0xF4)
				hi = 0x8F;		/* above U+10FFFF */
		}
		else
			return false;
		if (end - s <= n)
			return false;
		if (s[1] < lo || s[1] > hi)
			return false;
		for (int i = 2; i <= n; i++)
			if ((s[i] & 0xC0) != 0x80)
				return false;
		s += n + 1;
	}
	return true;
}

char *
output_hex(const char *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char	   *hex = mq_malloc(2 * len + 1);

	for (size_t i = 0; i < len; i++)
	{
		hex[2 * i] = digits[(unsigned char) data[i] >> 4];
		hex[2 * i + 1] = digits[(unsigned char) data[i] & 0xF];
	}
	hex[2 * len] = '\0';
	return hex;
}

void
output_flush(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		mq_fatal(MQ_EXIT_LOCAL, "could not write to standard output: %s", strerror(errno));
}

void
output_rows(const PGresult *res, OutputFormat format)
{
	if (format == OUTPUT_JSON)
		output_json(output_rows_json(res), JSON_INDENT(2));
	else
		output_table(res);
	output_flush();
}
