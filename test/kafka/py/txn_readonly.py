"""confluent-kafka-python (librdkafka) transactions while the database is
read-only for a while (test/kafka/txn_readonly.sh).  Usage:
txn_readonly.py BROKER TOPIC TXN_ID N FLAG

Runs N transactions of three records each into TOPIC, as an application
does: an abortable error aborts the transaction and runs it again, a
fatal one (or an abort that fails) ends the run.  After the fifth
transaction it creates the file FLAG and waits for FLAG.go (the test
makes the database read-only, creates it, and seconds later makes the
database writable again).  Prints JSON
{"committed": transactions committed, "aborted": n, "fatal": error name
or null, "values": the values committed, in order}."""
import json
import os
import sys
import time

from confluent_kafka import KafkaException, Producer

broker, topic, txn_id, n, flag = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
p = Producer({'bootstrap.servers': broker, 'transactional.id': txn_id})
out = {'committed': 0, 'aborted': 0, 'fatal': None, 'values': []}
p.init_transactions(30)
i = 0
while i < n and out['fatal'] is None:
    values = ['t%d-%d' % (i, k) for k in range(3)]
    try:
        p.begin_transaction()
        for v in values:
            p.produce(topic, v.encode(), partition=0)
        p.commit_transaction(60)
        out['committed'] += 1
        out['values'] += values
        i += 1
        if i == 5:
            open(flag, 'w').close()
            while not os.path.exists(flag + '.go'):
                time.sleep(0.05)
    except KafkaException as e:
        err = e.args[0]
        if err.txn_requires_abort():
            try:
                p.abort_transaction(60)
                out['aborted'] += 1
            except KafkaException as e2:
                out['fatal'] = 'abort failed: ' + e2.args[0].name()
        elif err.retriable():
            continue
        else:
            out['fatal'] = err.name()
print(json.dumps(out))
