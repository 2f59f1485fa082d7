/*-------------------------------------------------------------------------
 *
 * h_metadata.c
 *	  Metadata (v0-v12) and DescribeCluster (v0-v1, below).  Loop thread;
 *	  Metadata runs one job of one or two statements.
 *
 * The brokers are this daemon (--node-id) and its --peer daemons; in a
 * replicated cluster (--coordinator), the live listeners of the cluster's
 * view (cluster.c) instead, so no --peer is needed.  A partition's leader,
 * replicas and in-sync replicas come from the cluster's view when it has
 * the partition (a leader whose listener is not live is
 * LEADER_NOT_AVAILABLE, so clients wait for the election), otherwise from
 * this node's mq.replica_status (mq-broker keeps it; broker ids are node
 * ids); an unreplicated partition is led by this daemon alone.  A replicated
 * partition whose leader is unknown is LEADER_NOT_AVAILABLE.  Unknown
 * topics are UNKNOWN_TOPIC_OR_PARTITION (in a cluster, a topic of the
 * view that this node holds no replica of is named from the view alone,
 * as any Kafka broker names every topic), or are created with
 * mq.create_topic first when --auto-create-topics is set (the default)
 * and the client allows it (v4+); in a cluster on the coordinator instead
 * (meta_create.c), and LEADER_NOT_AVAILABLE until the view has them.  As
 * in Kafka, a topic the client's role may not describe, whether it exists
 * or not, and with automatic creation one it may not create, is
 * TOPIC_AUTHORIZATION_FAILED, so a producer fails at once instead of
 * waiting for its message timeout (creation is not even tried: no error
 * in the server's log).  A name outside Kafka's rule (mq._topic_name_valid)
 * is INVALID_TOPIC_EXCEPTION and never created, as Kafka answers it, for
 * the same reason.
 * __consumer_offsets, Kafka's internal topic of offset commits, is
 * created by mq.ensure_consumer_offsets when a request names it (as Kafka
 * creates it on first need), and is the one is_internal topic; in a
 * cluster it is made on every live node first, and its
 * partitions and leaders come from the view (coffsets.c: each node leads
 * the two its commits go to).  While this node's database is unreachable, every
 * topic is LEADER_NOT_AVAILABLE, so clients ask another broker.
 *
 * v0 (kafka-python's probe, sarama's default) has no broker rack, no
 * controller and no is_internal, and its topic array cannot be null: an
 * empty one asks for every topic, where from v1 on null does.
 *
 * v7+ gives each partition's leader epoch, v9+ is flexible, v10+ gives
 * each topic's id (topic_id.h), and v12 may ask for topics by id (name
 * null): an id no topic has is UNKNOWN_TOPIC_ID with a null name.  As in
 * Kafka, a null name or an id before v12 is an invalid request (the
 * connection closes).  Authorized operations (v8+) are not computed: they
 * are always -2147483648, the value Kafka gives when they are not asked
 * for.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "coffsets.h"
#include "kerr.h"
#include "meta_create.h"
#include "meta_part.h"
#include "pgbinary.h"
#include "topic_id.h"
#include "util.h"

#define ENSURE_OFFSETS_SQL "SELECT mq.ensure_consumer_offsets($1)"
#define OFFSETS_PARTITIONS 10	/* on a node of its own, as Kafka's default is 50 */

/* Metadata's (v2+) and DescribeCluster's */
#define CLUSTER_ID "mq"

#define AUTO_CREATE_SQL \
	"SELECT mq.create_topic(c.t, $2) FROM (" META_CREATABLE_SQL ") c"

typedef struct MetaState
{
	KJob		job;
	int32_t		n;				/* -1: all topics */
	KSlice	   *names;			/* null (v12): asked by id */
	char	   *ids;			/* n ids in hex (33 bytes each) */
	KFan		fan;			/* in a cluster: __consumer_offsets on every node */
	bool		cluster_create; /* in a cluster: unknown topics made first */
	MetaCreate	create;
} MetaState;

static void
meta_state_free(void *p)
{
	MetaState  *s = p;

	kjob_free(&s->job);
	kfan_free(&s->fan);
	meta_create_free(&s->create);
	free(s->names);
	free(s->ids);
	free(s);
}

static void
write_broker(KWriter *w, int16_t v, int32_t id, const char *host, int32_t port)
{
	kw_i32(w, id);
	kw_str(w, host);
	kw_i32(w, port);
	if (v >= 1)
		kw_str(w, NULL);		/* rack */
	kw_tags(w);
}

