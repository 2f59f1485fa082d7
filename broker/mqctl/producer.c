/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  The producing engine: sending batches of records (see producer.h),
 *	  for the commands in cmd_produce.c and cmd_perf.c.  Layers: the
 *	  commands above; below it producer_route.c (a cluster), then
 *	  producer_call.c (a session's statements and one part's call), which
 *	  calls nothing back up.
 *
 * Each batch is one transaction, so a batch is acknowledged, whole, when
 * its COMMIT returns: that is the unit of durability and of the latency
 * "perf produce" reports.  Keys and values go as binary bytea[] parameters
 * (see pgbinary.c) through prepared statements, so the server parses and
 * plans the calls once per connection.
 *
 * Idempotence (the default) is Kafka's: mq.init_producer() gives the
 * producer an id and epoch once, and every batch carries them with the
 * sequence number of its first record, counted per partition.  The server
 * remembers the last five batches of each producer and partition, so a
 * batch sent again after a lost connection, whose first attempt may or
 * may not have committed, gets the offsets of the first attempt instead
 * of being written twice.  This is what makes the retry here safe; without
 * idempotence a lost connection ends the command, as a retry could
 * duplicate the batch.
 *
 * An idempotent batch must go to a single partition, because its
 * sequence numbers are those of one partition.  So the client decides the
 * partitions: --partition, or mq.partition_for() on the keys (one query
 * per batch, the server's own partitioner), or for records without a key
 * the next partition in turn, one per batch as the server's sticky choice
 * would.  A batch whose keys span partitions becomes one call per
 * partition, in ascending partition order (as the server appends, so that
 * two producers cannot deadlock), all in one transaction.  Sequence
 * numbers are kept per partition up to the count the server reports,
 * read again when a key maps beyond it (partitions were added); a
 * partition the topic lacks, whatever --partition said, gets no sequence
 * and the server refuses it.
 *
 * The acks rules (the ISR check before the write, the durability floor,
 * the wait after it) are the produce contract's, which
 * src/sql/31_produce_acks.sql owns; none is repeated here.  acks=0 and
 * acks=1 write with mq.produce_records, which applies the floor to the
 * batch's transaction; acks=all calls the procedure mq.produce(), the
 * contract in one call: it commits and then waits until the in-sync
 * replicas have the records (docs/replication.md).  A procedure that
 * commits cannot run inside a transaction block, so with acks=all each
 * partition's part of a batch is its own transaction.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqctl.h"
#include "producer.h"

/* how long an idempotent producer keeps retrying a batch, and the pauses */
#define RETRY_FOR_MS		30000
#define RETRY_BACKOFF_MS	100
#define RETRY_BACKOFF_MAX_MS 2000

/* The topic's partition count; a missing topic ends mqctl with MQ001. */
static int32_t
topic_partitions(PGconn *conn, const char *topic)
{
	MqParams	params;
	PGresult   *res;
	int32_t		n;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	res = mqctl_exec(conn, "SELECT partitions FROM mq.topics WHERE topic = $1", &params, 0);
	if (PQntuples(res) == 0)
	{
		/* let the server say it, with its SQLSTATE, as a send would */
		PQclear(res);
		PQclear(mqctl_exec(conn, "SELECT mq.partition_for($1, ''::bytea)", &params, 0));
		mq_log_error(MQCTL_NO_TOPIC, topic);
		PQfinish(conn);
		exit(MQ_EXIT_SERVER);
	}
	n = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return n;
}

void
producer_init(MqProducer *pr, PGconn *conn, const char *topic,
			  const ProducerConfig *cfg, bool keyed, bool want_offsets)
{
	MqError		err = MQ_ERROR_INIT;

	memset(pr, 0, sizeof(*pr));
	pr->conn = conn;
	pr->topic = topic;
	pr->partition = cfg->partition;
	pr->keyed = keyed;
	pr->want_offsets = want_offsets;
	pr->acks = cfg->acks;
	pr->idempotent = cfg->idempotent;
	pr->timeout_ms = cfg->request_timeout_ms;
	mq_array_init(&pr->keys, MQ_BYTEAOID);
	mq_array_init(&pr->values, MQ_BYTEAOID);

	/*
	 * Never NULL, even for a batch of empty values: a record's bytes are
	 * data + offset, and a NULL there would be sent as a NULL value.
	 */
	pr->data_cap = 65536;
	pr->data = mq_malloc(pr->data_cap);

	/* a coordinator routes each partition to its leader (producer_route.c) */
	if (producer_route_open(pr, conn))
		conn = producer_home(pr, &err);
	else
		pr->npartitions = topic_partitions(conn, topic);
	if (conn == NULL)
		mqctl_fail(NULL, &err);
	/* where keyless batches start: anywhere, so that short runs spread too */
	pr->next_spread = (int32_t) (((uint64_t) mq_now_us() ^ (uint64_t) getpid() ^
								  (uint64_t) (uintptr_t) pr) % (uint64_t) pr->npartitions);

	if (pr->idempotent)
	{
		PGresult   *res = mq_exec(conn, "SELECT producer_id, producer_epoch FROM mq.init_producer()",
								  NULL, 0, &err);

		if (res == NULL)
		{
			if (mq_error_is(&err, "42501") && err.hint == NULL)
				err.hint = mq_strdup("Producing idempotently needs EXECUTE on mq.init_producer(text); "
									 "or produce with --no-idempotence.");
			mqctl_fail(conn, &err);
		}
		pr->producer_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		pr->producer_epoch = atoi(PQgetvalue(res, 0, 1));
		PQclear(res);
	}
	if (pr->router == NULL && !producer_setup_session(pr, conn, &err))
		mqctl_fail(conn, &err);
}

void
producer_add(MqProducer *pr, const char *key, size_t keylen,
			 const char *value, size_t valuelen)
{
	ProducerRecord *rec;
	size_t		need = (pr->keyed ? keylen : 0) + valuelen;

	if (keylen > INT32_MAX || valuelen > INT32_MAX)
		mq_fatal(MQ_EXIT_LOCAL, "a record of more than 2 GB cannot be sent");
	if (pr->nrecords == pr->cap_records)
	{
		pr->cap_records = pr->cap_records ? pr->cap_records * 2 : 1024;
		pr->records = mq_realloc(pr->records, sizeof(ProducerRecord) * pr->cap_records);
	}
	if (pr->data_len + need > pr->data_cap)
	{
		while (pr->data_len + need > pr->data_cap)
			pr->data_cap *= 2;
		pr->data = mq_realloc(pr->data, pr->data_cap);
	}
	rec = &pr->records[pr->nrecords++];
	rec->key_off = pr->data_len;
	rec->key_len = -1;
	if (pr->keyed)
	{
		memcpy(pr->data + pr->data_len, key, keylen);
		pr->data_len += keylen;
		rec->key_len = (int32_t) keylen;
		pr->bytes += keylen;
	}
	rec->value_off = pr->data_len;
	memcpy(pr->data + pr->data_len, value, valuelen);
	pr->data_len += valuelen;
	rec->value_len = (int32_t) valuelen;
	rec->partition = -1;
	rec->offset = -1;
	pr->bytes += valuelen;
	pr->assigned = false;
}

/* Each record's partition from mq.partition_for(), in one query. */
static bool
partitions_by_key(MqProducer *pr, MqError *err)
{
	MqParams	params;
	const char *data;
	int			len;
	PGresult   *res;

	PGconn	   *conn = producer_home(pr, err);

	if (conn == NULL)
		return false;
	producer_build_arrays(pr, 0, pr->nrecords);
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, pr->topic);
	data = mq_array_bytes(&pr->keys, &len);
	mq_param_binary(&params, MQ_BYTEAARRAYOID, data, len);
	res = mq_exec_prepared(conn, PARTITION_SQL, &params, 1, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < pr->nrecords; i++)
		pr->records[i].partition = mq_get_int32(res, i, 0);
	PQclear(res);
	return true;
}

