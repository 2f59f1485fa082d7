/*-------------------------------------------------------------------------
 *
 * quota.c
 *	  Kafka's client quotas, enforced: producer_byte_rate on the bytes of
 *	  each Produce request, consumer_byte_rate on the bytes of each Fetch
 *	  response, and request_percentage on the time each request's
 *	  statements ran in the database, per client entity, as Kafka's
 *	  broker does (KIP-13, KIP-55, KIP-124, KIP-219).  It stands below the
 *	  handlers, which count their bytes here and answer with the throttle
 *	  time it returns, below kconn.c, which counts each request's
 *	  database time when it completes and mutes the connection for the
 *	  longer throttle time, and below quota_load.c, which hands it the
 *	  quotas.  Loop thread only: no locking.
 *
 * The quotas are mq.client_quota's rows (src/sql/93_client_quotas.sql),
 * as quota_load.c reads them.  A request's user is the role it runs as
 * (the principal's name after --principal-rules), ANONYMOUS for a client
 * that acts as the daemon's role; its client id is the request header's.  Of the entities that
 * could apply, the first with a quota for the key decides, in Kafka's
 * order: user and client id, user and default client id, user, default
 * user and client id, default user and default client id, default user,
 * client id, default client id.  The rate is counted per what that entity
 * names (a user's quota is shared by its client ids, a default user's is
 * each user's own), over QUOTA_SAMPLES windows of QUOTA_WINDOW_MS as
 * Kafka's quota.window.num and quota.window.size.seconds;
 * request_percentage counts percent of one thread's second (1 s of
 * database time a second is 100, as Kafka counts its request handler
 * threads).  Above the quota, the throttle time is the time the excess
 * takes at the quota's rate, as Kafka computes it: unbounded for the
 * byte rates, at most one window for request_percentage, as Kafka's
 * ClientRequestQuotaManager bounds it.  A meter unused for an hour is
 * dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "quota.h"

#include <stdlib.h>
#include <string.h>

#include "kmetrics.h"
#include "util.h"

#define QUOTA_SAMPLES 11
#define QUOTA_WINDOW_MS 1000
#define METER_IDLE_MS (3600 * 1000)
/* a bandwidth throttle is Kafka's unbounded one, within an int32 of ms */
#define QUOTA_MAX_THROTTLE_MS 2147483647.0

typedef struct Quota
{
	KQuotaPart	user_part;
	char	   *user;
	KQuotaPart	client_part;
	char	   *client;
	KQuotaKind	kind;
	double		value;
} Quota;

typedef struct Meter
{
	struct Meter *next;
	KQuotaKind	kind;
	char	   *user;			/* "" if the entity has no user part */
	char	   *client;			/* "" if it has no client id part */
	int64_t		start_ms[QUOTA_SAMPLES];
	double		sum[QUOTA_SAMPLES];
	int			cur;
	int64_t		used_ms;
} Meter;

static const char *const key_names[KQUOTA_KINDS] = {
	"producer_byte_rate", "consumer_byte_rate", "request_percentage"
};

static Quota *quotas;
static int	nquotas;
static Meter *meters;

/* the kind of an mq key; -1: none */
static int
quota_key_kind(const char *key)
{
	for (int k = 0; k < KQUOTA_KINDS; k++)
		if (strcmp(key, key_names[k]) == 0)
			return k;
	return -1;
}

static void
quotas_free(void)
{
	for (int i = 0; i < nquotas; i++)
	{
		free(quotas[i].user);
		free(quotas[i].client);
	}
	free(quotas);
	quotas = NULL;
	nquotas = 0;
}

static KQuotaPart
row_part(PGresult *res, int row, int name_col)
{
	if (!PQgetisnull(res, row, name_col))
		return KQUOTA_NAME;
	return strcmp(PQgetvalue(res, row, name_col + 1), "t") == 0 ? KQUOTA_DEFAULT : KQUOTA_NONE;
}

/* by kind, then entity: quota_find's order (a part not named is "") */
static int
quota_cmp(const void *a, const void *b)
{
	const Quota *x = a;
	const Quota *y = b;
	int			c;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->user_part != y->user_part)
		return x->user_part < y->user_part ? -1 : 1;
	if ((c = strcmp(x->user, y->user)) != 0)
		return c;
	if (x->client_part != y->client_part)
		return x->client_part < y->client_part ? -1 : 1;
	return strcmp(x->client, y->client);
}

int
quota_take(PGresult *res)
{
	quotas_free();
	quotas = mq_malloc0(sizeof(Quota) * (PQntuples(res) + 1));
	for (int row = 0; row < PQntuples(res); row++)
	{
		Quota	   *q = &quotas[nquotas];
		int			kind = quota_key_kind(PQgetvalue(res, row, 4));

		if (kind < 0)
			continue;			/* a key of a newer mq */
		q->kind = kind;
		q->user_part = row_part(res, row, 0);
		q->user = mq_strdup(PQgetvalue(res, row, 0));
		q->client_part = row_part(res, row, 2);
		q->client = mq_strdup(PQgetvalue(res, row, 2));
		q->value = strtod(PQgetvalue(res, row, 5), NULL);
		nquotas++;
	}
	qsort(quotas, (size_t) nquotas, sizeof(Quota), quota_cmp);
	kmetrics_client_quotas(nquotas);
	return nquotas;
}

