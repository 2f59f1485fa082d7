/*-------------------------------------------------------------------------
 *
 * kafka_child.c
 *	  With a [kafka] section, mq-broker runs its node's mq-kafka as a
 *	  child process (docs/kafka.md, "Replicated clusters"): the node's
 *	  connection string, the broker id as its node id, the listen and
 *	  advertised addresses, sasl and metrics from the section, and the coordinator, where
 *	  mq-kafka registers its address and reads the cluster's view.  The
 *	  child is restarted when it exits (after a second, so that a child
 *	  that cannot start does not spin), is sent SIGTERM when the broker
 *	  stops, and dies with the broker (PR_SET_PDEATHSIG) if the broker is
 *	  killed.  Its output goes where the broker's goes.
 *
 * The watchdog ([kafka] watchdog.ms): a child whose event loop stopped
 * turning (stopped, deadlocked, spinning) still holds its port, and its
 * clients keep sending it requests that it would run, stale, when it
 * resumes.  Each child gets a fresh pipe: it inherits the write end (its
 * number in MQ_KAFKA_HEARTBEAT_FD; every other descriptor of the broker
 * is close-on-exec, the read end too) and writes a byte every second
 * from its loop (broker/mq-kafka/main.c), without blocking and dropping
 * the byte when the pipe is full.  Each tick the broker drains the
 * read end, non-blocking; after watchdog.ms without a byte it kills the
 * child with SIGKILL, so the requests queued on its sockets die with it
 * and its clients reconnect, and the restart below starts a new one.
 * Time the broker itself was not looking (a tick later than half the
 * timeout: a stopped or stalled broker) is not held against the child.
 *
 * The connection strings hold no password (config.c refuses them), so
 * passing them on mq-kafka's command line shows nothing secret.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE				/* pipe2 */
#include "kafka_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sdnotify.h"
#include "util.h"

static const BrokerConfig *kcfg;
static pid_t child = -1;
static int64_t restart_at_us;
/* the watchdog: the read end of the child's heartbeat pipe, or -1 */
static int	beat_fd = -1;
static int64_t beat_us;			/* when the last byte came (or the child started) */
static int64_t looked_us;		/* when the pipe was last drained */
static bool killed;				/* the child was sent SIGKILL, not yet reaped */

/* "--option=value" for each listener and TLS key that is set */
static int
tls_args(const BrokerConfig *cfg, const char **argv, int n)
{
	const char *opts[] = {"--listeners", "--advertised-listeners",
						  "--listener-security-protocol-map", "--ssl-certificate", "--ssl-key",
						  "--ssl-key-password-file", "--ssl-ca", "--ssl-client-auth", "--ssl-principal-mapping-rules"};
	const char *vals[] = {cfg->kafka_listeners, cfg->kafka_advertised_listeners,
						  cfg->kafka_protocol_map, cfg->kafka_ssl_cert, cfg->kafka_ssl_key,
						  cfg->kafka_ssl_key_password_file, cfg->kafka_ssl_ca, cfg->kafka_ssl_client_auth,
						  cfg->kafka_ssl_rules};

	for (int i = 0; i < 9; i++)
		if (vals[i])
		{
			argv[n++] = opts[i];
			argv[n++] = vals[i];
		}
	return n;
}

/* exec mq-kafka with the section's settings (beat: its heartbeat pipe's write end, or -1); never returns */
static void
exec_child(const BrokerConfig *cfg, int beat)
{
	char		id[16],
				pool[16],
				delay[16],
				min_session[48],
				max_session[48],
				idle[48],
				auto_create[48],
				sasl[64];
	const char *argv[48];
	int			n = 0;
	const char *prog = cfg->kafka_program ? cfg->kafka_program : "mq-kafka";

	(void) prctl(PR_SET_PDEATHSIG, SIGTERM);
	mq_sd_forget();				/* systemd hears from mq-broker only */
	if (beat >= 0)
	{
		char		fd[16];

		/* the one descriptor the child keeps */
		snprintf(fd, sizeof(fd), "%d", beat);
		if (fcntl(beat, F_SETFD, 0) == 0)
			setenv("MQ_KAFKA_HEARTBEAT_FD", fd, 1);
	}
	else
		unsetenv("MQ_KAFKA_HEARTBEAT_FD");
	snprintf(id, sizeof(id), "%d", cfg->broker_id);
	argv[n++] = prog;
	argv[n++] = "--dbname";
	argv[n++] = cfg->node;
	if (cfg->kafka_listen)
	{
		argv[n++] = "--listen";
		argv[n++] = cfg->kafka_listen;
		argv[n++] = "--advertise";
		argv[n++] = cfg->kafka_advertise ? cfg->kafka_advertise : cfg->kafka_listen;
	}
	n = tls_args(cfg, argv, n);
	argv[n++] = "--node-id";
	argv[n++] = id;
	argv[n++] = "--coordinator";
	argv[n++] = cfg->coordinator;
	if (cfg->kafka_pool > 0)
	{
		snprintf(pool, sizeof(pool), "%d", cfg->kafka_pool);
		argv[n++] = "--pool";
		argv[n++] = pool;
	}
	if (cfg->kafka_group_delay_ms >= 0)
	{
		snprintf(delay, sizeof(delay), "%d", cfg->kafka_group_delay_ms);
		argv[n++] = "--group-initial-delay-ms";
		argv[n++] = delay;
	}
	if (cfg->kafka_min_session_ms >= 0)
	{
		snprintf(min_session, sizeof(min_session), "--group-min-session-timeout-ms=%d", cfg->kafka_min_session_ms);
		argv[n++] = min_session;
	}
	if (cfg->kafka_max_session_ms >= 0)
	{
		snprintf(max_session, sizeof(max_session), "--group-max-session-timeout-ms=%d", cfg->kafka_max_session_ms);
		argv[n++] = max_session;
	}
	if (cfg->kafka_idle_ms >= 0)
	{
		snprintf(idle, sizeof(idle), "--connections-max-idle-ms=%d", cfg->kafka_idle_ms);
		argv[n++] = idle;
	}
	if (cfg->kafka_auto_create == 0 || cfg->kafka_num_partitions > 0)
	{
		snprintf(auto_create, sizeof(auto_create), "--auto-create-topics=%d",
				 cfg->kafka_auto_create == 0 ? 0 : cfg->kafka_num_partitions);
		argv[n++] = auto_create;
	}
	if (cfg->kafka_sasl)
	{
		snprintf(sasl, sizeof(sasl), "--sasl=%s", cfg->kafka_sasl);	/* checked by config.c */
		argv[n++] = sasl;
	}
	if (cfg->kafka_sasl_plain_on_plaintext)
		argv[n++] = "--sasl-plain-on-plaintext";
	if (cfg->kafka_principal_rules)
	{
		argv[n++] = "--principal-rules";
		argv[n++] = cfg->kafka_principal_rules;
	}
	if (cfg->kafka_anonymous)
	{
		argv[n++] = "--anonymous";
		argv[n++] = cfg->kafka_anonymous;
	}
	if (cfg->kafka_metrics)
	{
		argv[n++] = "--metrics";
		argv[n++] = cfg->kafka_metrics;
	}
	argv[n] = NULL;
	execvp(prog, (char *const *) argv);
	fprintf(stderr, "cannot run %s: %s\n", prog, strerror(errno));
	_exit(127);
}

