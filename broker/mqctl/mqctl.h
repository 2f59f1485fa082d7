/*-------------------------------------------------------------------------
 *
 * mqctl.h
 *	  Declarations shared by the files of mqctl: the command table's entry
 *	  type, the commands themselves (one cmd_*.c file per family; each
 *	  command reads and checks all its options before it connects, then
 *	  runs), and the few helpers every command uses to parse options,
 *	  connect and run SQL (session.c, below the commands and engines).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_H
#define MQCTL_H

#include <libpq-fe.h>

#include "cli.h"
#include "mq_sqlstates.h"
#include "mqconn.h"
#include "output.h"
#include "util.h"

typedef struct MqctlCommand MqctlCommand;

/* argv[0] is the command's last word; returns the exit code */
typedef int (*MqctlRun) (const MqctlCommand *cmd, int argc, char **argv);

struct MqctlCommand
{
	const char *words;			/* "topic create": what the user types */
	const char *summary;		/* one line for "mqctl --help" */
	const char *help;			/* the command's own --help text */
	MqctlRun	run;
};

/* session.c: the common options, for main.c's own parser and help */
extern const char mqctl_common_help[];
extern const CliCommon mqctl_common;

extern void mqctl_parser_init(CliParser *p, const MqctlCommand *cmd,
							  int argc, char **argv,
							  const char *shortopts, const struct option *longopts);
extern PGconn *mqctl_connect(void);
/* -d's connection string (NULL: libpq's environment), e.g. to connect again */
extern const char *mqctl_conninfo(void);
/* mqctl_connect() that returns NULL with err filled instead of exiting */
extern PGconn *mqctl_try_connect(MqError *err);
extern PGresult *mqctl_exec(PGconn *conn, const char *sql,
							const MqParams *params, int result_format);
extern void mqctl_command(PGconn *conn, const char *sql);
/*
 * The deleting commands' statement (topic delete, group delete): sql with
 * name as $1.  NULL when name does not exist (the error missing_sqlstate)
 * and if_exists is set; any other error ends the command.
 */
extern PGresult *mqctl_exec_unless_missing(PGconn *conn, const char *sql, const char *name,
										   const char *missing_sqlstate, bool if_exists);
extern void mqctl_fail(PGconn *conn, MqError *err) __attribute__((noreturn));
/*
 * The end of a message mqctl words itself for what the server would
 * refuse (an unknown topic found by a query of a view): the server's
 * SQLSTATE, as docs/cli.md promises for exit status 1
 */
#define MQCTL_SQLSTATE(code) " [SQLSTATE " code "]"
/* the server's MQ001, worded once: the format of mqctl's own "no such topic" */
#define MQCTL_NO_TOPIC "topic \"%s\" does not exist" MQCTL_SQLSTATE(MQ_SQLSTATE_UNKNOWN_TOPIC)

/* cmd_topic.c */
extern const char topic_create_help[];
extern const char topic_list_help[];
extern const char topic_describe_help[];
extern const char topic_alter_help[];
extern const char topic_add_partitions_help[];
extern const char topic_delete_help[];
extern int	cmd_topic_create(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_topic_list(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_topic_describe(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_topic_alter(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_topic_add_partitions(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_topic_delete(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_produce.c */
extern const char produce_help[];
extern int	cmd_produce(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_consume.c */
extern const char consume_help[];
extern int	cmd_consume(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_cluster.c */
extern const char cluster_status_help[];
extern int	cmd_cluster_status(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_quota.c */
extern const char quota_set_help[];
extern const char quota_describe_help[];
extern const char quota_delete_help[];
extern int	cmd_quota_set(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_quota_describe(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_quota_delete(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_scram.c */
extern const char scram_set_help[];
extern const char scram_describe_help[];
extern const char scram_delete_help[];
extern int	cmd_scram_set(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_scram_describe(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_scram_delete(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_placement.c */
extern const char leader_election_help[];
extern int	cmd_leader_election(const MqctlCommand *cmd, int argc, char **argv);
extern const char reassign_help[];
extern const char broker_remove_help[];
extern const char broker_set_rack_help[];
extern int	cmd_reassign(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_broker_remove(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_broker_set_rack(const MqctlCommand *cmd, int argc, char **argv);
extern bool cluster_add_partitions(PGconn *conn, const char *topic, int count, int *total);
extern char *alter_partition_count(PGconn *conn, const char *topic, int wanted);
extern bool cluster_topic(PGconn *conn, const char *topic);
extern bool cluster_coordinator(PGconn *conn);
/* cmd_pipeline.c */
extern const char pipeline_help[];
extern int	cmd_pipeline(const MqctlCommand *cmd, int argc, char **argv);

/* cmd_group.c */
extern const char group_list_help[];
extern const char group_describe_help[];
extern const char group_reset_offsets_help[];
extern const char group_delete_help[];
extern const char group_delete_offsets_help[];
extern int	cmd_group_list(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_group_describe(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_group_reset_offsets(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_group_delete(const MqctlCommand *cmd, int argc, char **argv);
/* a group command's one argument, a non-empty group name (cmd_group.c) */
extern const char *mqctl_group_argument(CliParser *p);
extern int	cmd_group_delete_offsets(const MqctlCommand *cmd, int argc, char **argv);

/*
 * cmd_group_cluster.c: "group describe" of a group that spans the cluster,
 * when conn is its coordinator; false when it is not (nothing printed).
 */
extern bool group_describe_cluster(PGconn *conn, const char *group, OutputFormat format);

/* cmd_perf.c */
extern const char perf_produce_help[];
extern const char perf_consume_help[];
extern int	cmd_perf_produce(const MqctlCommand *cmd, int argc, char **argv);
extern int	cmd_perf_consume(const MqctlCommand *cmd, int argc, char **argv);

#endif							/* MQCTL_H */
