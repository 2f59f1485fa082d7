/*-------------------------------------------------------------------------
 *
 * kmetrics.c
 *	  mq-kafka's Prometheus endpoint: with --metrics HOST:PORT, GET
 *	  /metrics in Prometheus text format, served by libevent's evhttp on
 *	  the daemon's own event loop; and the counters it serves.
 *
 * The counters are plain integers the loop thread bumps as requests pass
 * (api.c dispatches, kconn.c frees, pool.c takes a failed statement's
 * error, the listener accepts and closes): a scrape reads them between two events,
 * without locks and without a database, so it cannot stall a client and a
 * database that does not answer cannot stall a scrape.  They count from
 * the process's start (Prometheus takes a restart as a counter reset).
 * Every API the daemon serves has its series from the start, at 0, so
 * that rates exist before the first request.
 *
 * A request's time runs from its dispatch to its response (or its drop):
 * a Fetch's includes its long-poll wait, a JoinGroup's its rebalance.
 *
 *-------------------------------------------------------------------------
 */
#include "kmetrics.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "util.h"

#define KM_MAX_API 64
#define KM_MAX_STATES 32		/* distinct SQLSTATEs counted apart; then "other" */

static const char *const api_names[KM_MAX_API] = {
	[0] = "Produce", [1] = "Fetch", [2] = "ListOffsets", [3] = "Metadata",
	[8] = "OffsetCommit", [9] = "OffsetFetch", [10] = "FindCoordinator",
	[11] = "JoinGroup", [12] = "Heartbeat", [13] = "LeaveGroup", [14] = "SyncGroup",
	[15] = "DescribeGroups", [16] = "ListGroups", [17] = "SaslHandshake",
	[18] = "ApiVersions", [19] = "CreateTopics", [20] = "DeleteTopics",
	[21] = "DeleteRecords", [22] = "InitProducerId", [32] = "DescribeConfigs",
	[33] = "AlterConfigs", [36] = "SaslAuthenticate", [37] = "CreatePartitions",
	[42] = "DeleteGroups", [44] = "IncrementalAlterConfigs", [48] = "DescribeClientQuotas",
	[49] = "AlterClientQuotas",
};

static struct
{
	int64_t		requests[KM_MAX_API];
	int64_t		request_us[KM_MAX_API];
	int64_t		protocol_errors;
	int64_t		statement_errors;
	int			nstates;
	char		state[KM_MAX_STATES][6];
	int64_t		by_state[KM_MAX_STATES + 1];	/* the last: "other" */
	int64_t		connections;
	int64_t		connections_total;
	int64_t		client_quotas;
	int64_t		throttle_ms;
}			km;

static bool
known_api(int16_t key)
{
	return key >= 0 && key < KM_MAX_API && api_names[key] != NULL;
}

void
kmetrics_request(KRequest *req)
{
	req->started_us = mq_now_us();
	if (known_api(req->api_key))
		km.requests[req->api_key]++;
}

void
kmetrics_request_done(const KRequest *req)
{
	if (req->started_us > 0 && known_api(req->api_key))
		km.request_us[req->api_key] += mq_now_us() - req->started_us;
}

void
kmetrics_protocol_error(void)
{
	km.protocol_errors++;
}

void
kmetrics_statement_error(const char *sqlstate)
{
	int			i;

	km.statement_errors++;
	for (i = 0; i < km.nstates; i++)
		if (strncmp(km.state[i], sqlstate, 5) == 0)
			break;
	if (i == km.nstates && i < KM_MAX_STATES && strlen(sqlstate) == 5)
		snprintf(km.state[km.nstates++], sizeof(km.state[0]), "%s", sqlstate);
	km.by_state[i < km.nstates ? i : KM_MAX_STATES]++;
}

void
kmetrics_connection(int delta)
{
	km.connections += delta;
	if (delta > 0)
		km.connections_total += delta;
}

void
kmetrics_client_quotas(int n)
{
	km.client_quotas = n;
}

void
kmetrics_throttle(int32_t ms)
{
	km.throttle_ms += ms;
}

