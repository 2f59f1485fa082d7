/*-------------------------------------------------------------------------
 *
 * h_metadata.c
 *	  Metadata (v1-v6), CreateTopics (v0-v4) and DeleteTopics (v0-v3).
 *	  Requests are decoded and answered on a database worker.
 *
 * A single node: every partition is led by this broker (--node-id), with
 * itself as the only replica and in-sync replica.  Unknown topics are
 * UNKNOWN_TOPIC_OR_PARTITION, or are created with mq.create_topic when
 * --auto-create-topics is set and the client allows it (Metadata v4+).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

#define METADATA_SQL \
	"SELECT p.topic, p.partition, p.leader_epoch FROM mq.partitions p" \
	" WHERE $1::text[] IS NULL OR p.topic = ANY ($1) ORDER BY p.topic, p.partition"

static void
write_brokers(KWriter *w, int16_t v)
{
	kw_i32(w, 1);
	kw_i32(w, kconfig.node_id);
	kw_str(w, kconfig.advertised_host);
	kw_i32(w, kconfig.advertised_port);
	kw_str(w, NULL);			/* rack */
	if (v >= 2)
		kw_str(w, "mq");		/* cluster_id */
	kw_i32(w, kconfig.node_id); /* controller_id */
}

static void
write_partition(KWriter *w, int16_t v, int32_t index)
{
	kw_i16(w, KERR_NONE);
	kw_i32(w, index);
	kw_i32(w, kconfig.node_id);
	kw_i32(w, 1);
	kw_i32(w, kconfig.node_id); /* replicas */
	kw_i32(w, 1);
	kw_i32(w, kconfig.node_id); /* isr */
	if (v >= 5)
		kw_i32(w, 0);			/* offline replicas */
}

/* one topic's entry from rows [*row, ...) of res that name it */
static void
write_topic(KWriter *w, int16_t v, const char *name, int16_t error, PGresult *res, int *row)
{
	size_t		count_at;
	int32_t		n = 0;

	kw_i16(w, error);
	kw_str(w, name);
	kw_i8(w, 0);				/* is_internal */
	count_at = w->len;
	kw_i32(w, 0);
	while (res && *row < PQntuples(res) && strcmp(PQgetvalue(res, *row, 0), name) == 0)
	{
		write_partition(w, v, atoi(PQgetvalue(res, *row, 1)));
		(*row)++;
		n++;
	}
	kw_put_i32_at(w, count_at, n);
}

static void
auto_create(PGconn *db, MqArray *names)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	const char *bytes;
	int			len;

	mq_params_init(&params);
	bytes = mq_array_bytes(names, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, bytes, len);
	mq_param_int(&params, MQ_INT4OID, kconfig.auto_create_partitions);
	res = kdb_exec(db, "SELECT mq.create_topic(t, $2) FROM unnest($1::text[]) t"
				   " WHERE NOT EXISTS (SELECT 1 FROM mq.topics x WHERE x.topic = t)",
				   &params, 0, &err);
	if (res == NULL)
		mq_log_warning("automatic topic creation: %s", err.message);
	PQclear(res);
	mq_error_free(&err);
}

static void
metadata_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int16_t		v = req->api_version;
	int32_t		n = kr_array(r, 2);
	KSlice	   *names = mq_malloc0(sizeof(KSlice) * (n > 0 ? n : 1));
	MqArray		arr;
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	bool		allow_auto = true;
	int			row = 0;
	const char *bytes;
	int			len;

	mq_array_init(&arr, MQ_TEXTOID);
	for (int32_t i = 0; i < n; i++)
	{
		names[i] = kr_str(r);
		mq_array_add(&arr, names[i].p, names[i].len < 0 ? 0 : names[i].len);
	}
	if (v >= 4)
		allow_auto = kr_i8(r) != 0;
	if (n > 0 && allow_auto && kconfig.auto_create_partitions > 0 && !r->err)
		auto_create(db, &arr);
	mq_params_init(&params);
	bytes = mq_array_bytes(&arr, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, n < 0 ? NULL : bytes, len);
	res = kdb_exec(db, METADATA_SQL, &params, 0, &err);
	if (res == NULL)
		mq_log_warning("metadata: %s", err.message);

	if (v >= 3)
		kw_i32(w, 0);			/* throttle */
	write_brokers(w, v);
	if (n < 0)
	{
		size_t		count_at = w->len;
		int32_t		topics = 0;

		kw_i32(w, 0);
		while (res && row < PQntuples(res))
		{
			char	   *name = mq_strdup(PQgetvalue(res, row, 0));

			write_topic(w, v, name, KERR_NONE, res, &row);
			free(name);
			topics++;
		}
		kw_put_i32_at(w, count_at, topics);
	}
	else
	{
		kw_i32(w, n);
		for (int32_t i = 0; i < n; i++)
		{
			char	   *name = kslice_dup(names[i]);
			int			start;

			/* rows are sorted by name; find this one's */
			for (row = 0; res && row < PQntuples(res) &&
				 strcmp(PQgetvalue(res, row, 0), name ? name : "") != 0; row++)
				;
			start = row;
			write_topic(w, v, name ? name : "", KERR_NONE, res, &row);
			if (row == start)
			{
				/* nothing written for it: rewrite as an unknown topic */
				w->len -= 2 + 2 + (name ? strlen(name) : 0) + 1 + 4;
				write_topic(w, v, name ? name : "",
							res ? KERR_UNKNOWN_TOPIC_OR_PARTITION : kerr_from_mq(&err),
							NULL, &row);
			}
			free(name);
		}
	}
	PQclear(res);
	mq_error_free(&err);
	mq_array_free(&arr);
	free(names);
}

void
h_metadata(KRequest *req)
{
	pool_submit(req, metadata_db, NULL);
}
