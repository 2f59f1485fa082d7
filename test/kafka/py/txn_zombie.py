"""A transactional consumer that turns zombie, with confluent-kafka-python
(librdkafka) at its defaults, for test/kafka/txn_fence.sh:

    txn_zombie.py BROKER IN OUT GROUP TXN_ID N FILE

reads N records of IN as a member of GROUP (session.timeout.ms 6000,
read_committed, no auto commit) and produces them to OUT in a
transaction, takes the group metadata and positions to send with it,
prints "consumed" (flushed), and waits for FILE to exist: meanwhile the
test stops the process (SIGSTOP), its session expires and another member
takes the partition over.  Then it sends the offsets to its transaction
and commits; prints JSON {"send_offsets": "ok" | error, "commit": "ok" |
error | null, "abortable": bool}, and aborts a transaction that must be.
"""
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

broker, src, dst, group, txn_id, n, wait_file = sys.argv[1:8]
n = int(n)


def err_name(e):
    err = e.args[0]
    return err.name() if hasattr(err, 'name') else str(err)


p = Producer({'bootstrap.servers': broker, 'transactional.id': txn_id})
p.init_transactions(30)
c = Consumer({'bootstrap.servers': broker, 'group.id': group, 'enable.auto.commit': False,
              'auto.offset.reset': 'earliest', 'isolation.level': 'read_committed',
              'session.timeout.ms': 6000})
c.subscribe([src])
p.begin_transaction()
got = 0
deadline = time.time() + 60
while got < n and time.time() < deadline:
    for m in c.consume(n - got, 0.5):
        if not m.error():
            p.produce(dst, m.value().upper())
            got += 1
p.flush(30)
positions = c.position(c.assignment())
metadata = c.consumer_group_metadata()
print('consumed', got, flush=True)
while not os.path.exists(wait_file):
    time.sleep(0.1)
out = {'send_offsets': 'ok', 'commit': None, 'abortable': False}
try:
    p.send_offsets_to_transaction(positions, metadata, 30)
except KafkaException as e:
    out['send_offsets'] = err_name(e)
    out['abortable'] = e.args[0].txn_requires_abort()
if out['send_offsets'] == 'ok':
    try:
        p.commit_transaction(30)
        out['commit'] = 'ok'
    except KafkaException as e:
        out['commit'] = err_name(e)
        out['abortable'] = e.args[0].txn_requires_abort()
if out['abortable']:
    p.abort_transaction(30)
print(json.dumps(out), flush=True)
os._exit(0)    # the consumer's close would wait for its rejoin
