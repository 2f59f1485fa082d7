/*
 * broker_test.c: mq-broker's pure parts without PostgreSQL: the config
 * parser (numbers out of range, passwords in key=value and URI
 * connection strings, the metrics port), the replica batch header decoder,
 * the connection policy's back-off, and connecting on a thread
 * (mq_connect_start: the broker's way to the coordinator) against local
 * sockets: one that refuses, and one that accepts and never answers, as a
 * paused server does.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batch.h"
#include "config.h"
#include "connpolicy.h"
#include "util.h"
#include "unit.h"

static const char *base =
"[broker]\nid = 1\nnode = host=/tmp port=5432 dbname=postgres\n"
"coordinator = host=/tmp port=5433 dbname=postgres\n";

static bool
parse_with(const char *extra)
{
	char		text[2048];
	BrokerConfig cfg;
	bool		ok;

	snprintf(text, sizeof(text), "%s%s", base, extra);
	ok = broker_config_parse(text, "test.ini", &cfg);
	broker_config_free(&cfg);
	return ok;
}

static bool
parse_conn(const char *coordinator)
{
	char		text[2048];
	BrokerConfig cfg;
	bool		ok;

	snprintf(text, sizeof(text), "[broker]\nid = 1\nnode = dbname=x\ncoordinator = %s\n", coordinator);
	ok = broker_config_parse(text, "test.ini", &cfg);
	broker_config_free(&cfg);
	return ok;
}

/* the defaults come from config.c's key table (docs/replication.md's) */
static void
test_config_defaults(void)
{
	BrokerConfig cfg;
	bool		ok = broker_config_parse(base, "test.ini", &cfg);

	CHECK(ok && cfg.tick_ms == 100 && cfg.node_timeout_ms == 5000 &&
		  cfg.coordinator_timeout_ms == 5000 && cfg.session_timeout_ms == 3000 &&
		  cfg.retry_ms == 500 && cfg.retry_max_ms == 2000, "[broker] defaults");
	CHECK(ok && cfg.lag_time_max_ms == 10000 && cfg.lag_max_messages == 0 &&
		  cfg.fetch_wait_ms == 500 && cfg.fetch_max_records == 10000 &&
		  cfg.auto_rebalance == 1 && cfg.rebalance_delay_ms == 10000 &&
		  cfg.txn_timeout_ms == 10000, "[replication] defaults");
	CHECK(ok && cfg.kafka_listen == NULL && cfg.kafka_pool == 0 &&
		  cfg.kafka_group_delay_ms == -1 && cfg.kafka_min_session_ms == -1 &&
		  cfg.kafka_max_session_ms == -1 && cfg.metrics_address == NULL &&
		  strcmp(cfg.node_advertised, cfg.node) == 0, "unset keys stay unset");
	broker_config_free(&cfg);
}

