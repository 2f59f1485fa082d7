/*-------------------------------------------------------------------------
 *
 * h_client_metrics.c
 *	  ListClientMetricsResources (v0, flexible; KIP-714): the client
 *	  metrics subscriptions a broker holds.  Loop thread; one statement,
 *	  the client's right.
 *
 * mq keeps no client metrics subscriptions (IncrementalAlterConfigs of a
 * CLIENT_METRICS resource is INVALID_REQUEST, and mq-kafka does not
 * advertise the telemetry APIs clients would push metrics with), so the
 * list is empty, as a Kafka broker's is before any is configured.  As in
 * Kafka it needs DESCRIBE_CONFIGS on the cluster (mq: DESCRIBE on it),
 * else CLUSTER_AUTHORIZATION_FAILED.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include "kacl.h"
#include "kerr.h"
#include "util.h"

static void
client_metrics_done(KRequest *req)
{
	KJob	   *job = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, kacl_cluster_code(&job->stmts[0]));
	kw_array(w, 0);				/* client_metrics_resources */
	req_finish(req);
}

void
h_list_client_metrics_resources(KRequest *req)
{
	KJob	   *job = mq_malloc0(sizeof(KJob));

	req->state = job;
	req->free_state = kjob_free_state;
	kacl_add_cluster_check(job, "describe");
	pool_run(req, job, client_metrics_done);
}
