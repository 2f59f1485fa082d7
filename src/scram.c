/*-------------------------------------------------------------------------
 *
 * scram.c
 *	  SCRAM verifiers for Kafka's SASL/SCRAM-SHA-256 and SCRAM-SHA-512
 *	  (RFC 5802, RFC 7677, Kafka's KIP-84): the salted keys that
 *	  mq.set_scram_credential stores in mq.scram_credential (src/sql/
 *	  91_scram.sql), computed here so that the password never reaches a
 *	  table, and random bytes for salts and the table's fake-salt secret.
 *
 * SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations), one block
 * (Hi() of RFC 5802); ClientKey = HMAC(SaltedPassword, "Client Key");
 * StoredKey = H(ClientKey); ServerKey = HMAC(SaltedPassword, "Server
 * Key").  PostgreSQL 15's scram-common.h knows SHA-256 only, so Hi() is
 * written here on its pg_hmac (common/hmac.h), which takes either hash.
 * The password is used as its bytes, without SASLprep, as Kafka's own
 * ScramFormatter and librdkafka do.  Random bytes come from
 * pg_strong_random.  Intermediate keys are zeroed.  No locking: pure
 * functions.
 *
 *-------------------------------------------------------------------------
 */
#include "mq.h"

#include "common/cryptohash.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(mq_scram_keys);
PG_FUNCTION_INFO_V1(mq_scram_random);

#define SCRAM_MAX_KEY PG_SHA512_DIGEST_LENGTH

/* the hash of a mechanism name, and its output length; false: unknown */
static bool
scram_hash(const char *mechanism, pg_cryptohash_type *type, int *len)
{
	if (strcmp(mechanism, "SCRAM-SHA-256") == 0)
	{
		*type = PG_SHA256;
		*len = PG_SHA256_DIGEST_LENGTH;
		return true;
	}
	if (strcmp(mechanism, "SCRAM-SHA-512") == 0)
	{
		*type = PG_SHA512;
		*len = PG_SHA512_DIGEST_LENGTH;
		return true;
	}
	return false;
}

/* out = HMAC(key, a || b) */
static void
scram_hmac(pg_cryptohash_type type, int len, const uint8 *key, size_t keylen,
		   const uint8 *a, size_t alen, const uint8 *b, size_t blen, uint8 *out)
{
	pg_hmac_ctx *ctx = pg_hmac_create(type);

	if (ctx == NULL || pg_hmac_init(ctx, key, keylen) < 0 ||
		pg_hmac_update(ctx, a, alen) < 0 ||
		(blen > 0 && pg_hmac_update(ctx, b, blen) < 0) ||
		pg_hmac_final(ctx, out, len) < 0)
	{
		const char *why = ctx ? pg_hmac_error(ctx) : "out of memory";

		pg_hmac_free(ctx);
		elog(ERROR, "could not compute hmac: %s", why);
	}
	pg_hmac_free(ctx);
}

/* Hi(password, salt, iterations) of RFC 5802 into out (len bytes) */
static void
scram_hi(pg_cryptohash_type type, int len, const char *password, size_t plen,
		 const uint8 *salt, size_t saltlen, int iterations, uint8 *out)
{
	static const uint8 one[4] = {0, 0, 0, 1};
	uint8		u[SCRAM_MAX_KEY];

	scram_hmac(type, len, (const uint8 *) password, plen, salt, saltlen, one, 4, u);
	memcpy(out, u, len);
	for (int i = 1; i < iterations; i++)
	{
		CHECK_FOR_INTERRUPTS();
		scram_hmac(type, len, (const uint8 *) password, plen, u, len, NULL, 0, u);
		for (int j = 0; j < len; j++)
			out[j] ^= u[j];
	}
	explicit_bzero(u, sizeof(u));
}

/* StoredKey and ServerKey from SaltedPassword */
static void
scram_keys(pg_cryptohash_type type, int len, const uint8 *salted,
		   uint8 *stored_key, uint8 *server_key)
{
	uint8		client_key[SCRAM_MAX_KEY];
	pg_cryptohash_ctx *ctx;

	scram_hmac(type, len, salted, len, (const uint8 *) "Client Key", 10, NULL, 0, client_key);
	scram_hmac(type, len, salted, len, (const uint8 *) "Server Key", 10, NULL, 0, server_key);
	ctx = pg_cryptohash_create(type);
	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, client_key, len) < 0 ||
		pg_cryptohash_final(ctx, stored_key, len) < 0)
	{
		pg_cryptohash_free(ctx);
		elog(ERROR, "could not compute scram stored key");
	}
	pg_cryptohash_free(ctx);
	explicit_bzero(client_key, sizeof(client_key));
}

static bytea *
make_bytea(const uint8 *p, int len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), p, len);
	return b;
}

/*
 * mq._scram_keys(mechanism text, secret bytea, salt bytea, iterations
 * integer, secret_is_salted boolean) RETURNS (stored_key bytea, server_key
 * bytea): secret is the password, or (secret_is_salted) the
 * SaltedPassword a Kafka AlterUserScramCredentials request carries, which
 * must then be as long as the hash.  The caller (91_scram.sql) has
 * checked the mechanism, the salt and the iterations.
 */
Datum
mq_scram_keys(PG_FUNCTION_ARGS)
{
	char	   *mechanism = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bytea	   *secret = PG_GETARG_BYTEA_PP(1);
	bytea	   *salt = PG_GETARG_BYTEA_PP(2);
	int32		iterations = PG_GETARG_INT32(3);
	bool		salted_given = PG_GETARG_BOOL(4);
	pg_cryptohash_type type;
	int			len;
	uint8		salted[SCRAM_MAX_KEY],
				stored[SCRAM_MAX_KEY],
				server[SCRAM_MAX_KEY];
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (!scram_hash(mechanism, &type, &len))
		ereport(ERROR, (errcode(ERRCODE_MQ_UNSUPPORTED_SASL_MECHANISM),
						errmsg("unsupported scram mechanism \"%s\"", mechanism)));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mq._scram_keys must return a record");
	if (salted_given)
	{
		if (VARSIZE_ANY_EXHDR(secret) != len)
			ereport(ERROR, (errcode(ERRCODE_MQ_INVALID_SCRAM_CREDENTIAL),
							errmsg("salted password must be %d bytes for %s", len, mechanism)));
		memcpy(salted, VARDATA_ANY(secret), len);
	}
	else
		scram_hi(type, len, VARDATA_ANY(secret), VARSIZE_ANY_EXHDR(secret),
				 (const uint8 *) VARDATA_ANY(salt), VARSIZE_ANY_EXHDR(salt), iterations, salted);
	scram_keys(type, len, salted, stored, server);
	explicit_bzero(salted, sizeof(salted));
	values[0] = PointerGetDatum(make_bytea(stored, len));
	values[1] = PointerGetDatum(make_bytea(server, len));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* mq._scram_random(n integer) RETURNS bytea: n bytes of pg_strong_random */
Datum
mq_scram_random(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	bytea	   *b;

	if (n < 1 || n > 1024)
		elog(ERROR, "mq._scram_random: bad length %d", n);
	b = palloc(VARHDRSZ + n);
	SET_VARSIZE(b, VARHDRSZ + n);
	if (!pg_strong_random(VARDATA(b), n))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
						errmsg("could not generate random bytes")));
	PG_RETURN_BYTEA_P(b);
}
