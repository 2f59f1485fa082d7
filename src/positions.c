/*-------------------------------------------------------------------------
 *
 * positions.c
 *	  Where consumers read next, as this backend keeps it (offsets.c and
 *	  poll.c use them): the transaction's positions (what its polls
 *	  returned and mq.commit_offset set, which mq.commit_polled commits),
 *	  the session's pending auto-commit batches of polls without member_id
 *	  (the next such poll commits them), and the positions known to be
 *	  inside the log.
 *
 * The first two follow PostgreSQL's transactions: each change is noted
 * in an undo list and taken back with the (sub)transaction that made it,
 * so ROLLBACK TO SAVEPOINT, a PL/pgSQL exception block and a rolled-back
 * transaction leave them as they were.  A batch returned only by work
 * that was rolled back is then returned again, never counted as
 * delivered (a member's pending batch is a row of mq.poll_pending, which
 * rolls back by itself).  A prepared transaction's session batches are
 * taken back at PREPARE: whether it commits is decided elsewhere, and a
 * batch delivered twice is better than one lost.  DISCARD ALL drops the
 * session's batches (its client may change).
 *
 * Backend-local memory: no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "nodes/parsenodes.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "mq.h"

typedef struct Position
{
	MqPositionKey key;
	int64		next_offset;
	/* pending: the offset beyond the log end a poll reset from, or -1 */
	int64		replaces;
} Position;

static HTAB *xact_positions = NULL;
static HTAB *pending_autocommit = NULL;
static HTAB *in_log = NULL;

/* A change to undo: the entry of key in *table as it was before it. */
typedef struct Undo
{
	HTAB	  **table;
	SubTransactionId subid;		/* the (sub)transaction that made it */
	bool		existed;
	Position	before;
} Undo;

static Undo *undo = NULL;		/* in TopTransactionContext */
static int	nundo = 0;
static int	undo_size = 0;

static HTAB *
position_table(MemoryContext cxt)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(MqPositionKey);
	ctl.entrysize = sizeof(Position);
	ctl.hcxt = cxt;
	return hash_create("mq positions", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Note key's entry of *table before a change (in_log needs none). */
static void
note_undo(HTAB **table, const MqPositionKey *key)
{
	Position   *was = *table ? hash_search(*table, key, HASH_FIND, NULL) : NULL;
	Undo	   *u;

	if (table == &in_log)
		return;
	if (nundo == undo_size)
	{
		undo_size = Max(16, undo_size * 2);
		undo = undo == NULL ? MemoryContextAlloc(TopTransactionContext, sizeof(Undo) * undo_size)
			: repalloc(undo, sizeof(Undo) * undo_size);
	}
	u = &undo[nundo++];
	u->table = table;
	u->subid = GetCurrentSubTransactionId();
	u->existed = was != NULL;
	if (was)
		u->before = *was;
	else
		u->before.key = *key;
}

/* Take back the changes of subid and the subtransactions within it. */
static void
undo_from(SubTransactionId subid, bool session_only)
{
	while (nundo > 0 && undo[nundo - 1].subid >= subid)
	{
		Undo	   *u = &undo[--nundo];
		HTAB	   *table = *u->table;

		if (session_only && u->table != &pending_autocommit)
			continue;
		if (u->existed)
		{
			if (table == NULL)
				table = *u->table = position_table(TopMemoryContext);
			*(Position *) hash_search(table, &u->before.key, HASH_ENTER, NULL) = u->before;
		}
		else if (table != NULL)
			hash_search(table, &u->before.key, HASH_REMOVE, NULL);
	}
}

static void
positions_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		undo_from(TopSubTransactionId, true);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		/* their memory goes with the transaction */
		xact_positions = NULL;
		undo = NULL;
		nundo = undo_size = 0;
	}
}

static void
positions_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		undo_from(mySubid, false);
}

void
mq_positions_init(void)
{
	RegisterXactCallback(positions_xact_callback, NULL);
	RegisterSubXactCallback(positions_subxact_callback, NULL);
}