/*
 * The cluster's live listeners, and this daemon in any case: this one
 * with the address of the listener the client came through (Kafka's
 * advertised.listeners), the others as registered on the coordinator.
 */
static void
write_cluster_brokers(KWriter *w, int16_t v, const char *self_host, int self_port)
{
	size_t		count_at = kw_later(w);
	int32_t		n = 0;
	bool		me = false;

	for (int i = 0; i < cluster_nbrokers(); i++)
	{
		const KBroker *b = cluster_broker_at(i);

		if (!b->live && b->id != kconfig.node_id)
			continue;
		me |= b->id == kconfig.node_id;
		if (b->id == kconfig.node_id)
			write_broker(w, v, b->id, self_host, self_port);
		else
			write_broker(w, v, b->id, b->host, b->port);
		n++;
	}
	if (!me)
	{
		write_broker(w, v, kconfig.node_id, self_host, self_port);
		n++;
	}
	kw_fill_count(w, count_at, n);
}

/* the brokers array, racks included from rack_v on (Metadata v1+) */
static void
write_broker_array(KRequest *req, KWriter *w, int16_t rack_v)
{
	const char *host;
	int			port;

	conn_advertised(req->conn, &host, &port);
	if (cluster_enabled())
		write_cluster_brokers(w, rack_v, host, port);
	else
	{
		kw_array(w, 1 + kconfig.npeers);
		write_broker(w, rack_v, kconfig.node_id, host, port);
		for (int i = 0; i < kconfig.npeers; i++)
			write_broker(w, rack_v, kconfig.peers[i].id, kconfig.peers[i].host, kconfig.peers[i].port);
	}
}

static void
write_brokers(KRequest *req, KWriter *w, int16_t v)
{
	write_broker_array(req, w, v);
	if (v >= 2)
		kw_str(w, CLUSTER_ID);
	if (v >= 1)
		kw_i32(w, kconfig.node_id);	/* controller_id */
}

/* the first row of res of the topic with this name, or (name null) id */
static int
topic_row(PGresult *res, KSlice name, const char *id)
{
	int			row = 0;

	while (res && row < PQntuples(res) &&
		   !(name.len >= 0 ? kslice_eq(name, PQgetvalue(res, row, 0))
			 : strcmp(id, PQgetvalue(res, row, 6)) == 0))
		row++;
	return row;
}

/* one topic: its rows of res (sorted by name), or the error if it has none */
static void
write_topic(KWriter *w, int16_t v, KSlice name, const char *id, PGresult *res, int16_t error)
{
	size_t		count_at;
	int32_t		n = 0;
	int			row = topic_row(res, name, id);
	uint8_t		uuid[16];

	if (res && row < PQntuples(res) && PQgetvalue(res, row, 1)[0] == '-')
	{
		if (error == KERR_NONE)
			error = strcmp(PQgetvalue(res, row, 1), "-1") == 0 ? KERR_INVALID_TOPIC_EXCEPTION
				: KERR_TOPIC_AUTHORIZATION_FAILED;
		res = NULL;				/* an invalid or forbidden name: no partitions */
	}
	if (res && row == PQntuples(res) && error == KERR_NONE)
		error = name.len >= 0 ? KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_UNKNOWN_TOPIC_ID;
	if (res && row < PQntuples(res))
	{
		name.p = (const uint8_t *) PQgetvalue(res, row, 0);
		name.len = PQgetlength(res, row, 0);
		id = PQgetvalue(res, row, 6);
	}
	kw_i16(w, error);
	kw_strn(w, name.p, name.len);
	if (v >= 10)
	{
		(void) topic_id_from_hex(error == KERR_NONE || name.len < 0 ? id : NULL, uuid);
		kw_uuid(w, uuid);
	}
	if (v >= 1)					/* is_internal */
		kw_i8(w, kslice_eq(name, CONSUMER_OFFSETS_TOPIC) ? 1 : 0);
	count_at = kw_later(w);
	if (cluster_enabled() && error == KERR_NONE && kslice_eq(name, CONSUMER_OFFSETS_TOPIC))
		n = meta_write_offsets_partitions(w, v, false, 0, INT32_MAX);
	else
		for (; res && row < PQntuples(res) && kslice_eq(name, PQgetvalue(res, row, 0)); row++, n++)
			meta_write_partition(w, v, false, res, row);
	kw_fill_count(w, count_at, n);
	if (v >= 8)
		kw_i32(w, INT32_MIN_OPS);	/* topic authorized operations */
	kw_tags(w);
}

