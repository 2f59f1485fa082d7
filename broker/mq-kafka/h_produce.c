/*-------------------------------------------------------------------------
 *
 * h_produce.c
 *	  Produce (v0-v11).  Loop thread: the
 *	  request is decoded and each batch checked here, the appends run as
 *	  one job, and parked fetches of the topics written are woken.
 *
 * Each partition's batch is checked (batch.c) and written with one
 * mq.produce_records call, its own transaction; the batch's producer id,
 * epoch and base sequence go along, so mq's idempotence applies: a retry
 * of one of the producer's last five batches returns the original
 * offsets (Kafka's broker does the same), a gap is MQ011 and becomes
 * OUT_OF_ORDER_SEQUENCE_NUMBER.  The acks rules (validation, the ISR
 * check before the write, the durability floor, the wait after it) are
 * the produce contract's, src/sql/31_produce_acks.sql, and none is
 * repeated here: the request's acks goes to mq.produce_records as is, and
 * when it reports a wait owed (acks=-1 on a replicated partition) a
 * second job of mq.produce_await calls waits for the replicas.  Its
 * SQLSTATEs become Kafka's codes in kerr.c (MQ021 NOT_ENOUGH_REPLICAS,
 * nothing written; MQ022 NOT_ENOUGH_REPLICAS_AFTER_APPEND).  acks=0 gets
 * no response; if a partition failed, its connection is closed instead,
 * as Kafka's broker does, so that the client learns something went wrong
 * and refreshes its metadata (a leader that moved, a topic that went).
 *
 * A transactional batch (the request names a transactional id) is not
 * appended: it is checked here as any other, then staged with
 * mq.kafka_txn_stage (fencing, authorization and the timeout are the
 * SQL's, src/sql/67_kafka_txn.sql) without the partition's produce lock,
 * and EndTxn appends it (h_txn.c).  Its offsets are assigned then, so the
 * response carries base_offset -1 (docs/kafka.md, "Transactions").  In a
 * cluster the leader's daemon stages it in the database of the node whose
 * daemon coordinates the transactional id (h_txn_init.c), where the
 * transaction lives.
 *
 * A v3+ partition's records are first checked as Kafka does (batch.h).
 * Produce v0-v2 carry message sets (formats v0 and v1, msgset.h), which
 * are up-converted as Kafka does: the records are stored as any others,
 * with magic 1's timestamps as CreateTime; v0 has no throttle time and
 * v0-v1 no log_append_time in the response.
 * Produce v5+ answers the partition's log start offset (-1 for a refused
 * or staged batch); v8+ adds record_errors and error_message (always empty and
 * null here: a batch is refused whole); v9+ is flexible; v10 and v11 add
 * only tagged fields (KIP-951's leader hints), which are not sent.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "cluster.h"
#include "kerr.h"
#include "kjson.h"
#include "msgset.h"
#include "pgbinary.h"
#include "quota.h"
#include "util.h"

/*
 * the first and last offsets, the wait the contract says is owed, and
 * what the answer says besides: the log append time and log start offset
 */
#define SEND_SQL \
	"SELECT q.first, q.last, q.epoch, q.min_isr, q.a[1], q.a[2] FROM (" \
	"SELECT min(s.msg_offset) AS first, max(s.msg_offset) AS last, max(s.await_epoch) AS epoch," \
	"       max(s.await_min_isr) AS min_isr, mq._produce_answer($1, $4, min(s.msg_offset)) AS a" \
	"  FROM mq.produce_records($1, $2::bytea[], $3::bytea[], $8, $4, $5, $6, $7, $9, NULL, $10, $11) s) q"

#define AWAIT_SQL "SELECT mq.produce_await($1, $2, $3, $4, $5, $6)"

typedef struct PPart
{
	int32_t		topic;			/* index into topics */
	int32_t		partition;
	int16_t		code;			/* refused before reaching the database */
	int			stmt;			/* its mq.produce_records, or -1 */
	int			check;			/* transactional: its mq.produce_check in checks */
	int			await;			/* acks=-1: its wait in acked, or -1 */
	bool		staged;			/* transactional: staged, no offset yet */
} PPart;