static void
test_config(void)
{
	test_config_defaults();
	CHECK(parse_with(""), "a minimal config is accepted");
	CHECK(!parse_with("tick.ms = 5\n"), "tick.ms below its minimum is refused");
	CHECK(!parse_with("tick.ms = 99999999999999999999\n"), "a number beyond long is refused");
	CHECK(!parse_with("retry.ms = 1000\nretry.max.ms = 500\n"), "retry.max.ms below retry.ms is refused");
	CHECK(!parse_with("[replication]\nreplica.fetch.max.records = 0\n"), "a record count of 0 is refused");
	CHECK(!parse_with("[replication]\nauto.leader.rebalance.enable = maybe\n"), "a boolean must be one");
	CHECK(parse_with("[replication]\nauto.leader.rebalance.enable = false\n"), "false is a boolean");
	CHECK(!parse_with("[replication]\ntxn.timeout.ms = 99\n"), "txn.timeout.ms below 100 is refused");
	CHECK(parse_with("[replication]\ntxn.timeout.ms = 3000\n"), "txn.timeout.ms in range is accepted");
	CHECK(!parse_with("bogus = 1\n"), "an unknown key is refused");
	CHECK(parse_with("[metrics]\naddress = 127.0.0.1:9187\n"), "a metrics address is accepted");
	CHECK(parse_with("[metrics]\naddress = [::1]:9187\n"), "an IPv6 metrics address is accepted");
	CHECK(!parse_with("[metrics]\naddress = 127.0.0.1:65536\n"), "metrics port 65536 is refused");
	CHECK(!parse_with("[metrics]\naddress = 127.0.0.1:0\n"), "metrics port 0 is refused");
	CHECK(!parse_with("[metrics]\naddress = 127.0.0.1:-1\n"), "a negative metrics port is refused");
	CHECK(!parse_with("[metrics]\naddress = 127.0.0.1\n"), "a metrics address without port is refused");
	CHECK(parse_with("[kafka]\nlisten = 127.0.0.1:9092\npool = 2\n"), "a [kafka] listen address is accepted");
	CHECK(!parse_with("[kafka]\nlisten = 127.0.0.1\n"), "a [kafka] listen address without port is refused");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nadvertise = h:0\n"), "a [kafka] advertise port 0 is refused");
	CHECK(!parse_with("[kafka]\npool = 2\n"), "a [kafka] section without listen is refused");
	CHECK(!parse_with("[kafka]\nlisten = h:1\npool = 0\n"), "a [kafka] pool of 0 is refused");
	CHECK(parse_with("[kafka]\nlisten = h:1\ngroup.min.session.timeout.ms = 1000\n"
					 "group.max.session.timeout.ms = 600000\n"),
		  "[kafka] session timeout bounds are accepted");
	CHECK(parse_with("[kafka]\nlisten = h:1\nconnections.max.idle.ms = 0\n"),
		  "[kafka] connections.max.idle.ms 0 (never) is accepted");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nconnections.max.idle.ms = -1\n"),
		  "a negative [kafka] connections.max.idle.ms is refused");
	CHECK(parse_with("[kafka]\nlisten = h:1\nauto.create.topics.enable = 0\nnum.partitions = 3\n"),
		  "[kafka] auto.create.topics.enable and num.partitions are accepted");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nnum.partitions = 0\n"), "a [kafka] num.partitions of 0 is refused");
	CHECK(!parse_with("[kafka]\nlisten = h:1\ngroup.min.session.timeout.ms = 0\n"),
		  "a [kafka] minimum session timeout of 0 is refused");
	CHECK(!parse_with("[kafka]\ngroup.max.session.timeout.ms = 600000\n"),
		  "a [kafka] session bound without listen is refused");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nport = 1\n"), "an unknown [kafka] key is refused");
	CHECK(parse_with("[kafka]\nlisten = h:1\nsasl = plain\n"), "[kafka] sasl = plain is accepted");
	CHECK(parse_with("[kafka]\nlisten = h:1\nsasl = scram-sha-256,scram-sha-512,plain\n"),
		  "[kafka] sasl takes a list of mq-kafka's mechanisms");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nsasl = scram\n"), "[kafka] sasl with an unknown mechanism is refused");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nsasl = plain,\n"), "[kafka] sasl with an empty mechanism is refused");
	CHECK(parse_with("[kafka]\nlisten = h:1\nsasl = plain\nsasl.plain.on.plaintext = 1\n"
					 "principal.rules = DEFAULT\nanonymous = refuse\n"),
		  "[kafka] sasl.plain.on.plaintext, principal.rules and anonymous are accepted");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nsasl.plain.on.plaintext = 2\n"),
		  "[kafka] sasl.plain.on.plaintext is 0 or 1");
	CHECK(parse_with("[kafka]\nlisten = h:1\nmetrics = 127.0.0.1:9401\n"), "a [kafka] metrics address is accepted");
	CHECK(!parse_with("[kafka]\nlisten = h:1\nmetrics = 127.0.0.1\n"), "a [kafka] metrics address without port is refused");
	CHECK(!parse_with("[kafka]\nmetrics = h:1\n"), "a [kafka] metrics address without listen is refused");
	CHECK(parse_conn("postgresql://u@h/db"), "a URI without password is accepted");
	CHECK(!parse_conn("host=h password=secret"), "a key=value password is refused");
	CHECK(!parse_conn("postgresql://u:secret@h/db"), "a URI password is refused");
	CHECK(!parse_conn("postgres://u@h/db?password=secret"), "a URI password parameter is refused");
	CHECK(!parse_conn("host='h' password = 'x y'"), "a quoted password is refused");
	CHECK(!parse_conn("host=h 'unterminated"), "an unparsable connection string is refused");
}

