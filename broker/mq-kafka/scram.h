/*-------------------------------------------------------------------------
 *
 * scram.h
 *	  The server side of a SASL/SCRAM-SHA-256 or -512 exchange (RFC 5802,
 *	  RFC 7677, Kafka's KIP-84) as pure functions (scram.c): parse the
 *	  client's two messages, build the server's two, verify the proof.
 *	  No I/O and no database: sasl_scram.c drives them; the fuzzer
 *	  (test/fuzz) feeds them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_SCRAM_H
#define MQK_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCRAM_MAX_KEY 64		/* SHA-512 */
#define SCRAM_MAX_NAME 255		/* a user name, decoded */
#define SCRAM_MAX_NONCE 255		/* the client's nonce */
#define SCRAM_MAX_MSG 1024		/* a client message */
#define SCRAM_MAX_SALT 64

typedef enum ScramMech
{
	SCRAM_SHA_256,
	SCRAM_SHA_512
} ScramMech;

/* what the client's first message says */
typedef struct ScramClientFirst
{
	char		user[SCRAM_MAX_NAME + 1];	/* saslname decoded (=2C, =3D) */
	char		nonce[SCRAM_MAX_NONCE + 1];
	char		gs2[SCRAM_MAX_NAME + 8];	/* "n,," or "n,a=...," as sent */
	char		bare[SCRAM_MAX_MSG + 1];	/* client-first-message-bare */
} ScramClientFirst;

/* what the client's final message says */
typedef struct ScramClientFinal
{
	char		cbind[SCRAM_MAX_MSG + 1];	/* c=, base64 as sent */
	char		nonce[2 * SCRAM_MAX_NONCE + 2];
	uint8_t		proof[SCRAM_MAX_KEY];
	size_t		proof_len;
	char		without_proof[SCRAM_MAX_MSG + 1];
} ScramClientFinal;

/* one exchange's state on the server, between its two round trips */
typedef struct ScramState
{
	ScramMech	mech;
	ScramClientFirst first;
	char		nonce[2 * SCRAM_MAX_NONCE + 2];	/* client's + server's */
	char		server_first[3 * SCRAM_MAX_NONCE + 2 * SCRAM_MAX_SALT + 64];
	uint8_t		stored_key[SCRAM_MAX_KEY];
	uint8_t		server_key[SCRAM_MAX_KEY];
} ScramState;

/* "SCRAM-SHA-256" / "SCRAM-SHA-512" to *mech; false for anything else */
extern bool scram_mech_parse(const char *name, size_t len, ScramMech *mech);
extern const char *scram_mech_name(ScramMech mech);
extern int	scram_key_len(ScramMech mech);

/*
 * gs2-header client-first-message-bare, RFC 5802 section 7: no channel
 * binding ("n" or "y"; "p=" is refused), an authzid only if it names the
 * user, no mandatory extension (m=); extensions after the nonce are
 * ignored, except Kafka's tokenauth=true (delegation tokens), refused.
 * False (out zeroed) on anything else.
 */
extern bool scram_parse_client_first(const uint8_t *p, size_t len, ScramClientFirst *out);

/* c=cbind,r=nonce[,extensions],p=proof; false (out zeroed) if malformed */
extern bool scram_parse_client_final(const uint8_t *p, size_t len, ScramClientFinal *out);

/*
 * Start an exchange: the client's first message, the verifier, and the
 * server's nonce part (printable, no comma); builds s->server_first.
 * False if a part does not fit.
 */
extern bool scram_server_first(ScramState *s, ScramMech mech, const ScramClientFirst *first,
							   const char *server_nonce, const uint8_t *salt, size_t salt_len,
							   int iterations, const uint8_t *stored_key, const uint8_t *server_key);

/*
 * Check the final message against the exchange: the channel binding
 * repeats the gs2 header, the nonce is the exchange's, and the proof
 * matches StoredKey (constant-time).  On success writes the
 * server-final-message "v=..." (NUL-terminated) into out.
 */
extern bool scram_verify_final(const ScramState *s, const ScramClientFinal *f, char *out, size_t size);

#endif							/* MQK_SCRAM_H */
