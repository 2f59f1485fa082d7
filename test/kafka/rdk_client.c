/*-------------------------------------------------------------------------
 *
 * rdk_client.c
 *	  A librdkafka test client for mq-kafka (test/kafka/librdkafka.sh
 *	  builds and runs it).
 *
 *	  rdk_client produce BROKERS TOPIC N CODEC [idempotent]
 *	      N records "rec-<i>-<padding>" (keys "k<i>"), printing "half"
 *	      once half are queued, then the rest more slowly so that the
 *	      script can kill the broker while records are in flight
 *	      (RDK_PACE_US between them, default 200); exit 0 only if every
 *	      record was acknowledged.
 *	  rdk_client group BROKERS TOPIC N GROUP
 *	      three consumers (threads) of one group; each commits every
 *	      record synchronously, and the third leaves after a sixth of the
 *	      records; exit 0 only if every record 0..N-1 was committed
 *	      exactly once.
 *
 *	  rdk_client perf BROKERS TOPIC N [RATE]
 *	      N 100-byte records as fast as librdkafka batches them (acks=all),
 *	      or at RATE records/s with linger.ms=0; prints records/s and the p50/p99 produce
 *	      latency (enqueue to acknowledgement), for test/bench/kafka.sh
 *	  rdk_client consume BROKERS TOPIC N
 *	      reads N records from the beginning of every partition; prints
 *	      records/s
 *	  rdk_client admin BROKERS TOPIC GROUP...
 *	      the admin APIs that delete and alter: DeleteRecords of TOPIC's
 *	      partition 0 up to 3, then beyond its end; DeleteGroups of the
 *	      GROUPs; AlterConfigs of TOPIC, valid then invalid.  Prints one
 *	      line per result: what, then the error name (and offset).
 *	  rdk_client delete-offsets BROKERS TOPIC GROUP...
 *	      OffsetDelete (DeleteConsumerGroupOffsets) of each GROUP's offset
 *	      of TOPIC's partition 0, one request per group (librdkafka takes
 *	      one): "delete-offsets GROUP the group's error the partition's".
 *
 * RDK_CONF=FILE adds the FILE's "key=value" lines to every client's
 * configuration (test/kafka/tls.sh: security.protocol=ssl and the
 * certificates; no secret goes on a command line).
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

/* the settings of the file named by RDK_CONF, if any */
static rd_kafka_conf_t *
conf_new(void)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const char *path = getenv("RDK_CONF");
	char		line[1024];
	FILE	   *f;

	if (path == NULL)
		return conf;
	f = fopen(path, "r");
	if (f == NULL)
	{
		perror(path);
		exit(2);
	}
	while (fgets(line, sizeof(line), f))
	{
		char	   *eq = strchr(line, '=');

		line[strcspn(line, "\r\n")] = '\0';
		if (eq == NULL || line[0] == '#')
			continue;
		*eq = '\0';
		set(conf, line, eq + 1);
	}
	fclose(f);
	return conf;
}

static int
produce(const char *brokers, const char *topic, int n, const char *codec, int idem)
{
	rd_kafka_conf_t *conf = conf_new();
	rd_kafka_t *rk;
	char		err[256];

	set(conf, "bootstrap.servers", brokers);
	set(conf, "compression.codec", codec);
	set(conf, "enable.idempotence", idem ? "true" : "false");
	set(conf, "message.timeout.ms", "60000");
	set(conf, "linger.ms", "5");
	if (getenv("RDK_DEBUG"))
		set(conf, "debug", getenv("RDK_DEBUG"));
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
		if (i > n / 2)			/* pacing: records stay in flight over a broker kill */
			usleep(getenv("RDK_PACE_US") ? atoi(getenv("RDK_PACE_US")) : 200);
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
	rd_kafka_conf_t *conf = conf_new();
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
	if (getenv("RDK_ASSIGNOR"))
		set(conf, "partition.assignment.strategy", getenv("RDK_ASSIGNOR"));
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

/* perf mode */
static double *sent_at,
		   *lat_ms;
static atomic_int acked;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void
on_perf_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	long		i = (long) m->_private;

	if (m->err == 0)
		lat_ms[atomic_fetch_add(&acked, 1)] = now_ms() - sent_at[i];
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static int
perf(const char *brokers, const char *topic, int n, int rate)
{
	rd_kafka_conf_t *conf = conf_new();
	rd_kafka_t *rk;
	char		err[256],
				val[100];
	double		start;

	sent_at = calloc(n, sizeof(double));
	lat_ms = calloc(n, sizeof(double));
	memset(val, 'x', sizeof(val));
	set(conf, "bootstrap.servers", brokers);
	set(conf, "queue.buffering.max.messages", "1000000");
	if (rate > 0)
		set(conf, "linger.ms", "0");	/* latency mode: send at once */
	rd_kafka_conf_set_dr_msg_cb(conf, on_perf_delivery);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	start = now_ms();
	for (long i = 0; i < n; i++)
	{
		if (rate > 0)
			while (now_ms() - start < i * 1000.0 / rate)
				rd_kafka_poll(rk, 1);
		sent_at[i] = now_ms();
		while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(val, sizeof(val)),
								 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
								 RD_KAFKA_V_OPAQUE((void *) i), RD_KAFKA_V_END) ==
			   RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 10);
		rd_kafka_poll(rk, 0);
	}
	rd_kafka_flush(rk, 120000);
	{
		int			ok = atomic_load(&acked);
		double		secs = (now_ms() - start) / 1000.0;

		qsort(lat_ms, ok, sizeof(double), cmp_double);
		printf("records %d acked %d records/s %.0f p50_ms %.2f p99_ms %.2f\n", n, ok, ok / secs,
			   ok ? lat_ms[ok / 2] : 0, ok ? lat_ms[(int) (ok * 0.99)] : 0);
	}
	rd_kafka_destroy(rk);
	return atomic_load(&acked) == n ? 0 : 1;
}