static void
test_batch(void)
{
	unsigned char buf[128];
	BatchHeader h;
	size_t		len = 0;

	memset(buf, 0, sizeof(buf));
	buf[3] = 12;				/* 12 fields */
	len = 4;
	for (int f = 0; f < BATCH_HEADER_FIELDS; f++)
	{
		buf[len + 3] = 20;		/* int8 oid */
		buf[len + 7] = 8;		/* length */
		len += 8;
		buf[len + 7] = (unsigned char) (f + 1);
		len += 8;
	}
	CHECK(batch_header_decode(buf, len, &h) && h.base_offset == 1 && h.leader_log_end == 2 &&
		  h.high_watermark == 3 && h.offsets_version == 4 && h.log_start_offset == 5,
		  "a batch header decodes");
	{
		bool		any = false;

		for (size_t cut = 0; cut < len; cut++)
			any |= batch_header_decode(buf, cut, &h);
		CHECK(!any, "every truncated header is refused");
	}
	buf[4 + 7] = 0xff;			/* field 1 null (-1 length) */
	buf[4 + 4] = buf[4 + 5] = buf[4 + 6] = 0xff;
	CHECK(!batch_header_decode(buf, len, &h), "a null field is refused");
	CHECK(!batch_header_decode(NULL, 0, &h), "no data is refused");
}

static void
test_backoff(void)
{
	MqConnPolicy pol;
	MqRetry		r = {0};
	bool		within = true;
	int			last = 0;

	mq_conn_policy_default(&pol);
	pol.retry_initial_ms = 100;
	pol.retry_max_ms = 1000;
	CHECK(mq_retry_due(&r), "a fresh retry is due at once");
	{
		int			first = mq_retry_failed(&r, &pol);

		CHECK(first == 100, "the first pause is retry_initial_ms (got %d)", first);
	}
	CHECK(!mq_retry_due(&r), "not due right after a failure");
	for (int i = 0; i < 1000; i++)
	{
		int			p = mq_retry_next_pause(&pol, last, (uint32_t) rand());
		int			hi = last ? (last * 3 > 1000 ? 1000 : last * 3) : 100;

		if (p < 100 || p > (hi < 100 ? 100 : hi))
			within = false;
		last = p;
	}
	CHECK(within, "pauses stay between retry_initial_ms and min(3 x previous, retry_max_ms)");
	CHECK(mq_retry_next_pause(&pol, 1000, 0) == 100 && mq_retry_next_pause(&pol, 1000, 900) == 1000,
		  "the jitter spans the whole range");
	mq_retry_succeeded(&r);
	CHECK(mq_retry_due(&r) && r.failures == 0, "a success resets the back-off");
}

