/*-------------------------------------------------------------------------
 *
 * sasl_scram.c
 *	  SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on a connection (sasl.c
 *	  dispatches here; the messages are parsed, built and checked by the
 *	  pure functions of scram.c).  Two SaslAuthenticate rounds:
 *	  client-first -> server-first, client-final -> server-final.
 *
 * The first round reads the user's verifier with one statement,
 * mq.scram_lookup(user, mechanism), as the daemon's own role (that role
 * needs EXECUTE on it: docs/kafka.md, "SCRAM").  For a user without a
 * credential the function returns a salt derived from a secret of the
 * database and keys no proof matches, so the answer looks the same
 * whether the user exists or not.  The server's nonce is 24 bytes of
 * RAND_bytes.  The exchange's state (ScramState: the messages so far and
 * the two keys) stays on the connection between the rounds and is zeroed
 * when freed.  Any failure -- malformed message, wrong nonce or channel
 * binding, a proof that does not match, a second client-first --
 * answers SASL_AUTHENTICATION_FAILED and closes the connection, so a
 * replayed message meets a fresh nonce on a new connection and fails.
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "sasl.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "kerr.h"
#include "kjob.h"
#include "scram.h"
#include "util.h"

#define SERVER_NONCE_BYTES 24

/* the first round while the verifier is read */
typedef struct ScramLookup
{
	KJob		job;
	ScramMech	mech;
	ScramClientFirst first;
} ScramLookup;

static void
lookup_free(void *p)
{
	ScramLookup *l = p;

	kjob_free(&l->job);
	OPENSSL_cleanse(l, sizeof(*l));
	free(l);
}

static void
state_free(void *p)
{
	OPENSSL_cleanse(p, sizeof(ScramState));
	free(p);
}

static void
fail(KRequest *req, const char *user, const char *why)
{
	char		buf[SCRAM_MAX_NAME + 1];

	mq_log_info("%s: scram authentication as \"%s\" failed: %s", conn_peer(req->conn),
				sasl_log_name(user, strlen(user), buf, sizeof(buf)), why);
	conn_set_sasl_state(req->conn, NULL, NULL);
	sasl_respond(req, KERR_SASL_AUTHENTICATION_FAILED, SASL_AUTH_FAILED_MESSAGE, NULL, 0);
}

/* the server's part of the nonce: base64 of random bytes (no comma) */
static bool
server_nonce(char *out)
{
	uint8_t		raw[SERVER_NONCE_BYTES];

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return false;
	EVP_EncodeBlock((unsigned char *) out, raw, sizeof(raw));
	return true;
}

/* the verifier is back: build and send server-first */
static void
lookup_done(KRequest *req)
{
	ScramLookup *l = req->state;
	KStmt	   *st = &l->job.stmts[0];
	int			klen = scram_key_len(l->mech);
	char		nonce[4 * SERVER_NONCE_BYTES / 3 + 1];
	ScramState *s;
	int16_t		code;
	uint32_t	iters;

	if (kstmt_failed(st, &code))
	{
		mq_log_warning("scram: mq.scram_lookup failed (%s): %s", st->err.sqlstate,
					   st->err.message);
		fail(req, l->first.user, "the verifier could not be read");
		return;
	}
	if (PQntuples(st->res) != 1 || PQgetlength(st->res, 0, 1) != 4 ||
		PQgetlength(st->res, 0, 2) != klen || PQgetlength(st->res, 0, 3) != klen ||
		PQgetlength(st->res, 0, 0) > SCRAM_MAX_SALT || !server_nonce(nonce))
	{
		fail(req, l->first.user, "unexpected verifier");
		return;
	}
	memcpy(&iters, PQgetvalue(st->res, 0, 1), 4);
	s = mq_malloc0(sizeof(ScramState));
	if (!scram_server_first(s, l->mech, &l->first, nonce,
							(const uint8_t *) PQgetvalue(st->res, 0, 0), PQgetlength(st->res, 0, 0),
							(int) ntohl(iters), (const uint8_t *) PQgetvalue(st->res, 0, 2),
							(const uint8_t *) PQgetvalue(st->res, 0, 3)))
	{
		state_free(s);
		fail(req, l->first.user, "client-first message too long");
		return;
	}
	conn_set_sasl_state(req->conn, s, state_free);
	sasl_respond(req, KERR_NONE, NULL, s->server_first, strlen(s->server_first));
}

static void
client_first(KRequest *req, const uint8_t *token, size_t len)
{
	ScramLookup *l = mq_malloc0(sizeof(ScramLookup));
	KStmt	   *st;

	req->state = l;
	req->free_state = lookup_free;
	l->mech = conn_sasl_mech(req->conn) == KSASL_MECH_SCRAM_SHA_512 ? SCRAM_SHA_512 : SCRAM_SHA_256;
	if (!scram_parse_client_first(token, len, &l->first))
	{
		fail(req, "", "malformed client-first message");
		return;
	}
	if (sasl_user_refused(l->first.user))
	{
		fail(req, l->first.user, "user refused");
		return;
	}
	st = kjob_add(&l->job, "SELECT salt, iterations, stored_key, server_key FROM mq.scram_lookup($1, $2)", 1);
	kstmt_text(st, MQ_TEXTOID, l->first.user);
	kstmt_text(st, MQ_TEXTOID, scram_mech_name(l->mech));
	pool_run(req, &l->job, lookup_done);
}

static void
client_final(KRequest *req, ScramState *s, const uint8_t *token, size_t len)
{
	ScramClientFinal f;
	char		server_final[4 * SCRAM_MAX_KEY / 3 + 8];
	char		user[SCRAM_MAX_NAME + 1];
	char		buf[SCRAM_MAX_NAME + 1];

	memcpy(user, s->first.user, sizeof(user));
	if (!scram_parse_client_final(token, len, &f))
	{
		fail(req, user, "malformed client-final message");
		return;
	}
	if (!scram_verify_final(s, &f, server_final, sizeof(server_final)))
	{
		OPENSSL_cleanse(&f, sizeof(f));
		fail(req, user, "wrong proof, nonce or channel binding");
		return;
	}
	OPENSSL_cleanse(&f, sizeof(f));
	mq_log_info("%s: authenticated as \"%s\" (%s)", conn_peer(req->conn),
				sasl_log_name(user, strlen(user), buf, sizeof(buf)), scram_mech_name(s->mech));
	conn_set_sasl_state(req->conn, NULL, NULL);
	conn_set_sasl(req->conn, KSASL_DONE, user);
	sasl_respond(req, KERR_NONE, NULL, server_final, strlen(server_final));
}

void
sasl_scram_authenticate(KRequest *req, const uint8_t *token, size_t len)
{
	ScramState *s = conn_sasl_state(req->conn);

	if (s == NULL)
		client_first(req, token, len);
	else
		client_final(req, s, token, len);
}
