/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  Sending batches of records with mq.send_batch() (see producer.h).
 *
 * Each batch is one statement in its own transaction, so a batch is
 * acknowledged, whole, when its COMMIT returns: that is the unit of
 * durability and of the latency "perf produce" reports.  Keys and values
 * go as binary bytea[] parameters (see pgbinary.c) through a prepared
 * statement, so the server parses and plans the call once per connection.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "producer.h"

#define SEND_STATEMENT "mqctl_send_batch"

MqAcks
producer_parse_acks(const CliParser *p, const char *arg)
{
	static const char *const names[] = {"0", "1", "all", "-1", NULL};
	int			acks = cli_choice(p, "--acks", arg, names);

	/* Kafka spells "all" as -1 too */
	if (acks >= MQ_ACKS_ALL)
	{
		mq_log_error("--acks=%s waits for every in-sync replica, which needs mq-broker; "
					 "mq has no broker yet", arg);
		fprintf(stderr, "%s: hint: Use --acks=1 (durable on this server) or --acks=0.\n",
				mq_progname);
		exit(MQ_EXIT_UNAVAILABLE);
	}
	return (MqAcks) acks;
}

void
producer_init(MqProducer *pr, PGconn *conn, const char *topic,
			  int32_t partition, bool keyed, bool want_offsets, MqAcks acks)
{
	MqParams	types;
	MqError		err = MQ_ERROR_INIT;

	memset(pr, 0, sizeof(*pr));
	pr->conn = conn;
	pr->topic = topic;
	pr->partition = partition;
	pr->keyed = keyed;
	pr->want_offsets = want_offsets;
	mq_array_init(&pr->keys, MQ_BYTEAOID);
	mq_array_init(&pr->values, MQ_BYTEAOID);

	/*
	 * acks=0 is PostgreSQL's asynchronous commit: COMMIT returns before
	 * the WAL is flushed.  The log stays consistent after a crash (offsets
	 * stay gapless), it just may end earlier than what was acknowledged.
	 */
	if (acks == MQ_ACKS_0)
		mqctl_command(conn, "SET synchronous_commit = off");

	mq_params_init(&types);
	mq_param_text(&types, MQ_TEXTOID, NULL);
	mq_param_binary(&types, MQ_BYTEAARRAYOID, NULL, 0);
	mq_param_binary(&types, MQ_BYTEAARRAYOID, NULL, 0);
	mq_param_text(&types, MQ_INT4OID, NULL);
	if (!mq_prepare(conn, SEND_STATEMENT,
					want_offsets ?
					"SELECT partition, msg_offset FROM mq.send_batch($1, $2, $3, NULL, $4)" :
					"SELECT count(*) FROM mq.send_batch($1, $2, $3, NULL, $4)",
					&types, &err))
		mqctl_fail(conn, &err);
}

void
producer_add(MqProducer *pr, const char *key, size_t keylen,
			 const char *value, size_t valuelen)
{
	if (pr->keyed)
	{
		mq_array_add(&pr->keys, key, keylen);
		pr->bytes += keylen;
	}
	mq_array_add(&pr->values, value, valuelen);
	pr->bytes += valuelen;
}

bool
producer_send(MqProducer *pr, PGresult **offsets, MqError *err)
{
	MqParams	params;
	const char *data;
	int			len;
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, pr->topic);
	if (pr->keyed)
	{
		data = mq_array_bytes(&pr->keys, &len);
		mq_param_binary(&params, MQ_BYTEAARRAYOID, data, len);
	}
	else
		mq_param_binary(&params, MQ_BYTEAARRAYOID, NULL, 0);
	data = mq_array_bytes(&pr->values, &len);
	mq_param_binary(&params, MQ_BYTEAARRAYOID, data, len);
	if (pr->partition >= 0)
		mq_param_int(&params, MQ_INT4OID, pr->partition);
	else
		mq_param_text(&params, MQ_INT4OID, NULL);

	res = mq_exec_prepared(pr->conn, SEND_STATEMENT, &params, 1, err);
	if (res == NULL)
		return false;
	if (offsets != NULL && pr->want_offsets)
		*offsets = res;
	else
		PQclear(res);
	return true;
}

void
producer_clear(MqProducer *pr)
{
	mq_array_reset(&pr->keys);
	mq_array_reset(&pr->values);
	pr->bytes = 0;
}

void
producer_free(MqProducer *pr)
{
	mq_array_free(&pr->keys);
	mq_array_free(&pr->values);
}
