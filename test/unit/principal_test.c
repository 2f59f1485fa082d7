/*
 * principal_test.c: mq-kafka's principal mapping (principal.c) without
 * PostgreSQL: --principal-rules parsing (RULE:pattern/replacement/[LU],
 * DEFAULT, commas inside patterns, escaped slashes, malformed lists),
 * mapping (whole-name matches, $1..$9, case folding, first match wins,
 * no match refused, "none" and empty results refused) and --anonymous.
 */
#include <stdlib.h>
#include <string.h>

#include "principal.h"
#include "unit.h"

/* principal.c logs the peer of a refused request */
const char *
conn_peer(const KConn *c)
{
	return "test";
}

static char err[256];

/* the role name maps to under rules, or "(refused)" */
static const char *
map(const char *rules, const char *name)
{
	static char out[128];
	char	   *r;

	if (!principal_set_rules(rules, err, sizeof(err)))
		return "(bad rules)";
	r = principal_map(name);
	snprintf(out, sizeof(out), "%s", r ? r : "(refused)");
	free(r);
	return out;
}

#define MAPS(rules, name, want) \
	CHECK(strcmp(map(rules, name), want) == 0, "%s: %s -> %s (got %s)", rules, name, want, map(rules, name))

int
main(void)
{
	KRequest	req;

	MAPS("DEFAULT", "app1", "app1");
	MAPS("RULE:^(.*)@EXAMPLE\\.COM$/$1/L,DEFAULT", "Alice@EXAMPLE.COM", "alice");
	MAPS("RULE:^(.*)@EXAMPLE\\.COM$/$1/L,DEFAULT", "bob", "bob");
	MAPS("RULE:(.*)@(.*)/$2_$1/U", "ann@ops", "OPS_ANN");
	MAPS("RULE:app/whole/", "app1", "(refused)");	/* the whole name must match */
	MAPS("RULE:app/whole/", "app", "whole");
	MAPS("RULE:a/first/, RULE:a/second/", "a", "first");
	MAPS("RULE:x/y/", "z", "(refused)");
	MAPS("RULE:x{1,2}/comma/,DEFAULT", "xx", "comma");	/* a comma in a pattern */
	MAPS("RULE:a\\/b/slash\\/ed/", "a/b", "slash/ed");
	MAPS("RULE:(.*)/none/", "anyone", "(refused)");
	MAPS("RULE:(.*)x/$1/", "x", "(refused)");	/* empty */
	MAPS("RULE:(.*)/$1$1$1$1/", "0123456789abcdef", "(refused)");	/* too long */

	CHECK(!principal_set_rules("RULE:(/x/", err, sizeof(err)) && strstr(err, "regular expression"),
		  "a bad regular expression: %s", err);
	CHECK(!principal_set_rules("RULE:x/y", err, sizeof(err)), "a rule without its last slash: %s", err);
	CHECK(!principal_set_rules("RULE:a/b/Lx", err, sizeof(err)), "junk after a rule: %s", err);
	CHECK(!principal_set_rules("NOPE", err, sizeof(err)), "not a rule: %s", err);
	CHECK(!principal_set_rules("", err, sizeof(err)), "no rules: %s", err);

	principal_set_rules("DEFAULT", err, sizeof(err));
	memset(&req, 0, sizeof(req));
	CHECK(principal_apply(&req) && req.role == NULL, "--anonymous=daemon (default): the daemon's role");
	CHECK(principal_set_anonymous("role:guest", err, sizeof(err)) && principal_apply(&req) &&
		  req.role && strcmp(req.role, "guest") == 0, "--anonymous=role:guest: guest");
	free(req.role);
	req.role = NULL;
	CHECK(principal_set_anonymous("refuse", err, sizeof(err)) && !principal_apply(&req),
		  "--anonymous=refuse: refused");
	CHECK(!principal_set_anonymous("role:none", err, sizeof(err)) &&
		  !principal_set_anonymous("nobody", err, sizeof(err)), "--anonymous: bad values refused");
	return unit_done();
}
