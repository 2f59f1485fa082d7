/*-------------------------------------------------------------------------
 *
 * sasl.c
 *	  SASL for Kafka clients (--sasl=plain,scram-sha-256,scram-sha-512):
 *	  SaslHandshake (API 17) chooses a mechanism, SaslAuthenticate (API
 *	  36) carries its messages to the mechanism -- PLAIN in sasl_plain.c
 *	  (PostgreSQL checks the password), SCRAM-SHA-256/-512 in
 *	  sasl_scram.c (mq's verifiers, mq.scram_lookup).  Once a mechanism
 *	  is done, the connection's requests run as the role of the user's
 *	  name (pool.c: SET LOCAL ROLE per transaction).
 *
 * SaslHandshake v1 is followed by SaslAuthenticate requests; after v0 (as
 * kafka-python 2.0.2 sends it) the tokens come as bare size-prefixed
 * frames without a request header (KSASL_BARE; server.c reads them, api.c
 * hands them here), answered by the bare token, a failure by closing.
 *
 * PLAIN sends the password itself, so it is offered only on a connection
 * that is TLS (conn_is_tls) unless --sasl-plain-on-plaintext allows it.
 * Every failure answers SASL_AUTHENTICATION_FAILED with one message that
 * does not say whether the user exists, and closes the connection, as
 * Kafka does.
 *
 * Loop thread only: no locking.  A connection has at most one request in
 * flight; its mechanism and exchange state live on the connection.
 *
 *-------------------------------------------------------------------------
 */
#include "sasl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"
#include "kerr.h"
#include "util.h"

static const struct
{
	const char *option;			/* in --sasl */
	const char *name;			/* Kafka's mechanism name */
	KSaslMech	mech;
}			mechs[] = {
	{"plain", "PLAIN", KSASL_MECH_PLAIN},
	{"scram-sha-256", "SCRAM-SHA-256", KSASL_MECH_SCRAM_SHA_256},
	{"scram-sha-512", "SCRAM-SHA-512", KSASL_MECH_SCRAM_SHA_512},
};
#define NMECHS (sizeof(mechs) / sizeof(mechs[0]))

bool
sasl_parse_mechs(const char *list, unsigned *out)
{
	const char *p = list;

	*out = 0;
	while (*p)
	{
		size_t		n = strcspn(p, ",");
		bool		known = false;

		for (size_t i = 0; i < NMECHS; i++)
			if (strlen(mechs[i].option) == n && strncasecmp(p, mechs[i].option, n) == 0)
			{
				*out |= mechs[i].mech;
				known = true;
			}
		if (!known)
			return false;
		p += n;
		if (*p == ',')
			p++;
	}
	return *out != 0;
}

/* the mechanisms this connection may use */
static unsigned
conn_mechs(const KConn *c)
{
	unsigned	m = kconfig.sasl_mechs;

	if (!conn_is_tls(c) && !kconfig.sasl_plain_on_plaintext)
		m &= ~(unsigned) KSASL_MECH_PLAIN;
	return m;
}

/*
 * An error closes the connection, but for keep (after a login, as Kafka).
 * Kafka lists the enabled mechanisms with an unknown one, none with
 * ILLEGAL_SASL_STATE.
 */
static void
handshake_respond(KRequest *req, int16_t error, bool keep)
{
	unsigned	m = error == KERR_ILLEGAL_SASL_STATE ? 0 : conn_mechs(req->conn);
	int32_t		n = 0;

	kw_i16(&req->resp, error);
	for (size_t i = 0; i < NMECHS; i++)
		n += (m & mechs[i].mech) != 0;
	kw_i32(&req->resp, n);
	for (size_t i = 0; i < NMECHS; i++)
		if (m & mechs[i].mech)
			kw_str(&req->resp, mechs[i].name);
	if (error == KERR_NONE || keep)
		req_finish(req);
	else
		req_finish_close(req);
}

void
h_sasl_handshake(KRequest *req)
{
	KSlice		name = kr_str(&req->body);
	unsigned	m = conn_mechs(req->conn);

	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	if (!conn_needs_sasl(req->conn) || conn_sasl_step(req->conn) != KSASL_START)
	{
		/* after a login, or on a listener without SASL: the connection goes on */
		handshake_respond(req, KERR_ILLEGAL_SASL_STATE,
						  !conn_needs_sasl(req->conn) || conn_sasl_step(req->conn) == KSASL_DONE);
		return;
	}
	for (size_t i = 0; i < NMECHS; i++)
		if ((m & mechs[i].mech) && kslice_eq(name, mechs[i].name))
		{
			conn_set_sasl_mech(req->conn, mechs[i].mech);
			/* after v0 the tokens come as bare frames (kafka-python) */
			conn_set_sasl(req->conn, req->api_version == 0 ? KSASL_BARE : KSASL_HANDSHAKEN, NULL);
			handshake_respond(req, KERR_NONE, false);
			return;
		}
	{
		char		buf[33];

		mq_log_info("%s: sasl mechanism \"%s\" refused%s", conn_peer(req->conn),
					sasl_log_name((const char *) name.p, name.len > 0 ? (size_t) name.len : 0,
								  buf, sizeof(buf)),
					kslice_eq(name, "PLAIN") && (kconfig.sasl_mechs & KSASL_MECH_PLAIN) ?
					" on a connection without tls (--sasl-plain-on-plaintext allows it)" : "");
	}
	handshake_respond(req, KERR_UNSUPPORTED_SASL_MECHANISM, false);
}

/* the mechanism's round for a token */
static void
sasl_token(KRequest *req, uint8_t *token, size_t len)
{
	if (conn_sasl_mech(req->conn) == KSASL_MECH_PLAIN)
		sasl_plain_authenticate(req, token, len);
	else
		sasl_scram_authenticate(req, token, len);
}

void
sasl_bare_token(KRequest *req, size_t len)
{
	req->bare = true;
	req->api_key = KAPI_SASL_AUTHENTICATE;
	sasl_token(req, req->frame, len);
}

void
h_sasl_authenticate(KRequest *req)
{
	KSlice		token = kr_bytes(&req->body);

	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	if (!conn_needs_sasl(req->conn) || conn_sasl_step(req->conn) == KSASL_DONE)
	{
		/* as Kafka: answered, and the connection goes on */
		sasl_respond_after_login(req);
		return;
	}
	if (conn_sasl_step(req->conn) != KSASL_HANDSHAKEN)
	{
		req_abort(req);			/* before a handshake: Kafka closes, no answer */
		return;
	}
	sasl_token(req, (uint8_t *) token.p, token.len > 0 ? (size_t) token.len : 0);
}