static int
consume(const char *brokers, const char *topic, int n)
{
	rd_kafka_conf_t *conf = conf_new();
	rd_kafka_t *rk;
	const rd_kafka_metadata_t *md;
	rd_kafka_topic_t *rkt;
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
	char		err[256];
	int			got = 0;
	double		start;

	set(conf, "bootstrap.servers", brokers);
	set(conf, "group.id", "rdk-perf-unused");
	set(conf, "enable.auto.commit", "false");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return 1;
	for (int i = 0; i < md->topics[0].partition_cnt; i++)
		rd_kafka_topic_partition_list_add(parts, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	start = now_ms();
	rd_kafka_assign(rk, parts);
	while (got < n && now_ms() - start < 120000)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);

		if (m && m->err == 0)
			got++;
		if (m)
			rd_kafka_message_destroy(m);
	}
	printf("records %d records/s %.0f\n", got, got / ((now_ms() - start) / 1000.0));
	rd_kafka_topic_partition_list_destroy(parts);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return got == n ? 0 : 1;
}

/* the next admin result of the queue, of type type, or exit */
static rd_kafka_event_t *
admin_event(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);

	if (ev == NULL || rd_kafka_event_type(ev) != type || rd_kafka_event_error(ev))
	{
		fprintf(stderr, "admin request failed: %s\n", ev ? rd_kafka_event_error_string(ev) : "timeout");
		exit(1);
	}
	return ev;
}

static void
admin_delete_records(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *topic, int64_t before)
{
	rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
	rd_kafka_DeleteRecords_t *dr;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_partition_list_t *res;

	rd_kafka_topic_partition_list_add(offsets, topic, 0)->offset = before;
	dr = rd_kafka_DeleteRecords_new(offsets);
	rd_kafka_DeleteRecords(rk, &dr, 1, NULL, q);
	ev = admin_event(q, RD_KAFKA_EVENT_DELETERECORDS_RESULT);
	res = rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
	for (int i = 0; i < res->cnt; i++)
		printf("delete-records %d %s %lld\n", res->elems[i].partition, rd_kafka_err2name(res->elems[i].err),
			   (long long) res->elems[i].offset);
	rd_kafka_event_destroy(ev);
	rd_kafka_DeleteRecords_destroy(dr);
	rd_kafka_topic_partition_list_destroy(offsets);
}

static void
admin_delete_groups(rd_kafka_t *rk, rd_kafka_queue_t *q, int n, char **names)
{
	rd_kafka_DeleteGroup_t **dg = calloc(n, sizeof(*dg));
	rd_kafka_event_t *ev;
	const rd_kafka_group_result_t **res;
	size_t		cnt;

	for (int i = 0; i < n; i++)
		dg[i] = rd_kafka_DeleteGroup_new(names[i]);
	rd_kafka_DeleteGroups(rk, dg, n, NULL, q);
	ev = admin_event(q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT);
	res = rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
	for (size_t i = 0; i < cnt; i++)
	{
		const rd_kafka_error_t *e = rd_kafka_group_result_error(res[i]);

		printf("delete-group %s %s\n", rd_kafka_group_result_name(res[i]),
			   rd_kafka_err2name(e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR));
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_DeleteGroup_destroy_array(dg, n);
	free(dg);
}

static void
admin_alter_configs(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *topic, const char *key,
					const char *value)
{
	rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t **res;
	size_t		cnt;

	rd_kafka_ConfigResource_set_config(cr, key, value);
	rd_kafka_AlterConfigs(rk, &cr, 1, NULL, q);
	ev = admin_event(q, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT);
	res = rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &cnt);
	for (size_t i = 0; i < cnt; i++)
		printf("alter-configs %s=%s %s\n", key, value, rd_kafka_err2name(rd_kafka_ConfigResource_error(res[i])));
	rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy(cr);
}

