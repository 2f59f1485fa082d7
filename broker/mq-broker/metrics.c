/*-------------------------------------------------------------------------
 *
 * metrics.c
 *	  mq-broker's Prometheus endpoint: GET /metrics on [metrics] address,
 *	  served with libmicrohttpd from the broker's own event loop.
 *
 * The daemon runs in libmicrohttpd's external epoll mode: loop.c adds the
 * daemon's one epoll descriptor to the poll() that also waits on the
 * followers' fetches, and calls metrics_run() after it (no fd_set, so no
 * FD_SETSIZE limit on any descriptor number).  So a scrape is answered by the one
 * broker thread between two steps of its work, from the values the broker
 * already keeps (broker.h: what leader_duties read from the node on the
 * last tick, what the last fetch brought), without locks and without
 * querying any database: a scrape cannot stall replication, and a node
 * that does not answer cannot stall a scrape.
 *
 * Samples that are not known yet (a partition never fetched, a follower
 * never seen) are left out rather than reported as 0.
 *
 *-------------------------------------------------------------------------
 */
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "broker.h"
#include "util.h"

static struct MHD_Daemon *daemon_ = NULL;

/* A growing text buffer for one scrape. */
typedef struct Text
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Text;

static void
text_add(Text *t, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (t->data == NULL)
	{
		/* never form data + len from a null pointer (undefined behaviour) */
		t->cap = 4096;
		t->data = mq_malloc(t->cap);
		t->len = 0;
	}
	for (;;)
	{
		va_start(ap, fmt);
		n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t) n < t->cap - t->len)
		{
			t->len += n;
			return;
		}
		t->cap = t->cap * 2 + (n > 0 ? n : 0) + 256;
		t->data = mq_realloc(t->data, t->cap);
	}
}