/*
 * The partition count as the server has it now (partitions may have been
 * added since producer_init), or -1 with err filled.
 */
static int32_t
current_partitions(MqProducer *pr, MqError *err)
{
	MqParams	params;
	PGresult   *res;
	int32_t		n = pr->npartitions;

	if (pr->router != NULL)
		return mq_router_refresh(pr->router, err) ? pr->router->npartitions : -1;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, pr->topic);
	res = mq_exec(pr->conn, "SELECT partitions FROM mq.topics WHERE topic = $1", &params, 0, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 1)
		n = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return n;
}

/*
 * Where the sequence number of the next record to partition p (0 at
 * first) is kept, or NULL when the partition does not exist (on err's
 * failure too, which *ok says).  The array only ever grows to the
 * server's partition count, however large a number --partition gave.
 */
static int32_t *
sequence_of(MqProducer *pr, int32_t p, bool *ok, MqError *err)
{
	*ok = true;
	if (pr->next_sequence == NULL)
		pr->next_sequence = mq_malloc0(sizeof(int32_t) * pr->npartitions);
	if (p >= pr->npartitions)
	{
		int32_t		n = current_partitions(pr, err);

		if (n < 0)
		{
			*ok = false;
			return NULL;
		}
		if (p >= n)
			return NULL;
		pr->next_sequence = mq_realloc(pr->next_sequence, sizeof(int32_t) * (size_t) n);
		memset(pr->next_sequence + pr->npartitions, 0,
			   sizeof(int32_t) * (size_t) (n - pr->npartitions));
		pr->npartitions = n;
	}
	return &pr->next_sequence[p];
}

