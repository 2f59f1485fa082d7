/*-------------------------------------------------------------------------
 *
 * sslmap.c
 *	  Kafka's mapping rules, in the form of ssl.principal.mapping.rules
 *	  (KIP-371), the one parser and matcher of both lists mq-kafka takes:
 *	  --ssl-principal-mapping-rules on a client certificate's subject in
 *	  RFC 2253 form ("CN=app1,OU=apps,O=example"; tls.c) and
 *	  --principal-rules on an authenticated name (principal.c).  The
 *	  rules are tried in order; the first whose pattern matches the whole
 *	  subject gives the user name, its replacement
 *	  with $1..$9 standing for the pattern's groups, then lower-cased
 *	  (/L) or upper-cased (/U).  DEFAULT gives the subject unchanged.  No
 *	  rule applying refuses the client, as in Kafka.
 *
 * Patterns are POSIX extended regular expressions (regcomp), not Java's:
 * there is no lazy `.*?`; write `[^,]*` instead.  A `/` inside a pattern
 * or replacement is written `\/`.
 *
 * A parsed SslMap is read only: it is replaced whole on SIGHUP (tls.c).
 *
 *-------------------------------------------------------------------------
 */
#include "sslmap.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define SSLMAP_MAX_RULES 32

typedef struct SslRule
{
	bool		is_default;
	regex_t		re;
	char	   *repl;
	char		kase;			/* 'L', 'U' or 0 */
} SslRule;

struct SslMap
{
	int			nrules;
	SslRule		rules[SSLMAP_MAX_RULES];
};

/* up to the next unescaped '/', "\/" unescaped; *s after the '/' */
static char *
slash_field(const char **s)
{
	const char *p = *s;
	char	   *out = mq_malloc(strlen(p) + 1);
	size_t		n = 0;

	for (; *p && *p != '/'; p++)
	{
		if (p[0] == '\\' && p[1] == '/')
			p++;
		else if (p[0] == '\\' && p[1])
			out[n++] = *p++;
		out[n++] = *p;
	}
	out[n] = '\0';
	if (*p != '/')
	{
		free(out);
		return NULL;
	}
	*s = p + 1;
	return out;
}

static bool
parse_rule(const char **s, SslRule *r, char *err, size_t errlen)
{
	char	   *pattern,
			   *anchored;
	int			rc;

	*s += 5; /* "RULE:" */
	pattern = slash_field(s);
	r->repl = pattern ? slash_field(s) : NULL;
	if (r->repl == NULL)
	{
		free(pattern);
		snprintf(err, errlen, "a mapping rule must be RULE:pattern/replacement/[LU]");
		return false;
	}
	if (**s == 'L' || **s == 'U')
		r->kase = *(*s)++;
	/* the whole subject must match, as Java's Matcher.matches() */
	anchored = mq_malloc(strlen(pattern) + 5);
	sprintf(anchored, "^(%s)$", pattern);
	rc = regcomp(&r->re, anchored, REG_EXTENDED);
	free(anchored);
	if (rc != 0)
	{
		snprintf(err, errlen, "bad regular expression in mapping rule: \"%s\"", pattern);
		free(pattern);
		free(r->repl);
		return false;
	}
	free(pattern);
	return true;
}

SslMap *
sslmap_parse(const char *rules, char *err, size_t errlen)
{
	SslMap	   *m = mq_malloc0(sizeof(SslMap));
	const char *s = rules ? rules : "";

	for (;;)
	{
		SslRule    *r = &m->rules[m->nrules];
		bool		ok = false;

		while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		if (m->nrules == SSLMAP_MAX_RULES)
			snprintf(err, errlen, "at most %d mapping rules", SSLMAP_MAX_RULES);
		else if (strncmp(s, "DEFAULT", 7) == 0)
		{
			r->is_default = ok = true;
			s += 7;
		}
		else if (strncmp(s, "RULE:", 5) != 0)
			snprintf(err, errlen, "a mapping rule must be DEFAULT or RULE:pattern/replacement/[LU], not \"%.40s\"", s);
		else
			ok = parse_rule(&s, r, err, errlen);
		if (ok)
			m->nrules++;
		if (ok && *s && *s != ',' && *s != ' ' && *s != '\n' && *s != '\t')
		{
			snprintf(err, errlen, "mapping rules must be separated by commas, at \"%.40s\"", s);
			ok = false;
		}
		if (!ok)
		{
			sslmap_free(m);
			return NULL;
		}
	}
	if (m->nrules == 0)
		m->rules[m->nrules++].is_default = true;
	return m;
}

/* rule's replacement for dn, whose groups matched at g (g[1] is group 0) */
static char *
substitute(const SslRule *r, const char *dn, const regmatch_t *g)
{
	size_t		cap = strlen(r->repl) + strlen(dn) * 9 + 1;
	char	   *out = mq_malloc(cap);
	size_t		n = 0;

	for (const char *p = r->repl; *p; p++)
	{
		if (p[0] == '$' && isdigit((unsigned char) p[1]))
		{
			const regmatch_t *m = &g[1 + (p[1] - '0')];

			p++;
			if (m->rm_so >= 0)
			{
				memcpy(out + n, dn + m->rm_so, m->rm_eo - m->rm_so);
				n += m->rm_eo - m->rm_so;
			}
			continue;
		}
		if (p[0] == '\\' && p[1])
			p++;
		out[n++] = *p;
	}
	out[n] = '\0';
	for (char *c = out; *c; c++)
		*c = r->kase == 'L' ? tolower((unsigned char) *c) :
			r->kase == 'U' ? toupper((unsigned char) *c) : *c;
	return out;
}

char *
sslmap_apply(const SslMap *m, const char *dn)
{
	for (int i = 0; i < m->nrules; i++)
	{
		const SslRule *r = &m->rules[i];
		regmatch_t	g[11];

		if (r->is_default)
			return mq_strdup(dn);
		for (int j = 0; j < 11; j++)
			g[j].rm_so = g[j].rm_eo = -1;
		if (regexec(&r->re, dn, 11, g, 0) == 0)
			return substitute(r, dn, g);
	}
	return NULL;
}

void
sslmap_free(SslMap *m)
{
	if (m == NULL)
		return;
	for (int i = 0; i < m->nrules; i++)
		if (!m->rules[i].is_default)
		{
			regfree(&m->rules[i].re);
			free(m->rules[i].repl);
		}
	free(m);
}
