/*-------------------------------------------------------------------------
 *
 * listener.c
 *	  Parsing Kafka's listener settings (listener.h): `listeners`
 *	  (NAME://HOST:PORT, comma-separated), `advertised.listeners` (the
 *	  address Metadata gives the clients of each name) and
 *	  `listener.security.protocol.map` (NAME:PROTOCOL).  Without a map a
 *	  listener's name is its protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
 *	  SASL_SSL), as Kafka's default map says.  An empty host listens on
 *	  every interface, as in Kafka, and so do 0.0.0.0 and ::.  Such a
 *	  listener without an advertised address advertises this machine's
 *	  canonical host name, as Kafka's broker does for an empty host: a
 *	  wildcard address means nothing to a client on another machine.
 *
 * Called once at startup: no state, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "listener.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <unistd.h>

#include "util.h"

static const char *const proto_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

const char *
listener_proto_name(KSecProto p)
{
	return proto_names[p];
}

bool
listener_is_tls(const KListener *l)
{
	return l->proto == KSEC_SSL || l->proto == KSEC_SASL_SSL;
}

bool
listener_is_sasl(const KListener *l)
{
	return l->proto == KSEC_SASL_PLAINTEXT || l->proto == KSEC_SASL_SSL;
}

static bool
proto_parse(const char *s, size_t len, KSecProto *out)
{
	for (int i = 0; i < 4; i++)
		if (strlen(proto_names[i]) == len && strncasecmp(s, proto_names[i], len) == 0)
		{
			*out = (KSecProto) i;
			return true;
		}
	return false;
}

/* the next comma-separated item of *s (spaces trimmed), or NULL at the end */
static char *
next_item(char **s)
{
	char	   *item,
			   *end;

	while (**s == ' ' || **s == ',')
		(*s)++;
	if (**s == '\0')
		return NULL;
	item = *s;
	end = strchr(item, ',');
	*s = end ? end + 1 : item + strlen(item);
	if (end)
		*end = '\0';
	for (end = item + strlen(item); end > item && end[-1] == ' '; end--)
		end[-1] = '\0';
	return item;
}

/* "NAME://HOST:PORT" (HOST may be empty or [V6]) into its parts */
static bool
endpoint_parse(char *item, char **name, char **host, int *port)
{
	char	   *sep = strstr(item, "://");
	char	   *h,
			   *colon,
			   *end;
	long		p;

	if (sep == NULL || sep == item)
		return false;
	*sep = '\0';
	h = sep + 3;
	colon = strrchr(h, ':');
	if (colon == NULL)
		return false;
	p = strtol(colon + 1, &end, 10);
	if (*end != '\0' || colon[1] == '\0' || p < 1 || p > 65535)
		return false;
	*colon = '\0';
	if (h[0] == '[' && colon > h + 1 && colon[-1] == ']')
	{
		colon[-1] = '\0';
		h++;
	}
	*name = item;
	*host = h;
	*port = (int) p;
	return true;
}

/* the protocol of listener name under map (NULL: the name is the protocol) */
static bool
map_lookup(const char *map, const char *name, KSecProto *out)
{
	char	   *copy,
			   *s,
			   *item;
	bool		found = false;

	if (map == NULL)
		return proto_parse(name, strlen(name), out);
	copy = mq_strdup(map);
	s = copy;
	while (!found && (item = next_item(&s)) != NULL)
	{
		char	   *colon = strchr(item, ':');

		if (colon && (size_t) (colon - item) == strlen(name) &&
			strncasecmp(item, name, colon - item) == 0)
			found = proto_parse(colon + 1, strlen(colon + 1), out);
	}
	free(copy);
	return found;
}

static KListener *
find_listener(KListener *ls, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcasecmp(ls[i].name, name) == 0)
			return &ls[i];
	return NULL;
}

static bool
parse_listeners(char *s, const char *map, KListener *out, int *n, char *err, size_t errlen)
{
	char	   *item,
			   *name,
			   *host;
	int			port;

	while ((item = next_item(&s)) != NULL)
	{
		KListener  *l = &out[*n];

		if (*n == KMAX_LISTENERS)
			return snprintf(err, errlen, "at most %d listeners", KMAX_LISTENERS), false;
		if (!endpoint_parse(item, &name, &host, &port))
			return snprintf(err, errlen, "listener \"%s\" is not NAME://HOST:PORT", item), false;
		if (find_listener(out, *n, name))
			return snprintf(err, errlen, "listener name \"%s\" appears twice", name), false;
		if (!map_lookup(map, name, &l->proto))
			return snprintf(err, errlen, map ? "listener \"%s\" has no valid protocol in the security protocol map" :
							"listener name \"%s\" is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) and no security protocol map names it",
							name), false;
		l->name = mq_strdup(name);
		l->host = mq_strdup(host);
		l->port = port;
		l->adv_host = mq_strdup(host);
		l->adv_port = port;
		(*n)++;
	}
	if (*n == 0)
		return snprintf(err, errlen, "no listener given"), false;
	return true;
}

static bool
parse_advertised(char *s, KListener *ls, int n, char *err, size_t errlen)
{
	char	   *item,
			   *name,
			   *host;
	int			port;

	while ((item = next_item(&s)) != NULL)
	{
		KListener  *l;

		if (!endpoint_parse(item, &name, &host, &port) || host[0] == '\0')
			return snprintf(err, errlen, "advertised listener \"%s\" is not NAME://HOST:PORT", item), false;
		l = find_listener(ls, n, name);
		if (l == NULL)
			return snprintf(err, errlen, "advertised listener \"%s\" is not among the listeners", name), false;
		free(l->adv_host);
		l->adv_host = mq_strdup(host);
		l->adv_port = port;
	}
	return true;
}

bool
listener_is_wildcard(const char *host)
{
	return host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

char *
listener_host_name(void)
{
	char		name[256];
	struct addrinfo hints = {.ai_flags = AI_CANONNAME};
	struct addrinfo *ai;
	char	   *out;

	if (gethostname(name, sizeof(name)) != 0)
		return mq_strdup("localhost");
	name[sizeof(name) - 1] = '\0';
	if (getaddrinfo(name, NULL, &hints, &ai) != 0)
		return mq_strdup(name);
	out = mq_strdup(ai->ai_canonname ? ai->ai_canonname : name);
	freeaddrinfo(ai);
	return out;
}

bool
listeners_parse(const char *listeners, const char *advertised, const char *map,
				KListener *out, int *n, char *err, size_t errlen)
{
	char	   *copy = mq_strdup(listeners);
	bool		ok;

	*n = 0;
	ok = parse_listeners(copy, map, out, n, err, errlen);
	free(copy);
	if (ok && advertised)
	{
		copy = mq_strdup(advertised);
		ok = parse_advertised(copy, out, *n, err, errlen);
		free(copy);
	}
	return ok;
}
