"""kafka-python (Debian's python3-kafka 2.0.2) with SASL/SCRAM against
mq-kafka (test/kafka/scram.sh runs it with /usr/bin/python3):

    MQ_SASL_PASSWORD=... [MQ_SSL_CA=FILE] scram.py BROKER TOPIC GROUP USER MECHANISM

With MQ_SSL_CA, over TLS trusting that CA file (SASL_SSL).

Produces 4 records "py<i>", then reads them back in GROUP and commits.
Prints one JSON object: produced (or produce_error), consumed (the values
seen), committed (the group's committed offset of partition 0), or the
first error's class name as error.
"""
import json
import os
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

broker, topic, group, user, mech = sys.argv[1:6]
auth = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech,
            sasl_plain_username=user, sasl_plain_password=os.environ["MQ_SASL_PASSWORD"])
if os.environ.get("MQ_SSL_CA"):
    auth.update(security_protocol="SASL_SSL", ssl_cafile=os.environ["MQ_SSL_CA"],
                ssl_check_hostname=False)
out = {}
try:
    producer = KafkaProducer(bootstrap_servers=broker, acks="all", **auth)
    for i in range(4):
        producer.send(topic, value=b"py%d" % i, partition=0).get(timeout=30)
    producer.close()
    out["produced"] = True
    consumer = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=15000, **auth)
    seen = []
    for m in consumer:
        if m.value.startswith(b"py"):
            seen.append(m.value.decode())
        if len(seen) == 4:
            break
    consumer.commit()
    out["consumed"] = seen
    out["committed"] = consumer.committed(TopicPartition(topic, 0))
    consumer.close()
except Exception as e:  # the test names what broke
    out["error"] = type(e).__name__
print(json.dumps(out))
