/*-------------------------------------------------------------------------
 *
 * recover.c
 *	  Recovery of the node's in-doubt mq: prepared transactions (the parts
 *	  of exactly-once pipeline steps across nodes; docs/delivery.md,
 *	  "Exactly-once in a cluster"), and durability reports for decided
 *	  outputs whose client went away.
 *
 * Each tick, before any partition is stepped, and on connecting to the
 * node before it resigns old leaderships (a prepared output holds its
 * partition's produce lock, which a role change waits for), the broker
 * lists the node's mq: prepared transactions (mq.txn_in_doubt) and asks
 * the coordinator what to do with each (mq_coord.txn_resolve, which holds
 * the rules and records an abort for one prepared longer than
 * txn.timeout.ms without a decision); it then commits or rolls back with
 * mq.txn_finish.  So a prepared transaction is in doubt at most
 * txn.timeout.ms while its node, its broker and the coordinator are up.
 *
 * The decided steps' work below is looked for only while the coordinator
 * has a step decided and not complete (mq_coord.txn_any_open): without a
 * pipeline running, recovery costs one node and one coordinator statement
 * a tick.
 *
 * A decided output that this node committed and still leads in the epoch
 * it was written in is reported durable (mq_coord.txn_output_durable)
 * once the node's high watermark passes it, which lets the step's offsets
 * participant commit even when the client died after the decision.  An
 * output partition whose leader changed before that (its part is rolled
 * back, or was lost with its node) is sent again by the broker that leads
 * it now, from the records the decision stored on the coordinator
 * (mq_coord.txn_outputs_moved, mq.txn_redo_output: the idempotent
 * producer writes them once, also when the client sends them at the same
 * time), and reported durable when this node's high watermark passes them
 * (mq_coord.txn_output_redone).  Committing a step's offsets part marks
 * the step done (mq_coord.txn_part_committed), after which the pipeline
 * may start a new run (a new producer epoch), unless the input partition
 * changed leader meanwhile: then its new leader's broker commits the
 * step's offset again, forward only (mq_coord.txn_offsets_moved,
 * mq.txn_redo_offset), and reports the step done once its ISR has it.
 *
 * Locking: none; the broker's one thread.  The client may finish the same
 * gid at the same moment: one of the two finishes fails or finds it gone,
 * and the next tick looks again.  Sending records or an offset again takes
 * the partition's produce lock or offsets row on the node like any write,
 * under a lock_timeout (a prepared part may hold them): the next tick
 * tries again.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "util.h"

#define MAX_IN_DOUBT 256

typedef struct InDoubt
{
	int			n;
	char	   *gid[MAX_IN_DOUBT];
	int64_t		age_ms[MAX_IN_DOUBT];
} InDoubt;

/* A decided output part being checked, partition by partition. */
typedef struct OutputCheck
{
	const InDoubt *in_doubt;
	char		txn_id[128];
	char		gid[160];
	bool		replicated;		/* every partition seen so far */
} OutputCheck;

static bool
in_doubt_has(const InDoubt *d, const char *gid)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->gid[i], gid) == 0)
			return true;
	return false;
}

/* Ask the coordinator about one gid and act on the answer. */
static void
resolve_one(Broker *b, const char *gid, int64_t age_ms)
{
	MqError		err = MQ_ERROR_INIT;
	char		action[16];
	bool		commit;
	bool		finished;

	if (!coord_txn_resolve(b, gid, age_ms, action, sizeof(action), &err))
	{
		log_mq_error("recovery: cannot ask the coordinator about a prepared transaction", &err);
		mq_error_free(&err);
		return;
	}
	if (strcmp(action, "wait") == 0)
		return;
	commit = strcmp(action, "commit") == 0;
	if (!node_txn_finish(b, gid, commit, &finished, &err))
	{
		log_mq_error("recovery: cannot finish a prepared transaction", &err);
		mq_error_free(&err);
		return;
	}
	if (finished)
		mq_log_info("recovery: %s prepared transaction %s (prepared %lld ms ago)",
					commit ? "committed" : "rolled back", gid, (long long) age_ms);
	if (finished && commit && !coord_txn_part_committed(b, gid, &err))
	{
		log_mq_error("recovery: cannot report a committed part", &err);
		mq_error_free(&err);
	}
}