/*
 * An idempotent part's base sequence (-1 otherwise); the partition's next
 * sequence moves past its records.  A partition that does not exist goes
 * without producer id: the server refuses it (MQ006), and should it have
 * been added in the meantime this one batch is simply not idempotent.
 */
static bool
assign_sequence(MqProducer *pr, ProducerPart *part, MqError *err)
{
	bool		ok;
	int32_t    *seq;

	part->base_sequence = -1;
	if (!pr->idempotent)
		return true;
	seq = sequence_of(pr, part->partition, &ok, err);
	if (seq == NULL)
		return ok;
	part->base_sequence = *seq;
	/* sequences wrap to 0 after INT32_MAX, as in Kafka and on the server */
	*seq = (int32_t) (((int64_t) *seq + part->count) % ((int64_t) INT32_MAX + 1));
	return true;
}

/*
 * Decide the batch's partitions and, idempotent, its sequence numbers:
 * fixed from here on, so that every retry of the batch is the same batch.
 */
static bool
assign(MqProducer *pr, MqError *err)
{
	int			n = pr->nrecords;
	bool		client_decides = pr->idempotent || pr->acks == MQ_ACKS_ALL || pr->router != NULL;

	/* input order first, for partitions_by_key() */
	pr->order = mq_realloc(pr->order, sizeof(int) * (n ? n : 1));
	for (int i = 0; i < n; i++)
		pr->order[i] = i;

	if (pr->partition >= 0)
		for (int i = 0; i < n; i++)
			pr->records[i].partition = pr->partition;
	else if (client_decides && pr->keyed)
	{
		if (!partitions_by_key(pr, err))
			return false;
	}
	else
	{
		/* keyless: one partition per batch, the next in turn; or the server's choice */
		int32_t		p = client_decides ? pr->next_spread : -1;

		if (client_decides)
			pr->next_spread = (pr->next_spread + 1) % pr->npartitions;
		for (int i = 0; i < n; i++)
			pr->records[i].partition = p;
	}

	/* group by partition, ascending, keeping the input order within each */
	pr->parts = mq_realloc(pr->parts, sizeof(ProducerPart) * (n ? n : 1));
	pr->nparts = 0;
	for (int k = 0; k < n;)
	{
		int32_t		lowest = INT32_MAX;
		ProducerPart *part;

		for (int i = 0; i < n; i++)
			if (pr->records[i].partition < lowest &&
				(pr->nparts == 0 || pr->records[i].partition > pr->parts[pr->nparts - 1].partition))
				lowest = pr->records[i].partition;
		part = &pr->parts[pr->nparts++];
		part->partition = lowest;
		part->first = k;
		for (int i = 0; i < n; i++)
			if (pr->records[i].partition == lowest)
				pr->order[k++] = i;
		part->count = k - part->first;
		part->sent = false;
		if (!assign_sequence(pr, part, err))
			return false;
	}
	pr->assigned = true;
	return true;
}