static void
admin_delete_offsets(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *group, const char *topic)
{
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
	rd_kafka_DeleteConsumerGroupOffsets_t *del;
	rd_kafka_event_t *ev;
	const rd_kafka_group_result_t **res;
	size_t		cnt;

	rd_kafka_topic_partition_list_add(parts, topic, 0);
	del = rd_kafka_DeleteConsumerGroupOffsets_new(group, parts);
	rd_kafka_DeleteConsumerGroupOffsets(rk, &del, 1, NULL, q);
	ev = rd_kafka_queue_poll(q, 60000);
	if (ev == NULL || rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT)
	{
		fprintf(stderr, "admin request failed: %s\n", ev ? rd_kafka_event_error_string(ev) : "timeout");
		exit(1);
	}
	if (rd_kafka_event_error(ev))	/* the group's error fails the whole request */
		printf("delete-offsets %s %s -\n", group, rd_kafka_err2name(rd_kafka_event_error(ev)));
	else
	{
		res = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
			rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &cnt);
		for (size_t i = 0; i < cnt; i++)
		{
			const rd_kafka_error_t *e = rd_kafka_group_result_error(res[i]);
			const rd_kafka_topic_partition_list_t *p = rd_kafka_group_result_partitions(res[i]);

			printf("delete-offsets %s %s %s\n", rd_kafka_group_result_name(res[i]),
				   rd_kafka_err2name(e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR),
				   p && p->cnt > 0 ? rd_kafka_err2name(p->elems[0].err) : "-");
		}
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_DeleteConsumerGroupOffsets_destroy(del);
	rd_kafka_topic_partition_list_destroy(parts);
}

/* an admin client (a producer handle and a result queue), or exit */
static rd_kafka_t *
admin_client(const char *brokers, rd_kafka_queue_t **q)
{
	rd_kafka_conf_t *conf = conf_new();
	rd_kafka_t *rk;
	char		err[256];

	set(conf, "bootstrap.servers", brokers);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (rk == NULL)
	{
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	*q = rd_kafka_queue_new(rk);
	return rk;
}

static int
delete_offsets(const char *brokers, const char *topic, int ngroups, char **groups)
{
	rd_kafka_queue_t *q;
	rd_kafka_t *rk = admin_client(brokers, &q);

	for (int i = 0; i < ngroups; i++)
		admin_delete_offsets(rk, q, groups[i], topic);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return 0;
}

static int
admin(const char *brokers, const char *topic, int ngroups, char **groups)
{
	rd_kafka_queue_t *q;
	rd_kafka_t *rk = admin_client(brokers, &q);

	admin_delete_records(rk, q, topic, 3);
	admin_delete_records(rk, q, topic, 999);
	admin_delete_groups(rk, q, ngroups, groups);
	admin_alter_configs(rk, q, topic, "retention.ms", "3600000");
	admin_alter_configs(rk, q, topic, "retention.ms", "soon");
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "produce") == 0)
		return produce(argv[2], argv[3], atoi(argv[4]), argv[5],
					   argc > 6 && strcmp(argv[6], "idempotent") == 0);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "perf") == 0)
		return perf(argv[2], argv[3], atoi(argv[4]), argc == 6 ? atoi(argv[5]) : 0);
	if (argc == 5 && strcmp(argv[1], "consume") == 0)
		return consume(argv[2], argv[3], atoi(argv[4]));
	if (argc == 6 && strcmp(argv[1], "group") == 0)
		return group(argv[2], argv[3], atoi(argv[4]), argv[5]);
	if (argc >= 5 && strcmp(argv[1], "admin") == 0)
		return admin(argv[2], argv[3], argc - 4, argv + 4);
	if (argc >= 5 && strcmp(argv[1], "delete-offsets") == 0)
		return delete_offsets(argv[2], argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: rdk_client produce BROKERS TOPIC N CODEC [idempotent]\n"
			"       rdk_client group BROKERS TOPIC N GROUP\n"
			"       rdk_client perf BROKERS TOPIC N [RATE]\n"
			"       rdk_client consume BROKERS TOPIC N\n"
			"       rdk_client admin BROKERS TOPIC GROUP...\n"
			"       rdk_client delete-offsets BROKERS TOPIC GROUP...\n");
	return 2;
}
