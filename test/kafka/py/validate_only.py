"""Refused validate_only requests, each followed by a Metadata request on
the same mq-kafka (run by test/kafka/validate_only.sh with one database
connection): CreateTopics, CreatePartitions and AlterConfigs with
validate_only, sent as kafka-python's request objects (Debian's
python3-kafka).  Usage: validate_only.py BROKER TOPIC.  Prints one JSON
object: for each case the error code the broker answered and the topics
the Metadata request after it listed (or its error)."""
import json
import sys

from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest
from kafka.protocol.metadata import MetadataRequest

broker, topic = sys.argv[1:3]
admin = KafkaAdminClient(bootstrap_servers=broker)
out = {}


def send(req):
    f = admin._send_request_to_node(admin._client.least_loaded_node(), req)
    admin._wait_for_futures([f])
    return f.value


def then_metadata(case, code):
    """the case's error code, and what a Metadata request answers after it"""
    try:
        md = send(MetadataRequest[1](topics=[topic]))
        out[case] = [code, [[t[1], t[0]] for t in md.topics]]
    except Exception as e:      # noqa: BLE001: the failure is the result
        out[case] = [code, repr(e)]


for n in range(2):      # twice: a connection a case spoiled would fail the next
    sfx = '_%d' % n
    r = send(CreateTopicsRequest[3](create_topic_requests=[(topic, 1, 1, [], [])], timeout=5000, validate_only=True))
    then_metadata('create_existing' + sfx, r.topic_errors[0][1])
    r = send(CreateTopicsRequest[3](create_topic_requests=[(topic + '_new', 1, 1, [], [])], timeout=5000,
                                    validate_only=True))
    then_metadata('create_new' + sfx, r.topic_errors[0][1])
    r = send(CreatePartitionsRequest[1](topic_partitions=[(topic, (1, None))], timeout=5000, validate_only=True))
    then_metadata('fewer_partitions' + sfx, r.topic_errors[0][1])
    r = send(AlterConfigsRequest[1](resources=[(2, topic, [('retention.ms', 'soon')])], validate_only=True))
    then_metadata('bad_config' + sfx, r.resources[0][0])
print(json.dumps(out, sort_keys=True))
