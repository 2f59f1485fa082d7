/*-------------------------------------------------------------------------
 *
 * principal.h
 *	  Kafka principals as PostgreSQL roles (principal.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_PRINCIPAL_H
#define MQK_PRINCIPAL_H

#include <stdbool.h>
#include <stddef.h>

#include "mqkafka.h"

/* --principal-rules: false (and a message in err) if the list is malformed */
extern bool principal_set_rules(const char *rules, char *err, size_t errlen);

/* --anonymous: "daemon" (the default), "refuse", or a role's name */
extern bool principal_set_anonymous(const char *value, char *err, size_t errlen);
extern const char *principal_anonymous_describe(void);

/*
 * The role an authenticated name maps to, malloc'd; NULL if no rule maps
 * it (the client is refused).
 */
extern char *principal_map(const char *name);

/*
 * Replace req->role (the authenticated name, or NULL) by the role the
 * request runs as: the mapped role, the anonymous role, or NULL (the
 * daemon's own, only with --anonymous=daemon).  False: refused.
 */
extern bool principal_apply(KRequest *req);

#endif							/* MQK_PRINCIPAL_H */