/* The assigned batch: one transaction, or with acks=all one per partition. */
static bool
send_parts(MqProducer *pr, MqError *err)
{
	bool		block = pr->nparts > 1 && pr->acks != MQ_ACKS_ALL;

	if (block && !mq_command(pr->conn, "BEGIN", err))
		return false;
	for (int i = 0; i < pr->nparts; i++)
	{
		if (!producer_send_part(pr, pr->conn, &pr->parts[i], err))
		{
			if (block && !err->connection_lost)
			{
				MqError		ignored = MQ_ERROR_INIT;

				(void) mq_command(pr->conn, "ROLLBACK", &ignored);
				mq_error_free(&ignored);
			}
			return false;
		}
	}
	return !block || mq_command(pr->conn, "COMMIT", err);
}

/*
 * Send the batch as assigned (assigning it first if it is new).  An
 * idempotent producer whose connection is lost connects again and sends
 * the very same batch, for up to RETRY_FOR_MS; one refused transiently
 * (mq_error_is_transient) sends it again on the same connection.
 */
static bool
deliver(MqProducer *pr, MqError *err)
{
	int64_t		give_up_at = 0;
	int			backoff = RETRY_BACKOFF_MS;

	if (pr->router != NULL)
		return producer_route_deliver(pr, assign, err);
	for (;;)
	{
		if (pr->conn != NULL)
		{
			if ((pr->assigned || assign(pr, err)) && send_parts(pr, err))
				return true;
			if (!pr->idempotent || !(err->connection_lost || mq_error_is_transient(err)))
				return false;
			if (err->connection_lost)
			{
				PQfinish(pr->conn);
				pr->conn = NULL;
			}
		}
		if (give_up_at == 0)
			give_up_at = mq_now_us() + (int64_t) RETRY_FOR_MS * 1000;
		if (mq_now_us() >= give_up_at)
			return false;
		/* libpq's message goes on over lines: its first says enough here */
		mq_log_warning("%.*s; sending the batch again in %d ms",
					   (int) strcspn(err->message, "\n"), err->message, backoff);
		mq_sleep_ms(backoff);
		backoff = backoff * 2 > RETRY_BACKOFF_MAX_MS ? RETRY_BACKOFF_MAX_MS : backoff * 2;

		if (pr->conn != NULL)
		{
			mq_error_free(err); /* the next attempt fills it anew */
			continue;
		}
		pr->conn = mqctl_try_connect(err);
		if (pr->conn != NULL && !producer_setup_session(pr, pr->conn, err))
		{
			if (!err->connection_lost)
				return false;
			PQfinish(pr->conn);
			pr->conn = NULL;
		}
	}
}

bool
producer_send(MqProducer *pr, MqError *err)
{
	if (pr->nrecords == 0)
		return true;
	pr->assigned = false;
	return deliver(pr, err);
}

bool
producer_retry(MqProducer *pr, MqError *err)
{
	if (pr->nrecords == 0)
		return true;
	return deliver(pr, err);
}

void
producer_clear(MqProducer *pr)
{
	pr->nrecords = 0;
	pr->data_len = 0;
	pr->bytes = 0;
	pr->assigned = false;
}

void
producer_free(MqProducer *pr)
{
	PQfinish(pr->conn);
	producer_route_close(pr);
	mq_array_free(&pr->keys);
	mq_array_free(&pr->values);
	free(pr->records);
	free(pr->data);
	free(pr->order);
	free(pr->parts);
	free(pr->next_sequence);
	memset(pr, 0, sizeof(*pr));
}
