/*-------------------------------------------------------------------------
 *
 * pipeline_decide.c
 *	  The commit decision of a "mqctl pipeline" step (pipeline.c has the
 *	  whole protocol): once every part is prepared, record on the
 *	  coordinator, durably, that the step commits, with what each part
 *	  wrote to replicated partitions (mq.txn_notes) and the outputs' records
 *	  (so that the brokers can send them again if we are gone:
 *	  src/sql/64_twophase_redo.sql).  A lost answer is asked again.
 *
 * Locking: none; one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mqctl.h"
#include "pipeline_step.h"

static json_t *
participant_json(const Step *s, const Participant *p, bool offsets)
{
	json_t	   *o = json_object();

	json_object_set_new(o, "gid", json_string(p->gid));
	json_object_set_new(o, "broker", json_integer(p->broker));
	json_object_set_new(o, "kind", json_string(offsets ? "offsets" : "output"));
	if (p->notes)
		json_object_set(o, "partitions", p->notes);
	else
		json_object_set_new(o, "partitions", json_array());
	if (offsets)
		json_object_set_new(o, "offsets",
							json_pack("[{s:s,s:s,s:i,s:I}]", "group", s->pl->opt.group,
									  "topic", s->pl->opt.input, "partition", s->partition,
									  "next", (json_int_t) s->next_offset));
	return o;
}

/*
 * What the decision stores of the outputs, so that recovery can send them
 * again when we are gone: one object per output partition, whose records
 * are the next "count" of bytea_array(s, -1, ...).
 */
static char *
outputs_json(const Step *s)
{
	const Pipeline *pl = s->pl;
	json_t	   *a = json_array();
	char	   *text;

	for (int q = 0; q < pl->n_out; q++)
		if (count_for(s, q) > 0)
			json_array_append_new(a, json_pack("{s:s,s:s,s:i,s:I,s:i,s:i,s:i}",
											   "gid", s->outs[s->sent_via[q]].gid,
											   "topic", pl->opt.output, "partition", q,
											   "producer_id", (json_int_t) pl->producer_id,
											   "producer_epoch", pl->producer_epoch,
											   "base_sequence", (int) pl->seq[q],
											   "count", count_for(s, q)));
	text = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return text;
}

/*
 * The decision: true to commit.  A lost answer is asked again (an abort
 * takes effect only where no commit was recorded) until the coordinator
 * answers; the prepared parts wait meanwhile.
 */
bool
pipeline_decide(Step *s)
{
	Pipeline   *pl = s->pl;
	json_t	   *parts = json_array();
	char	   *text;
	char	   *outputs;
	char	   *keys;
	char	   *vals;
	bool		commit = false;

	json_array_append_new(parts, participant_json(s, &s->in, true));
	for (int i = 0; i < s->n_outs; i++)
		json_array_append_new(parts, participant_json(s, &s->outs[i], false));
	text = json_dumps(parts, JSON_COMPACT);
	json_decref(parts);
	outputs = outputs_json(s);
	keys = bytea_array(s, -1, true);
	vals = bytea_array(s, -1, false);
	for (int attempt = 0;; attempt++)
	{
		MqError		err = MQ_ERROR_INIT;
		MqParams	prm;
		PGconn	   *coord;
		PGresult   *res = NULL;

		mq_params_init(&prm);
		mq_param_text(&prm, MQ_TEXTOID, s->txn);
		if (attempt == 0)
		{
			mq_param_text(&prm, MQ_TEXTOID, pl->opt.id);
			mq_param_text(&prm, MQ_JSONBOID, text);
			mq_param_int(&prm, MQ_INT4OID, pl->producer_epoch);
			mq_param_text(&prm, MQ_JSONBOID, outputs);
			mq_param_text(&prm, MQ_BYTEAARRAYOID, keys);
			mq_param_text(&prm, MQ_BYTEAARRAYOID, vals);
		}
		if ((coord = mq_router_coord(&pl->rin, &err)) != NULL)
			res = attempt == 0
				? mq_exec(coord, "SELECT mq_coord.txn_decide($1, $2, $3, $4, $5, $6, $7)",
						  &prm, 0, &err) :
					mq_exec(coord, "SELECT mq_coord.txn_abort($1, 'the client lost the decision')",
							&prm, 0, &err);
		if (res != NULL)
		{
			commit = strcmp(PQgetvalue(res, 0, 0), "abort") != 0;
			PQclear(res);
			break;
		}
		if (!err.connection_lost)
		{
			/* MQ051 (recovery aborted it first), MQ012 (fenced) or another refusal */
			mq_log_warning("step %s not committed: %s", s->txn, err.message);
			pl->fenced |= mq_error_is(&err, MQ_SQLSTATE_PRODUCER_FENCED);
			mq_error_free(&err);
			break;
		}
		mq_log_warning("step %s: the coordinator did not answer the decision; asking again: %s",
					   s->txn, err.message);
		mq_error_free(&err);
		mq_router_reset_coord(&pl->rin);
		mq_sleep_ms(attempt < 10 ? 100 : 1000);
	}
	free(text);
	free(outputs);
	free(keys);
	free(vals);
	return commit;
}