/*
 * Name i was made on the coordinator by this request (meta_create.c) and
 * the view has none of it yet: LEADER_NOT_AVAILABLE, on which clients ask
 * again, as a Kafka cluster answers a topic it has just created.
 */
static bool
just_made(MetaState *s, KStmt *st, int32_t i)
{
	return s->cluster_create && meta_create_made(&s->create, s->names[i]) &&
		(st->res == NULL || topic_row(st->res, s->names[i], NULL) == PQntuples(st->res));
}

static void
metadata_done(KRequest *req)
{
	MetaState  *s = req->state;
	KWriter    *w = &req->resp;
	int16_t		v = req->api_version;
	KStmt	   *st = &s->job.stmts[s->job.n - 1];
	int16_t		code;

	if (kstmt_failed(st, &code))
		mq_log_warning("metadata: %s", st->err.message);
	/*
	 * Retriable: clients ask again (or elsewhere).  Any other topic error
	 * in a Metadata answer fails a producer's queued messages for good in
	 * librdkafka; a lock_timeout behind DDL on the topic's tables is not
	 * the topic's fault.
	 */
	if (st->err.connection_lost || mq_error_is_transient(&st->err))
		code = KERR_LEADER_NOT_AVAILABLE;
	if (v >= 3)
		kw_i32(w, 0);			/* throttle */
	write_brokers(req, w, v);
	if (s->n >= 0)
	{
		kw_array(w, s->n);
		for (int32_t i = 0; i < s->n; i++)
			write_topic(w, v, s->names[i], s->ids + 33 * i, st->res,
						just_made(s, st, i) ? KERR_LEADER_NOT_AVAILABLE : code);
	}
	else
	{
		size_t		count_at = kw_later(w);
		int32_t		topics = 0;

		for (int row = 0; st->res && row < PQntuples(st->res); topics++)
		{
			const char *name = PQgetvalue(st->res, row, 0);
			KSlice		sl = {(const uint8_t *) name, (int32_t) strlen(name)};

			write_topic(w, v, sl, NULL, st->res, KERR_NONE);
			while (row < PQntuples(st->res) && strcmp(PQgetvalue(st->res, row, 0), name) == 0)
				row++;
		}
		kw_fill_count(w, count_at, topics);
	}
	if (v >= 8 && v <= 10)
		kw_i32(w, INT32_MIN_OPS);	/* cluster authorized operations */
	req_finish(req);
}

static void
metadata_query(KRequest *req)
{
	MetaState  *s = req->state;

	pool_run(req, &s->job, metadata_done);
}

/* __consumer_offsets is on every live node: now the metadata */
static void
offsets_ensured(KRequest *req)
{
	MetaState  *s = req->state;
	int16_t		code;

	for (int i = 0; i < s->fan.n; i++)
		if (kstmt_failed(&s->fan.routes[i]->job.stmts[0], &code))
			mq_log_warning("cannot make __consumer_offsets on a node: %s",
						   s->fan.routes[i]->job.stmts[0].err.message);
	if (s->cluster_create)
		meta_create_run(&s->create, req, s->names, s->n, metadata_query);
	else
		metadata_query(req);
}

