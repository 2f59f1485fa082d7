/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Messages on stderr, checked allocation and the monotonic clock for
 *	  mqctl and mq-broker (see util.h).
 *
 * Every message starts with the program name and a severity, so that the
 * output of several tools mixed in one log stays attributable; a daemon
 * (mq-broker) also asks for a timestamp in front of each.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

const char *mq_progname = "mq";
static bool log_timestamps = false;

void
mq_log_set_timestamps(bool on)
{
	log_timestamps = on;
}

static void
log_message(const char *severity, const char *fmt, va_list ap)
{
	/* stdout may hold output of ours: keep the order a reader would expect */
	fflush(stdout);
	if (log_timestamps)
	{
		struct timespec ts;
		struct tm	tm;
		char		buf[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(stderr, "%s.%03d ", buf, (int) (ts.tv_nsec / 1000000));
	}
	fprintf(stderr, "%s: %s: ", mq_progname, severity);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void
mq_log_error(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_message("error", fmt, ap);
	va_end(ap);
}

void
mq_log_warning(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_message("warning", fmt, ap);
	va_end(ap);
}

void
mq_log_info(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_message("info", fmt, ap);
	va_end(ap);
}

void
mq_fatal(int exitcode, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_message("error", fmt, ap);
	va_end(ap);
	exit(exitcode);
}

void *
mq_malloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "out of memory (%zu bytes)", size);
	return p;
}

void *
mq_malloc0(size_t size)
{
	void	   *p = calloc(1, size ? size : 1);

	if (p == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "out of memory (%zu bytes)", size);
	return p;
}

void *
mq_realloc(void *ptr, size_t size)
{
	void	   *p = realloc(ptr, size ? size : 1);

	if (p == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "out of memory (%zu bytes)", size);
	return p;
}

char *
mq_strdup(const char *s)
{
	char	   *p = strdup(s);

	if (p == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "out of memory");
	return p;
}

int64_t
mq_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
mq_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
mq_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	/* EINTR ends the sleep on purpose: callers check their stop flag */
	(void) nanosleep(&ts, NULL);
}
