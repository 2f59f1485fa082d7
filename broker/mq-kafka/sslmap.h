/*-------------------------------------------------------------------------
 *
 * sslmap.h
 *	  Kafka's ssl.principal.mapping.rules: a client certificate's subject
 *	  (RFC 2253 form) to a user name (sslmap.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_SSLMAP_H
#define MQK_SSLMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct SslMap SslMap;

/*
 * "RULE:pattern/replacement/[LU], ..., DEFAULT" (NULL or "": DEFAULT);
 * NULL with a message in err if a rule or its pattern is invalid.
 */
extern SslMap *sslmap_parse(const char *rules, char *err, size_t errlen);
/* the user name of dn (malloc'd), or NULL if no rule applies */
extern char *sslmap_apply(const SslMap *m, const char *dn);
extern void sslmap_free(SslMap *m);

#endif							/* MQK_SSLMAP_H */
