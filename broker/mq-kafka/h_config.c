/*-------------------------------------------------------------------------
 *
 * h_config.c
 *	  DescribeConfigs (v0-v4): a topic's configuration as mq keeps it
 *	  (mq.topics.config, the keys set at creation or with mq.alter_topic,
 *	  normalised by mq).  Loop thread; one statement per topic resource,
 *	  on the node that answers it.
 *
 * With include_synonyms (v1+) each key lists its synonyms as Kafka does:
 * a topic's value set on it, then the broker's default under the broker's
 * name (broker_synonyms), or the default alone.
 * A topic's configs need Kafka's DESCRIBE_CONFIGS on it, implied by
 * ALTER_CONFIGS: mq's alter on the topic (else TOPIC_AUTHORIZATION_FAILED,
 * whether it exists or not, as Kafka).
 * The keys that are set are listed with source DYNAMIC_TOPIC_CONFIG, the
 * others mq knows with their defaults (mq.config_defaults(): what mq does
 * while a key is not set) as DEFAULT_CONFIG, is_default in v0, so that
 * tools show a full config.  A broker resource naming this daemon's id
 * is answered with what this broker does, read-only: mq's topic defaults
 * under Kafka's broker names for them (log.retention.ms for
 * retention.ms, message.max.bytes for max.message.bytes, ...: the
 * synonyms Kafka lists), as DEFAULT_CONFIG, and this daemon's own
 * settings (broker.id, auto.create.topics.enable, num.partitions,
 * default.replication.factor, group.initial.rebalance.delay.ms, the
 * session timeout bounds group.min/max.session.timeout.ms) as
 * STATIC_BROKER_CONFIG, to a client with DESCRIBE on the cluster (else
 * CLUSTER_AUTHORIZATION_FAILED, as in Kafka); as in Kafka, the name ""
 * (the cluster's dynamic defaults, none here) gets no configs and another
 * broker's id INVALID_REQUEST (clients ask each broker about itself).
 * A topic name outside Kafka's rule (topic_name.c) is
 * INVALID_TOPIC_EXCEPTION with Kafka's message, once DESCRIBE_CONFIGS is
 * granted, as Kafka 3.9's ConfigHelper.  Other resource types
 * get INVALID_REQUEST.  v3+ answers each
 * key's type as UNKNOWN (0) and no documentation (null), which Kafka's
 * schema allows; v4+ is flexible.  In a replicated cluster a replicated
 * topic is described by a node holding it (cluster_topic_pool: clients
 * ask any daemon), as the client.  When that node cannot be reached (its
 * database down: the topic's only node, or every replica's), the topic's
 * config is the coordinator's copy (mq_coord.topic, read as the daemon),
 * as Kafka answers from the controller's: rendered by the same statement
 * on this node, with its defaults, after DESCRIBE_CONFIGS is checked
 * here, as the client; only when the coordinator cannot be read either
 * does the node's KAFKA_STORAGE_ERROR stand.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kacl.h"
#include "kerr.h"
#include "kfan.h"
#include "pgbinary.h"
#include "topic_name.h"
#include "util.h"

#define RESOURCE_TOPIC	2
#define RESOURCE_BROKER 4
#define SOURCE_DYNAMIC_TOPIC_CONFIG 1
#define SOURCE_STATIC_BROKER_CONFIG 4
#define SOURCE_DEFAULT_CONFIG 5

/*
 * A topic's keys in config (t.config of from, where cond), each with its
 * value, whether it is a default, the default (mq.config_defaults() read
 * once); no rows: unknown topic.  One rendering for both copies of a
 * config: this node's topic, and the coordinator's of a replicated topic.
 */
#define RENDER_SQL(from, cond) \
	"SELECT c.k, c.v, c.d, dft.j ->> c.k FROM " from \
	" CROSS JOIN (SELECT mq.config_defaults() AS j) dft CROSS JOIN LATERAL" \
	" (SELECT k, v, false FROM jsonb_each_text(t.config) s(k, v)" \
	"  UNION ALL SELECT k, v, true FROM jsonb_each_text(dft.j) d(k, v)" \
	"   WHERE NOT t.config ? k) c(k, v, d)" \
	" WHERE " cond " ORDER BY c.k"