typedef struct ProduceState
{
	KJob		job;
	KJob		checks;			/* transactional: the contract's check, here */
	char	   *txn;			/* transactional id, or NULL */
	KJob		acked;			/* acks=-1 on replicated partitions */
	int64_t		db_us;			/* the appends' database time, before acked */
	TxnRemote	remote;			/* staged on the transaction's node */
	int16_t		acks;
	int32_t		timeout_ms;
	int32_t		ntopics;
	KSlice	   *topics;
	int32_t		nparts;
	PPart	   *parts;
} ProduceState;

static void
produce_state_free(void *p)
{
	ProduceState *s = p;

	kjob_free(&s->job);
	kjob_free(&s->checks);
	kjob_free(&s->acked);
	free(s->txn);
	free(s->topics);
	free(s->parts);
	free(s);
}

/* 2000-01-01 (PostgreSQL's epoch) in Unix milliseconds */
#define PG_EPOCH_MS INT64_C(946684800000)

/* per record: its timestamp (CreateTime) and headers as mq's jsonb list */
static void
add_meta(KStmt *st, const KBatch *b)
{
	MqArray		ts,
				hdr;
	KWriter		json;
	bool		any_headers = false;

	mq_array_init(&ts, MQ_TIMESTAMPTZOID);
	mq_array_init(&hdr, MQ_JSONBOID);
	kw_init(&json);
	for (int32_t i = 0; i < b->count; i++)
	{
		const KRecord *rec = &b->records[i];

		if (b->base_timestamp < 0)
			mq_array_add(&ts, NULL, 0);
		else
			mq_array_add_int64(&ts, (b->base_timestamp + rec->timestamp_delta - PG_EPOCH_MS) * 1000);
		if (rec->nheaders == 0)
		{
			mq_array_add(&hdr, NULL, 0);
			continue;
		}
		any_headers = true;
		kw_reset(&json);
		kw_i8(&json, 1);		/* jsonb binary format version */
		(void) headers_to_json(rec->headers, &json);	/* checked by batch_check_storable */
		mq_array_add(&hdr, json.buf, json.len);
	}
	if (any_headers)
		kstmt_array(st, MQ_JSONBARRAYOID, &hdr);
	else
		kstmt_text(st, MQ_JSONBARRAYOID, NULL);
	kstmt_array(st, MQ_TIMESTAMPTZARRAYOID, &ts);
	kw_free(&json);
	mq_array_free(&ts);
	mq_array_free(&hdr);
}

/* the batch's keys and values as two bytea[] parameters */
static void
bind_keys_values(KStmt *st, const KBatch *b)
{
	MqArray		keys,
				vals;

	mq_array_init(&keys, MQ_BYTEAOID);
	mq_array_init(&vals, MQ_BYTEAOID);
	for (int32_t i = 0; i < b->count; i++)
	{
		const KRecord *rec = &b->records[i];

		mq_array_add(&keys, rec->key.len < 0 ? NULL : rec->key.p, rec->key.len < 0 ? 0 : rec->key.len);
		mq_array_add(&vals, rec->value.len < 0 ? NULL : rec->value.p, rec->value.len < 0 ? 0 : rec->value.len);
	}
	kstmt_array(st, MQ_BYTEAARRAYOID, &keys);
	kstmt_array(st, MQ_BYTEAARRAYOID, &vals);
	mq_array_free(&keys);
	mq_array_free(&vals);
}

/*
 * the batch's size as Kafka limits it (max.message.bytes): a v2 batch as
 * sent; a message set (v0-v2) is limited per record (NULL)
 */
static void
bind_batch_bytes(KStmt *st, int16_t v, int32_t len)
{
	if (v >= 3)
		kstmt_int(st, MQ_INT4OID, len);
	else
		kstmt_text(st, MQ_INT4OID, NULL);
}

