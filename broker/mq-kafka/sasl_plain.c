/*-------------------------------------------------------------------------
 *
 * sasl_plain.c
 *	  SASL/PLAIN (sasl.c dispatches here): checking a client's user name
 *	  and password by connecting to PostgreSQL as that user with that
 *	  password, so that pg_hba.conf and the role's SCRAM verifier decide;
 *	  mq keeps no passwords.  An authenticated connection's requests then
 *	  run their statements as that role (pool.c: SET LOCAL ROLE per
 *	  transaction).  sasl.c refuses PLAIN on a connection without TLS
 *	  unless --sasl-plain-on-plaintext allows it.
 *
 * The check connects asynchronously on the loop (PQconnectStartParams,
 * with the user and password as keywords, never in a conninfo string)
 * to the daemon's database, gives up after AUTH_TIMEOUT, and is closed
 * at once; its PGconn is the only copy of the password that outlives
 * the request (libpq zeroes it on PQfinish), and the copies made here
 * are zeroed.  A login that PostgreSQL let in without asking for a
 * password (trust, peer) is refused: it proves nothing.  A failure
 * answers SASL_AUTHENTICATION_FAILED with a message that does not say
 * whether the user exists, and closes the connection, as Kafka does.
 *
 * At most --pool checks run at once, so that clients that have not
 * authenticated cannot take more of PostgreSQL's connection slots; the
 * others wait in a FIFO, holding their token (zeroed when freed).
 *
 * Loop thread only: no locking.  A connection has at most one request
 * in flight, so at most one check per client connection exists.
 *
 *-------------------------------------------------------------------------
 */
#include "sasl.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

#define AUTH_TIMEOUT_S 5

/* a password check, waiting or in progress */
typedef struct SaslCheck
{
	KRequest   *req;
	PGconn	   *conn;
	struct event *ev;
	bool		running;		/* counted in nrunning */
	SaslPlain	tok;			/* the password zeroed once libpq has it */
	char		user_log[SASL_PLAIN_MAX + 1];	/* user, for the log */
	struct SaslCheck *next;		/* the wait queue */
} SaslCheck;

static int	nrunning;
static SaslCheck *wait_head,
		   *wait_tail;

static void check_connect(SaslCheck *c);

bool
sasl_plain_parse(const uint8_t *p, size_t len, SaslPlain *out)
{
	const uint8_t *nul1,
			   *nul2;
	size_t		zlen,
				ulen,
				plen;

	memset(out, 0, sizeof(*out));
	nul1 = p ? memchr(p, 0, len) : NULL;
	if (nul1 == NULL)
		return false;
	nul2 = memchr(nul1 + 1, 0, len - (size_t) (nul1 + 1 - p));
	if (nul2 == NULL || memchr(nul2 + 1, 0, len - (size_t) (nul2 + 1 - p)) != NULL)
		return false;
	zlen = (size_t) (nul1 - p);
	ulen = (size_t) (nul2 - nul1 - 1);
	plen = len - (size_t) (nul2 + 1 - p);
	if (zlen > SASL_PLAIN_MAX || ulen == 0 || ulen > SASL_PLAIN_MAX ||
		plen == 0 || plen > SASL_PLAIN_MAX)
		return false;
	memcpy(out->authzid, p, zlen);
	memcpy(out->user, nul1 + 1, ulen);
	memcpy(out->password, nul2 + 1, plen);
	return true;
}

/* free a finished check; the first waiting one may start */
static void
check_free(SaslCheck *c)
{
	SaslCheck  *next = wait_head;

	if (c->ev)
		event_free(c->ev);
	if (c->conn)
		PQfinish(c->conn);
	if (c->running)
		nrunning--;
	explicit_bzero(&c->tok, sizeof(c->tok));
	free(c);
	if (next && nrunning < kconfig.pool_size)
	{
		wait_head = next->next;
		if (wait_head == NULL)
			wait_tail = NULL;
		check_connect(next);
	}
}

/* the check is over: ok, or why not (for the log only) */
static void
check_done(SaslCheck *c, bool ok, const char *why)
{
	KRequest   *req = c->req;

	if (ok)
	{
		mq_log_info("%s: authenticated as \"%s\"", conn_peer(req->conn), c->user_log);
		conn_set_sasl(req->conn, KSASL_DONE, c->tok.user);
		sasl_respond(req, KERR_NONE, NULL, NULL, 0);
	}
	else
	{
		mq_log_info("%s: authentication as \"%s\" failed: %.*s", conn_peer(req->conn),
					c->user_log, (int) strcspn(why, "\n"), why);
		sasl_respond(req, KERR_SASL_AUTHENTICATION_FAILED, SASL_AUTH_FAILED_MESSAGE, NULL, 0);
	}
	check_free(c);
}