#define CONFIG_SQL RENDER_SQL("mq.topics t", "t.topic = $1")
/* $1: the coordinator's config of the topic, NULL if it has none */
#define STORED_CONFIG_SQL RENDER_SQL("(SELECT $1::jsonb) t(config)", "t.config IS NOT NULL")
/* on the coordinator, as the daemon: a replicated topic's config, the cluster's */
#define COORD_CONFIG_SQL "SELECT config FROM mq_coord.topic WHERE topic = $1"

/*
 * Kafka's DESCRIBE_CONFIGS on a topic, which its ALTER_CONFIGS implies:
 * mq's alter (what AlterConfigs needs), not describe or read
 */
#define DESCRIBE_CONFIGS_SQL "SELECT mq.has_topic_privilege($1, 'alter')"

/* a broker's keys: mq's topic defaults renamed ($1 topic keys, $2 their
 * broker names), then the daemon's own ($3 keys, $4 values), text[] all;
 * none without DESCRIBE on the cluster */
#define BROKER_SQL \
	"WITH a AS (SELECT " KACL_CLUSTER_PRIVILEGE_SQL("'describe'") " ok)" \
	" SELECT m.b, d.v, true FROM a, jsonb_each_text(mq.config_defaults()) d(k, v)" \
	"  JOIN unnest($1, $2) m(t, b) ON m.t = d.k WHERE a.ok" \
	" UNION ALL SELECT s.k, s.v, false FROM a, unnest($3, $4) s(k, v) WHERE a.ok ORDER BY 1"

/* each topic key mq knows and the broker key Kafka names as its default */
static const char *const broker_synonyms[][2] = {
	{"cleanup.policy", "log.cleanup.policy"},
	{"compression.gzip.level", "compression.gzip.level"},
	{"compression.lz4.level", "compression.lz4.level"},
	{"compression.type", "compression.type"},
	{"compression.zstd.level", "compression.zstd.level"},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms"},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms"},
	{"flush.messages", "log.flush.interval.messages"},
	{"flush.ms", "log.flush.interval.ms"},
	{"index.interval.bytes", "log.index.interval.bytes"},
	{"local.retention.bytes", "log.local.retention.bytes"},
	{"local.retention.ms", "log.local.retention.ms"},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"},
	{"max.message.bytes", "message.max.bytes"},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"},
	{"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms"},
	{"message.downconversion.enable", "log.message.downconversion.enable"},
	{"message.format.version", "log.message.format.version"},
	{"message.timestamp.type", "log.message.timestamp.type"},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
	{"min.insync.replicas", "min.insync.replicas"},
	{"preallocate", "log.preallocate"},
	{"retention.bytes", "log.retention.bytes"},
	{"retention.ms", "log.retention.ms"},
	{"segment.bytes", "log.segment.bytes"},
	{"segment.index.bytes", "log.index.size.max.bytes"},
	{"segment.jitter.ms", "log.roll.jitter.ms"},
	{"unclean.leader.election.enable", "unclean.leader.election.enable"},
};

typedef struct Resource
{
	int8_t		type;
	KSlice		name;
	int32_t		nkeys;			/* -1: all */
	KSlice	   *keys;
	KJob	   *job;			/* the job of its statement */
	int			stmt;
	int			may;			/* a topic's: may the client describe its configs? */
	bool		remote;			/* a topic's job went to another node */
	int			coord_stmt;		/* its config read on the coordinator, or -1 */
} Resource;

typedef struct ConfigState
{
	bool		synonyms;		/* v1+: include_synonyms */
	KFan		fan;			/* a job per node asked */
	KJob		coord;			/* configs no node holding them gave */
	KRequest	coord_req;
	KJob		local;			/* those configs rendered and checked here */
	int32_t		n;
	Resource   *res;
} ConfigState;

static void
config_state_free(void *p)
{
	ConfigState *s = p;

	for (int32_t i = 0; i < s->n; i++)
		free(s->res[i].keys);
	kfan_free(&s->fan);
	kjob_free(&s->coord);
	kjob_free(&s->local);
	free(s->res);
	free(s);
}

