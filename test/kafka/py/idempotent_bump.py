"""An idempotent librdkafka producer (confluent-kafka-python) whose
in-flight batch times out while mq-kafka is stopped, then whose producer
id expires (test/kafka/idempotent.sh).
Usage: idempotent_bump.py BROKER TOPIC PID EXPIRE_COMMAND

Sends "first" and waits for it; stops mq-kafka (SIGSTOP to PID), sends
"paused" and polls until its delivery report says it timed out; resumes
mq-kafka and sends "after0".."after2".  Having had a batch time out,
librdkafka bumps its producer epoch itself and starts every partition's
sequence again at 0, as Kafka's partition leaders accept.  Then runs
EXPIRE_COMMAND (a shell command that expires the producer's id in mq) and
sends "expired0".."expired2", which go on with the producer's sequences.
Prints JSON
{"delivered": [values], "failed": {value: error name}, "fatal": error
name or null}.
"""
import json
import os
import signal
import subprocess
import sys
import time

from confluent_kafka import Producer

broker, topic, pid, expire = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
delivered, failed, fatal = [], {}, []


def report(err, msg):
    if err is None:
        delivered.append(msg.value().decode())
    else:
        failed[msg.value().decode()] = err.name()


def on_error(err):
    if err.fatal():
        fatal.append(err.name())


def main():
    p = Producer({'bootstrap.servers': broker, 'enable.idempotence': True,
                  'message.timeout.ms': 3000, 'request.timeout.ms': 2000,
                  'error_cb': on_error})
    p.produce(topic, b'first', on_delivery=report)
    p.flush(30)
    os.kill(pid, signal.SIGSTOP)
    try:
        p.produce(topic, b'paused', on_delivery=report)
        deadline = time.time() + 60
        while 'paused' not in failed and 'paused' not in delivered and time.time() < deadline:
            p.poll(0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
    for i in range(3):
        p.produce(topic, b'after%d' % i, on_delivery=report)
    p.flush(30)
    subprocess.run(['bash', '-c', expire], check=True, stdout=subprocess.DEVNULL)
    for i in range(3):
        p.produce(topic, b'expired%d' % i, on_delivery=report)
    p.flush(30)
    print(json.dumps({"delivered": delivered, "failed": failed,
                      "fatal": fatal[0] if fatal else None}))


main()
