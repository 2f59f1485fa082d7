/*-------------------------------------------------------------------------
 *
 * rdk_cgroup.c
 *	  A librdkafka consumer group that checks "exactly once per committed
 *	  position" while the test injects faults (test/t/121_kafka_cluster_groups.pl
 *	  builds and runs it).
 *
 *	  rdk_cgroup BROKERS TOPIC N GROUP
 *	      three high-level consumers (threads) of GROUP read TOPIC, whose
 *	      records are "rec-<i>-..." for i in 0..N-1 (rdk_client produce),
 *	      and commit each record synchronously after reading it
 *	      (RDK_PACE_US microseconds later, default 0).  Prints "progress
 *	      K" on stdout as the committed records pass each tenth of N, so
 *	      that the test can inject a fault at a known point, and exits 0
 *	      only if, before a deadline (RDK_DEADLINE_S, default 240 s):
 *	        - every record 0..N-1 was delivered;
 *	        - the successful commits of each partition only ever moved
 *	          forward: no position was committed twice (a record
 *	          delivered again after a commit had passed it, and committed
 *	          again, is a duplicate the group's committed position let
 *	          through);
 *	        - the committed positions add up to N (everything committed).
 *	      A commit that fails is not counted: its record may be delivered
 *	      again (at-least-once between commits, as in Kafka), unless the
 *	      group holds it all the same (held_anyway).  Rebalances
 *	      are handled in the polling thread (on_rebalance).
 *	      The last line is "delivered D of N, committed C, twice T".
 *
 * The threads share the counters below under one mutex.
 *
 *-------------------------------------------------------------------------
 */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PARTS 64

static const char *g_brokers,
		   *g_topic,
		   *g_group;
static int	g_n;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *delivered;			/* per record */
static int	ndelivered;
static int64_t committed[MAX_PARTS];	/* highest successful commit */
static int64_t ncommitted;		/* sum of committed[] */
static int	twice;
static int	next_progress = 1;
static int	done;

static void
set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char		err[256];

	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
	{
		fprintf(stderr, "%s: %s\n", k, err);
		exit(2);
	}
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* a successful commit of position pos (the next offset) of partition p */
static void
note_commit(int member, int p, int64_t pos)
{
	pthread_mutex_lock(&mu);
	if (getenv("RDK_TRACE"))
		fprintf(stderr, "%.3f member %d committed partition %d position %lld\n",
				now(), member, p, (long long) pos);
	if (pos <= committed[p])
	{
		twice++;
		fprintf(stderr, "%.3f member %d committed partition %d position %lld again (at %lld)\n",
				now(), member, p, (long long) pos, (long long) committed[p]);
	}
	else
	{
		ncommitted += pos - committed[p];
		committed[p] = pos;
	}
	while (next_progress <= 10 && ncommitted >= (int64_t) g_n * next_progress / 10)
	{
		printf("progress %d\n", next_progress++);
		fflush(stdout);
	}
	if (ncommitted >= g_n && ndelivered >= g_n)
		done = 1;
	pthread_mutex_unlock(&mu);
}

static void
note_delivery(int idx)
{
	pthread_mutex_lock(&mu);
	if (!delivered[idx])
	{
		delivered[idx] = 1;
		ndelivered++;
	}
	pthread_mutex_unlock(&mu);
}

static int
finished(void)
{
	int			d;

	pthread_mutex_lock(&mu);
	d = done;
	pthread_mutex_unlock(&mu);
	return d;
}

/*
 * Rebalances run in the polling thread (between records), so a record's
 * commit never straddles one: without this, librdkafka handles them on
 * its own, and a record of a revoked partition can be committed with the
 * next generation's id after the new owner read the committed offsets,
 * and be read again (at-least-once, by the application's doing).
 */
static void
on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
			 void *opaque)
{
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
		rd_kafka_assign(rk, parts);
	else
		rd_kafka_assign(rk, NULL);
}

static rd_kafka_t *
consumer_new(void)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_t *rk;
	char		err[256];

	set(conf, "bootstrap.servers", g_brokers);
	set(conf, "group.id", g_group);
	set(conf, "enable.auto.commit", "false");
	set(conf, "auto.offset.reset", "earliest");
	set(conf, "session.timeout.ms", "6000");
	set(conf, "topic.metadata.refresh.interval.ms", "2000");
	rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
	if (getenv("RDK_DEBUG"))
		set(conf, "debug", getenv("RDK_DEBUG"));
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (rk == NULL)
	{
		fprintf(stderr, "rd_kafka_new: %s\n", err);
		exit(2);
	}
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_topic_partition_list_add(sub, g_topic, RD_KAFKA_PARTITION_UA);
	rd_kafka_subscribe(rk, sub);
	rd_kafka_topic_partition_list_destroy(sub);
	return rk;
}

/*
 * A commit reported failed may have been taken all the same: the
 * coordinator died after the partition's leader stored it, and the
 * client's retry at the new one failed (UNKNOWN_MEMBER_ID), as can happen
 * with Kafka.  Its record is then not delivered again, so the group's
 * committed offset decides: held exactly, it counts as committed.
 */
static bool
held_anyway(rd_kafka_t *rk, const rd_kafka_message_t *m)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	bool		held;

	rd_kafka_topic_partition_list_add(l, g_topic, m->partition);
	held = rd_kafka_committed(rk, l, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].err == 0 &&
		l->elems[0].offset == m->offset + 1;
	rd_kafka_topic_partition_list_destroy(l);
	return held;
}

static void *
consumer_main(void *arg)
{
	int			id = (int) (long) arg;
	rd_kafka_t *rk = consumer_new();
	const char *pace = getenv("RDK_PACE_US");
	const char *limit = getenv("RDK_DEADLINE_S");
	time_t		end = time(NULL) + (limit ? atoi(limit) : 240);

	while (!finished() && time(NULL) < end)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		rd_kafka_resp_err_t err;
		bool		held;
		int			idx;

		if (m == NULL)
			continue;
		if (m->err == 0 && m->partition < MAX_PARTS &&
			sscanf((const char *) m->payload, "rec-%d-", &idx) == 1 && idx >= 0 && idx < g_n)
		{
			note_delivery(idx);
			if (pace)
				usleep(atoi(pace));
			err = rd_kafka_commit_message(rk, m, 0);
			held = err == RD_KAFKA_RESP_ERR_NO_ERROR || held_anyway(rk, m);
			if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
				fprintf(stderr, "%.3f member %d: commit of partition %d offset %lld failed: %s%s\n",
						now(), id, (int) m->partition, (long long) m->offset, rd_kafka_err2str(err),
						held ? " (the group holds it all the same)" : "");
			if (held)
				note_commit(id, m->partition, m->offset + 1);
		}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t	t[3];

	if (argc != 5)
	{
		fprintf(stderr, "usage: rdk_cgroup BROKERS TOPIC N GROUP\n");
		return 2;
	}
	g_brokers = argv[1];
	g_topic = argv[2];
	g_n = atoi(argv[3]);
	g_group = argv[4];
	delivered = calloc(g_n > 0 ? g_n : 1, 1);
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, consumer_main, (void *) i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("delivered %d of %d, committed %lld, twice %d\n", ndelivered, g_n,
		   (long long) ncommitted, twice);
	return ndelivered == g_n && ncommitted == g_n && twice == 0 ? 0 : 1;
}
