"""confluent-kafka-python (librdkafka) transactions against mq-kafka
(test/kafka/transactions.sh).  Usage: txn.py BROKER MODE ARGS...

  pipeline IN OUT GROUP N TXN_ID [PACE]   consume-transform-produce:
      reads IN as GROUP (read_committed, no auto commit), writes each
      value upper-cased to OUT (PACE seconds apart) and sends the offsets
      to the transaction; commits every 5 records, until N records went
      through.  A transaction the client must abort (mq-kafka killed under
      it) is aborted and its records read again from the committed
      offsets.  Prints JSON {"committed": n, "aborted": transactions
      aborted, "errors": [failed delivery reports], "first_offset": the
      first report's offset (None: -1)}.
  abort OUT TXN_ID VALUE          produce VALUE in a transaction, then abort
  open OUT TXN_ID VALUE SECONDS   produce VALUE and keep the transaction
      open SECONDS, then try to commit; prints {"commit": "ok" | error name}
  zombie OUT TXN_ID               an old instance, fenced by a new one:
      prints {"old": error name, "new": "ok"}
  one TXN_ID TOPIC PARTITION VALUE [FILE]   one record in a transaction,
      with the headers HEADERS and the CreateTime STAMP_MS below; with
      FILE, prints "staged" once it is acknowledged and waits for FILE to
      exist before committing; prints {"commit": "ok" | error}
  get TOPIC PARTITION OFFSET      a read_committed consumer: prints the
      record at OFFSET as JSON {"value", "headers": [[key, value hex]],
      "timestamp": [type, ms]}
  read OUT N                      a read_committed consumer: prints the
      values of OUT (JSON list), stopping after 5 s without records or N.
  refused OUT TXN_ID KEY BYTES [NEXT]   a record of BYTES bytes (KEY "-":
      none) and a small one in a transaction, then commit; prints
      {"delivery": [each report's error], "commit": "ok" | error,
      "abortable": bool, "next": the next transaction's commit (into
      NEXT, if given)}
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer

broker = sys.argv[1]
mode = sys.argv[2]
args = sys.argv[3:]


def producer(txn_id, timeout_ms=60000, **conf):
    p = Producer({'bootstrap.servers': broker, 'transactional.id': txn_id,
                  'transaction.timeout.ms': timeout_ms, 'linger.ms': 5, **conf})
    p.init_transactions(30)
    return p


def err_name(e):
    err = e.args[0]
    return err.name() if hasattr(err, 'name') else str(err)


def rewind(c):
    """after an abort: back to the group's committed offsets"""
    for tp in c.committed(c.assignment(), 30):
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING
        c.seek(tp)


def end_batch(p, c):
    """send the offsets and commit; True when committed, False when
    aborted (the batch is to be done again); a retriable error retries"""
    while True:
        try:
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                p.abort_transaction(30)
                rewind(c)
                return False
            if not err.retriable():
                raise
            time.sleep(0.2)


def pipeline(src, dst, group, n, txn_id, pace=0.0):
    p = producer(txn_id)
    c = Consumer({'bootstrap.servers': broker, 'group.id': group, 'enable.auto.commit': False,
                  'auto.offset.reset': 'earliest', 'isolation.level': 'read_committed'})
    c.subscribe([src])
    reports = []
    errors = []
    aborted = 0

    def report(err, msg):
        if err:
            errors.append(str(err))
        else:
            reports.append(msg.offset())

    done = 0
    p.begin_transaction()
    pending = 0
    deadline = time.time() + 120
    while done < n and time.time() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        try:
            p.produce(dst, msg.value().upper(), msg.key(), on_delivery=report)
        except KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            p.abort_transaction(30)
            rewind(c)
            aborted += 1
            pending = 0
            p.begin_transaction()
            continue
        pending += 1
        time.sleep(pace)
        if pending == 5 or done + pending == n:
            if end_batch(p, c):
                done += pending
            else:
                aborted += 1
            pending = 0
            p.begin_transaction()
    p.abort_transaction(30)
    c.close()
    print(json.dumps({'committed': done, 'aborted': aborted, 'errors': errors,
                      'first_offset': reports[0] if reports else 'none'}))


def abort(dst, txn_id, value):
    p = producer(txn_id)
    p.begin_transaction()
    p.produce(dst, value.encode())
    p.flush(30)
    p.abort_transaction(30)
    print(json.dumps({'aborted': 1}))