static bool
wanted(const Resource *rs, const char *key)
{
	if (rs->nkeys < 0)
		return true;
	for (int32_t i = 0; i < rs->nkeys; i++)
		if (kslice_eq(rs->keys[i], key))
			return true;
	return false;
}

/* the broker's name for a topic key (Kafka's synonym), or NULL */
static const char *
broker_name(const char *key)
{
	for (size_t i = 0; i < sizeof(broker_synonyms) / sizeof(broker_synonyms[0]); i++)
		if (strcmp(broker_synonyms[i][0], key) == 0)
			return broker_synonyms[i][1];
	return NULL;
}

static void
write_synonym(KWriter *w, const char *name, const char *value, int8_t source)
{
	kw_str(w, name);
	kw_str(w, value);
	kw_i8(w, source);
	kw_tags(w);
}

/*
 * v1+ with include_synonyms, as Kafka lists them, most specific first: a
 * topic's key set on it, then the broker's default for it under the
 * broker's name (DEFAULT_CONFIG); a topic's key at its default, that
 * default under the broker's name; a broker's key, itself.  None without
 * include_synonyms.
 */
static void
write_synonyms(KWriter *w, bool wanted, bool broker, const char *key, const char *value,
			   bool is_default, const char *default_value)
{
	const char *bname = broker ? NULL : broker_name(key);

	if (!wanted)
		kw_array(w, 0);
	else if (broker)
	{
		kw_array(w, 1);
		write_synonym(w, key, value, is_default ? SOURCE_DEFAULT_CONFIG : SOURCE_STATIC_BROKER_CONFIG);
	}
	else if (is_default)
	{
		kw_array(w, 1);
		write_synonym(w, bname ? bname : key, value, SOURCE_DEFAULT_CONFIG);
	}
	else
	{
		kw_array(w, bname && default_value ? 2 : 1);
		write_synonym(w, key, value, SOURCE_DYNAMIC_TOPIC_CONFIG);
		if (bname && default_value)
			write_synonym(w, bname, default_value, SOURCE_DEFAULT_CONFIG);
	}
}

static void
write_resource(KRequest *req, ConfigState *s, Resource *rs)
{
	KWriter    *w = &req->resp;
	KStmt	   *st = rs->stmt >= 0 ? &rs->job->stmts[rs->stmt] : NULL;
	int16_t		code = KERR_NONE;
	const char *message = st && st->err.message ? st->err.message : "";
	char		other[400];
	size_t		count_at;
	int32_t		n = 0;

	bool		broker = rs->type == RESOURCE_BROKER;

	if ((rs->type != RESOURCE_TOPIC && !broker) ||
		(rs->type == RESOURCE_TOPIC && st == NULL))
		code = KERR_INVALID_REQUEST;
	else if (broker && st == NULL && rs->name.len > 0)
	{
		/* as Kafka: "" is the cluster's dynamic defaults (none here) */
		code = KERR_INVALID_REQUEST;
		snprintf(other, sizeof(other), "unexpected broker id, expected %d or empty string, but received %.*s",
				 kconfig.node_id, (int) (rs->name.len > 32 ? 32 : rs->name.len), (const char *) rs->name.p);
		message = other;
	}
	else if (!broker && st && !kstmt_failed(&rs->job->stmts[rs->may], &code) &&
			 strcmp(PQgetvalue(rs->job->stmts[rs->may].res, 0, 0), "t") != 0)
		code = KERR_TOPIC_AUTHORIZATION_FAILED;	/* whether the topic exists or not */
	else if (!broker && st && code == KERR_NONE && topic_name_invalid(rs->name, other, sizeof(other)))
	{
		code = KERR_INVALID_TOPIC_EXCEPTION;
		message = other;
	}
	else if (st && !kstmt_failed(st, &code) && PQntuples(st->res) == 0)
		code = broker ? KERR_CLUSTER_AUTHORIZATION_FAILED : KERR_UNKNOWN_TOPIC_OR_PARTITION;
	kw_i16(w, code);
	kw_str(w, code == KERR_NONE ? NULL : message);
	kw_i8(w, rs->type);
	kw_strn(w, rs->name.p, rs->name.len);
	count_at = kw_later(w);
	for (int row = 0; code == KERR_NONE && st && row < PQntuples(st->res); row++)
	{
		const char *key = PQgetvalue(st->res, row, 0);
		bool		is_default = strcmp(PQgetvalue(st->res, row, 2), "t") == 0;

		if (!wanted(rs, key))
			continue;
		kw_str(w, key);
		kw_str(w, PQgetvalue(st->res, row, 1));
		kw_i8(w, broker);		/* read_only: a broker's cannot be altered */
		if (req->api_version == 0)
			kw_i8(w, is_default);
		else
			kw_i8(w, is_default ? SOURCE_DEFAULT_CONFIG : broker ? SOURCE_STATIC_BROKER_CONFIG :
				  SOURCE_DYNAMIC_TOPIC_CONFIG);
		kw_i8(w, 0);			/* is_sensitive */
		if (req->api_version >= 1)
			write_synonyms(w, s->synonyms, broker, key, PQgetvalue(st->res, row, 1), is_default,
						   broker || PQgetisnull(st->res, row, 3) ? NULL : PQgetvalue(st->res, row, 3));
		if (req->api_version >= 3)
		{
			kw_i8(w, 0);		/* config_type: UNKNOWN */
			kw_str(w, NULL);	/* documentation: none */
		}
		kw_tags(w);
		n++;
	}
	kw_fill_count(w, count_at, n);
	kw_tags(w);
}

