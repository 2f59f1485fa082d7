/*-------------------------------------------------------------------------
 *
 * fetch_ids.c
 *	  Fetch v13+ names topics by id (KIP-516): before a Fetch's first
 *	  attempt, one statement finds the topics whose id (topic_id.h) each
 *	  one is.  Loop thread.
 *
 * A resolved topic's name points into s->names; an id no topic has keeps
 * an empty name, which reads nothing, and h_fetch.c answers its
 * partitions UNKNOWN_TOPIC_ID.  After a database error no name is known
 * and the Fetch goes on: its own statement then meets the error (or
 * finds none of the topics).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "pgbinary.h"
#include "topic_id.h"
#include "util.h"

/*
 * each id looked up alone, by mq.topic's index on the id (OFFSET 0 keeps
 * the subquery apart, so that its qual reaches the security-barrier view;
 * joined plainly, every topic's id was computed for every Fetch)
 */
#define RESOLVE_SQL \
	"SELECT u.i::int4, t.topic FROM unnest($1::text[]) WITH ORDINALITY u(h, i)" \
	"  CROSS JOIN LATERAL (SELECT t.topic FROM mq.topics t" \
	"                       WHERE " TOPIC_ID_SQL("t.topic") " OPERATOR(pg_catalog.=) u.h OFFSET 0) t"

/* v13+: the topic ids resolved; unknown ones keep an empty name */
static void
fetch_resolved(KRequest *req)
{
	FetchState *s = req->state;
	PGresult   *res = s->job.stmts[0].res;
	size_t		len = 0,
				pos = 0;
	int16_t		code;

	if (kstmt_failed(&s->job.stmts[0], &code) || res == NULL)
	{
		s->resolved(s);			/* no names: the Fetch's statement answers */
		return;
	}
	for (int row = 0; row < PQntuples(res); row++)
		len += PQgetlength(res, row, 1) + 1;
	s->names = mq_malloc0(len + 1);
	for (int row = 0; row < PQntuples(res); row++)
	{
		int32_t		t = atoi(PQgetvalue(res, row, 0)) - 1;
		int			n = PQgetlength(res, row, 1);

		if (t < 0 || t >= s->ntopics)
			continue;
		memcpy(s->names + pos, PQgetvalue(res, row, 1), n);
		s->topics[t].p = (const uint8_t *) s->names + pos;
		s->topics[t].len = n;
		pos += n + 1;
	}
	s->resolved(s);
}

/* v13+: look the topic ids up first */
void
fetch_resolve(FetchState *s, void (*then) (FetchState *s))
{
	MqArray		a;
	KStmt	   *st;

	s->resolved = then;
	st = kjob_add(&s->job, RESOLVE_SQL, 0);
	mq_array_init(&a, MQ_TEXTOID);
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		char		hex[33];

		topic_id_to_hex(s->ids + 16 * t, hex);
		mq_array_add(&a, hex, 32);
	}
	kstmt_array(st, MQ_TEXTARRAYOID, &a);
	mq_array_free(&a);
	pool_run(s->req, &s->job, fetch_resolved);
}