/* drop the meters nobody used for an hour */
void
quota_expire(void)
{
	int64_t		now = mq_now_us() / 1000;
	Meter	  **p = &meters;

	while (*p)
	{
		Meter	   *m = *p;

		if (now - m->used_ms > METER_IDLE_MS)
		{
			*p = m->next;
			free(m->user);
			free(m->client);
			free(m);
		}
		else
			p = &m->next;
	}
}

/* the quota of kind for user and client, in Kafka's order; NULL: none */
static const Quota *
quota_find(KQuotaKind kind, const char *user, const char *client)
{
	static const KQuotaPart order[8][2] = {
		{KQUOTA_NAME, KQUOTA_NAME},
		{KQUOTA_NAME, KQUOTA_DEFAULT},
		{KQUOTA_NAME, KQUOTA_NONE},
		{KQUOTA_DEFAULT, KQUOTA_NAME},
		{KQUOTA_DEFAULT, KQUOTA_DEFAULT},
		{KQUOTA_DEFAULT, KQUOTA_NONE},
		{KQUOTA_NONE, KQUOTA_NAME},
		{KQUOTA_NONE, KQUOTA_DEFAULT},
	};

	for (int o = 0; o < 8; o++)
	{
		Quota		probe = {.kind = kind,
					   .user_part = order[o][0], .user = (char *) (order[o][0] == KQUOTA_NAME ? user : ""),
					   .client_part = order[o][1], .client = (char *) (order[o][1] == KQUOTA_NAME ? client : "")};
		const Quota *q = bsearch(&probe, quotas, (size_t) nquotas, sizeof(Quota), quota_cmp);

		if (q)
			return q;
	}
	return NULL;
}

static Meter *
meter_get(KQuotaKind kind, const char *user, const char *client, int64_t now)
{
	Meter	   *m;

	for (m = meters; m; m = m->next)
		if (m->kind == kind && strcmp(m->user, user) == 0 && strcmp(m->client, client) == 0)
			return m;
	m = mq_malloc0(sizeof(Meter));
	m->kind = kind;
	m->user = mq_strdup(user);
	m->client = mq_strdup(client);
	m->start_ms[0] = now;
	m->next = meters;
	meters = m;
	return m;
}

/* add v to the meter's current window; the rate over its windows, a second */
static double
meter_record(Meter *m, double v, int64_t now, int64_t *span_ms)
{
	int64_t		oldest = now;
	double		total = 0;
	int64_t		span;

	if (now - m->start_ms[m->cur] >= QUOTA_WINDOW_MS)
	{
		m->cur = (m->cur + 1) % QUOTA_SAMPLES;
		m->start_ms[m->cur] = now;
		m->sum[m->cur] = 0;
	}
	m->sum[m->cur] += v;
	m->used_ms = now;
	for (int i = 0; i < QUOTA_SAMPLES; i++)
		if (m->start_ms[i] > 0 && now - m->start_ms[i] < QUOTA_SAMPLES * QUOTA_WINDOW_MS)
		{
			total += m->sum[i];
			if (m->start_ms[i] < oldest)
				oldest = m->start_ms[i];
		}
	/* as Kafka's Rate: at least the samples but one, in whole windows */
	span = now - oldest;
	if (span < (QUOTA_SAMPLES - 1) * QUOTA_WINDOW_MS)
		span = (QUOTA_SAMPLES - 1) * QUOTA_WINDOW_MS;
	*span_ms = span;
	return total * 1000.0 / (double) span;
}

int32_t
quota_record(KRequest *req, KQuotaKind kind, int64_t amount)
{
	const char *user = req->role ? req->role : "ANONYMOUS";
	const char *client = req->client_id ? req->client_id : "";
	const Quota *q;
	int64_t		now;
	int64_t		span;
	double		rate;
	double		wait;
	double		cap;
	int32_t		ms;

	if (nquotas == 0 || (q = quota_find(kind, user, client)) == NULL)
		return 0;
	now = mq_now_us() / 1000;
	rate = meter_record(meter_get(kind, q->user_part == KQUOTA_NONE ? "" : user,
								  q->client_part == KQUOTA_NONE ? "" : client, now),
						kind == KQUOTA_REQUEST ? (double) amount / 1e4 : (double) amount, now, &span);
	if (rate <= q->value)
		return 0;
	wait = (rate - q->value) / q->value * (double) span;
	cap = kind == KQUOTA_REQUEST ? QUOTA_WINDOW_MS : QUOTA_MAX_THROTTLE_MS;
	ms = wait > cap ? (int32_t) cap : (int32_t) (wait + 0.5);
	kmetrics_throttle(ms);
	return ms;
}
