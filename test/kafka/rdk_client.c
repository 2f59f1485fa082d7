/*-------------------------------------------------------------------------
 *
 * rdk_client.c
 *	  A librdkafka test client for mq-kafka (test/kafka/librdkafka.sh
 *	  builds and runs it).
 *
 *	  rdk_client produce BROKERS TOPIC N CODEC [idempotent]
 *	      N records "rec-<i>-<padding>" (keys "k<i>"), printing "half"
 *	      once half are queued, then the rest more slowly so that the
 *	      script can kill the broker while records are in flight; exit 0
 *	      only if every record was acknowledged.
 *	  rdk_client group BROKERS TOPIC N GROUP
 *	      three consumers (threads) of one group; each commits every
 *	      record synchronously, and the third leaves after a sixth of the
 *	      records; exit 0 only if every record 0..N-1 was committed
 *	      exactly once.
 *
 * Threads in group mode share only the atomic counters.
 *
 *-------------------------------------------------------------------------
 */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int delivered_ok;
static atomic_int delivered_err;

static void
on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	if (m->err)
	{
		fprintf(stderr, "delivery failed: %s\n", rd_kafka_err2str(m->err));
		atomic_fetch_add(&delivered_err, 1);
	}
	else
		atomic_fetch_add(&delivered_ok, 1);
}

static void
set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char		err[256];

	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
	{
		fprintf(stderr, "%s=%s: %s\n", k, v, err);
		exit(2);
	}
}

static int
produce(const char *brokers, const char *topic, int n, const char *codec, int idem)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;
	char		err[256];

	set(conf, "bootstrap.servers", brokers);
	set(conf, "compression.codec", codec);
	set(conf, "enable.idempotence", idem ? "true" : "false");
	set(conf, "message.timeout.ms", "60000");
	set(conf, "linger.ms", "5");
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (rk == NULL)
	{
		fprintf(stderr, "rd_kafka_new: %s\n", err);
		return 2;
	}
	for (int i = 0; i < n; i++)
	{
		char		key[32],
					val[160];
		rd_kafka_resp_err_t e;

		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), "rec-%d-%0100d", i, 0);
		do
		{
			e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
								  RD_KAFKA_V_KEY(key, strlen(key)),
								  RD_KAFKA_V_VALUE(val, strlen(val)),
								  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
			if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				rd_kafka_poll(rk, 10);
		} while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
		if (e)
		{
			fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
			return 1;
		}
		rd_kafka_poll(rk, 0);
		if (i == n / 2)
		{
			printf("half\n");
			fflush(stdout);
		}
		if (i > n / 2)
			usleep(200);		/* pacing: records stay in flight over a broker kill */
	}
	rd_kafka_flush(rk, 90000);
	printf("acknowledged %d, failed %d\n", atomic_load(&delivered_ok), atomic_load(&delivered_err));
	rd_kafka_destroy(rk);
	return atomic_load(&delivered_ok) == n ? 0 : 1;
}

/* group mode */
static const char *g_brokers,
		   *g_topic,
		   *g_group;
static int	g_n;
static atomic_int *committed;	/* per record: successful commits */
static atomic_int total;

static void *
consumer_main(void *arg)
{
	int			id = (int) (long) arg;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_t *rk;
	char		err[256];
	int			mine = 0;
	time_t		end = time(NULL) + 90;

	set(conf, "bootstrap.servers", g_brokers);
	set(conf, "group.id", g_group);
	set(conf, "enable.auto.commit", "false");
	set(conf, "auto.offset.reset", "earliest");
	set(conf, "session.timeout.ms", "6000");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_topic_partition_list_add(sub, g_topic, RD_KAFKA_PARTITION_UA);
	rd_kafka_subscribe(rk, sub);
	rd_kafka_topic_partition_list_destroy(sub);
	while (atomic_load(&total) < g_n && time(NULL) < end)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		int			idx;

		if (m == NULL)
			continue;
		if (m->err == 0 && sscanf((const char *) m->payload, "rec-%d-", &idx) == 1 &&
			idx >= 0 && idx < g_n &&
			rd_kafka_commit_message(rk, m, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			if (atomic_fetch_add(&committed[idx], 1) == 0)
				atomic_fetch_add(&total, 1);
			mine++;
		}
		rd_kafka_message_destroy(m);
		if (id == 2 && mine >= g_n / 6)
			break;				/* the third member leaves */
	}
	printf("member %d committed %d records\n", id, mine);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return NULL;
}

static int
group(const char *brokers, const char *topic, int n, const char *grp)
{
	pthread_t	t[3];
	int			dups = 0,
				missing = 0;

	g_brokers = brokers;
	g_topic = topic;
	g_group = grp;
	g_n = n;
	committed = calloc(n, sizeof(atomic_int));
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, consumer_main, (void *) i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < n; i++)
	{
		int			c = atomic_load(&committed[i]);

		dups += c > 1;
		missing += c == 0;
	}
	printf("records %d, missing %d, committed twice %d\n", n, missing, dups);
	return missing == 0 && dups == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "produce") == 0)
		return produce(argv[2], argv[3], atoi(argv[4]), argv[5],
					   argc > 6 && strcmp(argv[6], "idempotent") == 0);
	if (argc == 6 && strcmp(argv[1], "group") == 0)
		return group(argv[2], argv[3], atoi(argv[4]), argv[5]);
	fprintf(stderr, "usage: rdk_client produce BROKERS TOPIC N CODEC [idempotent]\n"
			"       rdk_client group BROKERS TOPIC N GROUP\n");
	return 2;
}