static void
family(Text *t, const char *name, const char *type, const char *help)
{
	text_add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * Label values: topic names are [A-Za-z0-9._-] (Kafka's rule, checked by
 * mq.create_topic), but escape as the format requires anyway.
 */
static const char *
esc(const char *s)
{
	static char buf[1024];
	size_t		n = 0;

	for (; s && *s && n < sizeof(buf) - 3; s++)
	{
		if (*s == '\\' || *s == '"')
			buf[n++] = '\\';
		if (*s == '\n')
		{
			buf[n++] = '\\';
			buf[n++] = 'n';
			continue;
		}
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

/* {topic="t",partition="0"} for a partition sample */
static void
part_sample(Text *t, const char *name, const Part *p, long long value)
{
	text_add(t, "%s{topic=\"%s\",partition=\"%d\"} %lld\n", name, esc(p->topic), p->partition, value);
}

/* A follower's throttled copy, and a leader's view of its followers. */
static void
render_copies(Broker *b, Text *t)
{
	family(t, "mq_partition_copy_rate_bytes", "gauge",
		   "Follower copying under a reassignment throttle: its share, bytes/s (absent: no limit).");
	for (Part *p = b->parts; p; p = p->next)
		if (p->copy_rate > 0 && p->state != PART_LEADER)
			part_sample(t, "mq_partition_copy_rate_bytes", p, p->copy_rate);

	family(t, "mq_follower_lag_records", "gauge",
		   "Leader: records between its log end and a follower's last fetch offset.");
	for (Part *p = b->parts; p; p = p->next)
		for (int i = 0; p->state == PART_LEADER && i < p->nfollowers; i++)
			if (p->followers[i].log_end >= 0)
				text_add(t, "mq_follower_lag_records{topic=\"%s\",partition=\"%d\",replica=\"%d\"} %lld\n",
						 esc(p->topic), p->partition, p->followers[i].id,
						 (long long) (p->m_log_end > p->followers[i].log_end ?
									  p->m_log_end - p->followers[i].log_end : 0));
	family(t, "mq_follower_lag_ms", "gauge",
		   "Leader: milliseconds since a follower last caught up (Kafka's lastCaughtUpTime rule).");
	for (Part *p = b->parts; p; p = p->next)
		for (int i = 0; p->state == PART_LEADER && i < p->nfollowers; i++)
			text_add(t, "mq_follower_lag_ms{topic=\"%s\",partition=\"%d\",replica=\"%d\"} %lld\n",
					 esc(p->topic), p->partition, p->followers[i].id, (long long) p->followers[i].lag_ms);
	family(t, "mq_follower_in_sync", "gauge", "Leader: 1 when the follower is in the partition's ISR.");
	for (Part *p = b->parts; p; p = p->next)
		for (int i = 0; p->state == PART_LEADER && i < p->nfollowers; i++)
			text_add(t, "mq_follower_in_sync{topic=\"%s\",partition=\"%d\",replica=\"%d\"} %d\n",
					 esc(p->topic), p->partition, p->followers[i].id, p->followers[i].in_isr ? 1 : 0);
}

static void
render(Broker *b, Text *t)
{
	int			me = b->cfg->broker_id;
	int			nparts = 0,
				nled = 0,
				nunder = 0;

	for (Part *p = b->parts; p; p = p->next)
	{
		bool		leads = p->state == PART_LEADER;

		nparts++;
		nled += leads;
		/* Kafka's UnderReplicatedPartitions: counted by the leader */
		nunder += leads && p->nisr < p->nreplicas;
	}

	family(t, "mq_broker_info", "gauge", "This broker: its id and node (value always 1).");
	text_add(t, "mq_broker_info{broker=\"%d\",node=\"%s\",version=\"%s\"} 1\n", me,
			 esc(b->cfg->node_name ? b->cfg->node_name : ""), MQ_VERSION);
	family(t, "mq_broker_live", "gauge",
		   "1 while the broker holds its liveness lock on the coordinator (it counts as a live replica).");
	text_add(t, "mq_broker_live %d\n", b->live ? 1 : 0);
	family(t, "mq_broker_node_connected", "gauge", "1 while the broker is connected to its data node.");
	text_add(t, "mq_broker_node_connected %d\n", b->node ? 1 : 0);
	family(t, "mq_broker_coordinator_connected", "gauge", "1 while the broker is connected to the coordinator.");
	text_add(t, "mq_broker_coordinator_connected %d\n", b->coord ? 1 : 0);
	family(t, "mq_broker_partitions", "gauge", "Partition replicas assigned to this broker.");
	text_add(t, "mq_broker_partitions %d\n", nparts);
	family(t, "mq_broker_leader_partitions", "gauge", "Partitions this broker leads.");
	text_add(t, "mq_broker_leader_partitions %d\n", nled);
	family(t, "mq_broker_under_replicated_partitions", "gauge",
		   "Partitions this broker leads whose ISR is smaller than their replica set.");
	text_add(t, "mq_broker_under_replicated_partitions %d\n", nunder);
	family(t, "mq_broker_elections_total", "counter", "Leader elections this broker won.");
	text_add(t, "mq_broker_elections_total %lld\n", (long long) b->stats.elections);
	family(t, "mq_broker_isr_shrinks_total", "counter", "ISR shrinks this broker made as a leader.");
	text_add(t, "mq_broker_isr_shrinks_total %lld\n", (long long) b->stats.isr_shrinks);
	family(t, "mq_broker_isr_expands_total", "counter", "ISR expansions this broker made as a leader.");
	text_add(t, "mq_broker_isr_expands_total %lld\n", (long long) b->stats.isr_expands);
	family(t, "mq_broker_leader_handovers_total", "counter",
		   "Leaderships this broker handed to the preferred replica (auto.leader.rebalance).");
	text_add(t, "mq_broker_leader_handovers_total %lld\n", (long long) b->stats.handovers);
	family(t, "mq_broker_truncations_total", "counter",
		   "Divergent log suffixes this broker truncated by leader epoch as a follower.");
	text_add(t, "mq_broker_truncations_total %lld\n", (long long) b->stats.truncations);

	family(t, "mq_partition_leader", "gauge", "Broker id of the partition's leader per the coordinator (-1: none).");
	for (Part *p = b->parts; p; p = p->next)
		part_sample(t, "mq_partition_leader", p, p->leader);
	family(t, "mq_partition_leader_epoch", "gauge", "The partition's leader epoch per the coordinator.");
	for (Part *p = b->parts; p; p = p->next)
		part_sample(t, "mq_partition_leader_epoch", p, p->leader_epoch);
	family(t, "mq_partition_is_leader", "gauge", "1 when this broker's node leads the partition.");
	for (Part *p = b->parts; p; p = p->next)
		part_sample(t, "mq_partition_is_leader", p, p->state == PART_LEADER);
	family(t, "mq_partition_replicas", "gauge", "Replicas of the partition (its replication factor).");
	for (Part *p = b->parts; p; p = p->next)
		part_sample(t, "mq_partition_replicas", p, p->nreplicas);
	family(t, "mq_partition_isr_size", "gauge", "In-sync replicas of the partition per the coordinator.");
	for (Part *p = b->parts; p; p = p->next)
		part_sample(t, "mq_partition_isr_size", p, p->nisr);
	family(t, "mq_partition_log_end_offset", "gauge",
		   "This replica's log end offset (leader: as of its last tick; follower: after its last append).");
	for (Part *p = b->parts; p; p = p->next)
		if (p->m_log_end >= 0)
			part_sample(t, "mq_partition_log_end_offset", p, p->m_log_end);
	family(t, "mq_partition_high_watermark", "gauge",
		   "The leader's high watermark (on a follower: as its last fetch reported it).");
	for (Part *p = b->parts; p; p = p->next)
		if (p->m_hwm >= 0)
			part_sample(t, "mq_partition_high_watermark", p, p->m_hwm);
	family(t, "mq_partition_fetch_lag_records", "gauge",
		   "Follower: records the leader had beyond this replica's log end at its last fetch.");
	for (Part *p = b->parts; p; p = p->next)
		if (p->state != PART_LEADER && p->m_leader_log_end >= 0 && p->m_log_end >= 0)
			part_sample(t, "mq_partition_fetch_lag_records", p,
						p->m_leader_log_end > p->m_log_end ? p->m_leader_log_end - p->m_log_end : 0);

	render_copies(b, t);
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	   const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	Broker	   *b = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;
	Text		t = {NULL, 0, 0};

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
	{
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		text_add(&t, "only GET and HEAD\n");
	}
	else if (strcmp(url, "/metrics") == 0)
		render(b, &t);
	else if (strcmp(url, "/") == 0)
		text_add(&t, "mq-broker %d: metrics at /metrics\n", b->cfg->broker_id);
	else
	{
		status = MHD_HTTP_NOT_FOUND;
		text_add(&t, "not found: metrics are at /metrics\n");
	}
	resp = MHD_create_response_from_buffer(t.len, t.data, MHD_RESPMEM_MUST_COPY);
	free(t.data);
	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * Listen on address ("host:port", "[v6]:port" or ":port" for all IPv4
 * interfaces).  Returns false, having said why, when it cannot.
 */
bool
metrics_start(Broker *b, const char *address)
{
	char	   *copy = mq_strdup(address);
	char	   *host = copy;
	char	   *port = strrchr(copy, ':');
	struct addrinfo hints,
			   *ai = NULL;
	int			rc;
	unsigned int flags = MHD_USE_ERROR_LOG | MHD_USE_EPOLL;

	if (port == NULL || port[1] == '\0')
	{
		mq_log_error("[metrics] address \"%s\" must be host:port", address);
		free(copy);
		return false;
	}
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']')
	{
		host[strlen(host) - 1] = '\0';
		host++;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc != 0)
	{
		mq_log_error("[metrics] address \"%s\": %s", address, gai_strerror(rc));
		free(copy);
		return false;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	daemon_ = MHD_start_daemon(flags, 0, NULL, NULL, answer, b,
							   MHD_OPTION_SOCK_ADDR, ai->ai_addr,
							   MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 16,
							   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 10,
							   MHD_OPTION_END);
	freeaddrinfo(ai);
	if (daemon_ == NULL)
	{
		mq_log_error("cannot serve metrics on %s (address in use?)", address);
		free(copy);
		return false;
	}
	mq_log_info("serving Prometheus metrics on http://%s/metrics", address);
	free(copy);
	return true;
}

/* The daemon's epoll descriptor for loop.c's poll(); lower *timeout_ms if it must run sooner. */
int
metrics_pollfds(struct pollfd *fds, int64_t *timeout_ms)
{
	const union MHD_DaemonInfo *info;
	MHD_UNSIGNED_LONG_LONG ms;

	if (daemon_ == NULL)
		return 0;
	info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL)
		return 0;
	fds[0].fd = info->epoll_fd;
	fds[0].events = POLLIN;
	fds[0].revents = 0;
	if (MHD_get_timeout(daemon_, &ms) == MHD_YES && (int64_t) ms < *timeout_ms)
		*timeout_ms = (int64_t) ms;
	return 1;
}

/* After poll(): let the daemon accept, read and answer what is ready. */
void
metrics_run(void)
{
	if (daemon_ != NULL)
		MHD_run(daemon_);
}

void
metrics_stop(void)
{
	if (daemon_ != NULL)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
}
