/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mqctl's entry point: the command table, dispatch from the words the
 *	  user typed to a command and the top-level help.  It stands above the
 *	  commands (cmd_*.c) and is never called by them: the helpers they
 *	  share (option parser, connecting, running SQL, giving up) are
 *	  session.c's, below them.
 *
 * Adding a command is one line in the table below plus its file: the
 * top-level help, "mqctl help ...", dispatch and the documentation test
 * (test/cli/docs.sh) all work from the table.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"

#ifndef MQ_VERSION
#define MQ_VERSION "unknown"
#endif

/* The commands, in the order "mqctl --help" lists them. */
static const MqctlCommand commands[] = {
	{"topic create", "create a topic", topic_create_help, cmd_topic_create},
	{"topic list", "list topics", topic_list_help, cmd_topic_list},
	{"topic describe", "show a topic's partitions, offsets and segments", topic_describe_help, cmd_topic_describe},
	{"topic alter", "change a topic's configuration", topic_alter_help, cmd_topic_alter},
	{"topic add-partitions", "add partitions to a topic", topic_add_partitions_help, cmd_topic_add_partitions},
	{"topic delete", "delete a topic and all its records", topic_delete_help, cmd_topic_delete},
	{"produce", "send lines of standard input as records", produce_help, cmd_produce},
	{"consume", "print records to standard output", consume_help, cmd_consume},
	{"group list", "list consumer groups with members and lag", group_list_help, cmd_group_list},
	{"group describe", "show a group's offsets, lag and owners per partition", group_describe_help, cmd_group_describe},
	{"group reset-offsets", "move a group's committed offsets", group_reset_offsets_help, cmd_group_reset_offsets},
	{"group delete", "delete a group's committed offsets and state", group_delete_help, cmd_group_delete},
	{"group delete-offsets", "delete a group's committed offsets of one topic", group_delete_offsets_help, cmd_group_delete_offsets},
	{"cluster status", "show brokers, leaders, ISR and under-replicated partitions", cluster_status_help, cmd_cluster_status},
	{"reassign", "move replicas of partitions between brokers", reassign_help, cmd_reassign},
	{"leader-election", "give partitions to their preferred replicas", leader_election_help, cmd_leader_election},
	{"broker remove", "remove a broker that holds no replicas", broker_remove_help, cmd_broker_remove},
	{"broker set-rack", "record the rack of a broker", broker_set_rack_help, cmd_broker_set_rack},
	{"scram set", "set a Kafka user's SCRAM credential", scram_set_help, cmd_scram_set},
	{"scram describe", "list Kafka users' SCRAM credentials", scram_describe_help, cmd_scram_describe},
	{"scram delete", "delete a Kafka user's SCRAM credential", scram_delete_help, cmd_scram_delete},
	{"quota set", "set client quotas of a Kafka user or client id", quota_set_help, cmd_quota_set},
	{"quota describe", "list the client quotas", quota_describe_help, cmd_quota_describe},
	{"quota delete", "remove client quotas of a Kafka user or client id", quota_delete_help, cmd_quota_delete},
	{"pipeline", "copy a topic to another exactly once across a cluster", pipeline_help, cmd_pipeline},
	{"perf produce", "measure produce throughput and latency", perf_produce_help, cmd_perf_produce},
	{"perf consume", "measure consume throughput", perf_consume_help, cmd_perf_consume},
};

#define NCOMMANDS ((int) (sizeof(commands) / sizeof(commands[0])))

static const char exit_status_help[] =
"Exit status:\n"
"  0  success\n"
"  1  the server reported an error (the message shows its SQLSTATE)\n"
"  2  bad command line\n"
"  3  cannot connect to the server, or the connection was lost\n"
"  4  the request needs a feature that mq does not have yet\n"
"  5  local failure: reading input, writing output, out of memory\n";

/* Number of words in a command's name that match argv, or 0. */
static int
match_words(const char *words, int argc, char **argv)
{
	const char *w = words;
	int			n = 0;

	while (*w)
	{
		size_t		len = strcspn(w, " ");

		if (n >= argc || strlen(argv[n]) != len || strncmp(argv[n], w, len) != 0)
			return 0;
		n++;
		w += len;
		while (*w == ' ')
			w++;
	}
	return n;
}

/*
 * Commands whose name starts with the words in argv (all for argc 0), one
 * line each with its summary; with out NULL only counts them.
 */