def keep_open(dst, txn_id, value, seconds):
    p = producer(txn_id, timeout_ms=2000)
    p.begin_transaction()
    p.produce(dst, value.encode())
    p.flush(30)
    time.sleep(float(seconds))
    try:
        p.commit_transaction(30)
        print(json.dumps({'commit': 'ok'}))
    except KafkaException as e:
        print(json.dumps({'commit': err_name(e)}))


def zombie(dst, txn_id):
    old = producer(txn_id)
    old.begin_transaction()
    old.produce(dst, b'zombie')
    old.flush(30)
    new = producer(txn_id)
    new.begin_transaction()
    new.produce(dst, b'new')
    new.commit_transaction(30)
    result = {'new': 'ok'}
    try:
        old.produce(dst, b'zombie-2')
        old.flush(10)
        old.commit_transaction(30)
        result['old'] = 'ok'
    except KafkaException as e:
        result['old'] = err_name(e)
    print(json.dumps(result, sort_keys=True))


HEADERS = [('trace', b'a'), ('trace', b'b'), ('bin', b'\x00\xff'), ('none', None)]
STAMP_MS = 1600000000123


def one(txn_id, topic, partition, value, wait_file=None):
    import os
    p = producer(txn_id)
    p.begin_transaction()
    try:
        p.produce(topic, value.encode(), partition=int(partition), headers=HEADERS, timestamp=STAMP_MS)
        p.flush(30)
        if wait_file:
            print('staged', flush=True)
            while not os.path.exists(wait_file):
                time.sleep(0.05)
        p.commit_transaction(60)
        print(json.dumps({'commit': 'ok'}))
    except KafkaException as e:
        print(json.dumps({'commit': err_name(e)}))


def refused(dst, txn_id, key, nbytes, next_dst=None):
    # a retriable refusal (NOT_ENOUGH_REPLICAS) fails the delivery at its timeout
    p = producer(txn_id, **{'message.timeout.ms': 5000})
    p.begin_transaction()
    reports = []
    report = lambda e, m: reports.append(e.name() if e else 'ok')  # noqa: E731
    p.produce(dst, key=None if key == '-' else key, value=b'x' * int(nbytes), on_delivery=report)
    p.produce(dst, key='k', value=b'small', on_delivery=report)
    p.flush(30)
    out = {'delivery': reports, 'abortable': False}
    try:
        p.commit_transaction(30)
        out['commit'] = 'ok'
    except KafkaException as e:
        out['commit'] = err_name(e)
        out['abortable'] = e.args[0].txn_requires_abort()
        p.abort_transaction(30)
    p.begin_transaction()
    p.produce(next_dst or dst, key='k', value=b'next')
    p.commit_transaction(30)
    out['next'] = 'ok'
    print(json.dumps(out))


def read(dst, n):
    c = Consumer({'bootstrap.servers': broker, 'group.id': 'txn-reader-%d' % time.time_ns(),
                  'auto.offset.reset': 'earliest', 'isolation.level': 'read_committed',
                  'enable.auto.commit': False})
    c.subscribe([dst])
    values = []
    last = time.time()
    while time.time() - last < 5 and len(values) < n:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        values.append(msg.value().decode())
        last = time.time()
    c.close()
    print(json.dumps(values))


def get(topic, partition, offset):
    from confluent_kafka import TopicPartition
    c = Consumer({'bootstrap.servers': broker, 'group.id': 'txn-get-%d' % time.time_ns(),
                  'isolation.level': 'read_committed', 'enable.auto.commit': False})
    c.assign([TopicPartition(topic, int(partition), int(offset))])
    deadline = time.time() + 20
    while time.time() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        print(json.dumps({'value': msg.value().decode(), 'timestamp': list(msg.timestamp()),
                          'headers': [[k, None if v is None else v.hex()] for k, v in msg.headers() or []]}))
        break
    c.close()


if mode == 'pipeline':
    pipeline(args[0], args[1], args[2], int(args[3]), args[4], float(args[5]) if len(args) > 5 else 0.0)
elif mode == 'abort':
    abort(*args)
elif mode == 'open':
    keep_open(*args)
elif mode == 'zombie':
    zombie(*args)
elif mode == 'one':
    one(*args)
elif mode == 'get':
    get(*args)
elif mode == 'refused':
    refused(*args)
elif mode == 'read':
    read(args[0], int(args[1]))
