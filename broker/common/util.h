/*-------------------------------------------------------------------------
 *
 * util.h
 *	  Process-level basics shared by mqctl and mq-broker: exit codes,
 *	  messages on stderr, memory allocation that cannot fail silently, and
 *	  a monotonic clock.
 *
 * The exit codes are part of the tools' documented interface (docs/cli.md):
 * scripts tell "the server said no" from "you called me wrong" from "the
 * server is not there" by them, so a code once published keeps its meaning.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_UTIL_H
#define MQ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes (documented in docs/cli.md, section "Exit status") */
typedef enum MqExitCode
{
	MQ_EXIT_OK = 0,				/* success */
	MQ_EXIT_SERVER = 1,			/* the server reported an error */
	MQ_EXIT_USAGE = 2,			/* bad command line */
	MQ_EXIT_CONNECT = 3,		/* cannot connect, or the connection was lost */
	MQ_EXIT_UNAVAILABLE = 4,	/* needs a feature that does not exist yet */
	MQ_EXIT_LOCAL = 5			/* local failure: input, output, memory */
} MqExitCode;

/* Program name used as the prefix of every message ("mqctl"). */
extern const char *mq_progname;

/* Start every message with the local date and time (for daemons' logs). */
extern void mq_log_set_timestamps(bool on);

extern void mq_log_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void mq_log_warning(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void mq_log_info(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void mq_fatal(int exitcode, const char *fmt,...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Allocation: on failure these report and exit with MQ_EXIT_LOCAL. */
extern void *mq_malloc(size_t size);
extern void *mq_malloc0(size_t size);
extern void *mq_realloc(void *ptr, size_t size);
extern char *mq_strdup(const char *s);

/* Microseconds on a monotonic clock (for durations, never for dates). */
extern int64_t mq_now_us(void);

/* Microseconds since the Unix epoch (the time of day: for dates). */
extern int64_t mq_wall_us(void);

/* Sleep for ms milliseconds; returns early when a signal arrives. */
extern void mq_sleep_ms(int64_t ms);

#endif							/* MQ_UTIL_H */
