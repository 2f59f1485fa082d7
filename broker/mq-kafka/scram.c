/*-------------------------------------------------------------------------
 *
 * scram.c
 *	  SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the server, as pure
 *	  functions (RFC 5802 section 7's grammar, RFC 7677, Kafka's KIP-84):
 *	  parsing the client-first and client-final messages, building the
 *	  server-first and server-final messages, and verifying the client's
 *	  proof.  sasl_scram.c runs the exchange on a connection; the
 *	  libFuzzer harness test/fuzz/scram_fuzz.c feeds the parsers.
 *
 * Crypto is OpenSSL's libcrypto: HMAC and EVP digests, base64 through
 * EVP_EncodeBlock/EVP_DecodeBlock, and CRYPTO_memcmp to compare the
 * recomputed StoredKey in constant time.  The verifier (salt, iterations,
 * StoredKey, ServerKey) comes from the database (mq.scram_lookup); the
 * password never reaches the server.  Every parser bounds every copy by
 * the destination's size and rejects NUL bytes and anything outside the
 * grammar.  One deviation, for librdkafka: see nonce_ok().  No globals, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "scram.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

bool
scram_mech_parse(const char *name, size_t len, ScramMech *mech)
{
	if (len == 13 && memcmp(name, "SCRAM-SHA-256", 13) == 0)
		*mech = SCRAM_SHA_256;
	else if (len == 13 && memcmp(name, "SCRAM-SHA-512", 13) == 0)
		*mech = SCRAM_SHA_512;
	else
		return false;
	return true;
}

const char *
scram_mech_name(ScramMech mech)
{
	return mech == SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

int
scram_key_len(ScramMech mech)
{
	return mech == SCRAM_SHA_512 ? 64 : 32;
}

static const EVP_MD *
scram_md(ScramMech mech)
{
	return mech == SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

/* the next comma-separated field of [*p, end): its start and length */
static bool
next_field(const char **p, const char *end, const char **f, size_t *flen)
{
	const char *comma;

	if (*p > end)
		return false;
	*f = *p;
	comma = memchr(*p, ',', (size_t) (end - *p));
	*flen = (size_t) ((comma ? comma : end) - *p);
	*p = comma ? comma + 1 : end + 1;
	return true;
}

/* "k=value" with this key: value and its length */
static bool
field_is(const char *f, size_t flen, char key, const char **v, size_t *vlen)
{
	if (flen < 2 || f[0] != key || f[1] != '=')
		return false;
	*v = f + 2;
	*vlen = flen - 2;
	return true;
}

/* saslname: =2C and =3D decoded; no other '=', no NUL; not empty */
static bool
decode_saslname(const char *v, size_t vlen, char *out, size_t size)
{
	size_t		n = 0;

	for (size_t i = 0; i < vlen; i++)
	{
		char		c = v[i];

		if (c == '=')
		{
			if (i + 2 >= vlen)
				return false;
			if (v[i + 1] == '2' && v[i + 2] == 'C')
				c = ',';
			else if (v[i + 1] == '3' && v[i + 2] == 'D')
				c = '=';
			else
				return false;
			i += 2;
		}
		else if (c == '\0')
			return false;
		if (n + 1 >= size)
			return false;
		out[n++] = c;
	}
	out[n] = '\0';
	return n > 0;
}

/* printable ASCII except ',', not empty (RFC 5802: nonce) */
static bool
copy_printable(const char *v, size_t vlen, char *out, size_t size)
{
	if (vlen == 0 || vlen >= size)
		return false;
	for (size_t i = 0; i < vlen; i++)
		if (v[i] < 0x21 || v[i] > 0x7e || v[i] == ',')
			return false;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return true;
}

/* the gs2 header: cbind flag and authzid; leaves *p at the bare message */
static bool
parse_gs2(const char **p, const char *end, ScramClientFirst *out, char *authzid, size_t size)
{
	const char *start = *p,
			   *f,
			   *v;
	size_t		flen,
				vlen;

	if (!next_field(p, end, &f, &flen) || flen != 1 || (f[0] != 'n' && f[0] != 'y'))
		return false;
	if (!next_field(p, end, &f, &flen) || *p > end)
		return false;
	authzid[0] = '\0';
	if (flen > 0 && (!field_is(f, flen, 'a', &v, &vlen) || !decode_saslname(v, vlen, authzid, size)))
		return false;
	if ((size_t) (*p - start) >= sizeof(out->gs2))
		return false;
	memcpy(out->gs2, start, (size_t) (*p - start));
	out->gs2[*p - start] = '\0';
	return true;
}

