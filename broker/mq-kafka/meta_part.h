/*-------------------------------------------------------------------------
 *
 * meta_part.h
 *	  The statement Metadata and DescribeTopicPartitions read partitions
 *	  with, and the writer of one partition's entry (meta_part.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_META_PART_H
#define MQK_META_PART_H

#include <libpq-fe.h>

#include "kbuf.h"
#include "kjob.h"
#include "topic_id.h"

/*
 * This node's partitions, and the cluster view's partitions ($3, $4) of
 * topics this node holds no replica of (describable ones: the same filter
 * as mq.topics), with no leader epoch (-1: unknown, so clients fence
 * nothing by it); a name asked for that breaks Kafka's rule is one row
 * of partition -1 (INVALID_TOPIC_EXCEPTION); one the role may not
 * describe (existing or not), or with automatic creation ($5) may not
 * create, one row of partition -2 (TOPIC_AUTHORIZATION_FAILED).
 *
 * METADATA_SQL reads the topics asked for by name ($1) or id ($2) one at
 * a time, and so mq.replica_status's rows and the names in NOT EXISTS
 * (subqueries that OFFSET 0 keeps apart, so that their quals reach the
 * security-barrier views and their indexes): joined plainly, a Metadata
 * of one topic read every partition's log end, and its time grew with
 * the database's partitions (design.md, "Views joined by their keys").
 * METADATA_ALL_SQL ($1 null: every topic) reads both views whole and
 * joins them: a topic at a time, all of them took 2.5 times as long (at
 * 3,001 partitions).
 */
#define META_PART_COLS \
	"SELECT p.topic, p.partition, r.role IS NULL OR r.role = 'standalone'," \
	"       r.leader_id, r.replicas, r.isr, " TOPIC_ID_SQL("p.topic") ", p.leader_epoch"
#define META_ASKED_PARTS \
	META_PART_COLS \
	"  FROM (SELECT n.t FROM unnest($1::text[]) n(t)" \
	"        UNION SELECT i.topic FROM unnest($2::text[]) h(h), LATERAL (SELECT x.topic FROM mq.topics x" \
	"              WHERE " TOPIC_ID_SQL("x.topic") " = h.h OFFSET 0) i) a" \
	" CROSS JOIN LATERAL (SELECT * FROM mq.partitions p WHERE p.topic = a.t OFFSET 0) p" \
	"  LEFT JOIN LATERAL (SELECT r.role, r.leader_id, r.replicas, r.isr FROM mq.replica_status r" \
	"        WHERE r.topic = p.topic AND r.partition = p.partition OFFSET 0) r ON true"
#define META_ALL_PARTS \
	META_PART_COLS \
	"  FROM mq.partitions p" \
	"  LEFT JOIN mq.replica_status r ON r.topic = p.topic AND r.partition = p.partition"
#define META_SQL(parts) \
	"SELECT * FROM (" parts \
	" UNION ALL" \
	" SELECT v.t, v.p, false, NULL, NULL, NULL, " TOPIC_ID_SQL("v.t") ", -1" \
	"  FROM unnest($3::text[], $4::int[]) v(t, p)" \
	" WHERE mq._describable('topic', v.t)" \
	"   AND NOT EXISTS (SELECT 1 FROM mq.topics x WHERE x.topic = v.t OFFSET 0)" \
	" UNION ALL" \
	" SELECT n.t, -1, false, NULL, NULL, NULL, NULL, -1" \
	"  FROM unnest($1::text[]) n(t) WHERE NOT mq._topic_name_valid(n.t)" \
	" UNION ALL" \
	" SELECT n.t, -2, false, NULL, NULL, NULL, NULL, -1" \
	"  FROM unnest($1::text[]) n(t)" \
	" WHERE mq._topic_name_valid(n.t) AND NOT EXISTS (SELECT 1 FROM mq.topics x WHERE x.topic = n.t OFFSET 0)" \
	"   AND n.t <> ALL (coalesce($3::text[], '{}')) AND (NOT mq._describable('topic', n.t) OR ($5 AND NOT mq.has_topic_privilege(n.t, 'create')))) m" \
	" WHERE $1::text[] IS NULL OR m.topic = ANY ($1)" \
	"    OR " TOPIC_ID_SQL("m.topic") " = ANY ($2::text[]) ORDER BY 1, 2"
#define METADATA_SQL META_SQL(META_ASKED_PARTS)
#define METADATA_ALL_SQL META_SQL(META_ALL_PARTS)

/* authorized operations not computed: Kafka's value when not asked for */
#define INT32_MIN_OPS (-2147483647 - 1)

/*
 * Row row of a METADATA_SQL result: one partition entry of a Metadata v
 * answer, or with elr of a DescribeTopicPartitions answer (v 12's fields
 * and the eligible leader replicas).
 */
extern void meta_write_partition(KWriter *w, int16_t v, bool elr, PGresult *res, int row);

/*
 * __consumer_offsets in a cluster: at most max of its partitions from
 * first on; how many were written.
 */
extern int32_t meta_write_offsets_partitions(KWriter *w, int16_t v, bool elr, int32_t first, int32_t max);

/* the cluster view's partitions as METADATA_SQL's $3 and $4 (none: empty) */
extern void meta_add_view_partitions(KStmt *st);

#endif							/* MQK_META_PART_H */
