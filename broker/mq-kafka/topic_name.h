/*-------------------------------------------------------------------------
 *
 * topic_name.h
 *	  Kafka's rule for a topic name (its Topic.validate), for the APIs that
 *	  check a name before any database statement (DescribeConfigs,
 *	  AlterConfigs, IncrementalAlterConfigs of a topic resource: an illegal
 *	  name is INVALID_TOPIC_EXCEPTION there, as from Kafka 3.9).  SQL
 *	  has the same rule as mq._topic_name_valid (src/sql/20_admin.sql),
 *	  which Metadata asks: a change to one goes to the other
 *	  (test/kafka/topic_names.sh checks that they agree).  No state, no
 *	  locking.
 *
 * A legal name is 1 to 249 characters of ASCII letters, digits, '.', '_'
 * and '-', and neither "." nor "..".
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_TOPIC_NAME_H
#define MQK_TOPIC_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include "kbuf.h"

/*
 * false for a legal name; true for an illegal one (a null name too), with
 * Kafka's message for it in msg ("Topic name is invalid: ...")
 */
extern bool topic_name_invalid(KSlice name, char *msg, size_t size);

#endif							/* MQK_TOPIC_NAME_H */
