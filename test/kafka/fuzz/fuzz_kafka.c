/*-------------------------------------------------------------------------
 *
 * fuzz_kafka.c
 *	  libFuzzer target for mq-kafka's decoders (scripts/fuzz-kafka.sh
 *	  builds and runs it).
 *
 * An input whose first byte is even is a request frame (without its
 * size): it goes through api_dispatch() and the real handlers, with the
 * database replaced by "no connection" (every statement of a job fails), so
 * every request decoder, the record batch decoder and the codecs run, and
 * group requests drive the coordinator's state machine; SASL is on, but
 * the connection never gets past SaslHandshake, so no request tries to
 * log in.  A first byte 0xff feeds the rest to the SASL PLAIN token
 * parser; 0xfd to the SCRAM client-first parser (scram.c), and 0xfb to
 * the client-final parser and the proof check of an exchange started
 * from a fixed client-first message; another odd first byte feeds it to batch_decode() directly.  The connection and
 * pool functions are stubbed here: a request is answered synchronously.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "handlers.h"
#include "sasl.h"
#include "scram.h"
#include "util.h"

KConfig		kconfig;
struct event_base *kbase;

struct KConn
{
	int			unused;
};
static struct KConn conn;

const char *
conn_peer(const KConn *c)
{
	return "fuzz";
}

bool
conn_closed(const KConn *c)
{
	return false;
}

bool
conn_needs_sasl(const KConn *c)
{
	return false;
}

void
conn_advertised(const KConn *c, const char **host, int *port)
{
	*host = "127.0.0.1";
	*port = 9092;
}

KSaslStep
conn_sasl_step(const KConn *c)
{
	return KSASL_START;
}

void
conn_set_sasl(KConn *c, KSaslStep step, const char *role)
{
}

int
conn_sasl_mech(const KConn *c)
{
	return KSASL_MECH_SCRAM_SHA_256;
}

void
conn_set_sasl_mech(KConn *c, int mech)
{
}

void *
conn_sasl_state(const KConn *c)
{
	return NULL;
}

void
conn_set_sasl_state(KConn *c, void *state, void (*free_fn) (void *state))
{
	if (state && free_fn)
		free_fn(state);
}

bool
conn_is_tls(const KConn *c)
{
	return false;
}

/* the SCRAM parsers, and a whole exchange's final check (0xfd, 0xfb) */
static void
fuzz_scram(const uint8_t *data, size_t size, bool final)
{
	static const char first_msg[] = "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL";
	static const uint8_t salt[16] = {1, 2, 3};
	static const uint8_t key[SCRAM_MAX_KEY] = {4, 5, 6};
	ScramClientFirst first;
	ScramClientFinal f;
	ScramState	st;
	char		out[128];

	if (!final)
	{
		if (scram_parse_client_first(data, size, &first) &&
			(first.user[0] == '\0' || first.nonce[0] == '\0' || strchr(first.nonce, ',')))
			abort();			/* what the parser promises */
		return;
	}
	if (!scram_parse_client_first((const uint8_t *) first_msg, strlen(first_msg), &first) ||
		!scram_server_first(&st, SCRAM_SHA_512, &first, "3rfcNHYJY1ZVvWVs7j", salt, sizeof(salt),
							4096, key, key))
		abort();
	if (scram_parse_client_final(data, size, &f) &&
		scram_verify_final(&st, &f, out, sizeof(out)))
		abort();				/* no proof matches a key of no password */
}

static void
req_free(KRequest *req)
{
	if (req->free_state && req->state)
		req->free_state(req->state);
	kw_free(&req->resp);
	free(req->frame);
	free(req->client_id);
	free(req->role);
	free(req);
}

void
req_finish(KRequest *req)
{
	req_free(req);
}

void
req_abort(KRequest *req)
{
	req_free(req);
}

void
req_finish_close(KRequest *req)
{
	req_free(req);
}

void
pool_run(KRequest *req, KJob *job, KDoneFn done_fn)
{
	req->job = job;
	for (int i = 0; i < job->n; i++)
	{
		job->stmts[i].err.connection_lost = true;
		job->stmts[i].err.message = mq_strdup("fuzzing: no database");
	}
	if (done_fn)
		done_fn(req);
	else
		req_finish(req);
}

int
pool_idle(void)
{
	return 0;					/* so Fetch never reads ahead */
}

void
pool_run_on(KPool *p, KRequest *req, KJob *job, KDoneFn done_fn)
{
	pool_run(req, job, done_fn);
}

KPool *
pool_local(void)
{
	return NULL;				/* a single daemon: every job is local */
}

KPool *
pool_new(const char *conninfo, int size, const char *name, bool local)
{
	return NULL;
}

bool
pool_available(void)
{
	return true;
}

void
pool_cancel(KPool *p, const KRequest *req)
{
}

static void
setup(void)
{
	mq_progname = "fuzz";
	kconfig.listen_host = kconfig.advertised_host = "127.0.0.1";
	kconfig.listen_port = kconfig.advertised_port = 9092;
	kconfig.node_id = 1;
	kconfig.max_request_bytes = 1 << 20;
	kconfig.max_inflated_bytes = 1 << 20;
	kconfig.group_initial_delay_ms = 0;
	kconfig.recheck_ms = 100;
	kconfig.sasl_plain = true;
	kconfig.sasl_mechs = KSASL_MECH_PLAIN | KSASL_MECH_SCRAM_SHA_256 | KSASL_MECH_SCRAM_SHA_512;
	kbase = event_base_new();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;

	if (!ready)
	{
		setup();
		ready = true;
	}
	if (size < 1)
		return 0;
	if (data[0] == 0xff)
	{
		SaslPlain	tok;

		if (sasl_plain_parse(data + 1, size - 1, &tok) &&
			(tok.user[0] == '\0' || tok.password[0] == '\0' ||
			 strlen(tok.user) > SASL_PLAIN_MAX || strlen(tok.password) > SASL_PLAIN_MAX))
			abort();			/* what the parser promises */
	}
	else if (data[0] == 0xfd || data[0] == 0xfb)
		fuzz_scram(data + 1, size - 1, data[0] == 0xfb);
	else if (data[0] & 1)
	{
		KBatch		b;

		if (batch_decode(data + 1, size - 1, 1 << 20, &b) == 0)
			(void) batch_check_storable(&b);
		batch_free(&b);
	}
	else if (size - 1 >= 8)
	{
		KRequest   *req = mq_malloc0(sizeof(KRequest));

		req->conn = &conn;
		req->frame = mq_malloc(size - 1);
		memcpy(req->frame, data + 1, size - 1);
		api_dispatch(req, size - 1);
	}
	return 0;
}
