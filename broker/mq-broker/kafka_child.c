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
 * The connection strings hold no password (config.c refuses them), so
 * passing them on mq-kafka's command line shows nothing secret.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include "kafka_child.h"

#include <errno.h>
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

/* exec mq-kafka with the section's settings; never returns */
static void
exec_child(const BrokerConfig *cfg)
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

static void
spawn(void)
{
	pid_t		pid = fork();

	if (pid < 0)
	{
		mq_log_error("cannot start mq-kafka: %s", strerror(errno));
		restart_at_us = mq_now_us() + 1000000;
		return;
	}
	if (pid == 0)
		exec_child(kcfg);
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

void
kafka_child_check(void)
{
	int			status;

	if (kcfg == NULL)
		return;
	if (child > 0 && waitpid(child, &status, WNOHANG) == child)
	{
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
}
