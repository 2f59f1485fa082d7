/*-------------------------------------------------------------------------
 *
 * sasl_reply.c
 *	  What every SASL mechanism's code shares (sasl_plain.c,
 *	  sasl_scram.c, and sasl.c's dispatch): the SaslAuthenticate response
 *	  (or a bare token's reply after SaslHandshake v0), user names fit for
 *	  a log line, and the names no client may authenticate as.  Below the
 *	  mechanisms, so that they and sasl.c call down only.  Loop thread
 *	  only: no state.
 *
 *-------------------------------------------------------------------------
 */
#include "sasl.h"

#include <string.h>

#include "handlers.h"
#include "kerr.h"

const char *
sasl_log_name(const char *name, size_t len, char *buf, size_t size)
{
	size_t		n = len < size - 1 ? len : size - 1;

	for (size_t i = 0; i < n; i++)
		buf[i] = ((unsigned char) name[i] < 0x20 || name[i] == 0x7f) ? '?' : name[i];
	buf[n] = '\0';
	return buf;
}

/* "none" would SET ROLE back to the daemon's own */
bool
sasl_user_refused(const char *user)
{
	return strcmp(user, "none") == 0;
}

void
sasl_respond(KRequest *req, int16_t error, const char *message, const void *auth_bytes, size_t len)
{
	if (req->bare)
	{
		/* Kafka answers a bare token with the bare reply, a failure by closing */
		if (error != KERR_NONE)
		{
			req_abort(req);
			return;
		}
		kw_raw(&req->resp, auth_bytes ? auth_bytes : "", len);
		req_finish(req);
		return;
	}
	kw_i16(&req->resp, error);
	kw_str(&req->resp, message);
	kw_bytes(&req->resp, auth_bytes ? auth_bytes : "", (int32_t) len);
	if (req->api_version >= 1)
		kw_i64(&req->resp, 0);	/* session_lifetime_ms: no re-authentication */
	if (error == KERR_NONE)
		req_finish(req);
	else
		req_finish_close(req);
}

/* SaslAuthenticate after a successful login: ILLEGAL_SASL_STATE, the connection kept */
void
sasl_respond_after_login(KRequest *req)
{
	kw_i16(&req->resp, KERR_ILLEGAL_SASL_STATE);
	kw_str(&req->resp, "SaslAuthenticate request received after successful authentication");
	kw_bytes(&req->resp, "", 0);
	if (req->api_version >= 1)
		kw_i64(&req->resp, 0);
	req_finish(req);
}