/* the mq.produce_records statement of one decoded batch */
static void
add_append(KJob *job, const char *topic, int32_t partition, const KBatch *b, int16_t acks,
		   int16_t v, int32_t len)
{
	char		acks_text[8];
	KStmt	   *st = kjob_add(job, SEND_SQL, 0);

	kstmt_text(st, MQ_TEXTOID, topic);
	bind_keys_values(st, b);
	kstmt_int(st, MQ_INT4OID, partition);
	if (b->producer_id >= 0)
	{
		kstmt_int(st, MQ_INT8OID, b->producer_id);
		kstmt_int(st, MQ_INT4OID, b->producer_epoch);
		kstmt_int(st, MQ_INT4OID, b->base_sequence);
	}
	else
	{
		kstmt_text(st, MQ_INT8OID, NULL);
		kstmt_text(st, MQ_INT4OID, NULL);
		kstmt_text(st, MQ_INT4OID, NULL);
	}
	add_meta(st, b);
	snprintf(acks_text, sizeof(acks_text), "%d", acks);
	kstmt_text(st, MQ_TEXTOID, acks_text);
	bind_batch_bytes(st, v, len);
}

#define STAGE_SQL "SELECT mq.kafka_txn_stage($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
#define CHECK_SQL "SELECT mq.produce_check($1, $2)"

/* the mq.kafka_txn_stage statement of a transactional batch */
static void
add_stage(KJob *job, const char *txn_id, const char *topic, int32_t partition, const KBatch *b,
		  int16_t v, int32_t len)
{
	KStmt	   *st = kjob_add(job, STAGE_SQL, 0);

	kstmt_text(st, MQ_TEXTOID, txn_id);
	kstmt_int(st, MQ_INT8OID, b->producer_id);
	kstmt_int(st, MQ_INT4OID, b->producer_epoch);
	kstmt_text(st, MQ_TEXTOID, topic);
	kstmt_int(st, MQ_INT4OID, partition);
	kstmt_int(st, MQ_INT4OID, b->base_sequence);
	bind_keys_values(st, b);
	add_meta(st, b);
	bind_batch_bytes(st, v, len);
}

/* in a cluster, does this daemon lead the partition? */
static bool
leads_here(const char *topic, int32_t partition)
{
	const KPartView *pv = cluster_enabled() ? cluster_partition(topic, partition) : NULL;

	return pv == NULL || pv->leader == kconfig.node_id;
}

/* one partition of the request: decode and check its batch */
static void
read_partition(KReader *r, ProduceState *s, PPart *pp, const char *topic, const char *txn, int16_t v)
{
	KSlice		records;
	KBatch		b;

	pp->partition = kr_i32(r);
	records = kr_bytes(r);
	kr_tags(r);
	pp->stmt = -1;
	pp->await = -1;
	if (r->err)
		return;
	memset(&b, 0, sizeof(b));
	pp->code = v >= 3 ? batch_precheck(records.p, records.len, v) : KERR_NONE;
	if (pp->code == KERR_NONE)
		pp->code = (v >= 3 ? batch_decode : msgset_decode)(records.p, records.len < 0 ? 0 : records.len,
														   kconfig.max_inflated_bytes, &b);
	if (pp->code == KERR_NONE)
		pp->code = batch_check_storable(&b);
	/* a transactional batch comes with a transactional id, and only then */
	if (pp->code == KERR_NONE && (txn != NULL) != ((b.attributes & KBATCH_TRANSACTIONAL) != 0))
		pp->code = KERR_INVALID_RECORD;
	if (pp->code == KERR_NONE && txn && b.producer_id < 0)
		pp->code = KERR_INVALID_RECORD;
	if (pp->code == KERR_NONE && txn && !leads_here(topic, pp->partition))
		pp->code = KERR_NOT_LEADER_OR_FOLLOWER;	/* staged on the leader's word */
	if (pp->code == KERR_NONE && txn)
	{
		add_stage(&s->job, txn, topic, pp->partition, &b, v, records.len);
		kstmt_text(kjob_add(&s->checks, CHECK_SQL, 0), MQ_TEXTOID, topic);
		kstmt_int(&s->checks.stmts[s->checks.n - 1], MQ_INT4OID, pp->partition);
		pp->check = s->checks.n - 1;
	}
	else if (pp->code == KERR_NONE)
		add_append(&s->job, topic, pp->partition, &b, s->acks, v, records.len);
	if (pp->code == KERR_NONE)
	{
		pp->stmt = s->job.n - 1;
		pp->staged = txn != NULL;
	}
	batch_free(&b);
}

