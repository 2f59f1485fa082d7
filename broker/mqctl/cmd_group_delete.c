/*-------------------------------------------------------------------------
 *
 * cmd_group_delete.c
 *	  The consumer group commands of mqctl that delete: "group delete"
 *	  (mq.delete_group(), kafka-consumer-groups --delete) and "group
 *	  delete-offsets" (mq.delete_offsets(), --delete-offsets).  The
 *	  functions refuse what Kafka refuses (live SQL members; for
 *	  delete-offsets only those subscribed to the topic) and check the
 *	  caller's rights; a refusal ends the command with exit 1.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "util.h"

const char	group_delete_help[] =
"Usage: mqctl group delete GROUP [OPTIONS]\n"
"\n"
"Delete a consumer group: its committed offsets and its state (Kafka's\n"
"DeleteGroups).  A group with active members is refused: stop them first.\n"
"\n"
"Options:\n"
"      --if-exists        succeed without change when there is no such group\n";

const char	group_delete_offsets_help[] =
"Usage: mqctl group delete-offsets GROUP --topic=TOPIC [OPTIONS]\n"
"\n"
"Delete a consumer group's committed offsets of one topic (kafka-consumer-groups\n"
"--delete-offsets, Kafka's OffsetDelete): of every partition, or of those given.\n"
"Refused while active members of the group subscribe to the topic.\n"
"\n"
"Options:\n"
"  -t, --topic=TOPIC      the topic (required)\n"
"      --partitions=LIST  only these partitions, e.g. 0,2\n";

enum
{
	OPT_IF_EXISTS = CLI_OPT_LONG_BASE,
	OPT_PARTITIONS
};

int
cmd_group_delete(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"if-exists", no_argument, NULL, OPT_IF_EXISTS},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	bool		if_exists = false;
	const char *group;
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, NULL, longopts);
	while ((c = cli_next(&p)) != -1)
		if (c == OPT_IF_EXISTS)
			if_exists = true;
	group = mqctl_group_argument(&p);

	conn = mqctl_connect();
	res = mqctl_exec_unless_missing(conn, "SELECT mq.delete_group($1)", group,
									MQ_SQLSTATE_GROUP_NOT_FOUND, if_exists);
	if (res != NULL)
		printf("Deleted group %s (%s committed offsets).\n", group, PQgetvalue(res, 0, 0));
	else
		printf("Group %s does not exist.\n", group);
	PQclear(res);
	PQfinish(conn);
	cli_free(&p);
	return MQ_EXIT_OK;
}

/* --partitions: digits separated by commas, as a PostgreSQL array literal */
static char *
partitions_array(CliParser *p, const char *list)
{
	size_t		len = strlen(list);

	if (len == 0 || strspn(list, "0123456789,") != len || list[0] == ',' || list[len - 1] == ',' ||
		strstr(list, ",,") != NULL)
		cli_usage_error(p, "--partitions takes partition numbers separated by commas, e.g. 0,2");
	return cli_array_literal(list);
}

int
cmd_group_delete_offsets(const MqctlCommand *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"topic", required_argument, NULL, 't'},
		{"partitions", required_argument, NULL, OPT_PARTITIONS},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	const char *group;
	const char *topic = NULL;
	char	   *partitions = NULL;
	MqParams	params;
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	mqctl_parser_init(&p, cmd, argc, argv, "t:", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		if (c == 't')
			topic = optarg;
		else if (c == OPT_PARTITIONS)
		{
			free(partitions);
			partitions = partitions_array(&p, optarg);
		}
	}
	group = mqctl_group_argument(&p);
	if (topic == NULL || topic[0] == '\0')
		cli_usage_error(&p, "--topic is required");

	conn = mqctl_connect();
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_text(&params, MQ_INT4ARRAYOID, partitions);
	res = mqctl_exec(conn, "SELECT mq.delete_offsets($1, $2, $3)", &params, 0);
	printf("Deleted %s committed offsets of group %s on topic %s.\n", PQgetvalue(res, 0, 0), group, topic);
	PQclear(res);
	PQfinish(conn);
	free(partitions);
	cli_free(&p);
	return MQ_EXIT_OK;
}
