/*-------------------------------------------------------------------------
 *
 * cli.h
 *	  Command-line parsing for mqctl and mq-broker on top of getopt_long:
 *	  options shared by every command, --help, positional arguments,
 *	  checked numbers and KEY=VALUE pairs, and usage errors that say what
 *	  was wrong and exit with MQ_EXIT_USAGE.
 *
 * A command declares only its own options; the program's common options
 * (mqctl's -d CONNINFO, say) are merged in by cli_init() and handled by a
 * callback, so that no command repeats them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CLI_H
#define MQ_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

/* Option codes above any character, for long options without a short one */
#define CLI_OPT_LONG_BASE 0x100
#define CLI_OPT_HELP	  0xFFF

/* Options every command of a program accepts. */
typedef struct CliCommon
{
	const char *shortopts;		/* getopt letters, e.g. "d:" */
	const struct option *longopts;	/* terminated by an all-zero entry */
	const char *help;			/* their part of every --help text */
	/* handles one of them; returns false if opt is not one of them */
	bool		(*handle) (int opt, const char *arg, void *ctx);
	void	   *ctx;
} CliCommon;

typedef struct CliParser
{
	int			argc;
	char	  **argv;
	const char *command;		/* "mqctl topic create", for messages */
	const char *help;			/* the command's --help text */
	const CliCommon *common;
	char	   *shortopts;		/* merged */
	struct option *longopts;	/* merged */
} CliParser;

/*
 * Start parsing argv (argv[0] is the command's last word).  shortopts and
 * longopts are the command's own; either may be NULL.  A leading '+' in
 * shortopts stops at the first non-option, as in getopt.  An own long
 * option named "help" replaces the generic one.
 */
extern void cli_init(CliParser *p, int argc, char **argv, const char *command,
					 const char *help, const CliCommon *common,
					 const char *shortopts, const struct option *longopts);

/* The next option of the command itself, or -1 when options are done. */
extern int	cli_next(CliParser *p);

/*
 * The positional arguments after the options; exits with a usage error
 * unless there are between min and max of them.  names says what they are
 * for the message ("topic name").
 */
extern char **cli_positionals(CliParser *p, int min, int max,
							  const char *names, int *count);

extern void cli_print_help(const CliParser *p);
extern void cli_usage_error(const CliParser *p, const char *fmt,...)
	__attribute__((format(printf, 2, 3), noreturn));

/* A whole decimal number between min and max, or a usage error. */
extern int64_t cli_int(const CliParser *p, const char *option, const char *arg,
					   int64_t min, int64_t max);
/* One of the words in choices (NULL-terminated); returns its index. */
extern int	cli_choice(const CliParser *p, const char *option, const char *arg,
					   const char *const *choices);
/* Split "KEY=VALUE" in place; a usage error without '=' or without key. */
extern void cli_key_value(const CliParser *p, const char *option, char *arg,
						  char **key, char **value);
/* Turn the escapes \t \n \\ of a separator given on the command line into bytes. */
extern char *cli_unescape(const CliParser *p, const char *option, const char *arg);
/* A comma-separated option value as a PostgreSQL array literal: "a,b" is "{a,b}" (malloc'd). */
extern char *cli_array_literal(const char *list);

extern void cli_free(CliParser *p);

#endif							/* MQ_CLI_H */
