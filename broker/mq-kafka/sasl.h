/*-------------------------------------------------------------------------
 *
 * sasl.h
 *	  SASL authentication of Kafka clients (sasl.c: SaslHandshake and
 *	  SaslAuthenticate, dispatching to a mechanism): PLAIN (sasl_plain.c)
 *	  and SCRAM-SHA-256/-512 (sasl_scram.c on the pure exchange of
 *	  scram.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_SASL_H
#define MQK_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqkafka.h"

/* the mechanisms, as bits of kconfig.sasl_mechs and conn_sasl_mech() */
typedef enum KSaslMech
{
	KSASL_MECH_PLAIN = 1,
	KSASL_MECH_SCRAM_SHA_256 = 2,
	KSASL_MECH_SCRAM_SHA_512 = 4
} KSaslMech;

#define SASL_AUTH_FAILED_MESSAGE "authentication failed: invalid user name or password"

/* RFC 4616: each part at most 255 bytes */
#define SASL_PLAIN_MAX 255

typedef struct SaslPlain
{
	char		authzid[SASL_PLAIN_MAX + 1];
	char		user[SASL_PLAIN_MAX + 1];
	char		password[SASL_PLAIN_MAX + 1];
} SaslPlain;

/* --sasl's list ("plain,scram-sha-256") into KSASL_MECH_* bits */
extern bool sasl_parse_mechs(const char *list, unsigned *mechs);

/*
 * authzid NUL authcid NUL passwd into out; false (out zeroed) unless there
 * are exactly two NULs, the user and the password are not empty and no
 * part is longer than SASL_PLAIN_MAX.
 */
extern bool sasl_plain_parse(const uint8_t *p, size_t len, SaslPlain *out);

/* sasl_reply.c: the SaslAuthenticate response; a failure closes the connection */
extern void sasl_respond(KRequest *req, int16_t error, const char *message,
						 const void *auth_bytes, size_t len);
/* SaslAuthenticate after a successful login: answered, connection kept */
extern void sasl_respond_after_login(KRequest *req);
/* sasl_reply.c: a name the client chose, fit for one log line; returns buf */
extern const char *sasl_log_name(const char *name, size_t len, char *buf, size_t size);
/* sasl_reply.c: a user name no client may authenticate as */
extern bool sasl_user_refused(const char *user);

/* a bare token frame after SaslHandshake v0 (api.c) */
extern void sasl_bare_token(KRequest *req, size_t len);

/* one SaslAuthenticate round of each mechanism; token is the request's */
extern void sasl_plain_authenticate(KRequest *req, uint8_t *token, size_t len);
extern void sasl_scram_authenticate(KRequest *req, const uint8_t *token, size_t len);

#endif							/* MQK_SASL_H */