/* extensions after the nonce: k=v each; tokenauth=true is refused */
static bool
extensions_ok(const char *p, const char *end)
{
	const char *f;
	size_t		flen;

	while (p <= end && next_field(&p, end, &f, &flen))
	{
		if (flen < 2 || memchr(f, '=', flen) == NULL)
			return false;
		if (flen >= 10 && memcmp(f, "tokenauth=", 10) == 0 &&
			!(flen == 15 && memcmp(f + 10, "false", 5) == 0))
			return false;
	}
	return true;
}

static bool
parse_first(const char *s, size_t len, ScramClientFirst *out)
{
	const char *p = s,
			   *end = s + len,
			   *bare,
			   *f,
			   *v;
	size_t		flen,
				vlen;
	char		authzid[SCRAM_MAX_NAME + 1];

	if (memchr(s, '\0', len) || !parse_gs2(&p, end, out, authzid, sizeof(authzid)))
		return false;
	bare = p;
	if ((size_t) (end - bare) > SCRAM_MAX_MSG)
		return false;
	memcpy(out->bare, bare, (size_t) (end - bare));
	out->bare[end - bare] = '\0';
	/* n=user (a leading m= mandatory extension fails here) */
	if (!next_field(&p, end, &f, &flen) || !field_is(f, flen, 'n', &v, &vlen) ||
		!decode_saslname(v, vlen, out->user, sizeof(out->user)))
		return false;
	if (authzid[0] && strcmp(authzid, out->user) != 0)
		return false;
	if (p > end || !next_field(&p, end, &f, &flen) || !field_is(f, flen, 'r', &v, &vlen) ||
		!copy_printable(v, vlen, out->nonce, sizeof(out->nonce)))
		return false;
	return extensions_ok(p, end);
}

bool
scram_parse_client_first(const uint8_t *p, size_t len, ScramClientFirst *out)
{
	memset(out, 0, sizeof(*out));
	if (p == NULL || len == 0 || len > SCRAM_MAX_MSG || !parse_first((const char *) p, len, out))
	{
		memset(out, 0, sizeof(*out));
		return false;
	}
	return true;
}

/* base64 to bytes; strict (EVP_DecodeBlock, padding accounted) */
static bool
b64_decode(const char *v, size_t vlen, uint8_t *out, size_t size, size_t *outlen)
{
	uint8_t		buf[SCRAM_MAX_MSG];
	int			n;
	size_t		pad = 0;

	if (vlen == 0 || vlen % 4 != 0 || vlen / 4 * 3 > sizeof(buf))
		return false;
	n = EVP_DecodeBlock(buf, (const unsigned char *) v, (int) vlen);
	if (n < 0)
		return false;
	if (v[vlen - 1] == '=')
		pad++;
	if (v[vlen - 2] == '=')
		pad++;
	if ((size_t) n < pad || (size_t) n - pad > size)
		return false;
	*outlen = (size_t) n - pad;
	memcpy(out, buf, *outlen);
	return true;
}

static bool
parse_final(const char *s, size_t len, ScramClientFinal *out)
{
	const char *p = s,
			   *end = s + len,
			   *f,
			   *v,
			   *proof_at;
	size_t		flen,
				vlen;

	if (memchr(s, '\0', len))
		return false;
	if (!next_field(&p, end, &f, &flen) || !field_is(f, flen, 'c', &v, &vlen) ||
		!copy_printable(v, vlen, out->cbind, sizeof(out->cbind)))
		return false;
	if (p > end || !next_field(&p, end, &f, &flen) || !field_is(f, flen, 'r', &v, &vlen) ||
		!copy_printable(v, vlen, out->nonce, sizeof(out->nonce)))
		return false;
	/* the proof is the last field */
	proof_at = NULL;
	for (const char *q = end - 1; q > s; q--)
		if (*q == ',')
		{
			proof_at = q + 1;
			break;
		}
	if (proof_at == NULL || proof_at < p || !field_is(proof_at, (size_t) (end - proof_at), 'p', &v, &vlen))
		return false;
	if (!b64_decode(v, vlen, out->proof, sizeof(out->proof), &out->proof_len))
		return false;
	if (!extensions_ok(p, proof_at - 1))
		return false;
	memcpy(out->without_proof, s, (size_t) (proof_at - 1 - s));
	out->without_proof[proof_at - 1 - s] = '\0';
	return true;
}