static void
family(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
render(struct evbuffer *b)
{
	family(b, "mq_kafka_info", "gauge", "This mq-kafka: its node id and version (value always 1).");
	evbuffer_add_printf(b, "mq_kafka_info{node_id=\"%d\",version=\"%s\"} 1\n", kconfig.node_id, MQ_VERSION);
	family(b, "mq_kafka_requests_total", "counter", "Requests dispatched, by Kafka API.");
	for (int k = 0; k < KM_MAX_API; k++)
		if (api_names[k])
			evbuffer_add_printf(b, "mq_kafka_requests_total{api=\"%s\"} %lld\n", api_names[k],
								(long long) km.requests[k]);
	family(b, "mq_kafka_request_seconds_total", "counter",
		   "Time from dispatch to response, summed by Kafka API (Fetch: its long-poll wait included).");
	for (int k = 0; k < KM_MAX_API; k++)
		if (api_names[k])
			evbuffer_add_printf(b, "mq_kafka_request_seconds_total{api=\"%s\"} %.6f\n", api_names[k],
								km.request_us[k] / 1e6);
	family(b, "mq_kafka_statement_errors_total", "counter",
		   "Database statements that failed (each becomes a Kafka error code for its client).");
	evbuffer_add_printf(b, "mq_kafka_statement_errors_total %lld\n", (long long) km.statement_errors);
	family(b, "mq_kafka_statement_errors_by_sqlstate_total", "counter",
		   "Failed statements by SQLSTATE (those seen so far; 08006: connection lost).");
	for (int i = 0; i < km.nstates; i++)
		evbuffer_add_printf(b, "mq_kafka_statement_errors_by_sqlstate_total{sqlstate=\"%s\"} %lld\n",
							km.state[i], (long long) km.by_state[i]);
	if (km.by_state[KM_MAX_STATES] > 0)
		evbuffer_add_printf(b, "mq_kafka_statement_errors_by_sqlstate_total{sqlstate=\"other\"} %lld\n",
							(long long) km.by_state[KM_MAX_STATES]);
	family(b, "mq_kafka_protocol_errors_total", "counter",
		   "Connections closed for a request the protocol does not allow (bad frame, unknown API or version, no SASL).");
	evbuffer_add_printf(b, "mq_kafka_protocol_errors_total %lld\n", (long long) km.protocol_errors);
	family(b, "mq_kafka_connections", "gauge", "Client connections open.");
	evbuffer_add_printf(b, "mq_kafka_connections %lld\n", (long long) km.connections);
	family(b, "mq_kafka_connections_total", "counter", "Client connections accepted.");
	evbuffer_add_printf(b, "mq_kafka_connections_total %lld\n", (long long) km.connections_total);
	family(b, "mq_kafka_client_quotas", "gauge", "Client quotas read from the database and enforced.");
	evbuffer_add_printf(b, "mq_kafka_client_quotas %lld\n", (long long) km.client_quotas);
	family(b, "mq_kafka_throttle_seconds_total", "counter",
		   "Time connections were muted for going over their client quota.");
	evbuffer_add_printf(b, "mq_kafka_throttle_seconds_total %.3f\n", km.throttle_ms / 1e3);
}

static void
reply(struct evhttp_request *req, int status, const char *reason, struct evbuffer *b)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
					  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, status, reason, b);
}

static void
on_metrics(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
	{
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	render(b);
	reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

static void
on_other(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
	{
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evbuffer_add_printf(b, "not found: metrics are at /metrics\n");
	reply(req, HTTP_NOTFOUND, "Not Found", b);
	evbuffer_free(b);
}

void
kmetrics_start(const char *host, int port)
{
	struct evhttp *http = evhttp_new(kbase);

	if (http == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "cannot create the metrics server");
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_timeout(http, 10);
	evhttp_set_cb(http, "/metrics", on_metrics, NULL);
	evhttp_set_gencb(http, on_other, NULL);
	if (evhttp_bind_socket_with_handle(http, host, (uint16_t) port) == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "cannot serve metrics on %s:%d (address in use?)", host, port);
	mq_log_info("serving Prometheus metrics on http://%s:%d/metrics", host, port);
}
