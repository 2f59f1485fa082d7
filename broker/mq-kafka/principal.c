/*-------------------------------------------------------------------------
 *
 * principal.c
 *	  Kafka principals as PostgreSQL roles: which role a client's
 *	  requests run as (pool.c sets it per transaction, SET LOCAL ROLE).
 *
 * The authenticated name (SASL's user name, or what another mechanism
 * stored on the connection where sasl.c stores it) goes through
 * --principal-rules, a list in the form of Kafka's
 * ssl.principal.mapping.rules: RULE:pattern/replacement/[L|U] entries
 * and DEFAULT, separated by commas, tried in order.  A RULE applies when
 * its POSIX extended regular expression matches the whole name; the
 * replacement's $1..$9 are its groups, then /L or /U lower- or
 * upper-cases the result.  DEFAULT maps the name to itself (Kafka's
 * User:app1 is role app1).  Without the option the list is DEFAULT.  A
 * name no rule maps, and a result that is empty or "none" (which SET
 * ROLE reads as the daemon's own role), is refused: the connection is
 * closed.  A client that did not authenticate runs per --anonymous: as
 * the daemon's own role (daemon, the default, as before this option),
 * as a named role, or refused.
 *
 * Rules are compiled once at start; loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "principal.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_RULES 32
#define MAX_ROLE 63				/* NAMEDATALEN - 1 */

typedef struct PRule
{
	bool		is_default;
	regex_t		re;
	char	   *replacement;
	char		casefold;		/* 0, 'L' or 'U' */
} PRule;

static PRule rules[MAX_RULES];
static int	nrules;
static bool rules_set;

typedef enum
{
	ANON_DAEMON, ANON_ROLE, ANON_REFUSE
} AnonMode;

static AnonMode anon_mode = ANON_DAEMON;
static char *anon_role;

/* copy s up to an unescaped '/', unescaping "\/"; NULL if none */
static char *
until_slash(const char **s)
{
	const char *p = *s;
	char	   *out = mq_malloc(strlen(p) + 1);
	size_t		n = 0;

	for (; *p && *p != '/'; p++)
	{
		if (p[0] == '\\' && p[1] == '/')
			p++;
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

/* one RULE:pattern/replacement/[LU] at *s */
static bool
parse_rule(const char **s, PRule *r, char *err, size_t errlen)
{
	char	   *pattern = until_slash(s);
	char	   *anchored;
	int			rc;

	if (pattern == NULL || (r->replacement = until_slash(s)) == NULL)
	{
		free(pattern);
		snprintf(err, errlen, "a RULE needs pattern/replacement/");
		return false;
	}
	if (**s == 'L' || **s == 'U')
		r->casefold = *(*s)++;
	anchored = mq_malloc(strlen(pattern) + 5);
	sprintf(anchored, "^(%s)$", pattern);
	rc = regcomp(&r->re, anchored, REG_EXTENDED);
	free(anchored);
	if (rc != 0)
	{
		snprintf(err, errlen, "bad regular expression \"%s\"", pattern);
		free(pattern);
		return false;
	}
	free(pattern);
	return true;
}

bool
principal_set_rules(const char *list, char *err, size_t errlen)
{
	const char *s = list;

	nrules = 0;
	rules_set = true;
	while (*s)
	{
		PRule	   *r = &rules[nrules];

		while (isspace((unsigned char) *s))
			s++;
		if (nrules == MAX_RULES)
			return snprintf(err, errlen, "at most %d rules", MAX_RULES), false;
		memset(r, 0, sizeof(*r));
		if (strncmp(s, "DEFAULT", 7) == 0)
		{
			r->is_default = true;
			s += 7;
		}
		else if (strncmp(s, "RULE:", 5) == 0)
		{
			s += 5;
			if (!parse_rule(&s, r, err, errlen))
				return false;
		}
		else
			return snprintf(err, errlen, "expected RULE: or DEFAULT at \"%s\"", s), false;
		nrules++;
		while (isspace((unsigned char) *s))
			s++;
		if (*s == ',')
			s++;
		else if (*s)
			return snprintf(err, errlen, "expected a comma at \"%s\"", s), false;
	}
	if (nrules == 0)
		return snprintf(err, errlen, "no rules"), false;
	return true;
}

bool
principal_set_anonymous(const char *value, char *err, size_t errlen)
{
	free(anon_role);
	anon_role = NULL;
	if (strcmp(value, "daemon") == 0)
		anon_mode = ANON_DAEMON;
	else if (strcmp(value, "refuse") == 0)
		anon_mode = ANON_REFUSE;
	else if (strncmp(value, "role:", 5) == 0 && value[5] && strlen(value + 5) <= MAX_ROLE &&
			 strcmp(value + 5, "none") != 0)
	{
		anon_mode = ANON_ROLE;
		anon_role = mq_strdup(value + 5);
	}
	else
		return snprintf(err, errlen, "--anonymous must be daemon, refuse or role:ROLE"), false;
	return true;
}

const char *
principal_anonymous_describe(void)
{
	return anon_mode == ANON_DAEMON ? "the daemon's role" :
		anon_mode == ANON_REFUSE ? "refused" : anon_role;
}

/* the replacement with $1..$9 filled in from m (group 1 is the whole name) */
static char *
substitute(const PRule *r, const char *name, const regmatch_t *m)
{
	char		out[MAX_ROLE + 2];
	size_t		n = 0;

	for (const char *p = r->replacement; *p && n <= MAX_ROLE; p++)
	{
		if (p[0] == '$' && p[1] >= '1' && p[1] <= '9')
		{
			const regmatch_t *g = &m[p[1] - '0' + 1];

			for (regoff_t i = g->rm_so; g->rm_so >= 0 && i < g->rm_eo && n <= MAX_ROLE; i++)
				out[n++] = name[i];
			p++;
		}
		else
			out[n++] = *p;
	}
	if (n > MAX_ROLE)
		return NULL;
	out[n] = '\0';
	for (size_t i = 0; i < n && r->casefold; i++)
		out[i] = r->casefold == 'L' ? tolower((unsigned char) out[i]) : toupper((unsigned char) out[i]);
	return mq_strdup(out);
}

char *
principal_map(const char *name)
{
	regmatch_t	m[11];
	char	   *role = NULL;

	if (!rules_set)
		role = mq_strdup(name);
	for (int i = 0; i < nrules && role == NULL; i++)
	{
		if (rules[i].is_default)
			role = mq_strdup(name);
		else if (regexec(&rules[i].re, name, 11, m, 0) == 0)
			role = substitute(&rules[i], name, m);
	}
	if (role && (role[0] == '\0' || strcmp(role, "none") == 0 || strlen(role) > MAX_ROLE))
	{
		free(role);
		role = NULL;
	}
	return role;
}

bool
principal_apply(KRequest *req)
{
	char	   *role;

	if (req->role == NULL)
	{
		if (anon_mode == ANON_REFUSE)
			return false;
		req->role = anon_role ? mq_strdup(anon_role) : NULL;
		return true;
	}
	role = principal_map(req->role);
	if (role == NULL)
	{
		for (char *c = req->role; *c; c++)
			if ((unsigned char) *c < 0x20 || *c == 0x7f)
				*c = '?'; /* for the log: a newline would forge a line */
		mq_log_info("%s: principal \"%s\" maps to no role: refused", conn_peer(req->conn), req->role);
		return false;
	}
	free(req->role);
	req->role = role;
	return true;
}