static void
describe_configs_done(KRequest *req)
{
	ConfigState *s = req->state;

	kw_i32(&req->resp, 0);		/* throttle */
	kw_array(&req->resp, s->n);
	for (int32_t i = 0; i < s->n; i++)
		write_resource(req, s, &s->res[i]);
	req_finish(req);
}

/*
 * The coordinator's configs, rendered here with this node's defaults as
 * the client, after DESCRIBE_CONFIGS checked here: no other node is
 * reachable.  A topic the coordinator could not be asked about keeps its
 * node's error.
 */
static void
coord_done(KRequest *sub)
{
	KRequest   *req = sub->state;
	ConfigState *s = req->state;

	for (int32_t i = 0; i < s->n; i++)
	{
		Resource   *rs = &s->res[i];
		KStmt	   *cst = rs->coord_stmt >= 0 ? &s->coord.stmts[rs->coord_stmt] : NULL;
		int16_t		code;

		if (cst == NULL || kstmt_failed(cst, &code))
			continue;
		kstmt_text(kjob_add(&s->local, STORED_CONFIG_SQL, 0), MQ_TEXTOID,
				   PQntuples(cst->res) == 1 ? PQgetvalue(cst->res, 0, 0) : NULL);
		rs->stmt = s->local.n - 1;
		kstmt_text(kjob_add(&s->local, DESCRIBE_CONFIGS_SQL, 0), MQ_TEXTOID, cst->values[0]);
		rs->may = s->local.n - 1;
		rs->job = &s->local;
	}
	if (s->local.n == 0)
		describe_configs_done(req);
	else
		pool_run(req, &s->local, describe_configs_done);
}

/*
 * A replicated topic whose node could not be reached (a lost or refused
 * connection: cluster_topic_pool found no better node): its config is the
 * cluster's, as Kafka's is the controller's, so the coordinator's copy
 * answers, read as the daemon.
 */