/* the heartbeat pipe of the next child: both ends close-on-exec and non-blocking */
static bool
beat_pipe(int fds[2])
{
	fds[0] = fds[1] = -1;
	if (kcfg->kafka_watchdog_ms <= 0)
		return false;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0)
		return true;
	mq_log_warning("no watchdog for mq-kafka: cannot create a pipe: %s", strerror(errno));
	fds[0] = fds[1] = -1;
	return false;
}

static void
spawn(void)
{
	int			fds[2];
	bool		watched = beat_pipe(fds);
	pid_t		pid = fork();

	if (pid < 0)
	{
		mq_log_error("cannot start mq-kafka: %s", strerror(errno));
		restart_at_us = mq_now_us() + 1000000;
		if (watched)
		{
			close(fds[0]);
			close(fds[1]);
		}
		return;
	}
	if (pid == 0)
		exec_child(kcfg, fds[1]);
	if (watched)
		close(fds[1]);			/* the child's; EOF on fds[0] once it is gone */
	beat_fd = fds[0];
	beat_us = looked_us = mq_now_us();
	killed = false;
	child = pid;
	restart_at_us = mq_now_us() + 1000000;
	mq_log_info("started mq-kafka (pid %d) on %s", (int) pid,
				kcfg->kafka_listen ? kcfg->kafka_listen : kcfg->kafka_listeners);
}

void
kafka_child_start(const BrokerConfig *cfg)
{
	if (cfg->kafka_listen == NULL && cfg->kafka_listeners == NULL)
		return;
	kcfg = cfg;
	spawn();
}

/*
 * The watchdog: drain the heartbeat pipe; SIGKILL a child silent for
 * watchdog.ms.  The reaping and the restart are kafka_child_check's.
 */
static void
watch_beats(void)
{
	char		buf[256];
	int64_t		now = mq_now_us();
	int64_t		timeout_us = (int64_t) kcfg->kafka_watchdog_ms * 1000;
	ssize_t		n;

	if (child <= 0 || beat_fd < 0 || killed)
		return;
	/* the broker was stopped or stalled: count from now */
	if (now - looked_us > timeout_us / 2)
		beat_us = now;
	looked_us = now;
	while ((n = read(beat_fd, buf, sizeof(buf))) > 0)
		beat_us = now;
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return;
	/* n == 0: the child closed it, so it is exiting; waitpid will tell */
	if (n == 0 || now - beat_us < timeout_us)
		return;
	mq_log_warning("mq-kafka (pid %d) has not turned its loop for %.1f s: killing it",
				   (int) child, (double) (now - beat_us) / 1e6);
	if (kill(child, SIGKILL) == 0)
		killed = true;
}

void
kafka_child_check(void)
{
	int			status;

	if (kcfg == NULL)
		return;
	watch_beats();
	if (child > 0 && waitpid(child, &status, WNOHANG) == child)
	{
		if (beat_fd >= 0)
			close(beat_fd);
		beat_fd = -1;
		if (WIFSIGNALED(status))
			mq_log_warning("mq-kafka (pid %d) was killed by signal %d; restarting it",
						   (int) child, WTERMSIG(status));
		else
			mq_log_warning("mq-kafka (pid %d) exited with status %d; restarting it",
						   (int) child, WEXITSTATUS(status));
		child = -1;
	}
	if (child < 0 && mq_now_us() >= restart_at_us)
		spawn();
}

/* SIGHUP: mq-kafka reloads its certificate (async-signal-safe) */
void
kafka_child_forward(int sig)
{
	if (child > 0)
		(void) kill(child, sig);
}

void
kafka_child_stop(void)
{
	if (child <= 0)
		return;
	kill(child, SIGTERM);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	child = -1;
	if (beat_fd >= 0)
		close(beat_fd);
	beat_fd = -1;
}