/* The part checked so far is complete: report it if it is replicated. */
static void
report_part(Broker *b, OutputCheck *c)
{
	MqError		err = MQ_ERROR_INIT;
	char		state[32];

	if (c->gid[0] == '\0' || !c->replicated || b->coord == NULL)
		return;
	if (!coord_txn_output_durable(b, c->txn_id, c->gid, state, sizeof(state), &err))
	{
		log_mq_error("recovery: cannot report a durable output", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("recovery: output %s is on its in-sync replicas; step %s is %s",
				c->gid, c->txn_id, state);
}

/*
 * One partition of a decided output of this broker: the part counts as
 * durable when the node committed it (it is no longer prepared) and leads
 * each of its partitions in the epoch written, with the high watermark past
 * the records.
 */
static void
check_output(Broker *b, const PendingOutput *o, void *arg)
{
	OutputCheck *c = arg;
	MqError		err = MQ_ERROR_INIT;
	bool		replicated = false;

	if (strcmp(c->gid, o->gid) != 0)
	{
		report_part(b, c);
		snprintf(c->txn_id, sizeof(c->txn_id), "%s", o->txn_id);
		snprintf(c->gid, sizeof(c->gid), "%s", o->gid);
		c->replicated = !in_doubt_has(c->in_doubt, o->gid);
	}
	if (!c->replicated || b->node == NULL)
	{
		c->replicated = false;
		return;
	}
	if (!node_txn_output_replicated(b, o, &replicated, &err))
	{
		log_mq_error("recovery: cannot read an output's high watermark", &err);
		mq_error_free(&err);
	}
	c->replicated = replicated;
}

/*
 * An output partition this broker now leads, of a decided step whose part
 * lost it before it was known durable: send the stored records again on
 * this node, and report the partition durable once the high watermark
 * passes them.  Each tick until then; a retry of records the node already
 * holds costs one duplicate check.
 */
static void
redo_output(Broker *b, const MovedOutput *o, void *arg)
{
	MqError		err = MQ_ERROR_INIT;
	PendingOutput p = {o->txn_id, o->gid, o->topic, o->partition, o->epoch, -1};
	bool		replicated = false;
	char		state[32];

	if (b->node == NULL)
		return;
	if (!node_txn_redo_output(b, o, &p.records_end, &err) ||
		(p.records_end >= 0 && !node_txn_output_replicated(b, &p, &replicated, &err)))
	{
		log_mq_error("recovery: cannot send a decided output again", &err);
		mq_error_free(&err);
		return;
	}
	if (!replicated || b->coord == NULL)
		return;
	if (!coord_txn_output_redone(b, o, state, sizeof(state), &err))
	{
		log_mq_error("recovery: cannot report an output sent again", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("recovery: sent %s partition %d of step %s again (its leader changed), "
				"on the in-sync replicas up to %lld; the step is %s",
				o->topic, o->partition, o->txn_id, (long long) p.records_end, state);
}

/*
 * An offsets part of this node whose step's outputs are durable and which
 * is no longer prepared here was committed (by us, or by a client that
 * died before marking the step done): report it, which completes the step.
 */
static void
report_offsets(Broker *b, const char *gid, void *arg)
{
	const InDoubt *d = arg;
	MqError		err = MQ_ERROR_INIT;

	if (d->n >= MAX_IN_DOUBT || in_doubt_has(d, gid))
		return;					/* a list cut short proves nothing */
	if (!coord_txn_part_committed(b, gid, &err))
	{
		log_mq_error("recovery: cannot report a committed part", &err);
		mq_error_free(&err);
	}
}

/*
 * A step's offset on the input partition this broker now leads, its
 * offsets part having been prepared elsewhere or in an older epoch:
 * commit it here, forward only, and report the step done once the ISR
 * has it (the client does the same, recommit_offset in mqctl).
 */
static void
redo_offset(Broker *b, const MovedOffset *o, void *arg)
{
	MqError		err = MQ_ERROR_INIT;
	bool		replicated = false;
	char		state[32];

	if (b->node == NULL)
		return;
	if (!node_txn_redo_offset(b, o, &replicated, &err))
	{
		log_mq_error("recovery: cannot commit a decided step's offset again", &err);
		mq_error_free(&err);
		return;
	}
	if (!replicated || b->coord == NULL)
		return;
	if (!coord_txn_offsets_redone(b, o, state, sizeof(state), &err))
	{
		log_mq_error("recovery: cannot report an offset committed again", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("recovery: committed the offset %lld of %s partition %d for step %s again "
				"(its leader changed); the step is %s",
				(long long) o->next_offset, o->topic, o->partition, o->txn_id, state);
}

/* The decided steps not complete, if any: this broker's share of their work. */
static void
finish_decided(Broker *b, InDoubt *d)
{
	MqError		err = MQ_ERROR_INIT;
	OutputCheck c = {d, "", "", false};
	bool		open = false;

	if (!coord_txn_any_open(b, &open, &err))
	{
		log_mq_error("recovery: cannot ask the coordinator for decided steps", &err);
		mq_error_free(&err);
		b->recovery_pending = true;
		return;
	}
	if (!open)
		return;
	b->recovery_pending = true;
	if (b->node != NULL && b->coord != NULL)
	{
		if (coord_txn_outputs_pending(b, check_output, &c, &err))
			report_part(b, &c);
		else
		{
			log_mq_error("recovery: cannot list decided outputs", &err);
			mq_error_free(&err);
		}
	}
	if (b->node != NULL && b->coord != NULL &&
		!coord_txn_outputs_moved(b, redo_output, NULL, &err))
	{
		log_mq_error("recovery: cannot list decided outputs whose leader changed", &err);
		mq_error_free(&err);
	}
	if (b->node != NULL && b->coord != NULL &&
		!coord_txn_offsets_pending(b, report_offsets, d, &err))
	{
		log_mq_error("recovery: cannot list decided offsets parts", &err);
		mq_error_free(&err);
	}
	if (b->node != NULL && b->coord != NULL &&
		!coord_txn_offsets_moved(b, redo_offset, NULL, &err))
	{
		log_mq_error("recovery: cannot list decided offsets whose leader changed", &err);
		mq_error_free(&err);
	}
}

void
recover_prepared(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	InDoubt		d;

	b->recovery_pending = true; /* until it finds nothing to do */
	if (b->node == NULL || b->coord == NULL)
		return;
	d.n = node_txn_in_doubt(b, d.gid, d.age_ms, MAX_IN_DOUBT, &err);
	b->recovery_pending = d.n != 0;
	if (d.n < 0)
	{
		log_mq_error("recovery: cannot list the node's prepared transactions", &err);
		mq_error_free(&err);
		return;
	}
	for (int i = 0; i < d.n && b->node != NULL && b->coord != NULL; i++)
		resolve_one(b, d.gid[i], d.age_ms[i]);
	if (b->node != NULL && b->coord != NULL)
		finish_decided(b, &d);
	for (int i = 0; i < d.n; i++)
		free(d.gid[i]);
}