/* what the answer says of a partition; -1 for what is not known */
typedef struct PAnswer
{
	int16_t		code;
	int64_t		base;			/* base_offset */
	int64_t		append_ms;		/* log_append_time: on a LogAppendTime topic */
	int64_t		log_start;		/* log_start_offset (v5+) */
	const char *message;		/* v8+'s error_message, as Kafka explains a refused batch */
} PAnswer;

static int64_t
column_or(PGresult *res, int col, int64_t otherwise)
{
	return PQgetisnull(res, 0, col) ? otherwise : strtoll(PQgetvalue(res, 0, col), NULL, 10);
}

/* the partition's outcome */
static PAnswer
part_result(ProduceState *s, PPart *pp)
{
	KStmt	   *st = pp->stmt >= 0 ? &s->job.stmts[pp->stmt] : NULL;
	PAnswer		a = {pp->code, -1, -1, -1, NULL};

	if (st && kstmt_failed(st, &a.code))
	{
		a.message = st->err.message;
		if (a.code == KERR_UNKNOWN_SERVER_ERROR)
			mq_log_warning("produce: %s", st->err.message);
	}
	if (a.code == KERR_NONE && pp->await >= 0 && kstmt_failed(&s->acked.stmts[pp->await], &a.code))
	{
		a.message = s->acked.stmts[pp->await].err.message;
		return a;
	}
	if (pp->staged || a.code != KERR_NONE)
		return a;				/* staged: offsets come at commit, base_offset -1 */
	a.base = column_or(st->res, 0, -1);
	a.append_ms = column_or(st->res, 4, -1);
	a.log_start = column_or(st->res, 5, -1);
	return a;
}

static void
produce_encode(KRequest *req)
{
	ProduceState *s = req->state;
	KWriter    *w = &req->resp;
	int32_t		k = 0;

	kw_array(w, s->ntopics);
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		size_t		count_at;
		int32_t		n = 0;
		bool		wrote = false;

		kw_strn(w, s->topics[t].p, s->topics[t].len);
		count_at = kw_later(w);
		for (; k < s->nparts && s->parts[k].topic == t; k++, n++)
		{
			PPart	   *pp = &s->parts[k];
			PAnswer		a = part_result(s, pp);

			kw_i32(w, pp->partition);
			kw_i16(w, a.code);
			kw_i64(w, a.base);
			if (req->api_version >= 2)
				kw_i64(w, a.append_ms);	/* log_append_time: -1 on CreateTime */
			if (req->api_version >= 5)
				kw_i64(w, a.log_start);
			if (req->api_version >= 8)
			{
				kw_array(w, 0); /* record_errors */
				kw_str(w, a.message);	/* error_message: the database's */
			}
			kw_tags(w);
			wrote |= pp->stmt >= 0 && s->job.stmts[pp->stmt].res != NULL;
			req->close_after |= req->no_response && a.code != KERR_NONE;
		}
		kw_fill_count(w, count_at, n);
		kw_tags(w);
		if (wrote)
		{
			char	   *topic = kslice_dup(s->topics[t]);

			fetch_wake_topic(topic ? topic : "");
			free(topic);
		}
	}
	/* waiting for the replicas is not work (Kafka's purgatory) */
	if (s->acked.n > 0)
		req->db_us = s->db_us;
	req->throttle_ms = quota_record(req, KQUOTA_PRODUCE, (int64_t) req->body.len);
	if (req->api_version >= 1)
		kw_i32(w, req->throttle_ms);	/* throttle_time_ms */
	req_finish(req);
}

