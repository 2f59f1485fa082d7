/*-------------------------------------------------------------------------
 *
 * cli.c
 *	  Command-line parsing helpers for mqctl and mq-broker (see cli.h).
 *
 * getopt_long prints its own complaints naming argv[0] only; we silence
 * it (leading ':' and opterr = 0) and say which command rejected what,
 * followed by a pointer to that command's --help, the way PostgreSQL's
 * own tools do.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

static size_t
count_longopts(const struct option *o)
{
	size_t		n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

void
cli_init(CliParser *p, int argc, char **argv, const char *command,
		 const char *help, const CliCommon *common,
		 const char *shortopts, const struct option *longopts)
{
	size_t		nown = count_longopts(longopts);
	size_t		ncommon = common ? count_longopts(common->longopts) : 0;
	size_t		k = 0;

	p->argc = argc;
	p->argv = argv;
	p->command = command;
	p->help = help;
	p->common = common;

	/*
	 * ':' first, so that a missing argument is reported as ':' rather than
	 * '?'; only a '+' (stop at the first non-option) may precede it.
	 */
	if (shortopts == NULL)
		shortopts = "";
	p->shortopts = mq_malloc(3 + strlen(shortopts) +
							 (common && common->shortopts ? strlen(common->shortopts) : 0));
	sprintf(p->shortopts, "%s:%s%s", shortopts[0] == '+' ? "+" : "",
			shortopts[0] == '+' ? shortopts + 1 : shortopts,
			common && common->shortopts ? common->shortopts : "");

	p->longopts = mq_malloc0(sizeof(struct option) * (nown + ncommon + 2));
	for (size_t i = 0; i < nown; i++)
		p->longopts[k++] = longopts[i];
	for (size_t i = 0; i < ncommon; i++)
		p->longopts[k++] = common->longopts[i];
	p->longopts[k].name = "help";
	p->longopts[k].has_arg = no_argument;
	p->longopts[k].val = CLI_OPT_HELP;

	/* 0 rather than 1: GNU getopt then forgets any earlier parse entirely */
	optind = 0;
	opterr = 0;
}

void
cli_free(CliParser *p)
{
	free(p->shortopts);
	free(p->longopts);
	p->shortopts = NULL;
	p->longopts = NULL;
}

void
cli_print_help(const CliParser *p)
{
	fputs(p->help, stdout);
	if (p->common && p->common->help)
	{
		fputc('\n', stdout);
		fputs(p->common->help, stdout);
	}
}

void
cli_usage_error(const CliParser *p, const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fprintf(stderr, "%s: error: ", p->command);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry \"%s --help\" for more information.\n", p->command);
	exit(MQ_EXIT_USAGE);
}

int
cli_next(CliParser *p)
{
	for (;;)
	{
		int			c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
		const char *arg = p->argv[optind - 1];

		switch (c)
		{
			case -1:
				return -1;
			case CLI_OPT_HELP:
				cli_print_help(p);
				exit(MQ_EXIT_OK);
			case ':':
				if (optopt > 0 && optopt < CLI_OPT_LONG_BASE)
					cli_usage_error(p, "option -%c needs a value", optopt);
				cli_usage_error(p, "option %s needs a value", arg);
			case '?':
				if (optopt > 0 && optopt < CLI_OPT_LONG_BASE && arg[0] == '-' && arg[1] != '-')
					cli_usage_error(p, "unknown option -%c", optopt);
				if (optopt != 0)
					cli_usage_error(p, "option %s does not take a value", arg);
				cli_usage_error(p, "unknown or ambiguous option %s", arg);
			default:
				if (p->common && p->common->handle(c, optarg, p->common->ctx))
					continue;
				return c;
		}
	}
}

char **
cli_positionals(CliParser *p, int min, int max, const char *names, int *count)
{
	int			n = p->argc - optind;

	if (n < min)
		cli_usage_error(p, "missing %s", names);
	if (n > max)
		cli_usage_error(p, "unexpected argument \"%s\"", p->argv[optind + max]);
	if (count)
		*count = n;
	return p->argv + optind;
}

int64_t
cli_int(const CliParser *p, const char *option, const char *arg,
		int64_t min, int64_t max)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0')
		cli_usage_error(p, "%s: \"%s\" is not a whole number", option, arg);
	if (v < min || v > max)
		cli_usage_error(p, "%s: %lld is out of range (%lld to %lld)",
						option, v, (long long) min, (long long) max);
	return v;
}

int
cli_choice(const CliParser *p, const char *option, const char *arg,
		   const char *const *choices)
{
	char		list[256] = "";

	for (int i = 0; choices[i]; i++)
	{
		if (strcmp(arg, choices[i]) == 0)
			return i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", choices[i]);
	}
	cli_usage_error(p, "%s: \"%s\" is not one of %s", option, arg, list);
}

void
cli_key_value(const CliParser *p, const char *option, char *arg,
			  char **key, char **value)
{
	char	   *eq = strchr(arg, '=');

	if (eq == NULL)
		cli_usage_error(p, "%s: \"%s\" is not KEY=VALUE", option, arg);
	if (eq == arg)
		cli_usage_error(p, "%s: \"%s\" has no key before '='", option, arg);
	*eq = '\0';
	*key = arg;
	*value = eq + 1;
}

char *
cli_unescape(const CliParser *p, const char *option, const char *arg)
{
	char	   *out = mq_malloc(strlen(arg) + 1);
	char	   *o = out;

	for (const char *s = arg; *s; s++)
	{
		if (*s != '\\')
		{
			*o++ = *s;
			continue;
		}
		switch (*++s)
		{
			case 't':
				*o++ = '\t';
				break;
			case 'n':
				*o++ = '\n';
				break;
			case '\\':
				*o++ = '\\';
				break;
			default:
				free(out);
				cli_usage_error(p, "%s: unknown escape in \"%s\" (use \\t, \\n or \\\\)",
								option, arg);
		}
	}
	*o = '\0';
	if (out[0] == '\0')
	{
		free(out);
		cli_usage_error(p, "%s must not be empty", option);
	}
	return out;
}

char *
cli_array_literal(const char *list)
{
	size_t		n = strlen(list) + 3;
	char	   *s = mq_malloc(n);

	snprintf(s, n, "{%s}", list);
	return s;
}