void
h_metadata(KRequest *req)
{
	KReader    *r = &req->body;
	MetaState  *s = mq_malloc0(sizeof(MetaState));
	MqArray		arr,
				idarr;
	bool		byid = false;
	bool		allow_auto = true;
	KStmt	   *st;

	req->state = s;
	req->free_state = meta_state_free;
	s->n = kr_array(r, 2);
	if (req->api_version == 0 && s->n == 0)
		s->n = -1;				/* v0: an empty array is every topic */
	s->names = mq_malloc0(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	s->ids = mq_malloc0(33 * (s->n > 0 ? s->n : 1));
	mq_array_init(&arr, MQ_TEXTOID);
	mq_array_init(&idarr, MQ_TEXTOID);
	for (int32_t i = 0; i < s->n; i++)
	{
		KSlice		id = {NULL, 0};
		static const uint8_t zero[16];

		if (req->api_version >= 10)
			id = kr_uuid(r);
		s->names[i] = kr_str(r);
		kr_tags(r);
		if (id.len == 16 && memcmp(id.p, zero, 16) != 0)
		{
			topic_id_to_hex(id.p, s->ids + 33 * i);
			mq_array_add(&idarr, s->ids + 33 * i, 32);
			byid = true;
		}
		if ((s->names[i].len < 0 || byid) && req->api_version < 12)
			r->err = true;		/* Kafka: an invalid request */
		if (s->names[i].len >= 0)
			mq_array_add(&arr, s->names[i].p, s->names[i].len);
	}
	if (req->api_version >= 4)
		allow_auto = kr_i8(r) != 0;
	if (r->err)
	{
		mq_array_free(&arr);
		mq_array_free(&idarr);
		req_abort(req);
		return;
	}
	for (int32_t i = 0; i < s->n; i++)
		if (s->names[i].len >= 0 && kslice_eq(s->names[i], CONSUMER_OFFSETS_TOPIC))
		{
			if (cluster_enabled())
				coffsets_add_ensures(&s->fan, coffsets_partitions());
			else
				kstmt_int(kjob_add(&s->job, ENSURE_OFFSETS_SQL, 0), MQ_INT4OID, OFFSETS_PARTITIONS);
			break;
		}
	allow_auto = allow_auto && s->n > 0 && kconfig.auto_create_partitions > 0;
	s->cluster_create = allow_auto && cluster_enabled();
	if (allow_auto && !s->cluster_create)
	{
		st = kjob_add(&s->job, AUTO_CREATE_SQL, 0);
		kstmt_array(st, MQ_TEXTARRAYOID, &arr);
		kstmt_int(st, MQ_INT4OID, kconfig_num_partitions());
	}
	st = kjob_add(&s->job, s->n < 0 ? METADATA_ALL_SQL : METADATA_SQL, 0);
	if (s->n < 0)
		kstmt_text(st, MQ_TEXTARRAYOID, NULL);
	else
		kstmt_array(st, MQ_TEXTARRAYOID, &arr);
	kstmt_array(st, MQ_TEXTARRAYOID, &idarr);
	meta_add_view_partitions(st);
	kstmt_text(st, MQ_BOOLOID, allow_auto ? "t" : "f");
	mq_array_free(&arr);
	mq_array_free(&idarr);
	if (s->fan.n > 0)
		kfan_run(&s->fan, req, offsets_ensured);
	else
		offsets_ensured(req);
}

/*
 * DescribeCluster (v0-v1, flexible; KIP-700): the brokers Metadata lists,
 * the cluster id and this daemon as the controller, without a database
 * round trip.  v1's endpoint type 2 (controllers, KIP-919) is
 * MISMATCHED_ENDPOINT_TYPE, as a Kafka broker answers: mq has no
 * controller quorum to list; any type but 1 and 2 is
 * UNSUPPORTED_ENDPOINT_TYPE, as Kafka 3.9's (its message too).  An error
 * answers what Kafka's does: cluster id "", controller -1, no brokers.
 * Authorized operations are not computed.
 */
void
h_describe_cluster(KRequest *req)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int8_t		endpoint = 1;	/* brokers */
	int16_t		error = KERR_NONE;
	const char *message = NULL;
	char		msg[64];

	(void) kr_i8(r);			/* include_cluster_authorized_operations */
	if (req->api_version >= 1)
		endpoint = kr_i8(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (endpoint == 2)
	{
		error = KERR_MISMATCHED_ENDPOINT_TYPE;
		message = "mq-kafka serves broker endpoints only";
	}
	else if (endpoint != 1)
	{
		error = KERR_UNSUPPORTED_ENDPOINT_TYPE;
		snprintf(msg, sizeof(msg), "Unsupported endpoint type %d", endpoint);
		message = msg;
	}
	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, error);
	kw_str(w, message);
	if (req->api_version >= 1)
		kw_i8(w, 1);			/* endpoint_type: brokers */
	kw_str(w, error != KERR_NONE ? "" : CLUSTER_ID);
	kw_i32(w, error != KERR_NONE ? -1 : kconfig.node_id);	/* controller_id */
	if (error != KERR_NONE)
		kw_array(w, 0);
	else
		write_broker_array(req, w, 1);
	kw_i32(w, INT32_MIN_OPS);	/* cluster_authorized_operations */
	req_finish(req);
}