static void check_step(evutil_socket_t fd, short what, void *arg);

static void
check_watch(SaslCheck *c, PostgresPollingStatusType st)
{
	static const struct timeval limit = {AUTH_TIMEOUT_S, 0};

	if (c->ev)
		event_free(c->ev);
	c->ev = event_new(kbase, PQsocket(c->conn), st == PGRES_POLLING_READING ? EV_READ : EV_WRITE,
					  check_step, c);
	event_add(c->ev, &limit);
}

static void
check_step(evutil_socket_t fd, short what, void *arg)
{
	SaslCheck  *c = arg;
	PostgresPollingStatusType st;

	if (what & EV_TIMEOUT)
	{
		check_done(c, false, "timeout expired");
		return;
	}
	st = PQconnectPoll(c->conn);
	if (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING)
		check_watch(c, st);
	else if (st != PGRES_POLLING_OK)
		check_done(c, false, PQerrorMessage(c->conn));
	else if (!PQconnectionUsedPassword(c->conn))
	{
		mq_log_warning("pg_hba.conf let \"%s\" connect without a password: sasl needs a password method for the daemon's database",
					   c->user_log);
		check_done(c, false, "no password asked");
	}
	else
		check_done(c, true, NULL);
}

/* connect as the check's user; the password is zeroed once libpq has it */
static void
check_connect(SaslCheck *c)
{
	const char *keys[] = {"dbname", "user", "password", "connect_timeout",
						  "fallback_application_name", NULL};
	char		timeout[16];
	const char *vals[] = {kconfig.conninfo, c->tok.user, c->tok.password, timeout,
						  "mq-kafka-auth", NULL};

	snprintf(timeout, sizeof(timeout), "%d", AUTH_TIMEOUT_S);
	c->running = true;
	nrunning++;
	c->conn = PQconnectStartParams(keys, vals, 1);
	explicit_bzero(c->tok.password, sizeof(c->tok.password));
	if (c->conn == NULL || PQstatus(c->conn) == CONNECTION_BAD)
	{
		check_done(c, false, c->conn ? PQerrorMessage(c->conn) : "out of memory");
		return;
	}
	check_watch(c, PGRES_POLLING_WRITING);
}

/* check the token's user and password, now or once fewer checks run; tok is zeroed */
static void
check_start(KRequest *req, SaslPlain *tok)
{
	SaslCheck  *c = mq_malloc0(sizeof(SaslCheck));

	c->req = req;
	c->tok = *tok;
	explicit_bzero(tok, sizeof(*tok));
	sasl_log_name(c->tok.user, strlen(c->tok.user), c->user_log, sizeof(c->user_log));
	if (nrunning < kconfig.pool_size)
	{
		check_connect(c);
		return;
	}
	mq_log_info("%s: %d password checks running: \"%s\" waits", conn_peer(req->conn),
				nrunning, c->user_log);
	if (wait_tail)
		wait_tail->next = c;
	else
		wait_head = c;
	wait_tail = c;
}

void
sasl_plain_authenticate(KRequest *req, uint8_t *token, size_t len)
{
	SaslPlain	tok;
	bool		parsed;

	parsed = len > 0 && sasl_plain_parse(token, len, &tok);
	/* the frame's copy of the password goes now */
	if (len > 0)
		explicit_bzero(token, len);
	if (!parsed)
	{
		mq_log_info("%s: malformed sasl plain token", conn_peer(req->conn));
		sasl_respond(req, KERR_SASL_AUTHENTICATION_FAILED, SASL_AUTH_FAILED_MESSAGE, NULL, 0);
		return;
	}
	/* authzid: no proxying */
	if (sasl_user_refused(tok.user) || (tok.authzid[0] && strcmp(tok.authzid, tok.user) != 0))
	{
		char		buf[SASL_PLAIN_MAX + 1];

		mq_log_info("%s: sasl plain user \"%s\" refused", conn_peer(req->conn),
					sasl_log_name(tok.user, strlen(tok.user), buf, sizeof(buf)));
		explicit_bzero(&tok, sizeof(tok));
		sasl_respond(req, KERR_SASL_AUTHENTICATION_FAILED, SASL_AUTH_FAILED_MESSAGE, NULL, 0);
		return;
	}
	check_start(req, &tok);
}