/* a policy's libpq keywords, the ones every mq connection carries */
static void
test_policy_params(void)
{
	MqConnPolicy pol;
	MqConnParams pp;
	char		got[256] = "";

	mq_conn_policy_default(&pol);
	pol.connect_timeout_s = 1;
	mq_conn_policy_params(&pol, &pp);
	for (int i = 0; i < pp.n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s=%s ", pp.keys[i], pp.vals[i]);
	CHECK(strcmp(got, "connect_timeout=2 keepalives=1 keepalives_idle=2 keepalives_interval=1 "
				 "keepalives_count=2 tcp_user_timeout=10000 ") == 0,
		  "the policy's keywords, connect_timeout at least 2 (got %s)", got);
	CHECK(pp.keys[pp.n] == NULL && pp.vals[pp.n] == NULL, "the lists end with NULL");
	pol.keepalives_idle_s = 0;
	pol.tcp_user_timeout_ms = 0;
	mq_conn_policy_params(&pol, &pp);
	CHECK(pp.n == 1, "no keepalive or tcp_user_timeout settings when the policy has none (%d)", pp.n);
}

/* A listening socket on 127.0.0.1 that never accepts: its port, or -1. */
static int
silent_listener(int *fd)
{
	struct sockaddr_in a;
	socklen_t	len = sizeof(a);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (*fd < 0 || bind(*fd, (struct sockaddr *) &a, sizeof(a)) != 0 || listen(*fd, 8) != 0 ||
		getsockname(*fd, (struct sockaddr *) &a, &len) != 0)
		return -1;
	return ntohs(a.sin_port);
}

/* The first line of an error message (libpq's may have a second). */
static const char *
first_line(const MqError *err)
{
	static char buf[200];

	snprintf(buf, sizeof(buf), "%s", err->message ? err->message : "none");
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Poll the job until it is over (at most wait_ms): true then. */
static bool
finish_within(MqConnectJob *job, int wait_ms, PGconn **conn, MqError *err)
{
	for (int i = 0; i < wait_ms / 10; i++)
	{
		if (mq_connect_finish(job, conn, err))
			return true;
		usleep(10000);
	}
	return false;
}

static void
test_connect_job(void)
{
	MqConnPolicy pol;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn = (PGconn *) &pol;
	MqConnectJob *job;
	char		info[128];
	int			fd;
	int			port = silent_listener(&fd);
	int64_t		t0;

	mq_conn_policy_default(&pol);

	/* a port that refuses: over at once, with the failure */
	job = mq_connect_start("host=127.0.0.1 port=1 dbname=x user=x", "t", &pol, &err);
	CHECK(job != NULL, "a connection attempt starts on its thread");
	CHECK(job && finish_within(job, 10000, &conn, &err) && conn == NULL &&
		  err.connection_lost && err.message && strncmp(err.message, "cannot connect", 14) == 0,
		  "a refused attempt ends with no connection and the error (%s)", first_line(&err));
	mq_error_free(&err);

	/* a server that accepts and never answers: the caller is not held */
	CHECK(port > 0, "a silent listener on 127.0.0.1");
	snprintf(info, sizeof(info), "host=127.0.0.1 port=%d dbname=x user=x", port);
	t0 = mq_now_us();
	job = mq_connect_start(info, "t", &pol, &err);
	CHECK(job != NULL && !mq_connect_finish(job, &conn, &err),
		  "connecting to a silent server returns at once and is not over yet");
	CHECK(mq_now_us() - t0 < 1000000, "starting it took less than connect_timeout");
	conn = (PGconn *) &pol;

	/*
	 * libpq 15 counts connect_timeout in whole seconds of time(): its
	 * deadline is time() + timeout, read again before each wait, so the
	 * attempt may end up to a second early when a second ticks between two
	 * of its waits (a fresh clone's run saw that once).  The attempt must
	 * still outlast connect_timeout less that second.
	 */
	CHECK(job && finish_within(job, 15000, &conn, &err) && conn == NULL && err.connection_lost &&
		  mq_now_us() - t0 >= (int64_t) (pol.connect_timeout_s - 1) * 1000000,
		  "it ends after connect_timeout (libpq's whole seconds) with no connection (%s)", first_line(&err));
	mq_error_free(&err);

	/* given up while it runs: the thread finishes and frees it alone */
	job = mq_connect_start(info, "t", &pol, &err);
	CHECK(job != NULL, "another attempt on the silent server starts");
	if (job)
		mq_connect_abandon(job);
	CHECK(true, "abandoning an attempt under way returns at once");
	if (fd >= 0)
		close(fd);
}

/*
 * A node connection string of 396 characters (issue 21): libinih's default
 * 200-byte line cut it and refused the rest as a syntax error.
 */
static void
test_config_long_lines(void)
{
	char		conn[512];
	char	   *text = malloc(20000);
	BrokerConfig cfg;
	bool		ok;
	size_t		n;

	snprintf(conn, sizeof(conn), "host=/var/run/postgresql port=5432 dbname=postgres "
			 "connect_timeout=10 keepalives=1 keepalives_idle=30 keepalives_interval=10 "
			 "keepalives_count=3 sslmode=prefer target_session_attrs=read-write "
			 "options='-c statement_timeout=0 -c lock_timeout=0 -c idle_in_transaction_session_timeout=0' "
			 "application_name=");
	n = strlen(conn);
	memset(conn + n, 'x', 396 - n);
	conn[396] = '\0';
	snprintf(text, 20000, "[broker]\nid = 1\nnode = %s\ncoordinator = dbname=c\n", conn);
	ok = broker_config_parse(text, "test.ini", &cfg);
	CHECK(ok, "a 396-character node connection string is accepted");
	CHECK(ok && strcmp(cfg.node, conn) == 0, "and kept whole");
	CHECK(ok && cfg.coordinator && strcmp(cfg.coordinator, "dbname=c") == 0,
		  "the line after it is read as itself");
	broker_config_free(&cfg);

	/* one character beyond the limit: refused, not cut */
	n = (size_t) snprintf(text, 20000, "[broker]\nid = 1\nnode = dbname=x application_name=");
	memset(text + n, 'y', 8193 - (n - strlen("[broker]\nid = 1\n")));
	strcpy(text + 8193 + strlen("[broker]\nid = 1\n"), "\ncoordinator = dbname=c\n");
	CHECK(!broker_config_parse(text, "test.ini", &cfg), "a line of 8193 characters is refused");
	broker_config_free(&cfg);
	n = strlen("[broker]\nid = 1\n");
	text[n + 8192] = '\n';
	strcpy(text + n + 8193, "coordinator = dbname=c\n");
	ok = broker_config_parse(text, "test.ini", &cfg);
	CHECK(ok && strlen(cfg.node) == 8192 - strlen("node = "), "a line of 8192 characters is read whole");
	broker_config_free(&cfg);
	free(text);
}

int
main(void)
{
	mq_progname = "broker_test";
	test_config();
	test_config_long_lines();
	test_batch();
	test_backoff();
	test_policy_params();
	test_connect_job();
	return unit_done();
}
