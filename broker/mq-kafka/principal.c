/*-------------------------------------------------------------------------
 *
 * principal.c
 *	  Kafka principals as PostgreSQL roles: which role a client's
 *	  requests run as (pool.c sets it per transaction, SET LOCAL ROLE).
 *
 * The authenticated name (SASL's user name, or a client certificate's
 * subject after --ssl-principal-mapping-rules, stored on the connection
 * where sasl.c stores it) goes through --principal-rules, a list in the
 * form of Kafka's ssl.principal.mapping.rules, which sslmap.c parses and
 * applies for both: RULE:pattern/replacement/[L|U] entries and DEFAULT,
 * tried in order.  DEFAULT maps the name to itself (Kafka's User:app1 is
 * role app1).  Without the option the list is DEFAULT.  A
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sslmap.h"
#include "util.h"

#define MAX_ROLE 63				/* NAMEDATALEN - 1 */

/* --principal-rules (sslmap.c parses and applies them); NULL: DEFAULT */
static SslMap *rules;

typedef enum
{
	ANON_DAEMON, ANON_ROLE, ANON_REFUSE
} AnonMode;

static AnonMode anon_mode = ANON_DAEMON;
static char *anon_role;

bool
principal_set_rules(const char *list, char *err, size_t errlen)
{
	SslMap	   *m;

	if (list[strspn(list, " ,\t\n")] == '\0')
		return snprintf(err, errlen, "no rules"), false;
	if ((m = sslmap_parse(list, err, errlen)) == NULL)
		return false;
	sslmap_free(rules);
	rules = m;
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

char *
principal_map(const char *name)
{
	char	   *role = rules ? sslmap_apply(rules, name) : mq_strdup(name);

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