static int
list_commands(FILE *out, int argc, char **argv)
{
	int			found = 0;

	for (int i = 0; i < NCOMMANDS; i++)
	{
		bool		prefix = true;
		const char *w = commands[i].words;

		for (int k = 0; k < argc && prefix; k++)
		{
			size_t		len = strcspn(w, " ");

			prefix = strlen(argv[k]) == len && strncmp(argv[k], w, len) == 0;
			w += len;
			while (*w == ' ')
				w++;
		}
		if (!prefix)
			continue;
		if (out)
			fprintf(out, "  %-22s%s\n", commands[i].words, commands[i].summary);
		found++;
	}
	return found;
}

static void
print_main_help(void)
{
	printf("%s is the command-line tool of mq: Kafka's log semantics inside PostgreSQL.\n\n", mq_progname);
	printf("Usage:\n  %s [-d CONNINFO] COMMAND [OPTIONS] [ARGUMENTS]\n\n", mq_progname);
	printf("Commands:\n");
	list_commands(stdout, 0, NULL);
	printf("\nRun \"%s COMMAND --help\" for the options of a command.\n\n", mq_progname);
	fputs(mqctl_common_help, stdout);
	printf("      --version          show the version, then exit\n\n");
	fputs(exit_status_help, stdout);
}

/* Find the command named by the first words of argv; NULL if none. */
static const MqctlCommand *
find_command(int argc, char **argv, int *nwords)
{
	const MqctlCommand *best = NULL;

	*nwords = 0;
	for (int i = 0; i < NCOMMANDS; i++)
	{
		int			n = match_words(commands[i].words, argc, argv);

		if (n > *nwords)
		{
			*nwords = n;
			best = &commands[i];
		}
	}
	return best;
}

/*
 * No command matched argv.  If its leading words start some commands (as
 * "topic" does), list those: as help with help set, else as a usage error.
 */
static int
no_command(int argc, char **argv, bool help)
{
	char		words[256] = "";
	int			nwords = 0;

	while (nwords < argc && argv[nwords][0] != '-')
	{
		snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%s",
				 nwords ? " " : "", argv[nwords]);
		nwords++;
	}
	for (int i = nwords; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0)
			help = true;

	if (nwords > 0 && list_commands(NULL, nwords, argv) > 0)
	{
		FILE	   *out = help ? stdout : stderr;

		if (!help)
			fprintf(out, "%s: error: \"%s\" needs a subcommand\n", mq_progname, words);
		fprintf(out, "Commands of %s %s:\n", mq_progname, words);
		list_commands(out, nwords, argv);
		fprintf(out, "Run \"%s %s COMMAND --help\" for the options of a command.\n",
				mq_progname, words);
		return help ? MQ_EXIT_OK : MQ_EXIT_USAGE;
	}
	if (nwords > 0)
		fprintf(stderr, "%s: error: unknown command \"%s\"\n", mq_progname, words);
	else
		fprintf(stderr, "%s: error: no command given\n", mq_progname);
	fprintf(stderr, "Try \"%s --help\" for the list of commands.\n", mq_progname);
	return MQ_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'H'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	CliParser	p;
	const MqctlCommand *cmd;
	int			nwords;
	int			c;

	mq_progname = "mqctl";

	/*
	 * Global options come before the first word; '+' keeps getopt from
	 * reaching past it into the command's own options.  Our "help" shadows
	 * the generic one, which would print a command's help.
	 */
	cli_init(&p, argc, argv, mq_progname, "", &mqctl_common, "+", longopts);
	while ((c = cli_next(&p)) != -1)
	{
		if (c == 'H')
			print_main_help();
		if (c == 'V')
			printf("%s (mq) %s\n", mq_progname, MQ_VERSION);
		if (c == 'H' || c == 'V')
		{
			cli_free(&p);
			return MQ_EXIT_OK;
		}
	}
	argc -= optind;
	argv += optind;
	cli_free(&p);

	/* "mqctl help [WORDS]" is "mqctl [WORDS] --help" */
	if (argc > 0 && strcmp(argv[0], "help") == 0)
	{
		char	   *help_argv[3];

		if (argc == 1)
		{
			print_main_help();
			return MQ_EXIT_OK;
		}
		cmd = find_command(argc - 1, argv + 1, &nwords);
		if (cmd == NULL || nwords != argc - 1)
			return no_command(argc - 1, argv + 1, true);
		help_argv[0] = argv[nwords];
		help_argv[1] = "--help";
		help_argv[2] = NULL;
		return cmd->run(cmd, 2, help_argv);
	}

	cmd = find_command(argc, argv, &nwords);
	if (cmd == NULL)
		return no_command(argc, argv, false);
	return cmd->run(cmd, argc - nwords + 1, argv + nwords - 1);
}
