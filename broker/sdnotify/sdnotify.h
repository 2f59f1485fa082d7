/*-------------------------------------------------------------------------
 *
 * sdnotify.h
 *	  Telling systemd how a daemon (mq-broker, mq-kafka) is doing: ready,
 *	  stopping, and alive (the watchdog), through libsystemd's sd_notify.
 *
 * Built with MQ_SYSTEMD (broker/Makefile sets it when libsystemd-dev is
 * installed; the Debian package always does) these send their message
 * when the daemon runs under a Type=notify unit (NOTIFY_SOCKET is set)
 * and do nothing otherwise; built without it they do nothing at all.
 * Kept out of common/ so that mqctl does not link libsystemd.
 *
 * Locking: none; call them from the daemon's one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_SDNOTIFY_H
#define MQ_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* READY=1, once (later calls do nothing) */
extern void mq_sd_ready(void);

/* STOPPING=1: the daemon is shutting down cleanly */
extern void mq_sd_stopping(void);

/*
 * The unit's WatchdogSec in microseconds, 0 without one: call
 * mq_sd_watchdog at least twice that often.
 */
extern uint64_t mq_sd_watchdog_usec(void);

/* WATCHDOG=1 when the watchdog is on, at most every half interval */
extern void mq_sd_watchdog(void);

/*
 * Is stderr systemd's journal (JOURNAL_STREAM names its device and inode)?
 * The journal stamps every line itself: the daemons then leave out their own
 * timestamps.
 */
extern bool mq_sd_stderr_is_journal(void);

/* Remove NOTIFY_SOCKET and WATCHDOG_* (a child must not speak for us) */
extern void mq_sd_forget(void);

#endif							/* MQ_SDNOTIFY_H */
