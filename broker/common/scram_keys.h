/*-------------------------------------------------------------------------
 *
 * scram_keys.h
 *	  A SCRAM verifier computed on the client's side (RFC 5802, RFC 7677):
 *	  StoredKey and ServerKey from a password, or from Kafka's
 *	  SaltedPassword, for mq.set_scram_keys.  mqctl and mq-kafka send the
 *	  verifier, never the password nor SaltedPassword (either of which logs
 *	  in as the user), so a server that logs statements and their
 *	  parameters logs nothing that authenticates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_SCRAM_KEYS_H
#define MQ_SCRAM_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCRAM_KEYS_MAX 64		/* SHA-512 */
#define SCRAM_SALT_LEN 32		/* the salt mqctl makes, as the server does */

typedef struct ScramKeys
{
	int			len;			/* of each key: 32 or 64 */
	uint8_t		stored[SCRAM_KEYS_MAX];
	uint8_t		server[SCRAM_KEYS_MAX];
} ScramKeys;

/* the keys' length for a mechanism name (any case); 0: not SCRAM-SHA-256/512 */
extern int	scram_keys_len(const char *mechanism);

/* false: unknown mechanism, SaltedPassword of the wrong length, or libcrypto failed */
extern bool scram_keys_from_salted(const char *mechanism, const uint8_t *salted, size_t len,
								   ScramKeys *out);
extern bool scram_keys_from_password(const char *mechanism, const char *password,
									 const uint8_t *salt, size_t salt_len, int iterations,
									 ScramKeys *out);

/* n bytes from the operating system's random source; false: none */
extern bool scram_random(uint8_t *buf, size_t n);

#endif
