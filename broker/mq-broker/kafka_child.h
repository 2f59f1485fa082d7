/*-------------------------------------------------------------------------
 *
 * kafka_child.h
 *	  The node's mq-kafka, started and kept running by mq-broker when its
 *	  configuration has a [kafka] section (kafka_child.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_KAFKA_CHILD_H
#define MQ_BROKER_KAFKA_CHILD_H

#include "config.h"

/* start mq-kafka if [kafka] listen is set */
extern void kafka_child_start(const BrokerConfig *cfg);
/* restart it if it exited (at most once a second), kill it if its loop
 * stopped turning ([kafka] watchdog.ms); call every tick */
extern void kafka_child_check(void);
/* SIGTERM it and wait for it */
extern void kafka_child_stop(void);
/* pass a signal on to mq-kafka (from a signal handler: SIGHUP) */
extern void kafka_child_forward(int sig);

#endif							/* MQ_BROKER_KAFKA_CHILD_H */
