/*-------------------------------------------------------------------------
 *
 * listener.h
 *	  Kafka's listeners, advertised.listeners and
 *	  listener.security.protocol.map, parsed into KListeners (listener.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_LISTENER_H
#define MQK_LISTENER_H

#include <stddef.h>

#include "mqkafka.h"

/*
 * listeners: "NAME://HOST:PORT,..."; advertised: the same form for some of
 * those names (NULL: each advertises its own address); map:
 * "NAME:PROTOCOL,..." (NULL: each name is its protocol).  Fills out[] and
 * *n; false with a message in err when anything is wrong.
 */
extern bool listeners_parse(const char *listeners, const char *advertised,
							const char *map, KListener *out, int *n,
							char *err, size_t errlen);
extern const char *listener_proto_name(KSecProto p);

/* does host ("", 0.0.0.0 or ::) mean every interface? */
extern bool listener_is_wildcard(const char *host);

/* this machine's canonical host name (malloc'd), else its host name */
extern char *listener_host_name(void);
extern bool listener_is_tls(const KListener *l);
extern bool listener_is_sasl(const KListener *l);

#endif							/* MQK_LISTENER_H */
