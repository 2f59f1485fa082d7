/*-------------------------------------------------------------------------
 *
 * sdnotify.c
 *	  sd_notify for mq-broker and mq-kafka (sdnotify.h): READY=1 once the
 *	  daemon serves, STOPPING=1 when it shuts down, WATCHDOG=1 while its
 *	  loop turns.  Without MQ_SYSTEMD every function is a no-op.
 *
 * Locking: none; the daemons call these from their one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef MQ_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "sdnotify.h"
#include "util.h"

static bool ready_sent = false;
static int64_t last_ping_us = 0;

#ifdef MQ_SYSTEMD
static void
notify(const char *state)
{
	int			rc = sd_notify(0, state);

	if (rc < 0)
		mq_log_warning("cannot tell systemd %s (error %d)", state, -rc);
}
#else
static void
notify(const char *state)
{
}
#endif

void
mq_sd_ready(void)
{
	if (ready_sent)
		return;
	ready_sent = true;
	notify("READY=1");
}

void
mq_sd_stopping(void)
{
	notify("STOPPING=1");
}

uint64_t
mq_sd_watchdog_usec(void)
{
#ifdef MQ_SYSTEMD
	uint64_t	usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0)
		return usec;
#endif
	return 0;
}

void
mq_sd_watchdog(void)
{
	static int64_t interval_us = -1;
	int64_t		now;

	if (interval_us < 0)
		interval_us = (int64_t) mq_sd_watchdog_usec() / 2;
	if (interval_us == 0)
		return;
	now = mq_now_us();
	if (last_ping_us != 0 && now - last_ping_us < interval_us)
		return;
	last_ping_us = now;
	notify("WATCHDOG=1");
}

bool
mq_sd_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev,
				ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void
mq_sd_forget(void)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}