bool
scram_parse_client_final(const uint8_t *p, size_t len, ScramClientFinal *out)
{
	memset(out, 0, sizeof(*out));
	if (p == NULL || len == 0 || len > SCRAM_MAX_MSG || !parse_final((const char *) p, len, out))
	{
		memset(out, 0, sizeof(*out));
		return false;
	}
	return true;
}

bool
scram_server_first(ScramState *s, ScramMech mech, const ScramClientFirst *first,
				   const char *server_nonce, const uint8_t *salt, size_t salt_len,
				   int iterations, const uint8_t *stored_key, const uint8_t *server_key)
{
	char		salt64[4 * ((SCRAM_MAX_SALT + 2) / 3) + 1];
	int			n;

	memset(s, 0, sizeof(*s));
	if (salt_len == 0 || salt_len > SCRAM_MAX_SALT || iterations < 1)
		return false;
	s->mech = mech;
	s->first = *first;
	n = snprintf(s->nonce, sizeof(s->nonce), "%s%s", first->nonce, server_nonce);
	if (n < 0 || (size_t) n >= sizeof(s->nonce))
		return false;
	EVP_EncodeBlock((unsigned char *) salt64, salt, (int) salt_len);
	n = snprintf(s->server_first, sizeof(s->server_first), "r=%s,s=%s,i=%d", s->nonce, salt64, iterations);
	if (n < 0 || (size_t) n >= sizeof(s->server_first))
		return false;
	memcpy(s->stored_key, stored_key, scram_key_len(mech));
	memcpy(s->server_key, server_key, scram_key_len(mech));
	return true;
}

/* HMAC(key, AuthMessage): client-first-bare "," server-first "," client-final-without-proof */
static bool
auth_hmac(const ScramState *s, const ScramClientFinal *f, const uint8_t *key, uint8_t *out)
{
	char		msg[sizeof(s->first.bare) + sizeof(s->server_first) + sizeof(f->without_proof) + 2];
	int			klen = scram_key_len(s->mech);
	unsigned int olen = 0;
	int			n;

	n = snprintf(msg, sizeof(msg), "%s,%s,%s", s->first.bare, s->server_first, f->without_proof);
	if (n < 0 || (size_t) n >= sizeof(msg))
		return false;
	return HMAC(scram_md(s->mech), key, klen, (const uint8_t *) msg, (size_t) n, out, &olen) != NULL &&
		olen == (unsigned int) klen;
}

/*
 * The client-final nonce is the exchange's (client's + server's part).
 * librdkafka (2.0.2 at least) sends the client's nonce once more in front
 * of it, which Kafka accepts (its check is endsWith): that form is taken
 * too, and nothing else.
 */
static bool
nonce_ok(const ScramState *s, const char *nonce)
{
	size_t		cl = strlen(s->first.nonce);

	if (strcmp(s->nonce, nonce) == 0)
		return true;
	return strncmp(nonce, s->first.nonce, cl) == 0 && strcmp(nonce + cl, s->nonce) == 0;
}

bool
scram_verify_final(const ScramState *s, const ScramClientFinal *f, char *out, size_t size)
{
	int			klen = scram_key_len(s->mech);
	char		cbind[sizeof(s->first.gs2) * 4 / 3 + 8];
	uint8_t		sig[SCRAM_MAX_KEY],
				client_key[SCRAM_MAX_KEY],
				stored[SCRAM_MAX_KEY];
	unsigned int hlen = 0;
	bool		ok;

	EVP_EncodeBlock((unsigned char *) cbind, (const uint8_t *) s->first.gs2, (int) strlen(s->first.gs2));
	if (strcmp(cbind, f->cbind) != 0 || !nonce_ok(s, f->nonce) ||
		f->proof_len != (size_t) klen || !auth_hmac(s, f, s->stored_key, sig))
		return false;
	for (int i = 0; i < klen; i++)
		client_key[i] = f->proof[i] ^ sig[i];
	ok = EVP_Digest(client_key, klen, stored, &hlen, scram_md(s->mech), NULL) &&
		hlen == (unsigned int) klen && CRYPTO_memcmp(stored, s->stored_key, klen) == 0;
	OPENSSL_cleanse(client_key, sizeof(client_key));
	if (!ok || !auth_hmac(s, f, s->server_key, sig) || size < (size_t) (4 * ((klen + 2) / 3) + 3))
		return false;
	memcpy(out, "v=", 2);
	EVP_EncodeBlock((unsigned char *) out + 2, sig, klen);
	return true;
}
