/*-------------------------------------------------------------------------
 *
 * kmetrics.h
 *	  mq-kafka's Prometheus endpoint (--metrics HOST:PORT) and the counters
 *	  it serves.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KMETRICS_H
#define MQK_KMETRICS_H

#include <stdint.h>

#include "mqkafka.h"

/* serve GET /metrics on host:port in the event loop; exits if it cannot */
extern void kmetrics_start(const char *host, int port);

/* a request of a served API is dispatched (stamps req->started_us) */
extern void kmetrics_request(KRequest *req);
/* a dispatched request is done (answered, or dropped) */
extern void kmetrics_request_done(const KRequest *req);
/* a connection was closed for a request the protocol does not allow */
extern void kmetrics_protocol_error(void);
/* a statement failed with this SQLSTATE ("08006": the connection was lost) */
extern void kmetrics_statement_error(const char *sqlstate);
/* a client connection opened (+1) or closed (-1) */
extern void kmetrics_connection(int delta);
/* the client quotas read and enforced (quota.c) */
extern void kmetrics_client_quotas(int n);
/* a connection muted this long for its client's quota */
extern void kmetrics_throttle(int32_t ms);

#endif							/* MQK_KMETRICS_H */