static void
nodes_done(KRequest *req)
{
	ConfigState *s = req->state;

	for (int32_t i = 0; i < s->n; i++)
	{
		Resource   *rs = &s->res[i];

		if (!rs->remote || !rs->job->stmts[rs->stmt].err.connection_lost)
			continue;
		kstmt_text(kjob_add(&s->coord, COORD_CONFIG_SQL, 0), MQ_TEXTOID,
				   rs->job->stmts[rs->stmt].values[0]);
		rs->coord_stmt = s->coord.n - 1;
	}
	if (s->coord.n == 0 || cluster_coord_pool() == NULL)
	{
		describe_configs_done(req);
		return;
	}
	s->coord_req.state = req;	/* no role: the daemon's on the coordinator */
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

static bool
is_this_broker(KSlice name)
{
	char		id[16];

	snprintf(id, sizeof(id), "%d", kconfig.node_id);
	return kslice_eq(name, id);
}

/* a text[] parameter (binary) of n strings, v[0], v[stride], ... */
static void
add_text_array(KStmt *st, const char *const *v, int n, int stride)
{
	MqArray		a;

	mq_array_init(&a, MQ_TEXTOID);
	for (int i = 0; i < n; i++)
		mq_array_add(&a, v[i * stride], strlen(v[i * stride]));
	kstmt_array(st, MQ_TEXTARRAYOID, &a);
	mq_array_free(&a);
}

static void
add_broker_stmt(ConfigState *s, Resource *rs)
{
	int			nsyn = (int) (sizeof(broker_synonyms) / sizeof(broker_synonyms[0]));
	char		id[16], delay[16], parts[16], min_session[16], max_session[16], idle[16];
	const char *own[][2] = {
		{"auto.create.topics.enable", kconfig.auto_create_partitions > 0 ? "true" : "false"},
		{"broker.id", id},
		{"connections.max.idle.ms", idle},
		/* single daemons create unreplicated topics; clusters default to 1 */
		{"default.replication.factor", "1"},
		{"group.initial.rebalance.delay.ms", delay},
		{"group.max.session.timeout.ms", max_session},
		{"group.min.session.timeout.ms", min_session},
		{"num.partitions", parts},
	};
	int			nown = (int) (sizeof(own) / sizeof(own[0]));
	KStmt	   *st;

	snprintf(id, sizeof(id), "%d", kconfig.node_id);
	snprintf(delay, sizeof(delay), "%d", kconfig.group_initial_delay_ms);
	snprintf(idle, sizeof(idle), "%d", kconfig.connections_max_idle_ms);
	snprintf(min_session, sizeof(min_session), "%d", kconfig.group_min_session_ms);
	snprintf(max_session, sizeof(max_session), "%d", kconfig.group_max_session_ms);
	snprintf(parts, sizeof(parts), "%d", kconfig_num_partitions());
	rs->job = kfan_job(&s->fan, pool_local());
	st = kjob_add(rs->job, BROKER_SQL, 0);
	rs->stmt = rs->job->n - 1;
	add_text_array(st, &broker_synonyms[0][0], nsyn, 2);
	add_text_array(st, &broker_synonyms[0][1], nsyn, 2);
	add_text_array(st, &own[0][0], nown, 2);
	add_text_array(st, &own[0][1], nown, 2);
}

void
h_describe_configs(KRequest *req)
{
	KReader    *r = &req->body;
	ConfigState *s = mq_malloc0(sizeof(ConfigState));

	req->state = s;
	req->free_state = config_state_free;
	s->n = kr_array(r, 7);
	s->res = mq_malloc0(sizeof(Resource) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
	{
		Resource   *rs = &s->res[i];

		rs->type = kr_i8(r);
		rs->name = kr_str(r);
		rs->nkeys = kr_array(r, 2);
		rs->keys = mq_malloc0(sizeof(KSlice) * (rs->nkeys > 0 ? rs->nkeys : 1));
		for (int32_t k = 0; k < rs->nkeys; k++)
			rs->keys[k] = kr_str(r);
		kr_tags(r);
		rs->stmt = rs->coord_stmt = -1;
		if (rs->type == RESOURCE_BROKER && !r->err && is_this_broker(rs->name))
			add_broker_stmt(s, rs);
		if (rs->type == RESOURCE_TOPIC && !r->err)
		{
			char	   *name = kslice_dup(rs->name);
			KPool	   *pool = cluster_topic_pool(name ? name : "");

			rs->remote = pool != pool_local();
			rs->job = kfan_job(&s->fan, pool);
			kstmt_text(kjob_add(rs->job, CONFIG_SQL, 0), MQ_TEXTOID, name ? name : "");
			rs->stmt = rs->job->n - 1;
			kstmt_text(kjob_add(rs->job, DESCRIBE_CONFIGS_SQL, 0), MQ_TEXTOID, name ? name : "");
			rs->may = rs->job->n - 1;
			free(name);
		}
	}
	if (req->api_version >= 1)
		s->synonyms = kr_i8(r) != 0;	/* include_synonyms */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	kfan_run(&s->fan, req, nodes_done);
}
