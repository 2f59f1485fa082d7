/*-------------------------------------------------------------------------
 *
 * h_token.c
 *	  CreateDelegationToken (v0-v3), RenewDelegationToken (v0-v2),
 *	  ExpireDelegationToken (v0-v2) and DescribeDelegationToken (v0-v3),
 *	  answered as a Kafka broker without delegation.token.secret.key
 *	  answers them.  Loop thread; no statement.
 *
 * mq issues no delegation tokens (KIP-48): a client authenticates as its
 * own principal, with SASL or a client certificate, and acts as that
 * PostgreSQL role.  Kafka's brokers serve these APIs at their defaults
 * with the feature disabled, so clients and admin tools get an answer
 * rather than a closed connection: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
 * on a connection that did not authenticate with SASL (plaintext or
 * TLS, as Kafka refuses those first), DELEGATION_TOKEN_AUTH_DISABLED on
 * one that did.  Each request is decoded in full, so a malformed one
 * still closes its connection.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include "kerr.h"

/* Kafka's answer: refused on a channel without SASL, else disabled */
static int16_t
token_error(const KRequest *req)
{
	return conn_needs_sasl(req->conn) && conn_sasl_step(req->conn) == KSASL_DONE
		? KERR_DELEGATION_TOKEN_AUTH_DISABLED : KERR_DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
}

/* a principal: type and name (and tags) */
static void
read_principal(KReader *r)
{
	(void) kr_str(r);
	(void) kr_str(r);
	kr_tags(r);
}

/* an array of principals; nullable ones (Describe's owners) may be -1 */
static void
read_principals(KReader *r)
{
	int32_t		n = kr_array(r, 2);

	for (int32_t i = 0; i < n && !r->err; i++)
		read_principal(r);
}

/* the requester's principal as the error answers name it */
static const char *
requester(const KRequest *req)
{
	return conn_sasl_step(req->conn) == KSASL_DONE && req->role ? req->role : "ANONYMOUS";
}

void
h_create_delegation_token(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int16_t		v = req->api_version;
	KSlice		owner = {NULL, -1};

	if (v >= 3)
	{
		(void) kr_str(r);		/* owner_principal_type */
		owner = kr_str(r);
	}
	read_principals(r);			/* renewers */
	(void) kr_i64(r);			/* max_lifetime_ms */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	kw_i16(w, token_error(req));
	kw_str(w, "User");
	if (owner.len > 0)
		kw_strn(w, owner.p, owner.len);
	else
		kw_str(w, requester(req));
	if (v >= 3)
	{
		kw_str(w, "User");
		kw_str(w, requester(req));
	}
	kw_i64(w, -1);				/* issue_timestamp_ms */
	kw_i64(w, -1);				/* expiry_timestamp_ms */
	kw_i64(w, -1);				/* max_timestamp_ms */
	kw_str(w, "");				/* token_id */
	kw_bytes(w, NULL, 0);		/* hmac */
	kw_i32(w, 0);				/* throttle_time_ms */
	req_finish(req);
}

/* Renew and Expire: an hmac and a period, answered with an expiry time */
static void
renew_or_expire(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;

	(void) kr_bytes(r);			/* hmac */
	(void) kr_i64(r);			/* renew_period_ms, expiry_time_period_ms */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	kw_i16(w, token_error(req));
	kw_i64(w, -1);				/* expiry_timestamp_ms */
	kw_i32(w, 0);				/* throttle_time_ms */
	req_finish(req);
}

void
h_renew_delegation_token(KRequest *req)
{
	renew_or_expire(req);
}

void
h_expire_delegation_token(KRequest *req)
{
	renew_or_expire(req);
}

void
h_describe_delegation_token(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;

	read_principals(r);			/* owners (null: all) */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	kw_i16(w, token_error(req));
	kw_array(w, 0);				/* tokens */
	kw_i32(w, 0);				/* throttle_time_ms */
	req_finish(req);
}
