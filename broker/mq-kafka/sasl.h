/*-------------------------------------------------------------------------
 *
 * sasl.h
 *	  SASL/PLAIN authentication of Kafka clients as PostgreSQL roles
 *	  (sasl.c): the PLAIN token's parts, and its parser.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_SASL_H
#define MQK_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 4616: each part at most 255 bytes */
#define SASL_PLAIN_MAX 255

typedef struct SaslPlain
{
	char		authzid[SASL_PLAIN_MAX + 1];
	char		user[SASL_PLAIN_MAX + 1];
	char		password[SASL_PLAIN_MAX + 1];
} SaslPlain;

/*
 * authzid NUL authcid NUL passwd into out; false (out zeroed) unless there
 * are exactly two NULs, the user and the password are not empty and no
 * part is longer than SASL_PLAIN_MAX.
 */
extern bool sasl_plain_parse(const uint8_t *p, size_t len, SaslPlain *out);

#endif							/* MQK_SASL_H */
