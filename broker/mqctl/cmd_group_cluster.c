/*-------------------------------------------------------------------------
 *
 * cmd_group_cluster.c
 *	  "mqctl group describe GROUP" given the coordinator's address, for a
 *	  consumer group that spans the cluster (src/sql/65_cluster_groups.sql):
 *	  members and assignment from the coordinator, each partition's
 *	  committed offset and log end from its leader (found through the
 *	  coordinator, broker/common/route.c).
 *
 * The rows are gathered as JSON and turned into a result by the
 * coordinator (jsonb_to_recordset), so that they print through output.c
 * exactly as the rows of a group on one node do.  A leader that cannot
 * be reached leaves its partitions' offsets unknown ("-").
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mqctl.h"
#include "output.h"
#include "route.h"

/* One partition's committed offset and log end on its leader. */
static void
partition_offsets(MqRouter *r, const char *group, int32_t p, json_t *row)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn = mq_router_conn(r, p, &err);
	PGresult   *res = NULL;

	json_object_set_new(row, "leader", mq_router_leader(r, p) >= 0 ?
						json_integer(mq_router_leader(r, p)) : json_null());
	if (conn != NULL)
	{
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, group);
		mq_param_text(&params, MQ_TEXTOID, r->topic);
		mq_param_int(&params, MQ_INT4OID, p);
		res = mq_exec(conn, "SELECT mq.committed_offset($1, $2, $3), high_watermark"
					  "  FROM mq.partitions WHERE topic = $2 AND partition = $3",
					  &params, 0, &err);
	}
	if (res != NULL && PQntuples(res) == 1)
	{
		if (!PQgetisnull(res, 0, 0))
			json_object_set_new(row, "committed_offset",
								json_integer(strtoll(PQgetvalue(res, 0, 0), NULL, 10)));
		json_object_set_new(row, "log_end_offset",
							json_integer(strtoll(PQgetvalue(res, 0, 1), NULL, 10)));
	}
	PQclear(res);
	mq_error_free(&err);
}

/* Rows of every partition a member is assigned ("topic:partition" items). */
static json_t *
partition_rows(const PGresult *members, const char *group)
{
	json_t	   *rows = json_array();
	MqRouter	router;
	MqError		err = MQ_ERROR_INIT;
	bool		open = false;

	for (int m = 0; m < PQntuples(members); m++)
	{
		char	   *list = mq_strdup(PQgetvalue(members, m, 1));
		char	   *save = NULL;

		/* {t:0,t:1}: topic names have no ',' or ':' */
		for (char *item = strtok_r(list + 1, ",}", &save); item != NULL;
			 item = strtok_r(NULL, ",}", &save))
		{
			char	   *colon = strrchr(item, ':');
			json_t	   *row;

			if (colon == NULL)
				continue;
			*colon = '\0';
			row = json_object();
			if (!open || strcmp(router.topic, item) != 0)
			{
				if (open)
					mq_router_close(&router);
				open = mq_router_open(&router, NULL, mqctl_conninfo(), mq_progname, item,
									  NULL, NULL, &err);
				if (!open)
					mq_router_close(&router);
				mq_error_free(&err);
			}
			json_object_set_new(row, "topic", json_string(item));
			json_object_set_new(row, "partition", json_integer(atoi(colon + 1)));
			json_object_set_new(row, "owner", json_string(PQgetvalue(members, m, 0)));
			if (open)
				partition_offsets(&router, group, atoi(colon + 1), row);
			json_array_append_new(rows, row);
		}
		free(list);
	}
	if (open)
		mq_router_close(&router);
	return rows;
}

static const char rows_sql[] =
"SELECT x.topic, x.partition, x.committed_offset, x.log_end_offset,"
"       x.log_end_offset - x.committed_offset AS lag, x.owner, x.leader"
"  FROM pg_catalog.jsonb_to_recordset($1::jsonb)"
"       AS x(topic text, partition integer, committed_offset bigint, log_end_offset bigint,"
"            owner text, leader integer)"
" ORDER BY x.topic COLLATE \"C\", x.partition";

static const char group_sql[] =
"SELECT $2::text AS \"group\", CASE WHEN $3::int > 0 THEN 'Stable' ELSE 'Empty' END AS state,"
"       $3::int AS members, $4::int AS generation, 'range' AS assignor,"
"       (SELECT pg_catalog.sum(x.log_end_offset - x.committed_offset)"
"          FROM pg_catalog.jsonb_to_recordset($1::jsonb)"
"               AS x(committed_offset bigint, log_end_offset bigint)) AS lag";

static void
print_cluster_group(const PGresult *group_res, const PGresult *rows_res, OutputFormat format)
{
	if (format == OUTPUT_JSON)
	{
		json_t	   *obj = output_row_json(group_res, 0);

		json_object_set_new(obj, "partitions", output_rows_json(rows_res));
		output_json(obj, JSON_INDENT(2));
		return;
	}
	printf("Group: %s\tState: %s\tMembers: %s\tGeneration: %s\tAssignor: %s\tLag: %s\n\n",
		   PQgetvalue(group_res, 0, 0), PQgetvalue(group_res, 0, 1), PQgetvalue(group_res, 0, 2),
		   PQgetvalue(group_res, 0, 3), PQgetvalue(group_res, 0, 4),
		   PQgetisnull(group_res, 0, 5) ? "-" : PQgetvalue(group_res, 0, 5));
	output_table(rows_res);
}

bool
group_describe_cluster(PGconn *conn, const char *group, OutputFormat format)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *members;
	PGresult   *group_res;
	PGresult   *rows_res;
	json_t	   *rows;
	char	   *json;
	char		count[16];

	members = mq_exec(conn,
					  "SELECT 1 FROM pg_catalog.pg_proc p"
					  "  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
					  " WHERE n.nspname = 'mq_coord' AND p.proname = 'cluster_group_members'"
					  "   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')"
					  "   AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')",
					  NULL, 0, &err);
	if (members == NULL || PQntuples(members) == 0)
	{
		PQclear(members);
		mq_error_free(&err);
		return false;
	}
	PQclear(members);
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	members = mqctl_exec(conn, "SELECT member_id, assigned::text, generation"
						 "  FROM mq_coord.cluster_group_members($1) WHERE active", &params, 0);
	if (PQntuples(members) == 0)
	{
		PQclear(members);
		return false;
	}
	rows = partition_rows(members, group);
	json = json_dumps(rows, JSON_COMPACT);
	json_decref(rows);
	snprintf(count, sizeof(count), "%d", PQntuples(members));
	mq_params_init(&params);
	mq_param_text(&params, MQ_JSONBOID, json);
	rows_res = mqctl_exec(conn, rows_sql, &params, 0);
	mq_param_text(&params, MQ_TEXTOID, group);
	mq_param_text(&params, MQ_INT4OID, count);
	mq_param_text(&params, MQ_INT4OID, PQgetvalue(members, 0, 2));
	group_res = mqctl_exec(conn, group_sql, &params, 0);
	print_cluster_group(group_res, rows_res, format);
	output_flush();
	free(json);
	PQclear(members);
	PQclear(rows_res);
	PQclear(group_res);
	return true;
}