/* After DISCARD ALL: the session's client may change, so forget its batches. */
void
mq_positions_after_utility(Node *stmt)
{
	if (IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL &&
		pending_autocommit != NULL)
	{
		hash_destroy(pending_autocommit);
		pending_autocommit = NULL;
	}
}

void
mq_position_key(MqPositionKey *key, text *group, MqTopic *topic, int32 partition)
{
	int			len = VARSIZE_ANY_EXHDR(group);

	StaticAssertStmt(sizeof(key->group) > MQ_GROUP_ID_MAX, "a position key holds the longest group id");
	mq_check_group(group);
	memset(key, 0, sizeof(*key));
	memcpy(key->group, VARDATA_ANY(group), len);
	key->group_hash = hash_any((unsigned char *) key->group, len);
	key->topic_id = topic->topic_id;
	key->partition = partition;
}

static Position *
set_position(HTAB **table, MemoryContext cxt, const MqPositionKey *key, int64 next)
{
	Position   *pos;
	bool		found;

	note_undo(table, key);
	if (*table == NULL)
		*table = position_table(cxt);
	pos = hash_search(*table, key, HASH_ENTER, &found);
	if (!found)
		pos->replaces = -1;
	pos->next_offset = next;
	return pos;
}

/* This transaction's position of key: true and *next, or false. */
bool
mq_position_xact(const MqPositionKey *key, int64 *next)
{
	Position   *known = xact_positions ? hash_search(xact_positions, key, HASH_FIND, NULL) : NULL;

	if (known)
		*next = known->next_offset;
	return known != NULL;
}

void
mq_position_set_xact(const MqPositionKey *key, int64 next)
{
	(void) set_position(&xact_positions, TopTransactionContext, key, next);
}

/* A poll without member_id returned records up to next (from replaces, a reset, or -1). */
void
mq_position_keep_pending(const MqPositionKey *key, int64 next, int64 replaces)
{
	Position   *pending = set_position(&pending_autocommit, TopMemoryContext, key, next);

	if (replaces >= 0)
		pending->replaces = replaces;
}

/*
 * The positions of probe's group and topic in the transaction's table, or
 * (take) the session's pending batches, which are removed; *n: how many.
 */
MqPendingBatch *
mq_position_list(const MqPositionKey *probe, bool take, int *n)
{
	HTAB	   *table = take ? pending_autocommit : xact_positions;
	MqPendingBatch *out = palloc(sizeof(MqPendingBatch) * (table ? Max(hash_get_num_entries(table), 1) : 1));
	HASH_SEQ_STATUS status;
	Position   *pos;

	*n = 0;
	if (table == NULL)
		return out;
	hash_seq_init(&status, table);
	while ((pos = hash_seq_search(&status)) != NULL)
	{
		if (pos->key.topic_id != probe->topic_id || strcmp(pos->key.group, probe->group) != 0)
			continue;
		out[*n].partition = pos->key.partition;
		out[*n].next_offset = pos->next_offset;
		out[(*n)++].replaces = pos->replaces;
		if (take)
		{
			note_undo(&pending_autocommit, &pos->key);
			hash_search(table, &pos->key, HASH_REMOVE, NULL);
		}
	}
	return out;
}

/*
 * Positions this backend has seen inside the log: a poll's read ended
 * there, or the log end was read at or past it.  A poll that starts from
 * one again need not read the log end to know it is not beyond it
 * (poll.c).  The log end moves back only when a follower truncates, and
 * groups poll leaders only; a position known here that a truncation left
 * beyond the end waits for the log to grow past it, as before commits
 * beyond the end were taken.  What the log holds is not undone.
 */
bool
mq_position_in_log(MqPositionKey *key, int64 pos)
{
	Position   *known = in_log ? hash_search(in_log, key, HASH_FIND, NULL) : NULL;

	return known != NULL && known->next_offset == pos;
}

void
mq_position_note_in_log(MqPositionKey *key, int64 pos)
{
	(void) set_position(&in_log, TopMemoryContext, key, pos);
}
