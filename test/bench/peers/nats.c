/*
 * nats.c
 *	  The peers benchmark's client for NATS JetStream, over the NATS C
 *	  client (TARGET is the server URL, NAME the stream and its subject).
 *
 *	  setup    a file-stored stream NAME on subject NAME, and a durable pull
 *	           consumer 'g' with AckAll (acknowledging a message
 *	           acknowledges every earlier one)
 *	  produce  js_Publish, which waits for the stream's acknowledgement; a
 *	           batch is that many js_PublishAsync and one wait for all of
 *	           their acknowledgements
 *	  consume  a fetch of up to max messages from 'g', then a synchronous
 *	           acknowledgement of the last one (one round trip a batch)
 *
 * SYSTEM nats-r3 (a cluster of three servers): the stream has three
 * replicas; a publish is acknowledged once a majority of them stored it.
 * A new cluster elects its JetStream meta leader after it starts, so the
 * setup retries the stream's creation for up to 20 s.
 *
 * The server's durability (nats-server 2.9 has no per-message fsync) is
 * stated by the script.  The connection is the driver thread's own
 * (peers.h); no locking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

#include "peers.h"

typedef struct NatsClient
{
	natsConnection *nc;
	jsCtx *js;
	natsSubscription *sub;
	const PeerArgs *a;
}			NatsClient;

static void
check(natsStatus s, jsErrCode jerr, const char *what)
{
	if (s != NATS_OK)
		peer_die("nats: %s: %s (%d) %s", what, natsStatus_GetText(s), (int) jerr,
				 nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
}

static void *
nats_open(const PeerArgs *a, int latency)
{
	NatsClient *c = calloc(1, sizeof(NatsClient));

	(void) latency;
	c->a = a;
	check(natsConnection_ConnectTo(&c->nc, a->target), 0, "connect");
	check(natsConnection_JetStream(&c->js, c->nc, NULL), 0, "jetstream");
	return c;
}

static void
nats_close(void *p)
{
	NatsClient *c = p;

	natsSubscription_Destroy(c->sub);
	jsCtx_Destroy(c->js);
	natsConnection_Destroy(c->nc);
	free(c);
}

static void
nats_setup(const PeerArgs *a)
{
	NatsClient *c = nats_open(a, 0);
	jsStreamConfig sc;
	jsConsumerConfig cc;
	const char *subjects[1] = {a->name};
	jsErrCode jerr = 0;

	jsStreamConfig_Init(&sc);
	sc.Name = a->name;
	sc.Subjects = subjects;
	sc.SubjectsLen = 1;
	sc.Storage = js_FileStorage;
	if (strcmp(a->system, "nats-r3") == 0)
		sc.Replicas = 3;
	for (int64_t until = peer_now_ns() + 20 * (int64_t) 1000000000;;)
	{
		natsStatus s = js_AddStream(NULL, c->js, &sc, NULL, &jerr);

		if (s == NATS_OK || peer_now_ns() > until)
		{
			check(s, jerr, "add stream");
			break;
		}
		nats_Sleep(200);
	}
	jsConsumerConfig_Init(&cc);
	cc.Durable = "g";
	cc.AckPolicy = js_AckAll;
	cc.MaxAckPending = 100000;
	check(js_AddConsumer(NULL, c->js, a->name, &cc, NULL, &jerr), jerr, "add consumer");
	nats_close(c);
}

static void
nats_produce(void *p, const char *const *values, int len, int n)
{
	NatsClient *c = p;
	jsErrCode jerr = 0;

	if (n == 1)
	{
		check(js_Publish(NULL, c->js, c->a->name, values[0], len, NULL, &jerr), jerr, "publish");
		return;
	}
	for (int i = 0; i < n; i++)
		check(js_PublishAsync(c->js, c->a->name, values[i], len, NULL), 0, "publish async");
	check(js_PublishAsyncComplete(c->js, NULL), 0, "publish async complete");
}

static int
nats_consume(void *p, int max, int wait_ms, PeerRecordFn fn, void *arg)
{
	NatsClient *c = p;
	natsMsgList list = {0};
	jsErrCode jerr = 0;
	natsStatus s;
	int			n;

	if (c->sub == NULL)
	{
		jsSubOptions so;

		jsSubOptions_Init(&so);
		so.Stream = c->a->name;
		so.Consumer = "g";
		check(js_PullSubscribe(&c->sub, c->js, c->a->name, "g", NULL, &so, &jerr), jerr, "pull subscribe");
	}
	s = natsSubscription_Fetch(&list, c->sub, max, wait_ms, &jerr);
	if (s == NATS_TIMEOUT)
		return 0;
	check(s, jerr, "fetch");
	for (int i = 0; i < list.Count; i++)
		fn(natsMsg_GetData(list.Msgs[i]), natsMsg_GetDataLength(list.Msgs[i]), arg);
	n = list.Count;
	if (n > 0)
		check(natsMsg_AckSync(list.Msgs[n - 1], NULL, &jerr), jerr, "ack");
	natsMsgList_Destroy(&list);
	return n;
}

const PeerOps peer_ops = {nats_setup, nats_open, nats_produce, nats_consume, nats_close};
