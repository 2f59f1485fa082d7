/*-------------------------------------------------------------------------
 *
 * scram_keys.c
 *	  StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
 *	  HMAC(SaltedPassword, "Server Key"), where SaltedPassword = Hi(password,
 *	  salt, iterations) is PBKDF2 with HMAC of the mechanism's hash, on the
 *	  password's bytes as given (no SASLprep, as Kafka and src/scram.c).
 *	  The server computes the same in src/scram.c when SQL gives it a
 *	  password; test/cli/scram.sh checks that both agree by logging in.
 *
 * libcrypto does the work (PKCS5_PBKDF2_HMAC, HMAC, EVP_Digest,
 * RAND_bytes).  Intermediate secrets are wiped before returning.  No
 * globals, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "scram_keys.h"

#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

static const EVP_MD *
mechanism_md(const char *mechanism)
{
	if (mechanism && strcasecmp(mechanism, "SCRAM-SHA-256") == 0)
		return EVP_sha256();
	if (mechanism && strcasecmp(mechanism, "SCRAM-SHA-512") == 0)
		return EVP_sha512();
	return NULL;
}

int
scram_keys_len(const char *mechanism)
{
	const EVP_MD *md = mechanism_md(mechanism);

	return md ? EVP_MD_size(md) : 0;
}

bool
scram_keys_from_salted(const char *mechanism, const uint8_t *salted, size_t len, ScramKeys *out)
{
	const EVP_MD *md = mechanism_md(mechanism);
	uint8_t		client_key[SCRAM_KEYS_MAX];
	unsigned int n = 0;
	bool		ok;

	if (md == NULL || len != (size_t) EVP_MD_size(md))
		return false;
	out->len = (int) len;
	ok = HMAC(md, salted, (int) len, (const uint8_t *) "Client Key", 10, client_key, &n) != NULL &&
		EVP_Digest(client_key, n, out->stored, &n, md, NULL) &&
		HMAC(md, salted, (int) len, (const uint8_t *) "Server Key", 10, out->server, &n) != NULL;
	OPENSSL_cleanse(client_key, sizeof(client_key));
	return ok;
}

bool
scram_keys_from_password(const char *mechanism, const char *password, const uint8_t *salt,
						 size_t salt_len, int iterations, ScramKeys *out)
{
	const EVP_MD *md = mechanism_md(mechanism);
	uint8_t		salted[SCRAM_KEYS_MAX];
	bool		ok;

	if (md == NULL || iterations < 1)
		return false;
	ok = PKCS5_PBKDF2_HMAC(password, (int) strlen(password), salt, (int) salt_len, iterations, md,
						   EVP_MD_size(md), salted) == 1 &&
		scram_keys_from_salted(mechanism, salted, (size_t) EVP_MD_size(md), out);
	OPENSSL_cleanse(salted, sizeof(salted));
	return ok;
}

bool
scram_random(uint8_t *buf, size_t n)
{
	return RAND_bytes(buf, (int) n) == 1;
}
