"""Helper of test/bench/kafka_txn.sh (confluent-kafka-python on librdkafka).

  kafka_txn.py BROKER plain TOPIC SECONDS      one record at a time to
      partition 0, each waited for (flush): prints records/s and the
      longest wait for one record in ms
  kafka_txn.py BROKER hold TOPIC SECONDS       a transaction that produced
      one record to partition 0, kept open SECONDS, then committed; prints
      "open" once the record is staged, then "committed"
  kafka_txn.py BROKER txn TOPIC N BATCH        N records of 100 B in
      transactions of BATCH records (after one transaction of one record,
      not timed): prints records/s
  kafka_txn.py BROKER idem TOPIC N             N records of 100 B from an
      idempotent producer, then flush (after one record, not timed):
      prints records/s
"""
import sys
import time

from confluent_kafka import Producer

broker, mode, topic = sys.argv[1:4]
VALUE = b'x' * 100


def plain(seconds):
    p = Producer({'bootstrap.servers': broker, 'linger.ms': 0, 'acks': 'all'})
    n = 0
    worst = 0.0
    end = time.time() + seconds
    while time.time() < end:
        t = time.time()
        p.produce(topic, VALUE, partition=0)
        p.flush(30)
        worst = max(worst, time.time() - t)
        n += 1
    print('%.1f %.0f' % (n / seconds, worst * 1000))


def hold(seconds):
    p = Producer({'bootstrap.servers': broker, 'transactional.id': 'bench-hold',
                  'transaction.timeout.ms': int((seconds + 30) * 1000)})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b'held', partition=0)
    p.flush(30)
    print('open', flush=True)
    time.sleep(seconds)
    p.commit_transaction(30)
    print('committed', flush=True)


def txn(n, batch):
    p = Producer({'bootstrap.servers': broker, 'transactional.id': 'bench-txn', 'linger.ms': 5})
    p.init_transactions(30)
    p.begin_transaction()           # warm-up, not timed: the topic's metadata
    p.produce(topic, VALUE)         # (librdkafka asks for it about 1 s after
    p.commit_transaction(60)        # a transaction's first record)
    start = time.time()
    sent = 0
    while sent < n:
        p.begin_transaction()
        for _ in range(min(batch, n - sent)):
            while True:
                try:
                    p.produce(topic, VALUE)
                    break
                except BufferError:
                    p.poll(0.01)
            sent += 1
        p.commit_transaction(60)
    print('%.1f' % (n / (time.time() - start)))


def idem(n):
    p = Producer({'bootstrap.servers': broker, 'enable.idempotence': True, 'linger.ms': 5})
    p.produce(topic, VALUE)         # warm-up, not timed, as in txn
    p.flush(60)
    start = time.time()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)
    print('%.1f' % (n / (time.time() - start)))


if mode == 'plain':
    plain(float(sys.argv[4]))
elif mode == 'hold':
    hold(float(sys.argv[4]))
elif mode == 'txn':
    txn(int(sys.argv[4]), int(sys.argv[5]))
elif mode == 'idem':
    idem(int(sys.argv[4]))