/* appends done: the partitions the contract owes a wait get one */
static void
produce_done(KRequest *req)
{
	ProduceState *s = req->state;

	for (int32_t k = 0; k < s->nparts; k++)
	{
		PPart	   *pp = &s->parts[k];
		PGresult   *res = pp->stmt >= 0 ? s->job.stmts[pp->stmt].res : NULL;
		KStmt	   *st;
		char	   *topic;

		if (res == NULL || pp->staged || PQntuples(res) == 0 || PQgetisnull(res, 0, 2))
			continue;
		topic = kslice_dup(s->topics[pp->topic]);
		st = kjob_add(&s->acked, AWAIT_SQL, 0);
		pp->await = s->acked.n - 1;
		kstmt_text(st, MQ_TEXTOID, topic ? topic : "");
		kstmt_int(st, MQ_INT4OID, pp->partition);
		kstmt_text(st, MQ_INT8OID, PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1));
		kstmt_text(st, MQ_INT4OID, PQgetvalue(res, 0, 2));
		kstmt_text(st, MQ_INT4OID, PQgetisnull(res, 0, 3) ? NULL : PQgetvalue(res, 0, 3));
		kstmt_int(st, MQ_INT4OID, s->timeout_ms);
		free(topic);
	}
	s->db_us = req->db_us;
	if (s->acked.n > 0)
		pool_run(req, &s->acked, produce_encode);
	else
		produce_encode(req);
}

/*
 * Transactional batches: the contract's check on this node, the
 * partition's leader (a partition short of in-sync replicas refuses a
 * transactional batch, as Kafka's acks=all); those it passes are staged
 * in the transaction's database.
 */
static void
txn_checked(KRequest *req)
{
	ProduceState *s = req->state;
	KJob		stage = {0};

	for (int32_t k = 0; k < s->nparts; k++)
	{
		PPart	   *pp = &s->parts[k];

		if (pp->stmt < 0)
			continue;
		if (kstmt_failed(&s->checks.stmts[pp->check], &pp->code))
		{
			pp->stmt = -1;
			continue;
		}
		kjob_copy(&stage, &s->job.stmts[pp->stmt]);
		pp->stmt = stage.n - 1;
	}
	kjob_free(&s->job);
	s->job = stage;
	if (s->job.n == 0)
		produce_done(req);
	else
		txn_cluster_stage(req, &s->remote, &s->job, s->txn, produce_done);	/* in its database */
}

void
h_produce(KRequest *req)
{
	KReader    *r = &req->body;
	ProduceState *s = mq_malloc0(sizeof(ProduceState));
	char	   *txn = NULL;

	req->state = s;
	req->free_state = produce_state_free;
	if (req->api_version >= 3)
		txn = kslice_dup(kr_str(r));	/* transactional id */
	s->acks = kr_i16(r);
	req->no_response = s->acks == 0;
	s->timeout_ms = kr_i32(r);
	s->ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	s->parts = mq_malloc0(sizeof(PPart) * (kr_left(r) / 8 + 1));
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
	{
		char	   *topic;
		int32_t		n;

		s->topics[t] = kr_str(r);
		topic = kslice_dup(s->topics[t]);
		n = kr_array(r, 8);
		for (int32_t i = 0; i < n && !r->err; i++)
		{
			s->parts[s->nparts].topic = t;
			read_partition(r, s, &s->parts[s->nparts++], topic ? topic : "", txn,
						   req->api_version);
		}
		kr_tags(r);
		free(topic);
	}
	if (r->err)
	{
		free(txn);
		req_abort(req);
		return;
	}
	s->txn = txn;
	if (txn)
		pool_run(req, &s->checks, txn_checked);
	else
		pool_run(req, &s->job, produce_done);
}
